#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build with CUDA, run the [cuda]-tagged tests (kernels vs CPU references, bit for bit)
# and time the kernels as a fraction of the device's memory bandwidth, all in one call. Prints a short report and writes
# it to $OUT/gpu-check.txt when OUT is set (the device runner's output folder). Exit status: non-zero when the build or a
# test fails, or when no device is visible (so a silent skip cannot pass for success).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
build=${BUILD_DIR:-build-gpu}
report=${OUT:-.}/gpu-check.txt
{
  echo "== nvidia-smi =="
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.memory --format=csv || true
  echo "== build (LMKIT_CUDA=ON) =="
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLMKIT_CUDA=ON -DLMKIT_WERROR=ON >/dev/null
  cmake --build "$build" -j "$jobs" --target lmkit_tests lmkit
  "$build/lmkit" env
  "$build/lmkit" env --json | grep -q '"index"' || { echo "gpu-check: no CUDA device visible" >&2; exit 1; }
  echo "== [cuda] tests =="
  "$build/lmkit_tests" "[cuda]" -s >"$build/cuda-tests.log" 2>&1 || { tail -n 60 "$build/cuda-tests.log"; exit 1; }
  tail -n 3 "$build/cuda-tests.log"
  if grep -q "kernel test skipped" "$build/cuda-tests.log"; then echo "gpu-check: a CUDA test was skipped" >&2; exit 1; fi
  echo "== kernel bandwidth (target >= 80% of HBM at large sizes) =="
  "$build/lmkit_tests" "[.cuda-bench]" -s 2>&1 | grep -E "^(quantize|histogram)"
} 2>&1 | tee "$report"
exit "${PIPESTATUS[0]}"
