#!/usr/bin/env python3
"""Loads an `lmkit quantize` compressed-tensors checkpoint with the real loader (transformers + compressed-tensors)
and checks it against an independent reading of the file. Needs torch, transformers and compressed-tensors, so it is
not part of CI (scripts/interop-check.sh runs it; tests/unit/quant/loader_rules_test.cpp holds the layout rules in CI).

Usage: check_ct_loader.py ORIGINAL_DIR QUANTIZED_DIR [--tokens 1,2,3,...]

Checks:
  - from_pretrained(QUANTIZED_DIR) reports no missing, unexpected or mismatched keys and no error messages;
  - every quantized Linear's decompressed weight equals the dequantization of the file read here without
    compressed-tensors (weight_packed bytes - 128, or I8 codes, or E4M3 bytes decoded from the format's definition,
    times weight_scale in the scale's dtype), exactly;
  - the logits equal, within 1e-5 (relative to the largest logit), those of the ORIGINAL model with those weights
    and the scheme's activation quantization simulated here (dynamic: per-token max|x| / 127.5 for INT8, / 448 for
    FP8; static: the file's input_scale), which is what compressed-tensors' forward does.
Prints one JSON line (also the logits' distance to the unquantized model's); exits 1 on the first failed check.
"""
import json
import os
import sys

import numpy as np
import torch
from safetensors import safe_open
from transformers import AutoModelForCausalLM


def fail(msg):
    print("check_ct_loader: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def e4m3_values():
    t = np.zeros(256)
    for b in range(256):
        e, m = (b >> 3) & 15, b & 7
        v = m * 2.0 ** -9 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
        t[b] = np.nan if (e == 15 and m == 7) else (-v if b & 0x80 else v)
    return t


def read_all(d):
    out = {}
    names = [n for n in os.listdir(d) if n.endswith(".safetensors")]
    for n in names:
        with safe_open(os.path.join(d, n), framework="pt") as f:
            for k in f.keys():
                out[k] = f.get_tensor(k)
    return out


def main():
    args = sys.argv[1:]
    tokens = [1, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120]
    if "--tokens" in args:
        i = args.index("--tokens")
        tokens = [int(t) for t in args[i + 1].split(",")]
        del args[i:i + 2]
    if len(args) != 2:
        fail(__doc__.split("\n\n")[1])
    orig, quant = args
    qc = json.load(open(os.path.join(quant, "config.json")))["quantization_config"]
    group = qc["config_groups"]["group_0"]
    fp8 = group["weights"]["type"] == "float"
    acts = group.get("input_activations")

    model, info = AutoModelForCausalLM.from_pretrained(quant, output_loading_info=True)
    bad = {k: v for k, v in info.items() if v}
    if bad:
        fail(f"loading info not empty: {bad}")

    ids = torch.tensor([tokens])
    # compressed-tensors decompresses the weights in a hook before the first forward pass.
    with torch.no_grad():
        a = model(ids).logits.float()
    st = read_all(quant)
    table = torch.tensor(e4m3_values())
    ref = AutoModelForCausalLM.from_pretrained(orig)
    n = 0
    for name, mod in ref.named_modules():
        if not isinstance(mod, torch.nn.Linear) or name + ".weight_scale" not in st:
            continue
        scale = st[name + ".weight_scale"]
        if name + ".weight_packed" in st:
            shape = st[name + ".weight_shape"].tolist()
            b = st[name + ".weight_packed"].contiguous().view(torch.uint8).reshape(shape[0], -1)
            if group["weights"]["num_bits"] == 4:  # two codes a byte, low nibble first, offset by 8
                nib = torch.stack([b & 0xF, b >> 4], dim=-1).reshape(shape[0], -1)
                codes = nib[:, :shape[1]].to(torch.float64) - 8
            else:
                codes = b[:, :shape[1]].to(torch.float64) - 128
        elif st[name + ".weight"].dtype == torch.int8:
            codes = st[name + ".weight"].to(torch.float64)
        else:
            codes = table[st[name + ".weight"].view(torch.uint8).long()]
        rows, cols = codes.shape
        full = scale.expand(rows, cols) if scale.numel() == 1 or scale.shape[-1] == 1 else \
            scale.repeat_interleave(cols // scale.shape[-1], dim=1)
        w = (codes.to(scale.dtype) * full).to(mod.weight.dtype)
        got = model.get_submodule(name).weight.detach()
        if got.shape != w.shape or not torch.equal(got, w):
            fail(f"{name}: decompressed weight differs from the file's dequantization by "
                 f"{(got.float() - w.float()).abs().max().item() if got.shape == w.shape else 'shape'}")
        with torch.no_grad():
            mod.weight.copy_(w)
        if acts is not None:
            static = not acts["dynamic"]
            in_scale = st[name + ".input_scale"].float() if static else None

            def pre(m, a, in_scale=in_scale, static=static):
                x = a[0]
                s = in_scale if static else x.abs().amax(dim=-1, keepdim=True) / (448.0 if fp8 else 127.5)
                if not static:
                    s = torch.where(s == 0, torch.finfo(torch.float32).eps, s)
                if fp8:
                    q = (x / s).clamp(-448, 448).to(torch.float8_e4m3fn).to(x.dtype)
                else:
                    q = torch.round(x / s).clamp(-128, 127)
                return (q * s,)

            mod.register_forward_pre_hook(pre)
        n += 1
    if n == 0:
        fail("no quantized Linear found")
    plain = AutoModelForCausalLM.from_pretrained(orig)
    with torch.no_grad():
        b = ref(ids).logits.float()
        c = plain(ids).logits.float()
    d = (a - b).abs().max().item()
    tol = 1e-5 * max(1.0, b.abs().max().item())
    if not d <= tol:
        fail(f"logits differ from the simulated scheme by {d:.3g} (> {tol:.3g})")
    print(json.dumps({"quantized_linears": n, "format": qc["format"], "max_abs_logit_diff_vs_simulated": d,
                      "max_abs_logit_diff_vs_float": round((a - c).abs().max().item(), 6)}))


if __name__ == "__main__":
    main()
