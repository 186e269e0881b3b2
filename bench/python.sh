#!/bin/bash
# The Python package in-process against pip's native tiktoken, on the same strings in one process, ids checked equal:
# encode() on short strings (call overhead dominates), encode() on 1 MB documents, encode_batch with 2 threads.
#   bench/python.sh [--quick] [--encodings "gpt2 cl100k_base o200k_base"]
#     --quick  first 4 MB of debmix, 2,000 short strings, best of 2 (a smoke run)
# Env: LMKIT_CORPORA, LMKIT_PEERS, OUT (docs/benchmarks/python.md), LMKIT_PYTHONPATH (a folder with an importable
#      lmkit; default: the release build of scripts/test.sh, build/ci/python, built here when missing).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
OUT=${OUT:-$REPO/docs/benchmarks/python.md}
quick=0; encodings="gpt2 cl100k_base o200k_base"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;; --encodings) encodings=$2; shift ;;
    *) sed -n '2,8p' "$0"; exit 2 ;;
  esac; shift
done
bench_need_corpora
bench_pip_peers
TIK=$(peer_label tiktoken)
pymod=${LMKIT_PYTHONPATH:-$REPO/build/ci/python}
if ! ls "$pymod"/lmkit/_lmkit*.so >/dev/null 2>&1; then
  [ -z "${LMKIT_PYTHONPATH:-}" ] || { echo "python.sh: no lmkit module in $pymod" >&2; exit 1; }
  echo "python.sh: building the module (build/ci, as scripts/test.sh does)" >&2
  bash "$REPO/scripts/venv.sh" "$REPO/build/venv" "$REPO/tests/requirements.txt"
  cmake -S "$REPO" -B "$REPO/build/ci" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLMKIT_PYTHON=ON \
    -DPython_EXECUTABLE="$REPO/build/venv/bin/python" >/dev/null
  cmake --build "$REPO/build/ci" --target _lmkit lmkit >&2
fi
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
input=$CORPORA/debmix.txt; args=()
if [ $quick = 1 ]; then
  head -c 4000000 "$input" > "$W/quick.txt"; input=$W/quick.txt; args=(--short-count 2000 --repeat 2)
fi
in_label="$(basename "$CORPORA/debmix.txt")$([ $quick = 1 ] && echo ', first 4 MB' || true)"
machine=$(bench_machine)
for enc in $encodings; do
  echo ">> $enc" >&2
  PYTHONPATH=$pymod "$PEERS_PY" "$REPO/bench/py_encode_bench.py" "$input" --encoding "$enc" "${args[@]}" >> "$W/rows.jsonl"
done
lmkit_version=$(PYTHONPATH=$pymod "$PEERS_PY" -c 'import lmkit; print(lmkit.__version__)')
{
  echo "# Python package: lmkit vs tiktoken in-process"
  echo
  echo "Made by \`bench/python.sh$([ $quick = 1 ] && echo ' --quick')\` on $(date -u +%Y-%m-%d): $machine."
  echo "lmkit $lmkit_version (the \`lmkit\` module, C++ core through nanobind) and $TIK, in one Python process, on"
  echo "$in_label; each case runs both on identical inputs and checks identical ids; best of the repeats. Short strings:"
  echo "the first 120 characters of the corpus's lines, one \`encode_ordinary\` call each; documents: 1 MB slices."
  echo
  echo "| encoding | case | strings | MB | lmkit MB/s | tiktoken MB/s | lmkit vs tiktoken |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  python3 - "$W/rows.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"| {r['encoding']} | {r['case']} | {r['strings']:,} | {r['bytes'] / 1e6:.1f} | {r['lmkit_MBps']:.1f} | "
          f"{r['tiktoken_MBps']:.1f} | {r['speedup']:.2f}× |")
PY
  summary_rows=()
  while IFS=$'\t' read -r enc case speed tik; do
    target="≥ 5× per thread"; case "$case" in short*) target="≥ 1× (no slower)" ;; esac
    summary_row "Python: $enc $case" "$in_label" "$TIK: $tik MB/s" "${speed}×" "$target"
  done < <(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(r["encoding"], r["case"], r["speedup"], r["tiktoken_MBps"], sep="\t")' "$W/rows.jsonl")
  summary_block
} > "$OUT"
echo "python.sh: wrote $OUT" >&2
