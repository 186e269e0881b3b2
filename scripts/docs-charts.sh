#!/usr/bin/env bash
# Draws the charts the docs show, from the samples shipped in the repository (tests/data), with the lmkit binary in
# $LMKIT (default build/release/lmkit), into OUT_DIR (default docs/). The test suite runs it into a scratch directory
# and compares the result with docs/*.svg, so a change to a chart fails CI until this script is run again.
#   bash scripts/docs-charts.sh [OUT_DIR]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
lmkit="${LMKIT:-$repo/build/release/lmkit}"
[ -x "$lmkit" ] || { echo "docs-charts: no lmkit binary at $lmkit (build first, or set LMKIT)" >&2; exit 1; }
lmkit="$(cd "$(dirname "$lmkit")" && pwd)/$(basename "$lmkit")"
out="${1:-$repo/docs}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Commands run in $work on relative names, so the charts' titles do not depend on where the repository lives.
ln -s "$repo/tests/data/model/stories260K" "$work/stories260K"
ln -s "$repo/tests/data/quant/laplace_acts.npy" "$work/laplace_acts.npy"
ln -s "$repo/tests/data/plan/serving.json" "$work/serving.json"
ln -s "$repo/tests/data/dataload/traces/few-workers.torch2.15.json.gz" "$work/few-workers.json.gz"
cd "$work"
run() { "$lmkit" --quiet "$@" >/dev/null; }

# docs/accounting.md: forward FLOP shares of the GPT-2 XL shape by sequence length.
run flops cs336-gpt2-xl --sweep seq-len=1024,4096,16384 --svg "$out/accounting_sweep.svg"
# docs/plan.md: the memory map of the worked example.
run plan serving.json --svg "$out/plan_memory_map.svg"
# docs/quant.md: the shipped activations' |x| histogram with the four methods' thresholds.
run calibrate laplace_acts.npy --method entropy -o calib.json --svg "$out/calibrate_histogram.svg"
# docs/quant.md: per-layer error of INT8 weights of the shipped model.
run quantize stories260K -o stories260K-w8a16 --svg "$out/quantize_error.svg"
# docs/model.md: KL by position between the model and its INT8 copy, on text the model wrote itself.
run generate stories260K --prompt-ids 1 --max-tokens 255 --temperature 1 --seed 3 --samples 4 -o tokens.bin
run eval stories260K --tokens tokens.bin --compare stories260K-w8a16 --seq-len 256 --svg "$out/eval_kl.svg"
# docs/dataload.md: per-step data wait of a real PyTorch 2.x loop with too few DataLoader workers.
run dataload trace few-workers.json.gz --svg "$out/dataload_trace.svg"
