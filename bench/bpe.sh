#!/bin/bash
# BPE training benchmark: lmkit against HF tokenizers' Python BpeTrainer (pip, native Rust) and sentencepiece (Debian),
# run back to back in one invocation so that the ratios survive a noisy shared machine. Writes docs/benchmarks/bpe.md
# (OUT). Encoding speed is bench/bpe_encode.sh.
#
# usage: bench/bpe.sh [--quick]   --quick: the first 20 MB of debmix.txt instead of all 130 MB (a smoke run)
# env: LMKIT (binary), LMKIT_CORPORA (/tmp/lmkit-corpora), LMKIT_PEERS (/tmp/lmkit-peers), OUT, SPM=0 skips
#      sentencepiece (~2-3 min), BIG=1 adds the 2 GB run (debmix x16 through stdin).
# Needs: ../shared/bench/corpora.sh (builds debmix.txt once) and peers.sh setup (pip peers; run here when missing).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
quick=0
while [ $# -gt 0 ]; do
  case "$1" in --quick) quick=1 ;; *) sed -n '2,10p' "$0"; exit 2 ;; esac; shift
done
OUT=${OUT:-$REPO/docs/benchmarks/bpe.md}
SPM=${SPM:-1}
BIG=${BIG:-0}
bench_need_lmkit
bench_need_corpora
bench_pip_peers
[ "$SPM" = 0 ] || command -v spm_train >/dev/null || bash "$SHARED_BENCH/peers.sh" setup >&2
HF=$(peer_label tokenizers)
SP=$(peer_label sentencepiece)
CORPUS_EN=$REPO/tests/data/bpe/corpus.en
BENCH_TMP=$(mktemp -d /tmp/lmkit-bpe-bench.XXXXXX)
trap 'rm -rf "$BENCH_TMP"' EXIT
input=$CORPORA/debmix.txt
if [ $quick = 1 ]; then head -c 20000000 "$input" >"$BENCH_TMP/debmix20M.txt"; input=$BENCH_TMP/debmix20M.txt; fi
in_label="$(basename "$input") ($(awk -v b="$(stat -c %s "$input")" 'BEGIN {printf "%.0f", b/1e6}') MB)"
EOT='<|endoftext|>'

rows=()
add() { rows+=("| $1 | $2 | $3 s | $4 s | $5 MB | $6 |"); }
load0=$(cut -d' ' -f1-3 /proc/loadavg)

# 1. debmix, vocab 30,000, 2 threads; HF with the same vocab size and special token as lmkit.
timed hf30k env RAYON_NUM_THREADS=2 "$PEERS_PY" "$SHARED_BENCH/py/peer_hf_train.py" "$input" 30000 "$BENCH_TMP/hf30k" --special "$EOT"
hf_wall=$WALL; hf_cpu=$CPU; hf_rss=$RSS_MB; hf_vocab=$(jget "['final_vocab']" <"$BENCH_TMP/hf30k.out")
timed lm30k "$LMKIT" bpe train "$input" --vocab-size 30000 --special-token "$EOT" -o "$BENCH_TMP/lm30k" --threads 2 --json --quiet
add "$in_label, vocab 30,000, 2 threads" "$HF (final vocab $hf_vocab)" "$hf_wall" "$hf_cpu" "$hf_rss" "1.00"
add "" "**lmkit**" "$WALL" "$CPU" "$RSS_MB" "**$(ratio "$WALL" "$hf_wall")**"
summary_row "BPE train, vocab 30,000, 2 threads" "$in_label" "$HF: ${hf_wall} s, ${hf_rss} MB" \
  "**$(ratio "$WALL" "$hf_wall")×** the wall time (${WALL} s), ${RSS_MB} MB peak RSS" "≤ 0.05× (#33), RSS below HF"
lm30k_json=$(cat "$BENCH_TMP/lm30k.out")

# 2. corpus.en (CS336 fixture), vocab 500.
timed hf500 env RAYON_NUM_THREADS=2 "$PEERS_PY" "$SHARED_BENCH/py/peer_hf_train.py" "$CORPUS_EN" 500 "$BENCH_TMP/hf500" --special "$EOT"
hf_wall=$WALL; hf_cpu=$CPU; hf_rss=$RSS_MB; hf_train_s=$(jget "['train_s']" <"$BENCH_TMP/hf500.out")
timed lm500 "$LMKIT" bpe train "$CORPUS_EN" --vocab-size 500 --special-token "$EOT" -o "$BENCH_TMP/lm500" --threads 2 --json --quiet
lm_train_s=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["seconds"]; print(round(d["read"]+d["pretokenize_count"]+d["merge"],4))' "$BENCH_TMP/lm500.out")
add "corpus.en (133 kB), vocab 500" "$HF (process; train() alone ${hf_train_s} s)" "$hf_wall" "$hf_cpu" "$hf_rss" "1.00"
add "" "**lmkit** (process; training alone ${lm_train_s} s)" "$WALL" "$CPU" "$RSS_MB" "**$(ratio "$WALL" "$hf_wall")**"
summary_row "BPE train, vocab 500" "corpus.en (133 kB)" "$HF: train() ${hf_train_s} s, process ${hf_wall} s" \
  "training ${lm_train_s} s, process ${WALL} s (**$(ratio "$WALL" "$hf_wall")×**)" "≤ 0.05 s"
golden=$(diff <(tail -n +2 "$BENCH_TMP/lm500/merges.txt") "$REPO/tests/data/bpe/train-bpe-reference-merges.txt" >/dev/null &&
         echo "identical to the CS336 reference" || echo "DIFFERENT from the CS336 reference")

# 3. vocab 10,000 on all cores: sentencepiece (its closest-to-GPT-2 flags), HF, lmkit.
threads=$(nproc)
if [ "$SPM" != 0 ]; then
  timed spm10k bash "$SHARED_BENCH/peers.sh" spm-train "$input" 10000 "$BENCH_TMP/spm10k"
  sp_wall=$WALL; sp_cpu=$CPU; sp_rss=$RSS_MB
fi
timed hf10k env RAYON_NUM_THREADS="$threads" "$PEERS_PY" "$SHARED_BENCH/py/peer_hf_train.py" "$input" 10000 "$BENCH_TMP/hf10k" --special "$EOT"
hf_wall=$WALL; hf_cpu=$CPU; hf_rss=$RSS_MB
timed lm10k "$LMKIT" bpe train "$input" --vocab-size 10000 --special-token "$EOT" -o "$BENCH_TMP/lm10k" --threads "$threads" --json --quiet
if [ "$SPM" != 0 ]; then
  add "$in_label, vocab 10,000, $threads threads" "$SP" "$sp_wall" "$sp_cpu" "$sp_rss" "$(ratio "$sp_wall" "$hf_wall")"
  summary_row "BPE train, vocab 10,000, $threads threads" "$in_label" "$SP: ${sp_wall} s, ${sp_rss} MB" \
    "**$(ratio "$WALL" "$sp_wall")×** the wall time, ${RSS_MB} MB" ""
fi
add "$in_label, vocab 10,000, $threads threads" "$HF" "$hf_wall" "$hf_cpu" "$hf_rss" "1.00"
add "" "**lmkit**" "$WALL" "$CPU" "$RSS_MB" "**$(ratio "$WALL" "$hf_wall")**"
summary_row "BPE train, vocab 10,000, $threads threads" "$in_label" "$HF: ${hf_wall} s, ${hf_rss} MB" \
  "**$(ratio "$WALL" "$hf_wall")×** the wall time (${WALL} s)" ""

# 4. 2 GB: debmix.txt x16 through stdin, vocab 10,000, 2 threads (lmkit alone).
if [ "$BIG" = 1 ]; then
  timed big bash -c "for i in \$(seq 16); do cat '$CORPORA/debmix.txt'; done | '$LMKIT' bpe train - --vocab-size 10000 --special-token '$EOT' -o '$BENCH_TMP/big' --threads 2 --json --quiet"
  add "debmix.txt x16 (2.08 GB) via stdin, vocab 10,000, 2 threads" "**lmkit** (targets: 6 s, 1 GB)" "$WALL" "$CPU" "$RSS_MB" ""
  summary_row "BPE train, vocab 10,000, 2 GB on stdin, 2 threads" "debmix ×16" "—" "${WALL} s wall, ${RSS_MB} MB peak RSS" "≤ 6 s, ≤ 1 GB (#33)"
  big_json=$(cat "$BENCH_TMP/big.out")
fi
load1=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "# BPE training benchmarks"
  echo
  echo "Produced by \`bench/bpe.sh$([ $quick = 1 ] && echo ' --quick')\` on $(date -u '+%Y-%m-%d %H:%M') UTC, lmkit $(git -C "$REPO" describe --always --dirty 2>/dev/null) ($(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))."
  [ $quick = 1 ] && echo "**Smoke run on a 20 MB input (--quick): it shows the script works, not the speed.**"
  echo "Peers and lmkit run back to back in one invocation; the machine may be shared, so absolute times vary (load average"
  echo "at start: $load0, at end: $load1) and the **ratio** (wall time / the first peer's wall time, lower is better) is the figure to read."
  echo "Wall time and peak RSS are from \`/usr/bin/time -v\` over the whole process; CPU = user + system."
  echo
  echo "| run | tool | wall | CPU | peak RSS | ratio |"
  echo "|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Notes"
  echo "- HF: \`tokenizers.trainers.BpeTrainer(vocab_size, special_tokens=['<|endoftext|>'], min_frequency=0)\` over the 256 byte"
  echo "  symbols with the GPT-2 ByteLevel pre-tokenizer (../shared/bench/py/peer_hf_train.py), RAYON_NUM_THREADS threads."
  echo "  HF breaks ties between equally frequent pairs differently from CS336, so its merges may differ in order."
  echo "- sentencepiece: spm_train BPE with byte fallback and the flags closest to GPT-2 byte-level BPE (peers.sh spm-train)."
  echo "- corpus.en at vocab 500: lmkit's merges are $golden."
  echo "- lmkit --json summary of the vocab-30,000 run: \`$(echo "$lm30k_json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({k: d[k] for k in ("pretokens_total","pretokens_unique","merges","seconds","peak_rss_bytes")}))')\`"
  if [ "$BIG" = 1 ]; then
    echo "- 2 GB run summary: \`$(echo "$big_json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({k: d[k] for k in ("input_bytes","pretokens_unique","merges","seconds","peak_rss_bytes","longest_token")}))')\`"
  fi
  summary_block
} >"$OUT"
cat "$OUT"
