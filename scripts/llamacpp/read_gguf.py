#!/usr/bin/env python3
"""Reads a GGUF with llama.cpp's own Python reader (`gguf` from PyPI: GGUFReader, gguf.quants) and compares what it
sees with tests/scripts/check_gguf.py's independent parser: the same key/value pairs, the same tensors (names, ggml
types, shapes, bytes), and the same dequantized values for every quantized tensor. Run by scripts/llamacpp-check.sh
with the python of its cached venv. Prints one JSON line with "ok".

Usage: read_gguf.py FILE.gguf
"""
import importlib.metadata
import json
import os
import sys

import gguf
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "scripts"))
import check_gguf  # noqa: E402  (the independent parser; standard library + numpy)


def field_value(f):
    """A GGUFReader field as a plain value (strings decoded, one-element arrays unwrapped)."""
    if f.types and f.types[0] == gguf.GGUFValueType.ARRAY:
        vals = [f.parts[i] for i in f.data]
        if f.types[-1] == gguf.GGUFValueType.STRING:
            return [bytes(v).decode("utf-8") for v in vals]
        return [v.tolist()[0] for v in vals]
    v = f.parts[f.data[0]]
    return bytes(v).decode("utf-8") if f.types[0] == gguf.GGUFValueType.STRING else v.tolist()[0]


def main():
    path = sys.argv[1]
    problems = []
    r = gguf.GGUFReader(path)
    kv, tensors = check_gguf.read_gguf(path)
    theirs = {k: field_value(f) for k, f in r.fields.items() if not k.startswith("GGUF.")}
    for k, v in kv.items():
        if k not in theirs:
            problems.append("gguf does not see key %s" % k)
        elif isinstance(v, float) and not np.isclose(theirs[k], v, rtol=1e-6, atol=0):
            problems.append("key %s: gguf %r, check_gguf %r" % (k, theirs[k], v))
        elif not isinstance(v, float) and theirs[k] != v:
            problems.append("key %s: gguf %r, check_gguf %r" % (k, str(theirs[k])[:80], str(v)[:80]))
    extra = sorted(set(theirs) - set(kv))
    if extra:
        problems.append("gguf sees keys check_gguf does not: %s" % extra[:5])
    seen = {}
    quantized = 0
    for t in r.tensors:
        seen[t.name] = t
        if t.name not in tensors:
            problems.append("gguf sees tensor %s, check_gguf does not" % t.name)
            continue
        shape, ttype, raw = tensors[t.name]
        if [int(x) for x in t.shape] != list(shape) or int(t.tensor_type) != ttype:
            problems.append("%s: gguf %s type %d, check_gguf %s type %d" % (
                t.name, [int(x) for x in t.shape], int(t.tensor_type), list(shape), ttype))
            continue
        if bytes(t.data.tobytes()) != raw:
            problems.append("%s: gguf reads other bytes" % t.name)
            continue
        if t.tensor_type == gguf.GGMLQuantizationType.Q8_0:
            quantized += 1
            n = int(np.prod(shape))
            mine, _ = check_gguf.q8_0_dequantize(raw, n)
            ref = gguf.quants.dequantize(t.data, t.tensor_type).reshape(-1)
            if not np.array_equal(np.asarray(mine, dtype=np.float32), ref.astype(np.float32)):
                problems.append("%s: gguf.quants dequantizes Q8_0 differently (max diff %g)" % (
                    t.name, float(np.abs(np.asarray(mine, dtype=np.float32) - ref).max())))
    missing = sorted(set(tensors) - set(seen))
    if missing:
        problems.append("gguf does not see tensors %s" % missing[:5])
    print(json.dumps({"ok": not problems, "gguf": importlib.metadata.version("gguf"), "tensors": len(seen),
                      "q8_0_dequantized_equal": quantized, "keys": len(theirs), "problems": problems[:10]}))


if __name__ == "__main__":
    main()
