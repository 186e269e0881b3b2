#!/usr/bin/env python3
"""Writes e4m3_from_bf16.bin: for every bf16 bit pattern b in 0..65535 (in order), one byte, the bits of
torch.clamp(x, -448, 448).to(torch.float8_e4m3fn) where x is b widened to float32 -- the rounding compressed-tensors
applies to FP8 weights (clamp, then a cast that rounds to nearest even). NaN inputs give torch's NaN byte.

Run with any PyTorch >= 2.1 (torch.float8_e4m3fn); made with torch 2.15.0 from PyPI:
    python3 make_e4m3_from_bf16.py   # writes e4m3_from_bf16.bin next to this script
"""
import os

import torch

bits = torch.arange(65536, dtype=torch.int32).to(torch.int16)  # wraps 32768.. to negative: the same 16 bits
x = bits.view(torch.bfloat16).to(torch.float32)
q = torch.clamp(x, -448.0, 448.0).to(torch.float8_e4m3fn)
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "e4m3_from_bf16.bin")
with open(out, "wb") as f:
    f.write(q.view(torch.uint8).numpy().tobytes())
print(out, torch.__version__)
