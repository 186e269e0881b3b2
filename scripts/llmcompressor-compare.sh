#!/usr/bin/env bash
# lmkit's GPTQ and SmoothQuant against llm-compressor's `oneshot` on the same model and calibration tokens (issue #40):
# scales, integer codes, smoothed norms, per-layer reconstruction error and KL(float || quantized). Not CI: it installs
# llmcompressor (scripts/llmcompressor/requirements.txt) into a venv of its own, because llmcompressor pins
# transformers, torch and compressed-tensors older than the interop venv's. Prints one JSON document.
# Usage: scripts/llmcompressor-compare.sh [MODEL_DIR]     (default tests/data/model/stories260K)
# Environment: LMKIT (default build/release/lmkit), LMKIT_LLMC_VENV (default ~/.cache/lmkit-llmcompressor-venv),
# CALIB_SAMPLES (calibration windows, default 64), CONFIGS (comma-separated configuration labels to run, default all).
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-tests/data/model/stories260K}
LMKIT=${LMKIT:-$PWD/build/release/lmkit}
[ -x "$LMKIT" ] || { echo "llmcompressor-compare: build lmkit first ($LMKIT)" >&2; exit 1; }
VENV=${LMKIT_LLMC_VENV:-$HOME/.cache/lmkit-llmcompressor-venv}
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import llmcompressor" 2>/dev/null; then
  python3 -m venv "$VENV" >&2
  "$VENV/bin/pip" install -q -r scripts/llmcompressor/requirements.txt >&2
fi
WORK=$(mktemp -d /tmp/lmkit-llmc.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# Windows of 256 tokens, or of the model's context where that is shorter (compare.py reads the same length).
SEQ=$("$VENV/bin/python" -c 'import json,sys; print(min(256, json.load(open(sys.argv[1]))["max_position_embeddings"]))' "$MODEL/config.json")
"$LMKIT" generate "$MODEL" --prompt-ids 1 --max-tokens $((SEQ - 1)) --temperature 1 --seed 11 --samples "${CALIB_SAMPLES:-64}" -o "$WORK/calib.npy" >/dev/null
"$LMKIT" generate "$MODEL" --prompt-ids 1 --max-tokens $((SEQ - 1)) --temperature 1 --seed 22 --samples 32 -o "$WORK/eval.npy" >/dev/null
LMKIT=$(realpath "$LMKIT") "$VENV/bin/python" -u scripts/llmcompressor/compare.py "$MODEL" "$WORK"
