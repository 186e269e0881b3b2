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
import subprocess
import sys

import numpy as np
import torch
from safetensors.numpy import load_file

MODEL, WORK = sys.argv[1], sys.argv[2]
LMKIT = os.environ["LMKIT"]
SEQ = 256
CFG = json.load(open(os.path.join(MODEL, "config.json")))
GROUP = 128 if CFG["hidden_size"] % 128 == 0 and CFG["intermediate_size"] % 128 == 0 else math.gcd(
    CFG["hidden_size"], CFG["intermediate_size"])


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
    from datasets import Dataset
    from llmcompressor import oneshot
    from transformers import AutoModelForCausalLM
    calib = windows("calib.npy")
    ds = Dataset.from_dict({"input_ids": calib.tolist(), "attention_mask": np.ones_like(calib).tolist()})
    model = AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32)
    oneshot(model=model, dataset=ds, recipe=recipe, max_seq_length=SEQ, num_calibration_samples=len(calib),
            processor=tokenizer(), output_dir=out)


def run_lmkit(out, args):
    subprocess.run([LMKIT, "--quiet", "quantize", MODEL, "-o", out, "--calibration-tokens",
                    os.path.join(WORK, "calib.npy"), "--seq-len", str(SEQ), "--report", out + ".json"] + args,
                   check=True)


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


SMOOTHED = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")


def norm_of(m):
    layer = m.rsplit(".", 2)[0]
    return layer + (".input_layernorm.weight" if ".self_attn." in m else ".post_attention_layernorm.weight")


def kl(out, f_logits, evalw):
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    with torch.no_grad():
        q = model(torch.tensor(evalw)).logits[:, :-1].reshape(-1, f_logits.shape[-1]).double()
    lp, lq = torch.log_softmax(f_logits, -1), torch.log_softmax(q, -1)
    return float((lp.exp() * (lp - lq)).sum(-1).mean())


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
    configs = [
        ("w8a8 gptq", ["--scheme", "w8a8", "--method", "gptq"], [GPTQModifier(scheme="W8A8", ignore=["lm_head"])]),
        # compressed-tensors' W8A16 preset is group 128; lmkit's w8a16 default is channel, so the group is spelled out.
        ("w8a16 gptq", ["--scheme", "w8a16", "--method", "gptq"],
         [GPTQModifier(config_groups=channel8, ignore=["lm_head"])]),
        ("w4a16 group:%d gptq" % GROUP, ["--scheme", "w4a16", "--granularity", "group:%d" % GROUP, "--method", "gptq"],
         [GPTQModifier(config_groups=group4, ignore=["lm_head"])]),
        ("w8a8 smoothquant 0.8 + gptq", ["--scheme", "w8a8", "--smoothquant", "0.8", "--method", "gptq"],
         [SmoothQuantModifier(smoothing_strength=0.8), GPTQModifier(scheme="W8A8", ignore=["lm_head"])]),
    ]
    orig = load_file(os.path.join(MODEL, "model.safetensors"))
    H = hessians()
    evalw = windows("eval.npy")
    fmodel = AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32)
    with torch.no_grad():
        f_logits = fmodel(torch.tensor(evalw)).logits[:, :-1].reshape(-1, CFG["vocab_size"]).double()
    doc = {"versions": {"llmcompressor": llmcompressor.__version__, "transformers": transformers.__version__,
                        "torch": torch.__version__}, "model": MODEL, "configs": []}
    rtn_kl = None
    out = os.path.join(WORK, "rtn_w8a8")
    subprocess.run([LMKIT, "--quiet", "quantize", MODEL, "-o", out, "--scheme", "w8a8"], check=True)
    rtn_kl = kl(out, f_logits, evalw)
    doc["lmkit_rtn_w8a8_kl"] = rtn_kl
    for label, largs, recipe in configs:
        base = os.path.join(WORK, label.replace(" ", "_").replace(":", "").replace("+", ""))
        lo, co = base + "_lmkit", base + "_llmc"
        run_lmkit(lo, largs)
        run_llmcompressor(co, recipe)
        sl, sc = load_file(os.path.join(lo, "model.safetensors")), load_file(os.path.join(co, "model.safetensors"))
        ql = json.load(open(os.path.join(lo, "config.json")))["quantization_config"]
        qm = json.load(open(os.path.join(co, "config.json")))["quantization_config"]
        layers, same, total = [], 0, 0
        for m in sorted(H):
            cl, sl_, dl = codes_and_scales(sl, m, ql)
            cc, sc_, dc = codes_and_scales(sc, m, qm)
            w = orig[m + ".weight"].astype(np.float64)
            if "smoothquant" in label and m.rsplit(".", 1)[1] in SMOOTHED:  # back to the unsmoothed domain
                dl = dl / (orig[norm_of(m)] / sl[norm_of(m)])[None, :]
                dc = dc / (orig[norm_of(m)] / sc[norm_of(m)])[None, :]
            el, ec = rel_error(w, dl, H[m]), rel_error(w, dc, H[m])
            s = int((cl == cc).sum())
            same += s
            total += cl.size
            layers.append({"linear": m, "scale_max_rel_diff": float(np.max(np.abs(sl_ - sc_) / np.maximum(
                np.abs(sc_), 1e-30))), "codes_identical": s / cl.size, "error_lmkit": el, "error_llmcompressor": ec,
                "error_ratio": el / ec if ec > 0 else None})
        norms = None
        if "smoothquant" in label:
            norms = max(float(np.max(np.abs(sl[k].astype(np.float64) - sc[k]) / np.abs(sc[k])))
                        for k in sl if k.endswith("layernorm.weight"))
        kl_l, kl_c = kl(lo, f_logits, evalw), kl(co, f_logits, evalw)
        doc["configs"].append({
            "config": label, "codes_identical": same / total, "kl_lmkit": kl_l, "kl_llmcompressor": kl_c,
            "smoothed_norms_max_rel_diff": norms, "layers": layers,
            "checks": {
                "scales_within_1e-5": all(x["scale_max_rel_diff"] <= 1e-5 for x in layers),
                "codes_99pct_identical": same / total >= 0.99,
                "errors_within_1pct": all(x["error_ratio"] is not None and abs(x["error_ratio"] - 1) <= 0.01
                                          for x in layers),
                "kl_at_most_5pct_above_llmcompressor": kl_l <= 1.05 * kl_c,
                "kl_below_lmkit_rtn": kl_l < rtn_kl,
            }})
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
