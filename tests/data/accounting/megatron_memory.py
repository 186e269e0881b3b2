"""Independent re-derivation of Megatron-LM's theoretical memory estimate (megatron/training/theoretical_memory_usage.py
at NVIDIA/Megatron-LM d98e8a6, read for its formulas; this is a fresh implementation over exact fractions) for the
configurations of tests/unit/accounting/training_memory_test.cpp. Reads the model shapes straight from the config.json
files (its own mapping of the Hugging Face fields), so the only thing shared with lmkit is the formula being checked.
Prints one C++ initializer row per configuration: weight+optimizer bytes and activation bytes, rounded half up.

Run from the repository root: python3 tests/data/accounting/megatron_memory.py
"""
import json
from fractions import Fraction as F
from math import floor


def shapes(path):
    c = json.load(open(path))
    t = c["model_type"]
    s = {}
    if t == "gpt2":
        h = c["n_embd"]
        s.update(h=h, a=c["n_head"], g=c["n_head"], kvc=h // c["n_head"], ffn=c.get("n_inner") or 4 * h,
                 V=c["vocab_size"], L=c["n_layer"], swiglu=False, norm=2, tied=True, nd=c["n_layer"], nm=0)
        return s
    h, a = c["hidden_size"], c["num_attention_heads"]
    L = c["num_hidden_layers"]
    s.update(h=h, a=a, g=c.get("num_key_value_heads") or a, kvc=c.get("head_dim") or h // a,
             ffn=c["intermediate_size"], V=c["vocab_size"], L=L, swiglu=True, norm=1,
             tied=c.get("tie_word_embeddings", False), nd=L, nm=0, E=0, moe_ffn=0, shared=0, gate=False, mla=None)
    if t == "mixtral":
        s.update(E=c["num_local_experts"], moe_ffn=c["intermediate_size"], nd=0, nm=L)
    if t == "qwen3_moe":
        s.update(E=c.get("num_experts") or c["num_local_experts"], moe_ffn=c["moe_intermediate_size"], nd=0, nm=L)
    if t in ("deepseek", "deepseek_v3"):
        k = c.get("first_k_dense_replace", 0)
        s.update(E=c["n_routed_experts"], moe_ffn=c["moe_intermediate_size"],
                 shared=c.get("n_shared_experts", 0) * c["moe_intermediate_size"], nd=k, nm=L - k)
    if t == "deepseek_v3":
        s["mla"] = dict(q=c.get("q_lora_rank"), kv=c["kv_lora_rank"], nope=c["qk_nope_head_dim"],
                        rope=c["qk_rope_head_dim"], v=c["v_head_dim"])
    return s


def megatron(s, tp, pp, vpp, cp, dp, ep, mb, gbs, seq, distopt, sp, selective):
    etp = tp
    mult = 128 * tp
    V = (s["V"] + mult - 1) // mult * mult
    h, a, norm = s["h"], s["a"], s["norm"]
    glu = F(3, 2) if s["swiglu"] else F(1)
    if s.get("mla"):
        m = s["mla"]
        qk = m["nope"] + m["rope"]
        qterm = h * a * qk if m["q"] is None else m["q"] * (h + a * qk + norm)
        attn = qterm + m["kv"] * (h + a * (m["nope"] + m["v"]) + norm) + h * m["rope"] + a * m["v"] * h
    else:
        qproj = s["kvc"] * a
        attn = 2 * h * h * (1 + F(s["g"], a)) * F(qproj, h)
    E = s.get("E", 0)
    moe = E > 0
    dense_mlp = 2 * h * s["ffn"] * glu
    shared = 2 * h * s.get("shared", 0) * glu
    routed = 2 * h * s.get("moe_ffn", 0) * (E if moe else 1) * glu
    ln = 2 * h * norm
    router = h * E if moe else 0
    emb = h * V
    nd, nm = s["nd"], s["nm"]
    tp_sh = (attn + dense_mlp) * nd + (attn + shared) * nm
    rep = ln * nd + (ln + router) * nm + norm * h
    exp = routed * nm
    world = tp * pp * cp * dp
    edp = world // (etp * ep * pp)
    tp_part = (F(tp_sh) / pp + emb) / tp
    rep_part = F(rep) / pp
    exp_part = F(exp) / pp / (etp * ep)
    if not s["tied"] and pp == 1:
        tp_part += F(emb) / tp
    bpp = lambda d: 6 + F(12, d) if distopt else F(18)
    wo = (tp_part + rep_part) * bpp(dp) + exp_part * bpp(edp)

    nmb = gbs // (mb * dp)
    S, b, L, p = seq, mb, s["L"], pp
    if sp and selective:
        act = S * b * h * (18 + 4 * F(s["ffn"], h))
    else:
        act = S * b * h * (10 + F(24, tp))
    act *= L
    act += 8 * S * b * p + S * b * h * p
    if vpp > 1:
        act *= 1 + F(p - 1, p * vpp)
    if vpp == 1 and p > 1:
        act *= min(F(1), F(nmb, p))
    if sp and selective:
        if p == 1:
            act += S * b * h * 4 * (1 + F(V, h))
        act /= tp
    else:
        if p == 1:
            act += (F(S * b * V, tp) + S * b * h) * 2
        act *= F(105, 100)
    return floor(wo + F(1, 2)), floor(act + F(1, 2))


# (name, config file, tp, pp, vpp, cp, dp, ep, micro_batch, global_batch, seq, distributed optimizer, SP, selective)
CASES = [
    ("gpt2-medium", "data/models/gpt2-medium.json", 1, 1, 1, 1, 8, 1, 4, 64, 1024, False, False, False),
    ("gpt2-medium", "data/models/gpt2-medium.json", 2, 2, 1, 1, 4, 1, 2, 64, 1024, True, True, True),
    ("gpt2-large", "data/models/gpt2-large.json", 4, 4, 3, 1, 2, 1, 1, 32, 1024, True, True, True),
    ("llama-3-8b", "data/models/llama-3-8b.json", 1, 1, 1, 1, 8, 1, 1, 32, 8192, False, False, False),
    ("llama-3-8b", "data/models/llama-3-8b.json", 2, 1, 1, 1, 4, 1, 1, 32, 8192, True, True, True),
    ("llama-3-8b", "data/models/llama-3-8b.json", 4, 2, 1, 1, 2, 1, 1, 8, 8192, True, False, False),
    ("llama-3-8b", "data/models/llama-3-8b.json", 8, 4, 2, 1, 1, 1, 2, 16, 4096, False, True, True),
    ("llama-3-8b", "data/models/llama-3-8b.json", 2, 4, 1, 2, 2, 1, 1, 2, 8192, True, True, True),
    ("llama-3-70b", "tests/data/accounting/llama-3-70b.json", 8, 4, 1, 1, 32, 1, 1, 1024, 8192, True, True, True),
    ("llama-3-70b", "tests/data/accounting/llama-3-70b.json", 8, 8, 5, 1, 16, 1, 1, 512, 4096, True, True, True),
    ("llama-3-70b", "tests/data/accounting/llama-3-70b.json", 4, 8, 1, 1, 4, 1, 2, 32, 4096, False, False, False),
    ("qwen2.5-7b", "data/models/qwen2.5-7b.json", 4, 1, 1, 1, 16, 1, 1, 64, 4096, True, True, True),
    ("qwen2.5-7b", "data/models/qwen2.5-7b.json", 2, 2, 1, 1, 2, 1, 1, 2, 4096, False, True, False),
    ("mixtral-8x7b-v0.1", "data/models/mixtral-8x7b-v0.1.json", 2, 4, 1, 1, 8, 8, 1, 256, 4096, True, True, True),
    ("mixtral-8x7b-v0.1", "data/models/mixtral-8x7b-v0.1.json", 1, 8, 2, 1, 8, 4, 1, 64, 4096, True, False, False),
    ("mixtral-8x7b-v0.1", "data/models/mixtral-8x7b-v0.1.json", 4, 1, 1, 1, 4, 2, 1, 16, 4096, False, True, True),
    ("qwen3-30b-a3b", "data/models/qwen3-30b-a3b.json", 2, 2, 1, 1, 16, 16, 1, 128, 4096, True, True, True),
    ("qwen3-30b-a3b", "data/models/qwen3-30b-a3b.json", 1, 4, 1, 1, 8, 8, 2, 64, 4096, False, False, False),
    ("deepseek-moe-16b", "data/models/deepseek-moe-16b.json", 1, 2, 1, 1, 8, 8, 1, 64, 4096, True, False, False),
    ("deepseek-moe-16b", "data/models/deepseek-moe-16b.json", 2, 1, 1, 1, 4, 4, 1, 32, 4096, True, True, True),
    ("deepseek-v3", "data/models/deepseek-v3.json", 1, 16, 1, 1, 128, 64, 1, 15360, 4096, True, False, False),
    ("deepseek-v3", "data/models/deepseek-v3.json", 2, 8, 1, 1, 64, 32, 1, 1024, 4096, True, True, True),
    ("deepseek-v3", "data/models/deepseek-v3.json", 4, 4, 1, 2, 32, 64, 1, 512, 8192, False, True, True),
]

if __name__ == "__main__":
    for (name, path, tp, pp, vpp, cp, dp, ep, mb, gbs, seq, dopt, sp, sel) in CASES:
        wo, act = megatron(shapes(path), tp, pp, vpp, cp, dp, ep, mb, gbs, seq, dopt, sp, sel)
        print(f'      {{"{name}", {tp}, {pp}, {vpp}, {cp}, {dp}, {ep}, {mb}, {gbs}, {seq}, '
              f'{str(dopt).lower()}, {str(sp).lower()}, {str(sel).lower()}, {wo}ULL, {act}ULL}},')
