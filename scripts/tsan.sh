#!/usr/bin/env bash
# The threaded tests under ThreadSanitizer: the thread pool, the ordered pipeline, and every command that runs
# threads (bpe train/encode, quantize, calibrate, inspect --stats, eval/generate, dataload), unit and CLI tests alike
# (the CLI tests run the TSan-built lmkit). Not part of CI: a third full build would push CI past its 20-minute budget
# on 2 cores; run it before changing threaded code.
#   bash scripts/tsan.sh [ctest -R regex]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset tsan >/dev/null
cmake --build --preset tsan -j "$(nproc)" --target lmkit lmkit_tests
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
if [ $# -gt 0 ]; then
  (cd build/tsan && ctest --output-on-failure -j "$(nproc)" -R "$1")
else
  ctest --preset tsan -j "$(nproc)"
fi
