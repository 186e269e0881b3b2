#!/usr/bin/env bash
# The forward pass side by side (#43): `lmkit eval` against transformers on PyTorch's CPU path, same weights, same
# tokens, same windows, one run per configuration.
#   bench/model.sh [OUT.md]
# Model: a generated Llama (bench/gen_llama_model.py; default the 125M shape: hidden 768, 12 layers, heads 12 / kv 4,
# FFN 2048, vocab 32000, untied head) as F32 and as BF16 safetensors, and lmkit's W8A8 copy of the F32 one
# (`lmkit quantize --scheme w8a8`, per-channel weights, dynamic per-token activations). Tokens: SEQS x SEQ random ids.
# Per thread count (THREADS_LIST, default "1 2"): transformers fp32 and lmkit fp32 (mean NLL must agree within 1e-5,
# else the script fails), transformers bf16 (bf16 compute) and lmkit on the bf16 file (its NLL is held to transformers
# fp32 on the same bf16 weights, also within 1e-5), lmkit W8A8 (compared with lmkit fp32). Times: transformers' forward
# calls only (after a warm-up); lmkit's `seconds` (load included).
# Env: HIDDEN LAYERS HEADS KV_HEADS FFN VOCAB SEQS SEQ THREADS_LIST WORK (default /tmp/lmkit-model-bench, kept).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_need_lmkit
OUT=${1:-}
HIDDEN=${HIDDEN:-768} LAYERS=${LAYERS:-12} HEADS=${HEADS:-12} KV_HEADS=${KV_HEADS:-4} FFN=${FFN:-2048}
VOCAB=${VOCAB:-32000} SEQS=${SEQS:-8} SEQ=${SEQ:-512} THREADS_LIST=${THREADS_LIST:-"1 2"}
WORK=${WORK:-/tmp/lmkit-model-bench}
HEAVY=$(bash "$REPO/scripts/heavy-venv.sh") || { echo "bench/model.sh: the heavy venv is not ready" >&2; exit 1; }
SHAPE="$HIDDEN-$LAYERS-$HEADS-$KV_HEADS-$FFN-$VOCAB-$SEQS-$SEQ"
mkdir -p "$WORK"
for dt in F32 BF16; do
  d="$WORK/$SHAPE-$dt"
  [ -f "$d/model.safetensors" ] || "$HEAVY" "$REPO/bench/gen_llama_model.py" "$d" "$dt" "$HIDDEN" "$LAYERS" "$HEADS" \
    "$KV_HEADS" "$FFN" "$VOCAB" "$SEQS" "$SEQ"
done
F32="$WORK/$SHAPE-F32" BF16="$WORK/$SHAPE-BF16" W8A8="$WORK/$SHAPE-W8A8" TOK="$WORK/$SHAPE-F32/tokens.npy"
[ -f "$W8A8/model.safetensors" ] ||
  "$LMKIT" --quiet quantize "$F32" -o "$W8A8" --scheme w8a8 --granularity channel >/dev/null

lm() {  # DIR THREADS -> one JSON line
  "$LMKIT" --quiet --threads "$2" --json eval "$1" --tokens "$TOK" --seq-len "$SEQ" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({"mean_nll": d["mean_nll"], "seconds": d["seconds"]}))'
}
hf() { "$HEAVY" "$REPO/bench/model_hf.py" "$1" "$TOK" "$SEQ" "$2" "$3"; }

RES="$WORK/$SHAPE-results.jsonl"
: >"$RES"
rec() { echo "{\"run\": \"$1\", \"threads\": $2, \"r\": $3}" >>"$RES"; echo "done: $1 threads $2" >&2; }
rec hf-f32-on-bf16 2 "$(hf "$BF16" 2 float32)"
for t in $THREADS_LIST; do
  rec hf-f32 "$t" "$(hf "$F32" "$t" float32)"
  rec lm-f32 "$t" "$(lm "$F32" "$t")"
  rec hf-bf16 "$t" "$(hf "$BF16" "$t" bfloat16)"
  rec lm-bf16 "$t" "$(lm "$BF16" "$t")"
  rec lm-w8a8 "$t" "$(lm "$W8A8" "$t")"
done

python3 - "$RES" "$SHAPE" "$SEQS" "$SEQ" "$THREADS_LIST" "$("$LMKIT" --version 2>/dev/null | head -1) (git $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null))" "$OUT" <<'PY'
import json, platform, sys
res, shape, seqs, seq, threads, lmver, out = sys.argv[1:8]
rows = [json.loads(l) for l in open(res)]
get = lambda run, t: next(r["r"] for r in rows if r["run"] == run and r["threads"] == t)
tokens = int(seqs) * int(seq)
ref_bf16 = get("hf-f32-on-bf16", 2)
hfv = next(r["r"] for r in rows if r["run"] == "hf-f32")
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
lines = [f"Model {shape} (hidden-layers-heads-kv-ffn-vocab-seqs-seq), {tokens} tokens; transformers "
         f"{hfv['transformers']} on PyTorch {hfv['torch']} (CPU); {lmver}; CPU {cpu}.", "",
         "| threads | run | mean NLL | seconds | tokens/s | ratio |", "|---|---|---|---|---|---|"]
bad = []
for t in (int(x) for x in threads.split()):
    hf, lm, hb, lb, lq = (get(n, t) for n in ("hf-f32", "lm-f32", "hf-bf16", "lm-bf16", "lm-w8a8"))
    tps = lambda r: tokens / r["seconds"]
    if abs(lm["mean_nll"] - hf["mean_nll"]) > 1e-5: bad.append(f"fp32 threads {t}: {lm['mean_nll']} vs {hf['mean_nll']}")
    if abs(lb["mean_nll"] - ref_bf16["mean_nll"]) > 1e-5:
        bad.append(f"bf16 threads {t}: {lb['mean_nll']} vs transformers fp32 on the bf16 weights {ref_bf16['mean_nll']}")
    lines += [f"| {t} | transformers fp32 | {hf['mean_nll']:.7f} | {hf['seconds']:.2f} | {tps(hf):.0f} | 1 |",
              f"| {t} | lmkit fp32 | {lm['mean_nll']:.7f} | {lm['seconds']:.2f} | {tps(lm):.0f} | {tps(lm) / tps(hf):.2f}x transformers fp32 |",
              f"| {t} | transformers bf16 | {hb['mean_nll']:.7f} | {hb['seconds']:.2f} | {tps(hb):.0f} | 1 |",
              f"| {t} | lmkit bf16 file | {lb['mean_nll']:.7f} | {lb['seconds']:.2f} | {tps(lb):.0f} | {tps(lb) / tps(hb):.2f}x transformers bf16 |",
              f"| {t} | lmkit W8A8 | {lq['mean_nll']:.7f} | {lq['seconds']:.2f} | {tps(lq):.0f} | {tps(lq) / tps(lm):.2f}x lmkit fp32 |"]
lines += ["", f"transformers fp32 on the bf16 weights (the bf16 NLL reference): {ref_bf16['mean_nll']:.7f}"]
text = "\n".join(lines) + "\n"
print(text)
if out: open(out, "w").write(text)
if bad:
    print("bench/model.sh: mean NLL differs by more than 1e-5: " + "; ".join(bad), file=sys.stderr)
    sys.exit(1)
PY
