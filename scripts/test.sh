#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what is missing, builds (warnings are errors) and runs
# every test, then does it again under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
test_python=$PWD/build/venv/bin/python
jobs=$(nproc)

echo "== formatting (.clang-format) =="
bash scripts/format-check.sh

echo "== release build (CUDA: AUTO) =="
# The test binary and the command layer build as unity batches here (CI's 20 minutes on 2 cores); the core stays one
# file per object, so a missing #include in it fails. The fuzz seed replay runs in the sanitizer build below.
# scripts/configure.sh is quickstart's configure too: the same features (Parquet included) in both binaries.
bash scripts/configure.sh build/ci -DCMAKE_BUILD_TYPE=Release -DLMKIT_WERROR=ON -DLMKIT_PYTHON=ON \
  -DPython_EXECUTABLE="$test_python" -DLMKIT_UNITY_FRONTENDS=ON -DLMKIT_FUZZ_REPLAY=OFF
cmake --build build/ci -j "$jobs"
(cd build/ci && ctest --output-on-failure -j "$jobs")

echo "== Python package (import lmkit from the release build) =="
PYTHONPATH="$PWD/build/ci/python" "$test_python" -m pytest -q -p no:cacheprovider python/tests

echo "== ASan + UBSan build =="
# The sanitizer build is the longest step of CI. Two things cut its compile CPU time by ~2.7x (measured): -g1 (line
# tables, enough for sanitizer stack traces) instead of full -g, and a unity build (several sources per compiler run,
# so shared headers and templates are compiled once per batch). The release build above stays one-file-per-object,
# so a missing #include still fails CI; the unity build fails on two files defining the same internal name.
bash scripts/configure.sh build/asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DLMKIT_SANITIZE=ON \
  -DCMAKE_UNITY_BUILD=ON \
  -DLMKIT_CUDA=OFF -DLMKIT_PYTHON=OFF -DLMKIT_WERROR=ON
cmake --build build/asan -j "$jobs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build/asan && ctest --output-on-failure -j "$jobs")
