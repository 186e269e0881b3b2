#!/usr/bin/env python3
"""Writes a Llama model directory for bench/model.sh (numpy only): config.json + model.safetensors with random
N(0, 0.02) weights (norms 1), untied lm_head, and a token file of random ids.
Usage: gen_llama_model.py DIR DTYPE HIDDEN LAYERS HEADS KV_HEADS FFN VOCAB SEQUENCES SEQ_LEN
DTYPE: F32 or BF16 (bf16 keeps the top 16 bits of the same fp32 values, so both files hold the same draws).
Writes DIR/tokens.npy (uint32 [SEQUENCES * SEQ_LEN], seed 1)."""
import json
import os
import struct
import sys

import numpy as np


def main():
    out, dtype = sys.argv[1], sys.argv[2]
    hidden, layers, heads, kv, ffn, vocab, nseq, seq = (int(v) for v in sys.argv[3:11])
    hd = hidden // heads
    os.makedirs(out, exist_ok=True)
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": vocab,
           "max_position_embeddings": max(2048, seq), "hidden_size": hidden, "intermediate_size": ffn,
           "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": hd,
           "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False, "hidden_act": "silu",
           "attention_bias": False, "mlp_bias": False, "bos_token_id": 1, "eos_token_id": 2,
           "torch_dtype": "float32" if dtype == "F32" else "bfloat16"}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    shapes = [("model.embed_tokens.weight", [vocab, hidden]), ("model.norm.weight", [hidden]),
              ("lm_head.weight", [vocab, hidden])]
    for i in range(layers):
        p = "model.layers.%d." % i
        shapes += [(p + "input_layernorm.weight", [hidden]), (p + "post_attention_layernorm.weight", [hidden]),
                   (p + "self_attn.q_proj.weight", [heads * hd, hidden]),
                   (p + "self_attn.k_proj.weight", [kv * hd, hidden]),
                   (p + "self_attn.v_proj.weight", [kv * hd, hidden]),
                   (p + "self_attn.o_proj.weight", [hidden, heads * hd]),
                   (p + "mlp.gate_proj.weight", [ffn, hidden]), (p + "mlp.up_proj.weight", [ffn, hidden]),
                   (p + "mlp.down_proj.weight", [hidden, ffn])]
    size = 4 if dtype == "F32" else 2
    header, off = {}, 0
    for name, shape in shapes:
        n = int(np.prod(shape)) * size
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    rng = np.random.default_rng(0)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for name, shape in shapes:
            if len(shape) == 1:
                w = np.ones(shape, dtype=np.float32)
            else:
                w = rng.standard_normal(int(np.prod(shape)), dtype=np.float32) * 0.02
            if dtype == "BF16":
                w = (w.view(np.uint32) >> 16).astype(np.uint16)
            f.write(w.tobytes())
    ids = np.random.default_rng(1).integers(3, vocab, nseq * seq, dtype=np.uint32)
    np.save(os.path.join(out, "tokens.npy"), ids)


if __name__ == "__main__":
    main()
