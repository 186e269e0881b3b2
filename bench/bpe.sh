#!/bin/bash
# BPE training benchmark: lmkit against HF tokenizers (and sentencepiece), run back to back in one invocation so that
# the ratios survive a noisy shared machine. Writes docs/benchmarks/bpe.md, then runs bench/bpe_encode.sh if present.
#
# usage: bench/bpe.sh            env: LMKIT (default build/lmkit), CORPORA (default /tmp/lmkit-corpora),
#                                     SPM=0 skips sentencepiece (~2-3 min), BIG=1 adds the 2 GB run (debmix x16, stdin)
# Needs: ../shared/bench/corpora.sh (builds debmix.txt once) and peers.sh setup (HF via node, sentencepiece).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${LMKIT_SHARED:-$repo/../shared}
LMKIT=${LMKIT:-$repo/build/lmkit}
C=${CORPORA:-/tmp/lmkit-corpora}
PEERS=${LMKIT_PEERS:-/tmp/lmkit-peers}
SPM=${SPM:-1}
BIG=${BIG:-0}
OUT=$repo/docs/benchmarks/bpe.md
[ -x "$LMKIT" ] || { echo "build lmkit first (ninja -C build)" >&2; exit 1; }
[ -f "$C/debmix.txt" ] || "$SHARED/bench/corpora.sh" "$C"
[ -d "$PEERS/node_modules/tokenizers" ] && { [ "$SPM" = 0 ] || command -v spm_train >/dev/null; } || "$SHARED/bench/peers.sh" setup
CORPUS_EN=$repo/tests/data/bpe/corpus.en
T=$(mktemp -d /tmp/lmkit-bpe-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT

# run NAME CMD...: runs under /usr/bin/time -v; sets WALL (s) and RSS (MB); keeps stdout in $T/NAME.out
run() {
  local name=$1; shift
  echo ">> $name" >&2
  /usr/bin/time -v "$@" > "$T/$name.out" 2> "$T/$name.time" || { tail -20 "$T/$name.time" >&2; exit 1; }
  WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$T/$name.time")
  RSS=$(awk -F': ' '/Maximum resident/ {printf "%.0f", $2/1024}' "$T/$name.time")
  CPU=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {printf "%.2f", u+s}' "$T/$name.time")
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a/b}'; }
rows=()
add() { rows+=("| $1 | $2 | $3 s | $4 s | $5 MB | $6 |"); }

load0=$(cut -d' ' -f1-3 /proc/loadavg)

# 1. debmix.txt, vocab 30,000, 2 threads (HF's node binding always trains to 30,000).
run hf30k env RAYON_NUM_THREADS=2 "$SHARED/bench/peers.sh" hf-train "$C/debmix.txt" 30000 "$T/hf30k"
hf_wall=$WALL; hf_rss=$RSS; hf_cpu=$CPU
run lm30k "$LMKIT" bpe train "$C/debmix.txt" --vocab-size 30000 --special-token '<|endoftext|>' -o "$T/lm30k" --threads 2 --json --quiet
add "debmix.txt (130 MB), vocab 30,000, 2 threads" "HF tokenizers 0.23.2 (node)" "$hf_wall" "$hf_cpu" "$hf_rss" "$(ratio "$hf_wall" "$hf_wall")"
add "" "**lmkit**" "$WALL" "$CPU" "$RSS" "**$(ratio "$WALL" "$hf_wall")**"
lm30k_json=$(cat "$T/lm30k.out")

# 2. corpus.en (CS336 fixture), vocab 500.
run hf500 env RAYON_NUM_THREADS=2 "$SHARED/bench/peers.sh" hf-train "$CORPUS_EN" 500 "$T/hf500"
hf_wall=$WALL; hf_rss=$RSS; hf_cpu=$CPU
hf_train_s=$(sed -n 's/.*"train_s":\([0-9.]*\).*/\1/p' "$T/hf500.out")
run lm500 "$LMKIT" bpe train "$CORPUS_EN" --vocab-size 500 --special-token '<|endoftext|>' -o "$T/lm500" --threads 2 --json --quiet
lm_train_s=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["seconds"]; print(round(d["read"]+d["pretokenize_count"]+d["merge"],4))' "$T/lm500.out")
add "corpus.en (133 kB), vocab 500" "HF tokenizers (process; train() alone ${hf_train_s} s)" "$hf_wall" "$hf_cpu" "$hf_rss" "1.000"
add "" "**lmkit** (process; training alone ${lm_train_s} s)" "$WALL" "$CPU" "$RSS" "**$(ratio "$WALL" "$hf_wall")**"
golden=$(diff <(tail -n +2 "$T/lm500/merges.txt") "$repo/tests/data/bpe/train-bpe-reference-merges.txt" >/dev/null && echo "identical to the CS336 reference" || echo "DIFFERENT from the CS336 reference")

# 3. sentencepiece, debmix, vocab 10,000 (its closest-to-GPT-2 flags; all cores).
if [ "$SPM" != 0 ]; then
  run spm10k "$SHARED/bench/peers.sh" spm-train "$C/debmix.txt" 10000 "$T/spm10k"
  sp_wall=$WALL; sp_rss=$RSS; sp_cpu=$CPU
  run lm10k "$LMKIT" bpe train "$C/debmix.txt" --vocab-size 10000 --special-token '<|endoftext|>' -o "$T/lm10k" --threads "$(nproc)" --json --quiet
  add "debmix.txt, vocab 10,000, $(nproc) threads" "sentencepiece (spm_train, BPE)" "$sp_wall" "$sp_cpu" "$sp_rss" "1.000"
  add "" "**lmkit**" "$WALL" "$CPU" "$RSS" "**$(ratio "$WALL" "$sp_wall")**"
fi

# 4. 2 GB: debmix.txt x16 through stdin, vocab 10,000, 2 threads.
if [ "$BIG" = 1 ]; then
  run big bash -c "for i in \$(seq 16); do cat '$C/debmix.txt'; done | '$LMKIT' bpe train - --vocab-size 10000 --special-token '<|endoftext|>' -o '$T/big' --threads 2 --json --quiet"
  add "debmix.txt x16 (2.08 GB) via stdin, vocab 10,000, 2 threads" "**lmkit** (targets: 20 s, 1 GB)" "$WALL" "$CPU" "$RSS" ""
  big_json=$(cat "$T/big.out")
fi
load1=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "# BPE training benchmarks"
  echo
  echo "Produced by \`bench/bpe.sh\` on $(date -u +%Y-%m-%d) ($(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))."
  echo "Peers and lmkit run back to back in one invocation; the machine is shared, so absolute times vary (load average"
  echo "at start: $load0, at end: $load1) and the **ratio** (lmkit wall / peer wall, lower is better) is the figure to read."
  echo "Wall time and peak RSS are from \`/usr/bin/time -v\` over the whole process; CPU = user + system."
  echo
  echo "| run | tool | wall | CPU | peak RSS | ratio |"
  echo "|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Notes"
  echo "- HF's node binding cannot set the vocabulary size or special tokens: it always trains to 30,000 with"
  echo "  \`<|endoftext|>\` left in the text (see ../shared/bench/peers/hf_train.js); lmkit splits it out, as CS336 does."
  echo "- corpus.en at vocab 500: lmkit's merges are $golden."
  echo "- lmkit --json summary of the debmix run: \`$(echo "$lm30k_json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({k: d[k] for k in ("pretokens_total","pretokens_unique","merges","seconds","peak_rss_bytes")}))')\`"
  if [ "$BIG" = 1 ]; then
    echo "- 2 GB run summary: \`$(echo "$big_json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({k: d[k] for k in ("input_bytes","pretokens_unique","merges","seconds","peak_rss_bytes","longest_token")}))')\`"
  fi
} > "$OUT"
cat "$OUT"

if [ -x "$repo/bench/bpe_encode.sh" ]; then "$repo/bench/bpe_encode.sh"; fi
