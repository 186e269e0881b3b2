#!/usr/bin/env python3
"""Independent check of `lmkit quantize` output (Python standard library + numpy only; shares no code with lmkit).

Usage: check_quantized.py ORIGINAL QUANTIZED [--min-tensor-sqnr DB] [--min-total-sqnr DB]
                          [--scheme w8a16|w8a8|w8a8-static|fp8|fp8-static]

ORIGINAL/QUANTIZED: both .safetensors files, or both model directories (model.safetensors or an index + shards).
Checks, from the safetensors spec and the compressed-tensors conventions (docs/quant.md):
  - every tensor of ORIGINAL that has `<m>.weight_scale` in QUANTIZED was quantized, in the scheme's layout:
    w8a16: `<m>.weight_packed` I32 [out, ceil(in/4)] (code + 128 in byte i % 4 of word i / 4) and `<m>.weight_shape`
    I64 [out, in]; w8a8: `<m>.weight` I8; fp8: `<m>.weight` F8_E4M3 (decoded from the OCP E4M3FN definition). The
    scale has the original dtype and shape [out,1] / [1] / [out,in/G], and every dequantized value code * scale is
    within scale/2 (+ fp32 slack 2e-5 * scale) of the original for INT8, within 2^-4 |x| (or 2^-10 scale below the
    normal range) for FP8;
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
          "F64": np.float64, "BF16": None, "F8_E4M3": np.uint8}


def e4m3_table():
    """The 256 values of OCP E4M3FN: bias 7, 3 mantissa bits, subnormals at exponent 0, S.1111.111 NaN."""
    t = np.zeros(256)
    for b in range(256):
        e, m = (b >> 3) & 15, b & 7
        v = m * 2.0 ** -9 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
        if e == 15 and m == 7:
            v = np.nan
        t[b] = -v if b & 0x80 else v
    return t


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
            fp8 = opts["--scheme"].startswith("fp8")
            if opts["--scheme"] == "w8a16":
                if name in quant:
                    fail(f"{name} is still in the output next to {m}.weight_packed")
                pdt, pshape, praw = quant[m + ".weight_packed"]
                wdt, wshape, wraw = quant[m + ".weight_shape"]
                if wdt != "I64" or wshape != [2] or list(np.frombuffer(wraw, "<i8")) != shape:
                    fail(f"{m}.weight_shape is {wdt} {wshape}, not I64 [2] holding {shape}")
                if pdt != "I32" or pshape != [shape[0], (shape[1] + 3) // 4]:
                    fail(f"{m}.weight_packed is {pdt} {pshape}, expected I32 [{shape[0]}, {(shape[1] + 3) // 4}]")
                b = np.frombuffer(praw, np.uint8).reshape(shape[0], pshape[1] * 4)
                if np.any(b[:, shape[1]:] != 0):
                    fail(f"{m}.weight_packed has non-zero padding bytes")
                qraw, qdt, qshape = (b[:, :shape[1]].astype(np.int16) - 128).astype(np.int8).tobytes(), "I8", shape
            else:
                qdt, qshape, qraw = quant[name]
                want = "F8_E4M3" if fp8 else "I8"
                if qdt != want:
                    fail(f"{name}: expected {want}, got {qdt}")
            sdt, sshape, sraw = quant[m + ".weight_scale"]
            if qshape != shape:
                fail(f"{name}: expected shape {shape}, got {qshape}")
            if sdt != dt:
                fail(f"{m}.weight_scale has dtype {sdt}, the weight was {dt}")
            if fp8:
                q = e4m3_table()[np.frombuffer(qraw, dtype=np.uint8)].reshape(shape)
                if np.any(np.isnan(q)):
                    fail(f"{name}: NaN codes")
            else:
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
            bound = np.maximum(np.abs(x) * 2.0 ** -4, full * 2.0 ** -10) * (1 + 1e-6) if fp8 else full * (0.5 + 2e-5)
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
            if opts["--scheme"].endswith("static") != has_in:
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
        fmt = {"w8a16": "pack-quantized", "fp8": "float-quantized", "fp8-static": "float-quantized"}.get(
            opts["--scheme"], "int-quantized")
        if not qc or qc.get("quant_method") != "compressed-tensors" or qc.get("format") != fmt:
            fail(f"config.json lacks a compressed-tensors {fmt} quantization_config")
        if qc["config_groups"]["group_0"].get("format") != fmt:
            fail(f"config group format is not {fmt}")
        w = qc["config_groups"]["group_0"]["weights"]
        wtype = "float" if opts["--scheme"].startswith("fp8") else "int"
        if w["num_bits"] != 8 or w["type"] != wtype or w["symmetric"] is not True:
            fail(f"quantization_config weights are not 8-bit symmetric {wtype}")
        acts = qc["config_groups"]["group_0"].get("input_activations")
        if opts["--scheme"] == "w8a16" and acts is not None:
            fail("w8a16 must not declare input_activations")
        if opts["--scheme"] != "w8a16" and (acts is None or acts["num_bits"] != 8 or acts["type"] != wtype):
            fail(f"{opts['--scheme']} must declare 8-bit {wtype} input_activations")
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
