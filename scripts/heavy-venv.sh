#!/usr/bin/env bash
# Prints the python of a venv with the heavy PyPI packages (scripts/heavy-requirements.txt: PyTorch 2.x, transformers,
# compressed-tensors, ONNX Runtime, gguf, tiktoken, tokenizers) for scripts/interop-check.sh and bench/quant.sh. Not CI.
#   LMKIT_HEAVY_VENV=DIR   use that venv as it is (e.g. /work/venvs/heavy): nothing is installed, and the callers report
#                          the versions they find
#   otherwise              a cached venv at ${XDG_CACHE_HOME:-~/.cache}/lmkit-heavy-venv, (re)installed by scripts/venv.sh
#                          only when heavy-requirements.txt changed; the first install downloads ~3 GB (PyPI's torch
#                          wheel for x86-64 carries CUDA: torch 1.2 GB + nvidia-* 3.0 GB + triton 1.0 GB installed)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${LMKIT_HEAVY_VENV:-}" ]; then
  [ -x "$LMKIT_HEAVY_VENV/bin/python" ] || { echo "heavy-venv: no python at \$LMKIT_HEAVY_VENV=$LMKIT_HEAVY_VENV" >&2; exit 1; }
  echo "$LMKIT_HEAVY_VENV/bin/python"
  exit 0
fi
dir=${XDG_CACHE_HOME:-$HOME/.cache}/lmkit-heavy-venv
[ -x "$dir/bin/python" ] || echo "heavy-venv: installing $here/heavy-requirements.txt into $dir (~3 GB download, once)" >&2
bash "$here/venv.sh" "$dir" "$here/heavy-requirements.txt" >&2
echo "$dir/bin/python"
