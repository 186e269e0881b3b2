#!/usr/bin/env python3
"""Independent check of `lmkit quantize` output (Python standard library + numpy only; shares no code with lmkit).

Usage: check_quantized.py ORIGINAL QUANTIZED [--min-tensor-sqnr DB] [--min-total-sqnr DB] [--scheme w8a16|w8a8]

ORIGINAL/QUANTIZED: both .safetensors files, or both model directories (model.safetensors or an index + shards).
Checks, from the safetensors spec and the compressed-tensors conventions (docs/quant.md):
  - every tensor of ORIGINAL that has `<m>.weight_scale` in QUANTIZED was quantized: `<m>.weight` is I8 with the same
    shape, codes in [-128, 127], the scale has the original dtype and shape [out,1] / [1] / [out,in/G], and every
    dequantized value code * scale is within scale/2 (+ fp32 slack 2e-5 * scale) of the original;
  - every other tensor is byte-identical;
  - per-tensor and total SQNR (dB) are above the floors;
  - a directory output has config.json with a compressed-tensors quantization_config and an index that maps every
    output tensor to the shard holding it.
Prints one JSON line with the figures; exits 1 on the first failed check.
"""
import json
import os
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16, "I8": np.int8, "U8": np.uint8, "I32": np.int32, "I64": np.int64,
          "F64": np.float64, "BF16": None}


def fail(msg):
    print("check_quantized: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        tensors[name] = (info["dtype"], list(info["shape"]), blob[base + b:base + e])
    return header.get("__metadata__", {}), tensors


def to_f64(dtype, shape, raw):
    if dtype == "BF16":
        u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        arr = u.view(np.float32)
    else:
        arr = np.frombuffer(raw, dtype=np.dtype(DTYPES[dtype]).newbyteorder("<"))
    return arr.astype(np.float64).reshape(shape)


def files_of(path):
    if os.path.isdir(path):
        idx = os.path.join(path, "model.safetensors.index.json")
        if os.path.exists(idx):
            with open(idx) as f:
                wm = json.load(f)["weight_map"]
            return sorted(set(wm.values())), wm
        return ["model.safetensors"], None
    return [None], None


def load_all(path):
    names, wm = files_of(path)
    out, where = {}, {}
    for n in names:
        p = path if n is None else os.path.join(path, n)
        _, t = read_safetensors(p)
        for k, v in t.items():
            if k in out:
                fail(f"tensor {k} appears in two shards")
            out[k] = v
            where[k] = n
    return out, where, wm


def main():
    args = sys.argv[1:]
    opts = {"--min-tensor-sqnr": 0.0, "--min-total-sqnr": 0.0, "--scheme": "w8a16"}
    pos = []
    i = 0
    while i < len(args):
        if args[i] in opts:
            opts[args[i]] = type(opts[args[i]])(args[i + 1])
            i += 2
        else:
            pos.append(args[i])
            i += 1
    if len(pos) != 2:
        fail("usage: check_quantized.py ORIGINAL QUANTIZED [options]")
    orig, _, _ = load_all(pos[0])
    quant, where, wm = load_all(pos[1])

    sig = noise = 0.0
    worst = None
    nq = ncopied = 0
    for name, (dt, shape, raw) in orig.items():
        m = name[:-len(".weight")] if name.endswith(".weight") else None
        if m is not None and m + ".weight_scale" in quant:
            qdt, qshape, qraw = quant[name]
            sdt, sshape, sraw = quant[m + ".weight_scale"]
            if qdt != "I8" or qshape != shape:
                fail(f"{name}: expected I8 {shape}, got {qdt} {qshape}")
            if sdt != dt:
                fail(f"{m}.weight_scale has dtype {sdt}, the weight was {dt}")
            q = np.frombuffer(qraw, dtype=np.int8).astype(np.float64).reshape(shape)
            s = to_f64(sdt, sshape, sraw)
            rows, cols = shape
            if sshape == [1]:
                full = np.full(shape, s[0])
            elif sshape == [rows, 1]:
                full = np.repeat(s, cols, axis=1)
            elif len(sshape) == 2 and sshape[0] == rows and cols % sshape[1] == 0:
                full = np.repeat(s, cols // sshape[1], axis=1)
            else:
                fail(f"{m}.weight_scale has shape {sshape} for a {shape} weight")
            if not np.all(np.isfinite(s)) or np.any(s < 0):
                fail(f"{m}.weight_scale has negative or non-finite values")
            x = to_f64(dt, shape, raw)
            err = np.abs(x - q * full)
            bound = full * (0.5 + 2e-5)
            if np.any(err > bound):
                k = int(np.argmax(err - bound))
                fail(f"{name}: |x - q*s| = {err.flat[k]:.3g} > scale/2 = {full.flat[k] / 2:.3g} at flat index {k}")
            e2 = float(np.sum((x - q * full) ** 2))
            x2 = float(np.sum(x * x))
            t_sqnr = 10 * np.log10(x2 / e2) if e2 > 0 else float("inf")
            if t_sqnr < opts["--min-tensor-sqnr"]:
                fail(f"{name}: SQNR {t_sqnr:.2f} dB below the floor {opts['--min-tensor-sqnr']}")
            if worst is None or t_sqnr < worst[1]:
                worst = (name, t_sqnr)
            sig += x2
            noise += e2
            has_in = m + ".input_scale" in quant
            if (opts["--scheme"] == "w8a8-static") != has_in:
                fail(f"{m}.input_scale {'present' if has_in else 'missing'} for scheme {opts['--scheme']}")
            nq += 1
        else:
            if name not in quant:
                fail(f"{name} missing from the output")
            if quant[name] != (dt, shape, raw):
                fail(f"{name} was not copied byte for byte")
            ncopied += 1
    if nq == 0:
        fail("no quantized tensors found")
    total = 10 * np.log10(sig / noise) if noise > 0 else float("inf")
    if total < opts["--min-total-sqnr"]:
        fail(f"total SQNR {total:.2f} dB below the floor {opts['--min-total-sqnr']}")

    if os.path.isdir(pos[1]):
        with open(os.path.join(pos[1], "config.json")) as f:
            qc = json.load(f).get("quantization_config")
        if not qc or qc.get("quant_method") != "compressed-tensors" or qc.get("format") != "int-quantized":
            fail("config.json lacks a compressed-tensors int-quantized quantization_config")
        w = qc["config_groups"]["group_0"]["weights"]
        if w["num_bits"] != 8 or w["type"] != "int" or w["symmetric"] is not True:
            fail("quantization_config weights are not 8-bit symmetric int")
        acts = qc["config_groups"]["group_0"].get("input_activations")
        if opts["--scheme"] == "w8a16" and acts is not None:
            fail("w8a16 must not declare input_activations")
        if opts["--scheme"].startswith("w8a8") and (acts is None or acts["num_bits"] != 8):
            fail("w8a8 must declare 8-bit input_activations")
        if wm is not None:
            for k, shard in where.items():
                if wm.get(k) != shard:
                    fail(f"index maps {k} to {wm.get(k)}, it is in {shard}")
            if set(wm) != set(where):
                fail("index weight_map and shard contents differ")

    print(json.dumps({"quantized": nq, "copied": ncopied, "total_sqnr_db": round(total, 3),
                      "worst_tensor": worst[0], "worst_sqnr_db": round(worst[1], 3)}))


if __name__ == "__main__":
    main()
