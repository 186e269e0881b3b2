#!/usr/bin/env bash
# "Our training features are NumPy/Parquet; why not Lance?" Random-window reads for training — lmkit's .bin reader
# (mmap, and pread with random advice), a NumPy .npy memmap, Parquet (pyarrow: default writer settings, and 16 Ki-row
# groups uncompressed) and Lance (pylance `take`) — warm and cold, 1 and 2 workers, the same windows from the same
# tokens (bench/storage.py checks it). Rewrites the table in docs/storage.md and leaves the raw results in $WORK.
#
#   bench/storage.sh [--tokens FILE.bin] [--max-tokens N] [--batches N] [LMKIT_BINARY]
#
# FILE.bin: uint16 token ids; default GPT-2 ids of debmix.txt (../shared/bench corpora), as bench/dataload.sh makes
# them, repeated to >= 1 GB so that a cold run reads from storage. Python: numpy, pyarrow and pylance from PyPI in a
# venv of its own ($LMKIT_STORAGE_VENV, default ~/.cache/lmkit/storage-venv); LMKIT_STORAGE_PYTHON=/path/to/python
# uses an existing interpreter that has them instead.
set -euo pipefail
cd "$(dirname "$0")/.."
TOKENS="" MAX=0 BATCHES=200 LMKIT=build/lmkit
while [ $# -gt 0 ]; do
  case $1 in
    --tokens) TOKENS=$2; shift 2 ;;
    --max-tokens) MAX=$2; shift 2 ;;
    --batches) BATCHES=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) LMKIT=$1; shift ;;
  esac
done
LMKIT=$(realpath "$LMKIT")
WORK=${LMKIT_BENCH_WORK:-/tmp/lmkit-storage-bench}
mkdir -p "$WORK"

PY=${LMKIT_STORAGE_PYTHON:-}
if [ -z "$PY" ]; then
  VENV=${LMKIT_STORAGE_VENV:-$HOME/.cache/lmkit/storage-venv}
  REQ="numpy==2.4.6 pyarrow==26.0.1 pylance==14.0.2"
  if [ "$(cat "$VENV/.requirements" 2>/dev/null)" != "$REQ" ]; then
    [ -x "$VENV/bin/python" ] || /usr/bin/python3 -m venv "$VENV"
    # shellcheck disable=SC2086
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check $REQ
    echo "$REQ" >"$VENV/.requirements"
  fi
  PY=$VENV/bin/python
fi

if [ -z "$TOKENS" ]; then
  SHARED=${LMKIT_SHARED:-$(realpath ../shared 2>/dev/null || echo /work/shared)}
  CORPORA=${LMKIT_CORPORA:-/tmp/lmkit-corpora}
  [ -f "$CORPORA/debmix.txt" ] || bash "$SHARED/bench/corpora.sh" "$CORPORA" >&2
  ONE=$WORK/debmix.gpt2.u16.bin
  [ -s "$ONE" ] || "$LMKIT" bpe encode -t gpt2 --special-token '<|endoftext|>' --format bin --dtype uint16 -o "$ONE" \
    "$CORPORA/debmix.txt"
  TOKENS=$WORK/debmix.gpt2.u16.x12.bin
  if [ ! -s "$TOKENS" ] || [ "$(stat -c %s "$TOKENS")" -lt 1000000000 ]; then
    rm -f "$TOKENS"; for _ in $(seq 12); do cat "$ONE" >>"$TOKENS"; done; sync "$TOKENS"
  fi
fi

"$PY" bench/storage.py --lmkit "$LMKIT" --tokens "$TOKENS" --work "$WORK/formats" --max-tokens "$MAX" \
  --batches "$BATCHES" --json "$WORK/results.json"

# The table between the markers of docs/storage.md.
"$PY" - "$WORK/results.json" docs/storage.md "$(uname -r)" "$(df -T "$WORK" | awk 'NR==2 {print $2}')" <<'PY'
import json, sys, datetime
res = json.load(open(sys.argv[1]))
doc = sys.argv[2]
rows = res["rows"]
readers = list(dict.fromkeys(r["reader"] for r in rows))
def cell(reader, cache, w):
    r = next(x for x in rows if x["reader"] == reader and x["cache"] == cache and x["workers"] == w)
    return r
size = {"lmkit mmap": "bin", "lmkit pread+random": "bin", "npy": "npy", "parquet": "parquet",
        "parquet-16k": "parquet-16k", "lance": "lance"}
out = ["| reader | file size | warm, 1 worker | warm, 2 workers | cold, 1 worker | cold, 2 workers | read per window, cold |",
       "|---|---|---|---|---|---|---|"]
for rd in readers:
    cs = [cell(rd, c, w) for c in ("warm", "cold") for w in (1, 2)]
    mb = res["sizes"][size[rd]] / 1e6
    out.append(f"| {rd} | {mb:,.0f} MB | " + " | ".join(f"{c['tokens_per_s'] / 1e6:,.2f} M" for c in cs) +
               f" | {cs[2]['read_bytes_per_window'] / 1024:,.1f} KiB |")
out.append("")
out.append(f"tokens/s = windows x {res['context']} tokens / wall time; {res['batches']} batches of {res['batch']} "
           f"windows of {res['context'] + 1} tokens from {res['tokens']:,} uint16 tokens; every reader read the same "
           f"windows (checksum {res['checksum']}). numpy {res['numpy']}, pyarrow {res['pyarrow']}, pylance "
           f"{res['pylance']}; Linux {sys.argv[3]}, {sys.argv[4]}; measured {datetime.date.today()} by bench/storage.sh.")
if res["tokens"] * 2 < 1e9:
    out.append("")
    out.append(f"A smoke run: {res['tokens'] * 2 / 1e6:,.0f} MB of tokens is less than read-around fetches on a few cold "
               "faults, so the cold columns show the whole file read once; run on >= 1 GB (the default) for cold figures.")
text = open(doc).read()
a, b = "<!-- storage-table -->", "<!-- /storage-table -->"
i, j = text.index(a) + len(a), text.index(b)
open(doc, "w").write(text[:i] + "\n" + "\n".join(out) + "\n" + text[j:])
PY
echo "storage: table written to docs/storage.md (raw: $WORK/results.json)" >&2
