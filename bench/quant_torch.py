#!/usr/bin/env python3
"""The PyTorch side of bench/quant.sh (Debian python3-torch, CPU).
  quantize CKPT THREADS   per-row absmax, scale = absmax/127.5, round, clamp, int8 for every 2-D tensor of a bf16
                          safetensors file (tensors read from the page cache with numpy; only the quantization math is
                          timed). Prints wall and CPU seconds of the timed region and params.
  histogram NPY THREADS   torch.ao HistogramObserver (2048 bins) over a float32 .npy, fed in 10 batches, then
                          calculate_qparams(), three times with a fresh observer. Prints wall and CPU seconds of the
                          fastest run, then the wall seconds of np.load (reading the same file lmkit reads; not timed)."""
import json
import struct
import sys
import time

import numpy as np
import torch


def quantize(path, threads):
    torch.set_num_threads(threads)
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    base = 8 + n
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    total = cpu = 0.0
    params = 0
    for name, info in header.items():
        if name == "__metadata__" or len(info["shape"]) != 2:
            continue
        b, e = info["data_offsets"]
        raw = np.frombuffer(mm[base + b:base + e], dtype=np.int16).reshape(info["shape"])
        w = torch.from_numpy(raw).view(torch.bfloat16)
        t0, c0 = time.perf_counter(), time.process_time()
        absmax = w.abs().amax(dim=1, keepdim=True).float()
        scale = absmax / 127.5
        q = torch.round(w.float() / scale).clamp_(-128, 127).to(torch.int8)
        total += time.perf_counter() - t0
        cpu += time.process_time() - c0
        params += w.numel()
        del q
    print(f"{total:.4f} {cpu:.4f} {params}")


def histogram(path, threads):
    torch.set_num_threads(threads)
    l0 = time.perf_counter()
    x = torch.from_numpy(np.load(path).reshape(-1))
    load = time.perf_counter() - l0
    best = None
    for _ in range(3):  # best of 3, as lmkit's in-memory side (bench/quant_inmem.cpp)
        obs = torch.ao.quantization.HistogramObserver(bins=2048)
        t0, c0 = time.perf_counter(), time.process_time()
        for chunk in torch.chunk(x, 10):
            obs(chunk)
        obs.calculate_qparams()
        run = (time.perf_counter() - t0, time.process_time() - c0)
        best = run if best is None or run[0] < best[0] else best
    print(f"{best[0]:.4f} {best[1]:.4f} {load:.4f}")


if __name__ == "__main__":
    {"quantize": quantize, "histogram": histogram}[sys.argv[1]](sys.argv[2], int(sys.argv[3]))
