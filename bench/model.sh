#!/usr/bin/env bash
# The forward pass side by side (#43): `lmkit eval`, `generate` and `calibrate --model` against transformers on
# PyTorch's CPU path, llama.cpp and llm-compressor, same weights, same tokens, same windows, one run per configuration.
#   bench/model.sh [OUT.md]
# Model: a generated Llama (bench/gen_llama_model.py; default the 125M shape: hidden 768, 12 layers, heads 12 / kv 4,
# FFN 2048, vocab 32000, untied head) as F32 and as BF16 safetensors, and lmkit's W8A8 copy of the F32 one
# (`lmkit quantize --scheme w8a8`, per-channel weights, dynamic per-token activations). Tokens: SEQS x SEQ random ids.
# Per thread count (THREADS_LIST, default "1 2"):
#   prefill: transformers fp32 and lmkit fp32 (mean NLL must agree within 1e-5, else the script fails), transformers
#     bf16 (bf16 compute) and lmkit on the bf16 file (its NLL is held to transformers fp32 on the same bf16 weights,
#     also within 1e-5), lmkit W8A8 (compared with lmkit fp32);
#   decode: `lmkit generate` from one token, DECODE new tokens one at a time with the KV cache (tokens/s from two runs,
#     1 and DECODE + 1 new tokens, so that loading and the prompt cancel), fp32, bf16 and W8A8;
#   llama.cpp (LLAMACPP=1): scripts/llamacpp/time_gguf on an F32 GGUF of the same weights (scripts/llamacpp/
#     write_gguf.py) and on lmkit's Q8_0 GGUF (`quantize --format gguf-q8_0 --include .`): the same windows scored in
#     one batch each (its NLL is checked against transformers fp32 within 1e-4 for F32) and DECODE greedy one-token
#     decodes; ratios lmkit fp32 / llama.cpp F32, lmkit W8A8 / llama.cpp Q8_0;
#   calibration (CALIB=1): `lmkit calibrate --model --method minmax` (load included) against llm-compressor's oneshot
#     with static int8 activation observers (bench/model_llmc.py, its call only), same windows.
# FORMATS (default "f32 bf16 w8a8") limits the prefill/decode rows: FORMATS=f32 LLAMACPP=0 CALIB=0 for the ~1B shape:
#   HIDDEN=2048 LAYERS=16 HEADS=32 KV_HEADS=8 FFN=8192 SEQS=1 bench/model.sh.
# Every line gives wall seconds and CPU seconds (user + sys of the process, /usr/bin/time; transformers: the process's
# CPU time over its forward calls): on a shared machine the wall time includes time-slicing by other processes.
# The fp32 rows also give the share of the core's fp32 FMA peak (clock measured by bench/cpu_clock.c x 32 flops per
# cycle: AVX2, 2 FMA pipes x 8 lanes x 2) reached by the Linear layers' 2 x params flops per token over CPU seconds.
# Times: transformers' forward calls only (after a warm-up); lmkit's `seconds` (load included). Ratios are given by
# wall time and by CPU time; PyTorch's OpenMP threads spin while waiting, so its CPU time at 2 threads overstates work.
# Env: HIDDEN LAYERS HEADS KV_HEADS FFN VOCAB SEQS SEQ THREADS_LIST DECODE (128) FORMATS LLAMACPP (1) CALIB (1) HF_BF16
#   (1; 0 skips transformers' bf16 run, minutes on this CPU)
#   LLMC_PY (default ~/.cache/lmkit-llmc-overlay/bin/python) WORK (default /tmp/lmkit-model-bench, kept).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_need_lmkit
OUT=${1:-}
HIDDEN=${HIDDEN:-768} LAYERS=${LAYERS:-12} HEADS=${HEADS:-12} KV_HEADS=${KV_HEADS:-4} FFN=${FFN:-2048}
VOCAB=${VOCAB:-32000} SEQS=${SEQS:-8} SEQ=${SEQ:-512} THREADS_LIST=${THREADS_LIST:-"1 2"}
DECODE=${DECODE:-128} FORMATS=${FORMATS:-"f32 bf16 w8a8"} LLAMACPP=${LLAMACPP:-1} CALIB=${CALIB:-1} HF_BF16=${HF_BF16:-1}
LLMC_PY=${LLMC_PY:-$HOME/.cache/lmkit-llmc-overlay/bin/python}
WORK=${WORK:-/tmp/lmkit-model-bench}
HEAVY=$(bash "$REPO/scripts/heavy-venv.sh") || { echo "bench/model.sh: the heavy venv is not ready" >&2; exit 1; }
SHAPE="$HIDDEN-$LAYERS-$HEADS-$KV_HEADS-$FFN-$VOCAB-$SEQS-$SEQ"
has() { [[ " $FORMATS " == *" $1 "* ]]; }
mkdir -p "$WORK"
for dt in F32 BF16; do
  [ "$dt" = BF16 ] && ! has bf16 && continue
  d="$WORK/$SHAPE-$dt"
  [ -f "$d/model.safetensors" ] || "$HEAVY" "$REPO/bench/gen_llama_model.py" "$d" "$dt" "$HIDDEN" "$LAYERS" "$HEADS" \
    "$KV_HEADS" "$FFN" "$VOCAB" "$SEQS" "$SEQ"
done
F32="$WORK/$SHAPE-F32" BF16="$WORK/$SHAPE-BF16" W8A8="$WORK/$SHAPE-W8A8" TOK="$WORK/$SHAPE-F32/tokens.npy"
if has w8a8 && [ ! -f "$W8A8/model.safetensors" ]; then
  "$LMKIT" --quiet quantize "$F32" -o "$W8A8" --scheme w8a8 --granularity channel >/dev/null
fi
CLOCK=$(cc -O2 -o "$WORK/cpu_clock" "$REPO/bench/cpu_clock.c" && "$WORK/cpu_clock")

# timed CMD... : runs CMD, its stdout to $WORK/out.PID.txt (PID: this script's, so that two runs can share WORK),
# and prints {"wall": s, "cpu": user + sys, "rss_mb": peak}.
timed() {
  /usr/bin/time -f '%e %U %S %M' -o "$WORK/time.$$.txt" "$@" >"$WORK/out.$$.txt"
  read -r e u s m <"$WORK/time.$$.txt"
  python3 -c "import json,sys; e,u,s,m=map(float,sys.argv[1:]); print(json.dumps({'wall': e, 'cpu': u + s, 'rss_mb': m / 1024}))" \
    "$e" "$u" "$s" "$m"
}
merge() { python3 -c 'import json,sys; d={}; [d.update(json.loads(a)) for a in sys.argv[1:]]; print(json.dumps(d))' "$@"; }
lm() {  # DIR THREADS -> one JSON line
  local t
  t=$(timed "$LMKIT" --quiet --threads "$2" --json eval "$1" --tokens "$TOK" --seq-len "$SEQ")
  merge "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps({"mean_nll": d["mean_nll"], "seconds": d["seconds"]}))' "$WORK/out.$$.txt")" "$t"
}
gen_s() {  # DIR THREADS N -> "seconds cpu"
  local t
  t=$(timed "$LMKIT" --quiet --threads "$2" --json generate "$1" --prompt-ids 1 --max-tokens "$3")
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); t=json.loads(sys.argv[2]); print(d["seconds"], t["cpu"])' \
    "$WORK/out.$$.txt" "$t"
}
dec() {  # DIR THREADS -> {"decode_tps", "decode_cpu_tps"}
  local a b
  a=$(gen_s "$1" "$2" 1) b=$(gen_s "$1" "$2" $((DECODE + 1)))
  python3 -c 'import json,sys; a=list(map(float,sys.argv[1].split())); b=list(map(float,sys.argv[2].split())); n=int(sys.argv[3]); print(json.dumps({"decode_tps": n / (b[0] - a[0]), "decode_cpu_tps": n / max(1e-9, b[1] - a[1])}))' \
    "$a" "$b" "$DECODE"
}
hf() {
  "$HEAVY" "$REPO/bench/model_hf.py" "$1" "$TOK" "$SEQ" "$2" "$3"
}

if [ "$LLAMACPP" = 1 ]; then
  cache=$(bash "$REPO/scripts/llamacpp/build.sh")
  # shellcheck disable=SC1091
  . "$cache/llamacpp.env"
  [ -f "$WORK/$SHAPE-f32.gguf" ] || "$HEAVY" "$REPO/scripts/llamacpp/write_gguf.py" "$F32" "$WORK/$SHAPE-f32.gguf"
  [ -f "$WORK/$SHAPE-q8_0.gguf" ] ||
    "$LMKIT" --quiet --threads 2 quantize "$F32" -o "$WORK/$SHAPE-q8_0.gguf" --format gguf-q8_0 --include . >/dev/null
  "$HEAVY" -c 'import numpy as np, sys; np.load(sys.argv[1]).astype("<u4").tofile(sys.argv[2])' "$TOK" "$WORK/$SHAPE.u32"
  ll() {  # GGUF THREADS
    local t
    t=$(timed "$cache/time_gguf" "$1" "$LLAMACPP_LIB" "$2" "$WORK/$SHAPE.u32" "$SEQ" "$DECODE")
    merge "$(cat "$WORK/out.$$.txt")" "$t"
  }
fi

RES="$WORK/$SHAPE-results.jsonl"
: >"$RES"
rec() { echo "{\"run\": \"$1\", \"threads\": $2, \"r\": $3}" >>"$RES"; echo "done: $1 threads $2" >&2; }
has bf16 && rec hf-f32-on-bf16 2 "$(hf "$BF16" 2 float32)"
for t in $THREADS_LIST; do
  rec hf-f32 "$t" "$(hf "$F32" "$t" float32)"
  rec lm-f32 "$t" "$(lm "$F32" "$t")"
  rec lm-f32-dec "$t" "$(dec "$F32" "$t")"
  if has bf16; then
    [ "$HF_BF16" = 1 ] && rec hf-bf16 "$t" "$(hf "$BF16" "$t" bfloat16)"
    rec lm-bf16 "$t" "$(lm "$BF16" "$t")"
    rec lm-bf16-dec "$t" "$(dec "$BF16" "$t")"
  fi
  if has w8a8; then
    rec lm-w8a8 "$t" "$(lm "$W8A8" "$t")"
    rec lm-w8a8-dec "$t" "$(dec "$W8A8" "$t")"
  fi
  if [ "$LLAMACPP" = 1 ]; then
    rec ll-f32 "$t" "$(ll "$WORK/$SHAPE-f32.gguf" "$t")"
    rec ll-q8 "$t" "$(ll "$WORK/$SHAPE-q8_0.gguf" "$t")"
  fi
  if [ "$CALIB" = 1 ]; then
    rec lm-calib "$t" "$(timed "$LMKIT" --quiet --threads "$t" calibrate --model "$F32" --tokens "$TOK" --seq-len "$SEQ" \
      --method minmax -o "$WORK/$SHAPE-calib.json")"
    rec llmc-calib "$t" "$("$LLMC_PY" "$REPO/bench/model_llmc.py" "$F32" "$TOK" "$SEQ" "$t" 2>"$WORK/llmc.$$.log" | tail -1)"
  fi
done

LLV=""
[ "$LLAMACPP" = 1 ] && LLV="llama.cpp ${LLAMACPP_VERSION} ${LLAMACPP_COMMIT} (llama-cpp-python ${LLAMA_CPP_PYTHON_VERSION} sdist, ggml ${GGML_VERSION}, -march=native CPU build)"
python3 - "$RES" "$SHAPE" "$SEQS" "$SEQ" "$THREADS_LIST" "$("$LMKIT" --version 2>/dev/null | head -1) (git $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null))" "$OUT" "$CLOCK" "$DECODE" "$LLV" <<'PY'
import json, platform, sys
res, shape, seqs, seq, threads, lmver, out, clock, decode, llv = sys.argv[1:11]
rows = [json.loads(l) for l in open(res)]
def get(run, t):
    return next((r["r"] for r in rows if r["run"] == run and r["threads"] == t), None)
tokens = int(seqs) * int(seq)
H, L, heads, kv, F, V = (int(x) for x in shape.split("-")[:6])
hd = H // heads
linear_params = L * (H * heads * hd + 2 * H * kv * hd + heads * hd * H + 3 * H * F) + V * H
peak = float(clock) * 32  # GFLOP/s per core: 2 FMA pipes x 8 fp32 lanes x 2 flops
hfv = next(r["r"] for r in rows if r["run"] == "hf-f32")
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
lines = [f"Model {shape} (hidden-layers-heads-kv-ffn-vocab-seqs-seq), {tokens} tokens, {linear_params / 1e6:.0f}M "
         f"Linear parameters (head included); transformers {hfv['transformers']} on PyTorch {hfv['torch']} (CPU); "
         f"{lmver}; {llv + '; ' if llv else ''}CPU {cpu}, measured clock {float(clock):.2f} GHz (fp32 FMA peak "
         f"{peak:.0f} GFLOP/s per core). Wall seconds include time-slicing by other processes; CPU seconds do not.", "",
         "| threads | run | mean NLL | wall s | CPU s | tokens/s | ratio | Linear GFLOP/s per CPU s (share of one core's peak) |",
         "|---|---|---|---|---|---|---|---|"]
bad = []
ref_bf16 = get("hf-f32-on-bf16", 2)
def tps(r): return tokens / r["seconds"]
def cpu_of(r): return r.get("cpu_seconds", r.get("cpu")) or 0
def ratio(a, b, what):  # a's speed over b's, by wall time and by CPU time
    c = f" / {cpu_of(b) / cpu_of(a):.2f}x by CPU" if cpu_of(a) and cpu_of(b) else ""
    return f"{tps(a) / tps(b):.2f}x by wall{c} {what}"
def eff(r):
    cpu_s = r.get("cpu_seconds", r.get("cpu"))
    if not cpu_s: return ""
    g = 2 * linear_params * tokens / cpu_s / 1e9
    return f"{g:.0f} ({100 * g / peak:.0f}%)"
def row(t, name, r, ratio, effcol=True):
    nll = f"{r['mean_nll']:.7f}" if "mean_nll" in r else ""
    cpu_s = r.get("cpu_seconds", r.get("cpu", 0))
    lines.append(f"| {t} | {name} | {nll} | {r['seconds']:.2f} | {cpu_s:.2f} | {tps(r):.0f} | {ratio} | {eff(r) if effcol else ''} |")
for t in (int(x) for x in threads.split()):
    hf, lm = get("hf-f32", t), get("lm-f32", t)
    if abs(lm["mean_nll"] - hf["mean_nll"]) > 1e-5: bad.append(f"fp32 threads {t}: {lm['mean_nll']} vs {hf['mean_nll']}")
    row(t, "transformers fp32", hf, "1")
    row(t, "lmkit eval fp32", lm, ratio(lm, hf, "transformers fp32"))
    hb, lb, lq = get("hf-bf16", t), get("lm-bf16", t), get("lm-w8a8", t)
    if lb:
        if abs(lb["mean_nll"] - ref_bf16["mean_nll"]) > 1e-5:
            bad.append(f"bf16 threads {t}: {lb['mean_nll']} vs transformers fp32 on the bf16 weights {ref_bf16['mean_nll']}")
        if hb: row(t, "transformers bf16", hb, "1", False)
        row(t, f"lmkit eval bf16 file (peak RSS {lb['rss_mb']:.0f} MB)", lb, ratio(lb, hb, "transformers bf16") if hb else "", False)
    if lq: row(t, "lmkit eval W8A8", lq, ratio(lq, lm, "lmkit fp32"), False)
    lf, l8 = get("ll-f32", t), get("ll-q8", t)
    if lf:
        for r in (lf, l8): r["seconds"], r["cpu"] = r["eval_seconds"], r["eval_cpu_seconds"]
        if abs(lf["mean_nll"] - hf["mean_nll"]) > 1e-4: bad.append(f"llama.cpp F32 threads {t}: {lf['mean_nll']} vs {hf['mean_nll']}")
        row(t, "llama.cpp F32 GGUF (scoring)", lf, "lmkit fp32 " + ratio(lm, lf, ""), False)
        row(t, "llama.cpp Q8_0 GGUF (scoring)", l8, "lmkit W8A8 " + ratio(lq, l8, "") if lq else "", False)
    lc, mc = get("lm-calib", t), get("llmc-calib", t)
    if lc and mc:
        lc["seconds"] = lc["wall"]
        mc["cpu"] = mc.get("cpu_seconds")
        row(t, "llm-compressor oneshot calibration (static int8 activations)", mc, "1", False)
        row(t, "lmkit calibrate --model --method minmax (load included)", lc, ratio(lc, mc, "llm-compressor"), False)
lines += ["", f"Decode (one token at a time with the KV cache, {decode} tokens after a one-token prompt; tokens/s by wall "
          "time and by CPU time):", "", "| threads | run | tokens/s | tokens/s per CPU s | ratio |", "|---|---|---|---|---|"]
for t in (int(x) for x in threads.split()):
    lf, l8 = get("ll-f32", t), get("ll-q8", t)
    for run, name, ref, refname in (("lm-f32-dec", "lmkit generate fp32", lf, "llama.cpp F32"),
                                    ("lm-bf16-dec", "lmkit generate bf16 file", None, ""),
                                    ("lm-w8a8-dec", "lmkit generate W8A8", l8, "llama.cpp Q8_0")):
        r = get(run, t)
        if not r: continue
        rt = (f"{r['decode_tps'] / (int(decode) / ref['decode_seconds']):.2f}x by wall / "
              f"{r['decode_cpu_tps'] / (int(decode) / ref['decode_cpu_seconds']):.2f}x by CPU {refname}") if ref else ""
        lines.append(f"| {t} | {name} | {r['decode_tps']:.1f} | {r['decode_cpu_tps']:.1f} | {rt} |")
    for r, name in ((lf, "llama.cpp F32 GGUF"), (l8, "llama.cpp Q8_0 GGUF")):
        if r: lines.append(f"| {t} | {name} | {int(decode) / r['decode_seconds']:.1f} | {int(decode) / r['decode_cpu_seconds']:.1f} | 1 |")
if ref_bf16: lines += ["", f"transformers fp32 on the bf16 weights (the bf16 NLL reference): {ref_bf16['mean_nll']:.7f}"]
text = "\n".join(lines) + "\n"
print(text)
if out: open(out, "w").write(text)
if bad:
    print("bench/model.sh: mean NLL differs: " + "; ".join(bad), file=sys.stderr)
    sys.exit(1)
PY
