#!/bin/bash
# Corpora as they are published: `lmkit bpe train` on debmix's documents as .jsonl.zst (and Parquet) against the same
# documents joined into one text file (target: within 1.3x wall), `lmkit bpe encode` of the .jsonl against the text
# (within 1.3x), the peak RSS of each, and HF tokenizers training from a Python iterator over the same JSONL (its
# documented way for datasets). All in one run, outputs checked identical (cmp); writes docs/benchmarks/bpe-corpora.md.
#   bench/bpe_corpora.sh [--quick MB] [--vocab N] [--reps N] [--no-hf]
#     --quick MB  only the first MB megabytes of debmix (cut at a document boundary), to check the script quickly
#     --vocab N   vocabulary size (default 30000, as bench/bpe.sh)
#     --reps N    alternate lmkit's text and corpus runs N times and keep each one's fastest (default 2)
#     --no-hf     skip the HF tokenizers run
# Env: LMKIT (default build/lmkit), CORPORA (/tmp/lmkit-corpora), THREADS (2), OUT (docs/benchmarks/bpe-corpora.md),
#      PYARROW_PYTHON (a python with pyarrow for the Parquet form; default build/venv/bin/python), LMKIT_PEERS.
# Needs: zstd (Debian package zstd), ../shared/bench/corpora.sh (debmix.txt), ../shared/bench/peers.sh setup (pip).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${LMKIT_SHARED:-$repo/../shared}
LMKIT=${LMKIT:-$repo/build/lmkit}
C=${CORPORA:-/tmp/lmkit-corpora}
T=${THREADS:-2}
OUT=${OUT:-$repo/docs/benchmarks/bpe-corpora.md}
PYARROW_PYTHON=${PYARROW_PYTHON:-$repo/build/venv/bin/python}
quick=0; vocab=30000; reps=2; hf=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=$2; shift ;; --vocab) vocab=$2; shift ;; --reps) reps=$2; shift ;; --no-hf) hf=0 ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
  esac; shift
done
[ -x "$LMKIT" ] || { echo "build lmkit first (cmake --build build)" >&2; exit 1; }
command -v zstd >/dev/null || { echo "zstd not found (apt-get install zstd)" >&2; exit 1; }
[ -f "$C/debmix.txt" ] || "$SHARED/bench/corpora.sh" "$C"
EOT='<|endoftext|>'

# The corpus forms, made once per size: docs.txt (the documents joined by <|endoftext|>), docs.jsonl, docs.jsonl.zst
# and, where pyarrow is at hand, docs.parquet (row groups of 1,000 documents).
F=$C/forms-$quick
if [ ! -f "$F/.done" ]; then
  mkdir -p "$F"
  python3 - "$C/debmix.txt" "$F" "$quick" <<'PY'
import json, os, sys
src, out, quick = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(src, "rb").read().decode("utf-8")
if quick:
    cut = text.find("<|endoftext|>\n", quick * 1000000)
    text = text[:cut if cut > 0 else len(text)]
docs = [d for d in text.split("<|endoftext|>\n") if d]
with open(os.path.join(out, "docs.txt"), "w", encoding="utf-8", newline="") as f:
    f.write("<|endoftext|>".join(docs))
with open(os.path.join(out, "docs.jsonl"), "w", encoding="utf-8", newline="") as f:
    for i, d in enumerate(docs):
        f.write(json.dumps({"id": i, "text": d}) + "\n")
print(len(docs), "documents,", os.path.getsize(os.path.join(out, "docs.txt")), "bytes of text", file=sys.stderr)
PY
  zstd -q -f -3 -T0 "$F/docs.jsonl" -o "$F/docs.jsonl.zst"
  if "$PYARROW_PYTHON" -c 'import pyarrow' 2>/dev/null; then
    "$PYARROW_PYTHON" - "$F" <<'PY'
import json, os, sys
import pyarrow as pa, pyarrow.parquet as pq
out = sys.argv[1]
docs = [json.loads(l)["text"] for l in open(os.path.join(out, "docs.jsonl"), encoding="utf-8")]
pq.write_table(pa.table({"text": docs}), os.path.join(out, "docs.parquet"), row_group_size=1000, compression="zstd")
PY
  fi
  touch "$F/.done"
fi
W=$(mktemp -d /tmp/lmkit-corpora-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT

# run NAME CMD...: under /usr/bin/time -v; sets WALL (s), CPU (s), RSS (MB); stdout kept in $W/NAME.out
run() {
  local name=$1; shift
  echo ">> $name" >&2
  /usr/bin/time -v "$@" > "$W/$name.out" 2> "$W/$name.time" || { tail -20 "$W/$name.time" >&2; exit 1; }
  WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$W/$name.time")
  RSS=$(awk -F': ' '/Maximum resident/ {printf "%.0f", $2/1024}' "$W/$name.time")
  CPU=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {printf "%.2f", u+s}' "$W/$name.time")
}
declare -A best_wall best_cpu best_rss
keep() {  # keep the fastest run of $1
  if [ -z "${best_wall[$1]:-}" ] || awk -v a="$WALL" -v b="${best_wall[$1]}" 'BEGIN {exit !(a < b)}'; then
    best_wall[$1]=$WALL; best_cpu[$1]=$CPU; best_rss[$1]=$RSS
  fi
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }
train() { run "$1" "$LMKIT" --threads "$T" --quiet bpe train "$2" --vocab-size "$vocab" --special-token "$EOT" -o "$W/$1"; keep "$1"; }
encode() { run "$1" "$LMKIT" --threads "$T" --quiet bpe encode -t gpt2 --special-token "$EOT" "$2" -o "$W/$1.bin"; keep "$1"; }

load0=$(cut -d' ' -f1-3 /proc/loadavg)
parquet=0
[ -f "$F/docs.parquet" ] && "$LMKIT" bpe count "$F/docs.parquet" --special-token "$EOT" -o "$W/probe.counts" --quiet >/dev/null 2>&1 && parquet=1
for ((i = 0; i < reps; i++)); do
  train train_text "$F/docs.txt"
  train train_zst "$F/docs.jsonl.zst"
  [ $parquet = 1 ] && train train_parquet "$F/docs.parquet"
  encode enc_text "$F/docs.txt"
  encode enc_jsonl "$F/docs.jsonl"
  encode enc_zst "$F/docs.jsonl.zst"
done
for f in vocab.json merges.txt tokenizer.json; do
  cmp "$W/train_text/$f" "$W/train_zst/$f"
  [ $parquet = 1 ] && cmp "$W/train_text/$f" "$W/train_parquet/$f"
done
cmp "$W/enc_text.bin" "$W/enc_jsonl.bin"
cmp "$W/enc_text.bin" "$W/enc_zst.bin"

hf_row=""
if [ $hf = 1 ]; then
  PY=$("$SHARED/bench/peers.sh" python 2>/dev/null) || { "$SHARED/bench/peers.sh" setup >&2; PY=$("$SHARED/bench/peers.sh" python); }
  run hf_iter env RAYON_NUM_THREADS="$T" "$PY" "$repo/bench/hf_train_jsonl.py" "$F/docs.jsonl.zst" "$vocab" "$W/hf"
  hf_version=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$W/hf_iter.out")
  hf_row="| HF tokenizers $hf_version, train_from_iterator over docs.jsonl.zst (Python json + zstd -dc) | $WALL s | $CPU s | $RSS MB | $(ratio "$WALL" "${best_wall[train_text]}") |"
  hf_wall=$WALL hf_rss=$RSS
fi
load1=$(cut -d' ' -f1-3 /proc/loadavg)

row() { echo "| $2 | ${best_wall[$1]} s | ${best_cpu[$1]} s | ${best_rss[$1]} MB | **$(ratio "${best_wall[$1]}" "${best_wall[$3]}")** |"; }
verdict() { awk -v r="$(ratio "${best_wall[$1]}" "${best_wall[$2]}")" 'BEGIN {print (r <= 1.3 ? "met" : "NOT met")}'; }
text_bytes=$(stat -c %s "$F/docs.txt")
{
  echo "# BPE on corpora as they are published (JSONL, zstd, Parquet)"
  echo
  echo "Produced by \`bench/bpe_corpora.sh$( [ "$quick" != 0 ] && echo " --quick $quick")\` on $(date -u '+%Y-%m-%d %H:%M') UTC ($(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))."
  echo "Input: debmix's $(wc -l < "$F/docs.jsonl") documents ($text_bytes bytes of text) as docs.txt (joined by \`<|endoftext|>\`),"
  echo "docs.jsonl ($(stat -c %s "$F/docs.jsonl") bytes), docs.jsonl.zst ($(stat -c %s "$F/docs.jsonl.zst") bytes, zstd -3)$( [ $parquet = 1 ] && echo " and docs.parquet ($(stat -c %s "$F/docs.parquet") bytes)")."
  echo "$T threads, vocab $vocab, special \`<|endoftext|>\` (which joins the documents). Wall and peak RSS from \`/usr/bin/time -v\`"
  echo "over the whole process, fastest of $reps alternated runs; load average $load0 at start, $load1 at end. The ratio"
  echo "is against the text file's run of the same command. Outputs were identical (cmp) for every form."
  echo
  echo "| run | wall | CPU | peak RSS | ratio |"
  echo "|---|---|---|---|---|"
  row train_text "lmkit bpe train docs.txt" train_text
  row train_zst "lmkit bpe train docs.jsonl.zst" train_text
  [ $parquet = 1 ] && row train_parquet "lmkit bpe train docs.parquet" train_text
  [ -n "$hf_row" ] && echo "$hf_row"
  row enc_text "lmkit bpe encode -t gpt2 docs.txt" enc_text
  row enc_jsonl "lmkit bpe encode -t gpt2 docs.jsonl" enc_text
  row enc_zst "lmkit bpe encode -t gpt2 docs.jsonl.zst" enc_text
  echo
  echo "Targets (issue #30): train on .jsonl.zst within 1.3x of text: **$(verdict train_zst train_text)**; encode of JSONL"
  echo "within 1.3x of text: **$(verdict enc_jsonl enc_text)**."
  echo
  # The block bench/summary.py copies into docs/benchmarks.md (markers as in bench/lib.sh).
  in_label="debmix documents$( [ "$quick" != 0 ] && echo ", first $quick MB" || true)"
  echo "<!-- summary: rows for docs/benchmarks.md (bench/summary.py) -->"
  echo "| task | input | peer | lmkit vs peer | target |"
  echo "|---|---|---|---|---|"
  echo "| BPE train from .jsonl.zst, vocab $vocab, $T threads | $in_label | lmkit on the same documents as text: ${best_wall[train_text]} s | **$(ratio "${best_wall[train_zst]}" "${best_wall[train_text]}")×** the wall time (${best_wall[train_zst]} s), ${best_rss[train_zst]} MB peak RSS (text ${best_rss[train_text]} MB) | ≤ 1.3× |"
  [ -n "${hf_wall:-}" ] && echo "| BPE train from JSONL, vocab $vocab, $T threads | $in_label | HF tokenizers $hf_version \`train_from_iterator\` (pip, native Rust): $hf_wall s, $hf_rss MB | **$(ratio "${best_wall[train_zst]}" "$hf_wall")×** the wall time | |"
  echo "| BPE encode GPT-2 from JSONL, $T threads | $in_label | lmkit on the same documents as text: ${best_wall[enc_text]} s | **$(ratio "${best_wall[enc_jsonl]}" "${best_wall[enc_text]}")×** the wall time (.jsonl.zst $(ratio "${best_wall[enc_zst]}" "${best_wall[enc_text]}")×), ${best_rss[enc_jsonl]} MB peak RSS | ≤ 1.3× |"
  echo "<!-- /summary -->"
} > "$OUT"
cat "$OUT"
