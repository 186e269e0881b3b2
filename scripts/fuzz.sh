#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) and runs each for SECONDS (default 60), one after another, starting
# from the seed corpus in tests/fuzz/corpus/<target>/. New inputs go to a scratch corpus under build-fuzz/, never into
# the repository; a crashing input is written to build-fuzz/crash-* and the script fails.
# The last line sums the executions of all targets.
#   scripts/fuzz.sh [seconds]
set -euo pipefail
secs="${1:-60}"
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-fuzz"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DLMKIT_FUZZ=ON -DLMKIT_TESTS=OFF -DLMKIT_CUDA=OFF \
  -DLMKIT_MPI=OFF -DLMKIT_PYTHON=OFF >/dev/null
targets=()
for src in "$root"/tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$src" .cpp)"); done
# FUZZ_TARGETS="fuzz_npy fuzz_model" runs only those.
if [ -n "${FUZZ_TARGETS:-}" ]; then read -r -a targets <<<"$FUZZ_TARGETS"; fi
ninja -C "$build" "${targets[@]}"
status=0
total=0
for t in "${targets[@]}"; do
  seeds="$root/tests/fuzz/corpus/${t#fuzz_}"
  work="$build/corpus/$t"
  mkdir -p "$work"
  echo "== $t (${secs}s)"
  args=(-max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$build/crash-$t-" -print_final_stats=1)
  if [ -f "$root/tests/fuzz/${t#fuzz_}.dict" ]; then args+=(-dict="$root/tests/fuzz/${t#fuzz_}.dict"); fi
  dirs=("$work")
  if [ -d "$seeds" ]; then dirs+=("$seeds"); fi
  "$build/$t" "${args[@]}" "${dirs[@]}" >"$build/$t.log" 2>&1 || true
  grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)" "$build/$t.log" || true
  runs=$(grep -oE "^stat::number_of_executed_units: *[0-9]+" "$build/$t.log" | grep -oE "[0-9]+$" || echo 0)
  total=$((total + runs))
  if grep -qE "ERROR: (libFuzzer|AddressSanitizer|UndefinedBehaviorSanitizer)|runtime error|deadly signal" "$build/$t.log"; then
    echo "!! $t found a failure; see $build/$t.log and $build/crash-$t-*"
    status=1
  fi
done
echo "== executions, all targets: $total"
exit $status
