"""Runs the interop checks of scripts/interop-check.sh and prints ONE JSON line: overall ok, the versions used, and
per check ok / failures / details. Exit 1 when any check fails. Usage: run.py [CHECK...] (default: all six)."""
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

import check_compressed_tensors
import check_hf_families
import check_hf_tokenizers
import check_model_families
import check_ort_calibrators
import check_tiktoken
from common import REPO, Check, lmkit_bin, run_check


def llamacpp():
    """Check 5: scripts/llamacpp-check.sh (llama.cpp built from PyPI's llama-cpp-python sdist, and gguf's reader)."""
    c = Check("llamacpp")
    p = subprocess.run(["bash", os.path.join(REPO, "scripts", "llamacpp-check.sh")], stdout=subprocess.PIPE,
                       env=dict(os.environ, LMKIT=lmkit_bin()), text=True)
    lines = p.stdout.strip().splitlines()
    try:
        c.details = json.loads(lines[-1])
    except (IndexError, ValueError):
        c.fail("scripts/llamacpp-check.sh printed no JSON (exit %d)" % p.returncode)
        return c
    if p.returncode != 0:
        d = c.details
        if d.get("q8_0_tensors_differing"):
            c.fail("Q8_0 tensors differ from llama_model_quantize's: %s" % d["q8_0_tensors_differing"][:5])
        if d.get("greedy_prefix_llamacpp_vs_lmkit_same_weights", 0) < 8:
            c.fail("llama.cpp's greedy decode agrees with lmkit's for only %d tokens" %
                   d.get("greedy_prefix_llamacpp_vs_lmkit_same_weights", 0))
        if not d.get("gguf_reader", {}).get("ok", True):
            c.fail("gguf's reader: %s" % d["gguf_reader"].get("problems"))
        if c.ok:
            c.fail("scripts/llamacpp-check.sh exited %d" % p.returncode)
    return c


CHECKS = {"tiktoken": check_tiktoken.run, "hf_tokenizers": check_hf_tokenizers.run,
          "compressed_tensors": check_compressed_tensors.run, "ort_calibrators": check_ort_calibrators.run,
          "llamacpp": llamacpp, "model_families": check_model_families.run,
          "hf_families": check_hf_families.run}


def versions():
    v = {"python": platform.python_version(), "numpy": np.__version__}
    for mod in ("tiktoken", "tokenizers", "torch", "transformers", "compressed_tensors", "onnxruntime", "onnx"):
        try:
            v[mod] = __import__(mod).__version__
        except ImportError:
            v[mod] = None
    return v


def main():
    names = sys.argv[1:] or list(CHECKS)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        sys.exit("interop-check: unknown check(s) %s; the checks are %s" % (unknown, list(CHECKS)))
    lm = subprocess.run([lmkit_bin(), "--version"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"], capture_output=True,
                            text=True).stdout.strip()
    t0 = time.time()
    results = []
    for n in names:
        t = time.time()
        print("interop-check: %s ..." % n, file=sys.stderr, flush=True)
        r = run_check(n, CHECKS[n])
        r["seconds"] = round(time.time() - t, 1)
        print("interop-check: %s %s (%.0f s)" % (n, "ok" if r["ok"] else "FAILED", r["seconds"]), file=sys.stderr,
              flush=True)
        results.append(r)
    v = versions()
    for r in results:
        if r["name"] == "llamacpp":
            v.update(r["details"].get("versions", {}))
    doc = {"ok": all(r["ok"] for r in results), "lmkit": lm, "commit": commit, "versions": v,
           "failed": [r["name"] for r in results if not r["ok"]], "checks": results,
           "seconds": round(time.time() - t0, 1)}
    print(json.dumps(doc))
    sys.exit(0 if doc["ok"] else 1)


if __name__ == "__main__":
    main()
