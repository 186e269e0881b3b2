#!/usr/bin/env python3
"""Writes a Hugging Face Llama model directory as an unquantized GGUF (standard library + numpy): the input that
llama.cpp's own quantizer (llama_model_quantize) takes, for the side-by-side checks in scripts/llamacpp-check.sh and
bench/gguf.sh. Same names, q/k row order and header keys as `lmkit quantize --format gguf-q8_0` (docs/quant.md), but
every tensor in its own dtype (1-D tensors as F32) and general.file_type 0 / 1 / 32 (all F32 / mostly F16 / BF16).

Usage: write_gguf.py MODEL_DIR OUT.gguf
"""
import json
import os
import re
import struct
import sys

import numpy as np

GGML = {"F32": 0, "F16": 1, "BF16": 30}
NAMES = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
         "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
         "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}


def gguf_name(hf):
    n = hf[6:] if hf.startswith("model.") else hf
    fixed = {"embed_tokens.weight": "token_embd.weight", "norm.weight": "output_norm.weight"}
    if n in fixed:
        return fixed[n]
    if hf == "lm_head.weight":
        return "output.weight"
    m = re.fullmatch(r"layers\.(\d+)\.(.+)\.(weight|bias)", n)
    return "blk.%s.%s.%s" % (m.group(1), NAMES[m.group(2)], m.group(3))


def s(v):
    b = v.encode()
    return struct.pack("<Q", len(b)) + b


def main():
    model_dir, out = sys.argv[1:3]
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    blob = open(os.path.join(model_dir, "model.safetensors"), "rb").read()
    (hn,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + hn])
    heads = cfg["num_attention_heads"]
    heads_kv = cfg.get("num_key_value_heads", heads)
    tensors = []
    dtypes = set()
    for name, info in header.items():
        if name == "__metadata__" or name.endswith("rotary_emb.inv_freq"):
            continue
        b, e = info["data_offsets"]
        raw, dt, shape = blob[8 + hn + b:8 + hn + e], info["dtype"], info["shape"]
        arr = np.frombuffer(raw, dtype={"F32": "<f4", "F16": "<f2", "BF16": "<u2"}[dt]).reshape(shape)
        if len(shape) == 1 and dt != "F32":
            arr = (arr.astype(np.uint32) << 16).view(np.float32) if dt == "BF16" else arr.astype("<f4")
            dt = "F32"
        g = gguf_name(name)
        if ".attn_q." in g or ".attn_k." in g:
            h = heads if ".attn_q." in g else heads_kv
            arr = arr.reshape(h, 2, shape[0] // h // 2, *shape[1:]).swapaxes(1, 2).reshape(shape)
        if len(shape) == 2:
            dtypes.add(dt)
        tensors.append((g, shape[::-1], GGML[dt], np.ascontiguousarray(arr).tobytes()))
    ftype = 32 if "BF16" in dtypes else 1 if "F16" in dtypes else 0
    hd = cfg.get("head_dim") or cfg["hidden_size"] // heads
    kv = [("general.architecture", 8, "llama"), ("general.name", 8, os.path.basename(os.path.normpath(model_dir))),
          ("general.file_type", 4, ftype), ("llama.vocab_size", 4, cfg["vocab_size"]),
          ("llama.context_length", 4, cfg["max_position_embeddings"]),
          ("llama.embedding_length", 4, cfg["hidden_size"]), ("llama.block_count", 4, cfg["num_hidden_layers"]),
          ("llama.feed_forward_length", 4, cfg["intermediate_size"]), ("llama.attention.head_count", 4, heads),
          ("llama.attention.head_count_kv", 4, heads_kv), ("llama.rope.dimension_count", 4, hd),
          ("llama.attention.layer_norm_rms_epsilon", 6, cfg.get("rms_norm_eps", 1e-6)),
          ("llama.rope.freq_base", 6, cfg.get("rope_theta", 10000.0)), ("tokenizer.ggml.model", 8, "none")]
    h = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for k, t, v in kv:
        h += s(k) + struct.pack("<I", t) + (s(v) if t == 8 else struct.pack("<I" if t == 4 else "<f", v))
    off = 0
    for g, ne, t, data in tensors:
        h += s(g) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne) + struct.pack("<IQ", t, off)
        off = (off + len(data) + 31) // 32 * 32
    with open(out, "wb") as f:
        f.write(h + b"\0" * ((-len(h)) % 32))
        for _, _, _, data in tensors:
            f.write(data + b"\0" * ((-len(data)) % 32))


if __name__ == "__main__":
    main()
