#!/usr/bin/env bash
# Runs every side-by-side benchmark (lmkit vs its peers) in one go and regenerates the tables: each script writes its
# page under docs/benchmarks/, then bench/summary.py copies the pages' summary rows into docs/benchmarks.md. Not part
# of CI: it builds real corpora from Debian packages and installs the peers (../shared/bench/peers.sh: pip's native
# tiktoken and HF tokenizers; Debian's sentencepiece, numpy and PyTorch 1.13; scripts/heavy-venv.sh: PyTorch 2.x and
# ONNX Runtime from PyPI; scripts/llamacpp/build.sh: llama.cpp from PyPI's llama-cpp-python sdist).
#   bench/run-all.sh [--quick] [SCRIPT...]   SCRIPT: bpe bpe_encode bpe_corpora python quant quant_accuracy gguf dataload distributed
#     --quick  small inputs (a smoke run that proves the scripts work; the pages say so)
# A quiet machine is assumed: the scripts measure wall time. Env: LMKIT and what each script reads (see its header).
set -uo pipefail
cd "$(dirname "$0")/.."
quick=0
[ "${1:-}" = --quick ] && { quick=1; shift; }
scripts=("$@")
[ ${#scripts[@]} -gt 0 ] || scripts=(bpe bpe_encode bpe_corpora python quant quant_accuracy gguf dataload distributed)
status=0
for s in "${scripts[@]}"; do
  [ -f "bench/$s.sh" ] || { echo "run-all: no bench/$s.sh" >&2; status=1; continue; }
  args=()
  env=()
  if [ $quick = 1 ]; then
    case "$s" in
      bpe|bpe_encode|python|quant|gguf|dataload|distributed) args=(--quick) ;;
      bpe_corpora) args=(--quick 8) ;;
      quant_accuracy) env=(SAMPLES=4 NEW=32 CALIB_SAMPLES=2 OUT=/tmp/lmkit-quant-accuracy-quick.md) ;;
    esac
  fi
  echo "== bench/$s.sh ${args[*]} ${env[*]} ==" >&2
  t0=$(date +%s)
  env "${env[@]}" bash "bench/$s.sh" "${args[@]}" >/dev/null || { echo "run-all: bench/$s.sh failed" >&2; status=1; }
  echo "== bench/$s.sh: $(( $(date +%s) - t0 )) s ==" >&2
done
python3 bench/summary.py || status=1
exit $status
