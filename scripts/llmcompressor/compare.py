"""lmkit quantize (GPTQ, SmoothQuant) against llm-compressor's oneshot on the same model and calibration windows.

Usage (scripts/llmcompressor-compare.sh sets it up): compare.py MODEL_DIR WORK_DIR, with WORK_DIR/calib.npy (64 x 256
ids) and WORK_DIR/eval.npy (32 x 256) from `lmkit generate`, and $LMKIT the lmkit binary. Prints one JSON document:
per configuration, per Linear the largest relative scale difference, the share of identical integer codes, both tools'
||(W - Q) X||^2 / ||W X||^2 on the calibration inputs (SmoothQuant outputs compared in the unsmoothed domain, s_j =
norm_j / smoothed norm_j), the smoothed norms' largest relative difference, and KL(float || quantized) of each output
run by transformers + compressed-tensors on the evaluation windows, with the issue's acceptance checks.
"""
import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import torch
from safetensors.numpy import load_file

MODEL, WORK = sys.argv[1], sys.argv[2]
LMKIT = os.environ["LMKIT"]
CFG = json.load(open(os.path.join(MODEL, "config.json")))
SEQ = min(256, CFG["max_position_embeddings"])
# Gemma's RMSNorm multiplies by (1 + weight): the smoothing scale divides the effective weight.
NORM_OFFSET = 1.0 if CFG.get("model_type", "").startswith("gemma") else 0.0


def _input_widths():
    """in_features of every quantizable weight (2-D, or 3-D fused experts) but the embeddings and lm_head."""
    import struct
    with open(os.path.join(MODEL, "model.safetensors"), "rb") as f:
        head = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    return {v["shape"][-1] for k, v in head.items() if k != "__metadata__" and len(v["shape"]) >= 2
            and "embed" not in k and not k.startswith("lm_head")}


# Group 128 unless it does not divide every Linear input (the tiny fixtures): then the largest group that does.
GROUP = math.gcd(128, *_input_widths())


def windows(name):
    ids = np.load(os.path.join(WORK, name)).astype(np.int64)
    return ids[: len(ids) // SEQ * SEQ].reshape(-1, SEQ)


def tokenizer():
    """Any tokenizer will do for pre-tokenized data: a word-level one over the model's vocabulary."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast
    vocab = {"t%d" % i: i for i in range(CFG["vocab_size"])}
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(WordLevel(vocab, unk_token="t0")), unk_token="t0",
                                   pad_token="t0")


def run_llmcompressor(out, recipe):
    """oneshot with `recipe`; MoE experts calibrated on the tokens routed to them, as lmkit does (llm-compressor's
    default, moe_calibrate_all_experts=True, runs every expert on every token)."""
    from datasets import Dataset
    from llmcompressor import oneshot
    from transformers import AutoModelForCausalLM
    calib = windows("calib.npy")
    ds = Dataset.from_dict({"input_ids": calib.tolist(), "attention_mask": np.ones_like(calib).tolist()})
    model = AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32)
    oneshot(model=model, dataset=ds, recipe=recipe, max_seq_length=SEQ, num_calibration_samples=len(calib),
            processor=tokenizer(), output_dir=out, moe_calibrate_all_experts=False)


def run_lmkit(out, args):
    subprocess.run([LMKIT, "--quiet", "quantize", MODEL, "-o", out, "--calibration-tokens",
                    os.path.join(WORK, "calib.npy"), "--seq-len", str(SEQ), "--report", out + ".json"] + args,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def codes_and_scales(st, m, qc):
    w = qc["config_groups"]["group_0"]["weights"]
    bits = w["num_bits"]
    scale = st[m + ".weight_scale"].astype(np.float64)
    if m + ".weight_packed" in st:
        rows, cols = st[m + ".weight_shape"].tolist()
        b = st[m + ".weight_packed"].view(np.uint8).reshape(rows, -1)
        if bits == 4:
            codes = np.stack([b & 0xF, b >> 4], axis=-1).reshape(rows, -1)[:, :cols].astype(np.int64) - 8
        else:
            codes = b[:, :cols].astype(np.int64) - 128
    else:
        codes = st[m + ".weight"].astype(np.int64)
    rows, cols = codes.shape
    full = np.broadcast_to(scale, (rows, cols)) if scale.size == 1 or scale.shape[-1] == 1 else \
        np.repeat(scale, cols // scale.shape[-1], axis=1)
    return codes, scale, codes * full


def hessians():
    """2 X^T X / n of every Linear's input in the float model over the calibration windows (float64)."""
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32)
    hs, n = {}, {}

    def hook(name):
        def f(_mod, inp, _out):
            x = inp[0].reshape(-1, inp[0].shape[-1]).double()
            hs[name] = hs.get(name, 0) + x.T @ x
            n[name] = n.get(name, 0) + x.shape[0]
        return f
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear) and name != "lm_head":
            mod.register_forward_hook(hook(name))
    with torch.no_grad():
        for w in windows("calib.npy"):
            model(torch.tensor(w[None]))
    return {k: (2 * v / n[k]).numpy() for k, v in hs.items()}


def rel_error(w, q, h):
    d = w - q
    return float(np.einsum("ij,jk,ik->", d, h, d) / np.einsum("ij,jk,ik->", w, h, w))


def canon(name):
    """A module name as transformers 5 + llm-compressor name it: Mixtral's checkpoint names (block_sparse_moe, w1/w3/w2,
    which lmkit writes back) become mlp and gate_proj/up_proj/down_proj."""
    name = name.replace(".block_sparse_moe.", ".mlp.")
    return re.sub(r"\.experts\.(\d+)\.w([123])(?=\.|$)",
                  lambda m: ".experts.%s.%s" % (m.group(1), {"1": "gate_proj", "2": "down_proj", "3": "up_proj"}[
                      m.group(2)]), name)


def lmkit_groups(report):
    """lmkit's SmoothQuant groups from its --report: [(norm, [balanced Linear, ...])], canonical names."""
    return [(canon(g["norm"]), [canon(b) for b in g["balanced"]]) for g in report.get("smoothquant", [])]


def sq_mappings(groups):
    """llm-compressor SmoothQuantModifier mappings that smooth exactly lmkit's groups (one exact-name set each)."""
    exact = lambda n: "re:^" + re.escape(n) + "$"  # noqa: E731
    return [[[exact(b) for b in bal], exact(norm)] for norm, bal in groups]


def smoothing(m, groups, orig, st):
    """Per input channel s_j = norm_j / smoothed norm_j of the norm feeding m in checkpoint st (1 where unsmoothed)."""
    for norm, bal in groups:
        if m in bal:
            k = norm + ".weight"
            if k in st and k in orig:
                return (orig[k].astype(np.float64) + NORM_OFFSET) / (st[k].astype(np.float64) + NORM_OFFSET)
    return 1.0


def kl(out, f_logits, evalw):
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    with torch.no_grad():
        q = model(torch.tensor(evalw)).logits[:, :-1].reshape(-1, f_logits.shape[-1]).double()
    lp, lq = torch.log_softmax(f_logits, -1), torch.log_softmax(q, -1)
    return float((lp.exp() * (lp - lq)).sum(-1).mean())


# lmkit keeps lm_head and the MoE routers in 16 bits; llm-compressor is told the same.
IGNORE = ["lm_head", "re:.*mlp\\.gate$", "re:.*block_sparse_moe\\.gate$", "re:.*shared_expert_gate$"]


def main():
    from loguru import logger
    logger.remove()  # llm-compressor logs to stdout, which carries the JSON document
    logger.add(sys.stderr, level="WARNING")
    from llmcompressor.modifiers.quantization import GPTQModifier
    try:
        from llmcompressor.modifiers.transform import SmoothQuantModifier
    except ImportError:
        from llmcompressor.modifiers.smoothquant import SmoothQuantModifier
    from transformers import AutoModelForCausalLM
    import llmcompressor
    import transformers
    group4 = {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": True,
                                                             "strategy": "group", "group_size": GROUP}}}
    channel8 = {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "int", "symmetric": True,
                                                               "strategy": "channel"}}}
    # Recipes are built from lmkit's report: SmoothQuant is given lmkit's mapping (smooth_mapping.h), so that the two
    # tools' arithmetic is compared on the same groups; where llm-compressor's own registry maps a family differently
    # (Gemma's MLP, MoE MLPs, DeepSeek's dense MLP) "llmc-own-mapping" runs that too (KL only).
    configs = [
        ("w8a8 gptq", ["--scheme", "w8a8", "--method", "gptq"], lambda g: [GPTQModifier(scheme="W8A8", ignore=IGNORE)]),
        # compressed-tensors' W8A16 preset is group 128; lmkit's w8a16 default is channel, so the group is spelled out.
        ("w8a16 gptq", ["--scheme", "w8a16", "--method", "gptq"],
         lambda g: [GPTQModifier(config_groups=channel8, ignore=IGNORE)]),
        ("w4a16 group:%d gptq" % GROUP, ["--scheme", "w4a16", "--granularity", "group:%d" % GROUP, "--method", "gptq"],
         lambda g: [GPTQModifier(config_groups=group4, ignore=IGNORE)]),
        ("w8a8 smoothquant 0.8 + gptq", ["--scheme", "w8a8", "--smoothquant", "0.8", "--method", "gptq"],
         lambda g: [SmoothQuantModifier(smoothing_strength=0.8, mappings=sq_mappings(g)),
                    GPTQModifier(scheme="W8A8", ignore=IGNORE)]),
        ("w8a8 smoothquant 0.8 + gptq llmc-own-mapping", ["--scheme", "w8a8", "--smoothquant", "0.8", "--method", "gptq"],
         lambda g: [SmoothQuantModifier(smoothing_strength=0.8), GPTQModifier(scheme="W8A8", ignore=IGNORE)]),
    ]
    # CONFIGS: comma-separated label prefixes to run (default: all).
    if os.environ.get("CONFIGS"):
        want = os.environ["CONFIGS"].split(",")
        configs = [c for c in configs if any(c[0] == w or c[0].startswith(w + " ") for w in want)]
    orig0 = load_file(os.path.join(MODEL, "model.safetensors"))
    H = hessians()
    evalw = windows("eval.npy")
    fmodel = AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32)
    with torch.no_grad():
        f_logits = fmodel(torch.tensor(evalw)).logits[:, :-1].reshape(-1, CFG["vocab_size"]).double()
    doc = {"versions": {"llmcompressor": llmcompressor.__version__, "transformers": transformers.__version__,
                        "torch": torch.__version__}, "model": MODEL, "configs": []}
    rtn_kl = None
    out = os.path.join(WORK, "rtn_w8a8")
    subprocess.run([LMKIT, "--quiet", "quantize", MODEL, "-o", out, "--scheme", "w8a8"], check=True,
                   stdout=subprocess.DEVNULL)
    rtn_kl = kl(out, f_logits, evalw)
    doc["lmkit_rtn_w8a8_kl"] = rtn_kl
    for label, largs, recipe in configs:
        base = os.path.join(WORK, label.replace(" ", "_").replace(":", "").replace("+", ""))
        lo, co = base + "_lmkit", base + "_llmc"
        try:  # a family one tool does not support is reported, not fatal
            run_lmkit(lo, largs)
        except subprocess.CalledProcessError as e:
            doc["configs"].append({"config": label, "error": "lmkit: " + (e.stderr or b"").decode().strip()})
            continue
        try:
            groups = lmkit_groups(json.load(open(lo + ".json")))
            run_llmcompressor(co, recipe(groups))
        except Exception as e:  # noqa: BLE001 -- whatever llm-compressor raises is the finding
            doc["configs"].append({"config": label, "error": "llmcompressor: %s: %s" % (type(e).__name__, e)})
            continue
        sl, sc = load_file(os.path.join(lo, "model.safetensors")), load_file(os.path.join(co, "model.safetensors"))
        ql = json.load(open(os.path.join(lo, "config.json")))["quantization_config"]
        qm = json.load(open(os.path.join(co, "config.json")))["quantization_config"]
        layers, same, total = [], 0, 0
        # Tensors by canonical module name (Mixtral's lmkit output keeps the checkpoint's w1/w2/w3 names).
        sl = {canon(k[: -len(".weight")]) + ".weight" if k.endswith(".weight") else
              canon(k.rsplit(".", 1)[0]) + "." + k.rsplit(".", 1)[1]: v for k, v in sl.items()}
        orig = {canon(k[: -len(".weight")]) + ".weight" if k.endswith(".weight") else k: v for k, v in orig0.items()}
        both = sorted(k[: -len(".weight_scale")] for k in sl if k.endswith(".weight_scale") and k in sc)
        only_lmkit = sorted(k[: -len(".weight_scale")] for k in sl if k.endswith(".weight_scale") and k not in sc)
        only_llmc = sorted(k[: -len(".weight_scale")] for k in sc if k.endswith(".weight_scale") and k not in sl)
        for m in both:
            cl, sl_, dl = codes_and_scales(sl, m, ql)
            cc, sc_, dc = codes_and_scales(sc, m, qm)
            el = ec = None
            if m in H and m + ".weight" in orig:  # fused 3-D experts have no nn.Linear to hook
                w = orig[m + ".weight"].astype(np.float64)
                if "smoothquant" in label:  # back to the unsmoothed domain
                    dl = dl / np.broadcast_to(smoothing(m, groups, orig, sl), (dl.shape[1],))[None, :]
                    dc = dc / np.broadcast_to(smoothing(m, groups, orig, sc), (dc.shape[1],))[None, :]
                el, ec = rel_error(w, dl, H[m]), rel_error(w, dc, H[m])
            s = int((cl == cc).sum())
            same += s
            total += cl.size
            layers.append({"linear": m, "scale_max_rel_diff": float(np.max(np.abs(sl_ - sc_) / np.maximum(
                np.abs(sc_), 1e-30))), "codes_identical": s / cl.size, "error_lmkit": el, "error_llmcompressor": ec,
                "error_ratio": el / ec if ec else None})
        norms = None
        if "smoothquant" in label and "own-mapping" not in label:
            # Relative to the effective weight (1 + w for Gemma), as the norm multiplies by it.
            norms = max((float(np.max(np.abs(sl[k].astype(np.float64) - sc[k]) / np.abs(sc[k] + NORM_OFFSET)))
                         for k in sl if k.endswith("layernorm.weight") and k in sc), default=None)
        kl_l = kl(lo, f_logits, evalw)
        try:  # llm-compressor's MoE outputs do not always load back into transformers
            kl_c = kl(co, f_logits, evalw)
        except Exception as e:  # noqa: BLE001
            kl_c, load_error = None, "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        else:
            load_error = None
        st_keys = sorted(k for k in sc if ".experts." in k)[:4]
        doc["configs"].append({
            "config": label, "codes_identical": same / total if total else None, "kl_lmkit": kl_l, "kl_llmcompressor": kl_c,
            "smoothed_norms_max_rel_diff": norms, "layers": layers, "quantized_only_by_lmkit": only_lmkit,
            "quantized_only_by_llmcompressor": only_llmc, "llmcompressor_load_error": load_error,
            "llmcompressor_expert_keys": st_keys,
            "checks": {
                "scales_within_1e-5": all(x["scale_max_rel_diff"] <= 1e-5 for x in layers),
                "codes_99pct_identical": total > 0 and same / total >= 0.99,
                "errors_within_1pct": all(abs(x["error_ratio"] - 1) <= 0.01 for x in layers
                                          if x["error_ratio"] is not None),
                "kl_at_most_5pct_above_llmcompressor": kl_l <= 1.05 * kl_c if kl_c is not None else None,
                "kl_below_lmkit_rtn": kl_l < rtn_kl if label.startswith("w8a8") else None,  # RTN is w8a8
            }})
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
