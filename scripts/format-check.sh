#!/usr/bin/env bash
# Fails, naming each file, when a tracked C++/CUDA source deviates from .clang-format (Debian 12's clang-format 14).
# `bash scripts/format-check.sh --fix` rewrites them instead.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' '*.c')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=$(clang-format --dry-run "${files[@]}" 2>&1 | grep -o '^[^:]*:[0-9]*:[0-9]*: warning' | cut -d: -f1 | sort -u || true)
if [ -n "$bad" ]; then
  echo "format-check: these files deviate from .clang-format (bash scripts/format-check.sh --fix):" >&2
  echo "$bad" >&2
  exit 1
fi
echo "format-check: ${#files[@]} files follow .clang-format"
