#!/usr/bin/env python3
"""Independent check of `lmkit quantize --format gguf-q8_0` (Python standard library + numpy; shares no code with lmkit).

Usage: check_gguf.py MODEL_DIR OUTPUT.gguf [--min-tensor-sqnr DB] [--min-total-sqnr DB] [--dequantized FILE]

MODEL_DIR is the Hugging Face Llama model that was quantized (config.json + model.safetensors). Checks, from the GGUF
specification (version 3), ggml's Q8_0 block layout and llama.cpp's Llama tensor names (docs/quant.md):
  - the file parses: magic, version 3, every key/value and tensor info; data offsets are 32-byte aligned and inside the
    file; the header keys general.architecture = llama, the llama.* hyperparameters equal config.json's, and
    tokenizer.ggml.model = none;
  - every input tensor is present under its llama.cpp name with the reversed (ggml) shape; q_proj / k_proj rows are
    in rotary-pair order (per head, row 2i + j holds input row j * head_dim / 2 + i);
  - selected weights (2-D *.weight outside embeddings, norms, lm_head) whose rows are a multiple of 32 long are Q8_0,
    byte for byte the blocks of ggml's reference rule (d = max|x| / 127 in fp32, codes round-half-away(x * (1 / d)),
    d stored as fp16), and every dequantized value fp16(d) * q is within fp16(d) / 2 + 127 |d - fp16(d)| of the input;
  - everything else holds the input values exactly (1-D tensors as F32, 2-D in their own dtype);
  - per-tensor and total SQNR (dB) are above the floors.
--dequantized FILE writes the dequantized model back as a .safetensors file with the Hugging Face names (F32).
Prints one JSON line with the figures; exits 1 on the first failed check.
"""
import json
import os
import re
import struct
import sys

import numpy as np

import check_quantized  # the same directory: its safetensors reader


def fail(msg):
    print("check_gguf: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def read_safetensors(path):
    """{name: (dtype, shape, float32 values, raw bytes)}, from check_quantized.py's reader (float64 -> float32 is
    exact for F32/F16/BF16 values)."""
    _, tensors = check_quantized.read_safetensors(path)
    return {name: (dt, shape, check_quantized.to_f64(dt, shape, raw).astype(np.float32), raw)
            for name, (dt, shape, raw) in tensors.items()}


class Reader:
    def __init__(self, blob):
        self.b = blob
        self.p = 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.b, self.p)
        self.p += struct.calcsize("<" + fmt)
        return v[0]

    def string(self):
        n = self.take("Q")
        if self.p + n > len(self.b):
            fail("string runs past the end of the file")
        s = self.b[self.p:self.p + n].decode("utf-8")
        self.p += n
        return s

    SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(self, t):
        if t in self.SCALARS:
            return self.take(self.SCALARS[t])
        if t == 8:
            return self.string()
        if t == 9:
            et = self.take("I")
            n = self.take("Q")
            return [self.value(et) for _ in range(n)]
        fail("unknown metadata value type %d" % t)


def read_gguf(path):
    with open(path, "rb") as f:
        blob = f.read()
    r = Reader(blob)
    if blob[:4] != b"GGUF":
        fail("bad magic")
    r.p = 4
    if r.take("I") != 3:
        fail("not GGUF version 3")
    n_tensors, n_kv = r.take("Q"), r.take("Q")
    kv = {}
    for _ in range(n_kv):
        k = r.string()
        if k in kv:
            fail("duplicate key " + k)
        kv[k] = r.value(r.take("I"))
    align = kv.get("general.alignment", 32)
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        nd = r.take("I")
        ne = [r.take("Q") for _ in range(nd)]
        infos.append((name, ne, r.take("I"), r.take("Q")))
    data = (r.p + align - 1) // align * align
    if any(blob[r.p:data]):
        fail("non-zero padding after the header")
    tensors = {}
    for name, ne, t, off in infos:
        if off % align:
            fail("tensor %s: offset %d not aligned" % (name, off))
        n = int(np.prod(ne))
        size = {0: 4 * n, 1: 2 * n, 30: 2 * n, 8: n // 32 * 34}.get(t)
        if size is None:
            fail("tensor %s: unexpected ggml type %d" % (name, t))
        if data + off + size > len(blob):
            fail("tensor %s runs past the end of the file" % name)
        if name in tensors:
            fail("duplicate tensor " + name)
        tensors[name] = (ne, t, blob[data + off:data + off + size])
    return kv, tensors


def q8_0_reference(x):
    """ggml's quantize_row_q8_0_ref on a float32 [rows, cols] array -> bytes of the blocks, row by row."""
    blocks = x.reshape(-1, 32).astype(np.float32)
    d = (np.abs(blocks).max(axis=1, keepdims=True) / np.float32(127)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(d == 0, np.float32(0), np.float32(1) / d).astype(np.float32)
    v = (blocks * inv).astype(np.float32)
    a = np.abs(v)
    fl = np.floor(a)
    q = (np.sign(v) * (fl + (a - fl >= 0.5))).astype(np.int8)
    out = np.concatenate([d.astype("<f2").view(np.uint8), q.view(np.uint8)], axis=1)
    return out.tobytes(), d


def q8_0_dequantize(raw, n):
    blk = np.frombuffer(raw, dtype=np.uint8).reshape(n // 32, 34)
    d = blk[:, :2].copy().view("<f2").astype(np.float32)
    q = blk[:, 2:].copy().view(np.int8).astype(np.float32)
    return (q * d).astype(np.float32).reshape(-1), d


def llama_name(hf):
    n = hf[6:] if hf.startswith("model.") else hf
    if n == "embed_tokens.weight":
        return "token_embd.weight"
    if n == "norm.weight":
        return "output_norm.weight"
    if hf == "lm_head.weight":
        return "output.weight"
    m = re.fullmatch(r"layers\.(\d+)\.(.+)\.(weight|bias)", n)
    table = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}
    if not m or m.group(2) not in table:
        fail("no llama.cpp name known for " + hf)
    return "blk.%s.%s.%s" % (m.group(1), table[m.group(2)], m.group(3))


def unpermute_rows(x, heads):
    """Rotary halves -> interleaved pairs, per head (what llama.cpp expects of q/k)."""
    rows = x.shape[0]
    d = rows // heads
    return x.reshape(heads, 2, d // 2, *x.shape[1:]).swapaxes(1, 2).reshape(x.shape)


def selected(name, shape):
    if not name.endswith(".weight") or len(shape) != 2:
        return False
    return not re.search(r"(^|\.)(embed_tokens|lm_head)(\.|$)|norm", name)


def sqnr(x, xh):
    e = float(np.sum((x.astype(np.float64) - xh.astype(np.float64)) ** 2))
    s = float(np.sum(x.astype(np.float64) ** 2))
    return float("inf") if e == 0 else 10 * np.log10(s / e), s, e


def main():
    args = sys.argv[1:]
    opts = {"--min-tensor-sqnr": None, "--min-total-sqnr": None, "--dequantized": None}
    pos = []
    i = 0
    while i < len(args):
        if args[i] in opts:
            opts[args[i]] = args[i + 1]
            i += 2
        else:
            pos.append(args[i])
            i += 1
    model_dir, gguf_path = pos
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    src = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    kv, tensors = read_gguf(gguf_path)

    heads = cfg["num_attention_heads"]
    heads_kv = cfg.get("num_key_value_heads", heads)
    expect_kv = {
        "general.architecture": "llama", "general.file_type": 7, "tokenizer.ggml.model": "none",
        "llama.vocab_size": cfg["vocab_size"], "llama.context_length": cfg["max_position_embeddings"],
        "llama.embedding_length": cfg["hidden_size"], "llama.block_count": cfg["num_hidden_layers"],
        "llama.feed_forward_length": cfg["intermediate_size"], "llama.attention.head_count": heads,
        "llama.attention.head_count_kv": heads_kv,
        "llama.rope.dimension_count": cfg.get("head_dim") or cfg["hidden_size"] // heads,
    }
    for k, v in expect_kv.items():
        if kv.get(k) != v:
            fail("key %s = %r, expected %r" % (k, kv.get(k), v))
    for k, v in (("llama.attention.layer_norm_rms_epsilon", cfg.get("rms_norm_eps", 1e-6)),
                 ("llama.rope.freq_base", cfg.get("rope_theta", 10000.0))):
        if kv.get(k) != np.float32(v):
            fail("key %s = %r, expected %r" % (k, kv.get(k), v))

    figures = {"tensors": 0, "q8_0": 0, "kept": [], "min_tensor_sqnr_db": float("inf")}
    tot_s = tot_e = 0.0
    deq = {}
    seen = set()
    for hf, (dt, shape, x, raw) in src.items():
        if hf.endswith("rotary_emb.inv_freq"):
            continue
        gname = llama_name(hf)
        seen.add(gname)
        if gname not in tensors:
            fail("missing tensor %s (%s)" % (gname, hf))
        ne, t, data = tensors[gname]
        if ne != shape[::-1]:
            fail("%s: ne %s, expected %s" % (gname, ne, shape[::-1]))
        if ".attn_q." in gname:
            x = unpermute_rows(x, heads)
        elif ".attn_k." in gname:
            x = unpermute_rows(x, heads_kv)
        figures["tensors"] += 1
        if selected(hf, shape) and shape[1] % 32 == 0:
            if t != 8:
                fail("%s: type %d, expected Q8_0" % (gname, t))
            ref, d32 = q8_0_reference(x)
            if data != ref:
                fail("%s: Q8_0 blocks differ from ggml's reference rule" % gname)
            xh, d16 = q8_0_dequantize(data, x.size)
            bound = d16 / 2 + 127 * np.abs(d32 - d16) + 1e-6 * d16
            err = np.abs(xh.reshape(-1, 32) - x.reshape(-1, 32))
            if np.any(err > bound):
                fail("%s: a dequantized value is off by more than d/2" % gname)
            db, s, e = sqnr(x.reshape(-1), xh)
            tot_s += s
            tot_e += e
            figures["q8_0"] += 1
            figures["min_tensor_sqnr_db"] = min(figures["min_tensor_sqnr_db"], db)
            if opts["--min-tensor-sqnr"] and db < float(opts["--min-tensor-sqnr"]):
                fail("%s: SQNR %.2f dB below the floor" % (hf, db))
            deq[hf] = xh.reshape(shape)
        else:
            if selected(hf, shape):
                figures["kept"].append(hf)
            want = 0 if len(shape) == 1 or dt == "F32" else {"F16": 1, "BF16": 30}[dt]
            if t != want:
                fail("%s: type %d, expected %d" % (gname, t, want))
            if t == 0:
                got = np.frombuffer(data, dtype="<f4").reshape(shape)
            elif t == 1:
                got = np.frombuffer(data, dtype="<f2").astype(np.float32).reshape(shape)
            else:
                got = (np.frombuffer(data, dtype="<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
            if not np.array_equal(got, x):
                fail("%s: values differ from the input" % gname)
            deq[hf] = got
    if set(tensors) != seen:
        fail("unexpected tensors: %s" % sorted(set(tensors) - seen))
    figures["total_sqnr_db"] = 10 * np.log10(tot_s / tot_e)
    if opts["--min-total-sqnr"] and figures["total_sqnr_db"] < float(opts["--min-total-sqnr"]):
        fail("total SQNR %.2f dB below the floor" % figures["total_sqnr_db"])
    if opts["--dequantized"]:
        write_dequantized(opts["--dequantized"], deq, heads, heads_kv)
    print(json.dumps(figures))


def write_dequantized(path, deq, heads, heads_kv):
    header, blobs, off = {}, [], 0
    for name, x in deq.items():
        if ".self_attn.q_proj." in name or ".self_attn.k_proj." in name:  # back to the Hugging Face row order
            h = heads if ".q_proj." in name else heads_kv
            d = x.shape[0] // h
            x = x.reshape(h, d // 2, 2, *x.shape[1:]).swapaxes(1, 2).reshape(x.shape)
        b = np.ascontiguousarray(x, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(x.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


if __name__ == "__main__":
    main()
