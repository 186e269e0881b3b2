#!/usr/bin/env python3
"""Writes a synthetic bf16 Llama-like safetensors checkpoint of N 2-D projections [rows, cols] for benchmarks.
Usage: gen_checkpoint.py OUT.safetensors TENSORS ROWS COLS. Values: N(0, 0.02) with a few outliers; 4 distinct
random tensors are reused round-robin (content does not change quantization speed; generating 1e9 normals would
dominate the benchmark setup)."""
import json
import struct
import sys

import numpy as np

out, n, rows, cols = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(0)
bases = []
for k in range(min(4, n)):
    x = rng.standard_normal((rows, cols), dtype=np.float32) * 0.02
    x.flat[rng.integers(0, x.size, 64)] *= 50
    bases.append((x.view(np.uint32) >> 16).astype(np.uint16).tobytes())
header, off = {}, 0
size = rows * cols * 2
for i in range(n):
    header[f"model.layers.{i}.mlp.up_proj.weight"] = {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [off, off + size]}
    off += size
h = json.dumps(header, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(h)))
    f.write(h)
    for i in range(n):
        f.write(bases[i % len(bases)])
