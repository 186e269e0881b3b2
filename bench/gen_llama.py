#!/usr/bin/env python3
"""Writes a Llama-shaped Hugging Face model directory with random BF16 weights (standard library + numpy), for
bench/gguf.sh. Usage: gen_llama.py DIR LAYERS [HIDDEN FFN VOCAB]"""
import json
import os
import struct
import sys

import numpy as np


def main():
    out, layers = sys.argv[1], int(sys.argv[2])
    hidden, ffn, vocab = (int(v) for v in (sys.argv[3:6] if len(sys.argv) > 5 else (4096, 11008, 32000)))
    os.makedirs(out, exist_ok=True)
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": vocab,
           "max_position_embeddings": 4096, "hidden_size": hidden, "intermediate_size": ffn,
           "num_hidden_layers": layers, "num_attention_heads": hidden // 128, "num_key_value_heads": hidden // 128,
           "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": True}
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"))
    shapes = [("model.embed_tokens.weight", [vocab, hidden]), ("model.norm.weight", [hidden])]
    for i in range(layers):
        p = "model.layers.%d." % i
        shapes += [(p + "input_layernorm.weight", [hidden]), (p + "post_attention_layernorm.weight", [hidden])]
        shapes += [(p + "self_attn.%s_proj.weight" % k, [hidden, hidden]) for k in "qkvo"]
        shapes += [(p + "mlp.gate_proj.weight", [ffn, hidden]), (p + "mlp.up_proj.weight", [ffn, hidden]),
                   (p + "mlp.down_proj.weight", [hidden, ffn])]
    header, off = {}, 0
    for name, shape in shapes:
        n = int(np.prod(shape)) * 2
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(header).encode()
    rng = np.random.default_rng(0)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for name, shape in shapes:
            w = rng.standard_normal(int(np.prod(shape)), dtype=np.float32) * 0.02
            if len(shape) == 1:
                w += 1.0
            f.write((w.view(np.uint32) >> 16).astype("<u2").tobytes())


if __name__ == "__main__":
    main()
