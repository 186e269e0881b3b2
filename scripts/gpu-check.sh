#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: run the [cuda]-tagged tests (kernels vs CPU references, bit for bit) and time the
# kernels as a fraction of the device's memory bandwidth, all in one call. Prints a short report and writes it to
# $OUT/gpu-check.txt when OUT is set (the device runner's output folder). Exit status: non-zero when a build or a test
# fails, when a test was skipped, or when no device is visible (so a silent skip cannot pass for success).
#
# Binaries: from .gpu-bundle/ when it is there (made by scripts/gpu-bundle.sh on any machine with nvcc: the lent GPU
# machine has no package registry to install lmkit's build dependencies from), else built here with -DLMKIT_CUDA=ON.
#   bash scripts/gpu-check.sh            run (bundle if present, else build)
#   bash scripts/gpu-check.sh --build    build here even if a bundle is present
#   bash scripts/gpu-check.sh --digest   print the digest of the sources the binaries are built from
set -euo pipefail
cd "$(dirname "$0")/.."

# Over the files the device runner sends (tracked and not ignored): the GPU machine's copy has no .git to ask, so
# the one ignore pattern that can match in these folders is repeated here.
digest() {
  find src commands tests/unit tests/support tests/cli CMakeLists.txt -type f -not -name '*.tmp.*' -print0 |
    LC_ALL=C sort -z |
    xargs -0 sha1sum | sha1sum | cut -d' ' -f1
}
mode=auto
case "${1:-}" in
  --digest) digest; exit 0 ;;
  --build) mode=build ;;
  "") ;;
  *) echo "usage: scripts/gpu-check.sh [--build|--digest]" >&2; exit 2 ;;
esac
[ "$mode" = auto ] && { [ -x .gpu-bundle/bin/lmkit_tests ] && mode=bundle || mode=build; }

report=${OUT:-.}/gpu-check.txt
export LMKIT_DATA_DIR=$PWD/data  # the binaries' built-in data path is the tree they were built in, not this copy
check() {
  echo "== $(date -u +%FT%TZ) $(uname -m), mode $mode =="
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.memory --format=csv || true
  if [ "$mode" = bundle ]; then
    bin=.gpu-bundle/bin
    want=$(cat .gpu-bundle/SOURCE_DIGEST 2>/dev/null || echo none) have=$(digest)
    if [ "$want" != "$have" ]; then
      echo "gpu-check: .gpu-bundle was built from other sources (digest $want, tree $have): run scripts/gpu-bundle.sh again" >&2
      return 1
    fi
    echo "bundle of commit $(cat .gpu-bundle/COMMIT), sources $have"
    export LD_LIBRARY_PATH=$PWD/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    if ! "$bin/lmkit" --version >/dev/null 2>&1; then
      echo "gpu-check: the machine's C++ runtime does not serve the bundle; using the bundled one"
      export LD_LIBRARY_PATH=$PWD/.gpu-bundle/lib/fallback:$LD_LIBRARY_PATH
      "$bin/lmkit" --version >/dev/null || { ldd "$bin/lmkit"; return 1; }
    fi
  else
    bin=${BUILD_DIR:-build-gpu}
    echo "== build (LMKIT_CUDA=ON) =="
    cmake -S . -B "$bin" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLMKIT_CUDA=ON -DLMKIT_WERROR=ON >/dev/null
    cmake --build "$bin" -j "$(nproc)" --target lmkit_tests lmkit
  fi
  "$bin/lmkit" env
  # Captured first: under pipefail, grep -q leaving early could fail the pipe with SIGPIPE and read as "no device".
  local env_json
  env_json=$("$bin/lmkit" env --json)
  grep -q '"index"' <<<"$env_json" || { echo "gpu-check: no CUDA device visible" >&2; return 1; }
  echo "== [cuda] tests =="
  # Bounded: a hung kernel must not spend the session's device minutes.
  local log=${OUT:-/tmp}/cuda-tests.log
  # Exit 77: every test passed but one skipped (tests/support/skip.h), which here means the device was not used.
  local rc=0
  timeout 300 "$bin/lmkit_tests" "[cuda]" -s >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then tail -n 60 "$log"; return 1; fi
  tail -n 3 "$log"
  if [ "$rc" -eq 77 ] || grep -q "test skipped" "$log"; then
    grep "test skipped" "$log" | head -n 3
    echo "gpu-check: a CUDA test was skipped" >&2
    return 1
  fi
  echo "== kernel bandwidth (target >= 80% of HBM at large sizes) =="
  local bench_log=${OUT:-/tmp}/cuda-bench.log
  timeout 300 "$bin/lmkit_tests" "[.cuda-bench]" -s >"$bench_log" 2>&1 || { tail -n 40 "$bench_log"; return 1; }
  grep -E "^(device|quantize|histogram)" "$bench_log"
  echo "== dataload host->device (GPT-2 batches, 12 x 1024, warm cache) =="
  local tok=${TMPDIR:-/tmp}/gpu-check-tokens.$$.bin
  head -c "${GPU_CHECK_TOKEN_BYTES:-200000000}" /dev/urandom >"$tok"
  for staging in --pinned --pageable; do
    echo "-- $staging"
    timeout 60 "$bin/lmkit" dataload "$tok" -b 12 -t 1024 --duration 3s --cache warm --device cuda "$staging" \
      --model gpt2 --gpu H200 --mfu 0.4 | grep -E "^(throughput|  stage|  host->device|verdict)"
  done
  rm -f "$tok"
  echo "== allocator replay: lmkit plan --timeline vs torch.cuda, reserved bytes and failures per event =="
  # Generated days of small models on a 5 GiB allocator budget (tests/data/plan/replay_*.json), each replayed through
  # the real caching allocator by scripts/gpu_replay.py: default, expandable_segments and the per-architecture buffer.
  local py=${GPU_CHECK_PYTHON:-python3}
  if ! "$py" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    echo "allocator replay: skipped (no torch with CUDA in $py; set GPU_CHECK_PYTHON)"
  else
    local replay_rc=0 seed tr
    for seed in 1 2 3; do
      tr=${TMPDIR:-/tmp}/gpu-check-trace.$$.$seed.json
      if ! timeout 120 "$bin/lmkit" plan tests/data/plan/replay_plan.json --gpu-spec tests/data/plan/replay_gpu.json \
        --generate-events "${GPU_CHECK_REPLAY_EVENTS:-300}" --seed "$seed" --trace "$tr" >/dev/null; then
        replay_rc=1
        continue
      fi
      timeout 300 "$py" scripts/gpu_replay.py "$tr" || replay_rc=1
      rm -f "$tr"
    done
    [ "$replay_rc" -eq 0 ] || { echo "gpu-check: the allocator simulation differs from torch.cuda" >&2; return 1; }
  fi
}

check 2>&1 | tee "$report"  # pipefail (above): the status is check's

