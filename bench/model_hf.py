#!/usr/bin/env python3
"""The transformers side of bench/model.sh: mean NLL and forward seconds of a causal LM over a token file cut into
windows of SEQ_LEN (the lmkit eval convention: every token after a window's first is scored).
Usage: model_hf.py MODEL_DIR TOKENS.npy SEQ_LEN THREADS DTYPE   (DTYPE float32 or bfloat16)
Prints one JSON line: mean_nll (log-softmax in float64 of the model's logits), seconds (forward passes only, after
one untimed warm-up window), cpu_seconds (the process's CPU time over the same calls), tokens, versions."""
import json
import sys
import time

import numpy as np
import torch
import transformers


def main():
    model_dir, tokens, seq, threads, dtype = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    torch.set_num_threads(threads)
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=getattr(torch, dtype))
    model.eval()
    ids = np.load(tokens).astype(np.int64)
    windows = [ids[i:i + seq] for i in range(0, len(ids), seq) if len(ids[i:i + seq]) >= 2]
    total, count, seconds, cpu = 0.0, 0, 0.0, 0.0
    with torch.inference_mode():
        model(torch.from_numpy(windows[0][:16])[None])  # warm-up (lazy init), not timed
        for w in windows:
            x = torch.from_numpy(w)[None]
            t0, c0 = time.perf_counter(), time.process_time()
            logits = model(x).logits[0]
            seconds += time.perf_counter() - t0
            cpu += time.process_time() - c0
            lp = torch.log_softmax(logits[:-1].double(), dim=-1)
            total -= lp.gather(1, x[0, 1:, None]).sum().item()
            count += len(w) - 1
    print(json.dumps({"mean_nll": total / count, "seconds": seconds, "cpu_seconds": cpu, "tokens": int(sum(len(w) for w in windows)),
                      "torch": torch.__version__, "transformers": transformers.__version__}))


if __name__ == "__main__":
    main()
