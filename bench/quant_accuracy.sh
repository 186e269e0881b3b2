#!/usr/bin/env bash
# What INT8 quantization does to a real model's outputs: stories260K under every scheme/calibrator lmkit offers,
# compared with the float model on token sequences sampled from stories260K itself. One run writes the table between
# the quant-accuracy markers of docs/quant.md.
#   1. eval set: `lmkit generate` from BOS at temperature 1.0 (plain softmax sampling, seed 1): SAMPLES sequences of
#      1 + NEW tokens, scored as independent windows of that length (--seq-len), so every window starts at BOS.
#   2. calibration set: the same recipe with seed 2 (CALIB_SAMPLES sequences) - disjoint from the eval set.
#   3. checkpoints: `lmkit quantize` w8a16 per-channel and per-tensor; w8a8 (per-channel weights) with static
#      per-tensor activation scales from `lmkit calibrate --model` (minmax, percentile 99.99, entropy, mse; nvidia
#      flavour), and with dynamic per-token activations.
#   4. `lmkit eval FLOAT --compare QUANTIZED`: perplexity delta, mean and p99 per-token KL(float || quantized), top-1
#      agreement.
# Environment: LMKIT (default build/release/lmkit), MODEL (default tests/data/model/stories260K), SAMPLES (64),
# NEW (256), CALIB_SAMPLES (16), WORK (default a temp dir), THREADS (2), OUT (the page holding the markers; default
# docs/quant.md; another path starts as a copy of it).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO"
OUT=${OUT:-docs/quant.md}
[ -f "$OUT" ] || cp docs/quant.md "$OUT"
MODEL=${MODEL:-tests/data/model/stories260K}
SAMPLES=${SAMPLES:-64}
NEW=${NEW:-256}
CALIB_SAMPLES=${CALIB_SAMPLES:-16}
THREADS=${THREADS:-2}
WORK=${WORK:-$(mktemp -d)}
bench_need_lmkit
command -v python3 >/dev/null || { echo "bench/quant_accuracy.sh: needs python3 (for the table)" >&2; exit 1; }
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
lm() { "$LMKIT" --quiet --threads "$THREADS" "$@"; }
SEQ=$((NEW + 1))

lm generate "$MODEL" --prompt-ids 1 --max-tokens "$NEW" --temperature 1 --seed 1 --samples "$SAMPLES" -o "$WORK/eval.npy" >&2
lm generate "$MODEL" --prompt-ids 1 --max-tokens "$NEW" --temperature 1 --seed 2 --samples "$CALIB_SAMPLES" \
  -o "$WORK/calib.npy" >&2

rows=()
add() {  # checkpoint-name scheme weights activations calibration (checkpoint in $WORK/<checkpoint-name>)
  lm --json eval "$MODEL" --tokens "$WORK/eval.npy" --seq-len "$SEQ" --compare "$WORK/$1" >"$WORK/$1.json"
  rows+=("$2|$3|$4|$5|$WORK/$1.json")
  echo "done: $1" >&2
}
lm quantize "$MODEL" -o "$WORK/w8a16-channel" --scheme w8a16 --granularity channel >/dev/null
add w8a16-channel w8a16 "per-channel" "fp32" "-"
lm quantize "$MODEL" -o "$WORK/w8a16-tensor" --scheme w8a16 --granularity tensor >/dev/null
add w8a16-tensor w8a16 "per-tensor" "fp32" "-"
for method in minmax percentile entropy mse; do
  lm calibrate --model "$MODEL" --tokens "$WORK/calib.npy" --seq-len "$SEQ" --method "$method" -o "$WORK/$method.json" >/dev/null
  lm quantize "$MODEL" -o "$WORK/w8a8-$method" --scheme w8a8 --granularity channel --calibration "$WORK/$method.json" >/dev/null
  label=$method
  [ "$method" = percentile ] && label="percentile 99.99"
  add "w8a8-$method" w8a8 "per-channel" "static per-tensor" "$label"
done
lm quantize "$MODEL" -o "$WORK/w8a8-dynamic" --scheme w8a8 --granularity channel >/dev/null
add w8a8-dynamic w8a8 "per-channel" "dynamic per-token" "-"

python3 - "$OUT" "$SAMPLES" "$SEQ" "$CALIB_SAMPLES" "${rows[@]}" <<'PY'
import json, re, sys
out, samples, seq, calib = sys.argv[1:5]
lines = []
base = None
for row in sys.argv[5:]:
    scheme, w, a, c, path = row.split("|")
    j = json.load(open(path))
    base = base or j
    k = j["compare"]
    lines.append(f"| {scheme} | {w} | {a} | {c} | {k['perplexity']:.4f} | {k['ppl_delta']:+.4f} | "
                 f"{k['mean_kl']:.2e} | {k['p99_kl']:.2e} | {k['top1_agreement']:.4f} |")
head = (f"Float model: perplexity {base['perplexity']:.4f} (mean NLL {base['mean_nll']:.4f} nats) on "
        f"{base['tokens_scored']} scored tokens ({base['sequences']} sequences of {seq} tokens sampled from "
        f"stories260K at temperature 1, seed 1); static activation scales calibrated on {calib} other sequences "
        f"(seed 2).\n\n"
        "| scheme | weights | activations | calibration | ppl | ppl delta | mean KL | p99 KL | top-1 agreement |\n"
        "|---|---|---|---|---|---|---|---|---|\n")
table = head + "\n".join(lines) + "\n"
doc = open(out).read()
begin, end = "<!-- quant-accuracy:begin (bench/quant_accuracy.sh) -->\n", "<!-- quant-accuracy:end -->"
if begin not in doc:
    sys.exit(out + " has no quant-accuracy markers")
pre, rest = doc.split(begin, 1)
post = rest.split(end, 1)[1]
open(out, "w").write(pre + begin + table + end + post)
print(table)
PY
