#!/bin/bash
# Encoding speed, side by side with pip's native tiktoken (encode and encode_batch with threads) and HF tokenizers, on
# debmix.txt, ids checked in the same run. GPT-2 in full; cl100k_base and o200k_base against tiktoken.
#   bench/bpe_encode.sh [--quick] [--no-hf] [--encodings "gpt2 cl100k_base o200k_base"] [--rss-gb N]
#     --quick    first 20 MB of debmix (ids compared between lmkit and tiktoken instead of the published hash)
#     --no-hf    skip HF tokenizers (the slowest peer)
#     --encodings  which encodings (default all three; gpt2 always runs first and is the one with the full sequence)
#     --rss-gb N also stream debmix repeated to N GB through `lmkit bpe encode -` at 1, 2 and 8 threads and record the
#                peak RSS (/usr/bin/time -v)
#     --families MB  instead of the above: per model family, lmkit's whole process on 2 threads against HF
#                tokenizers' encode_batch on 2 threads over the first MB megabytes of debmix, with the real
#                tokenizer files of scripts/interop/check_hf_families.py, ids checked (bench/bpe_families.py);
#                writes docs/benchmarks/bpe-families.md
# Env: LMKIT (binary), LMKIT_CORPORA (/tmp/lmkit-corpora), LMKIT_PEERS (/tmp/lmkit-peers), OUT (docs/benchmarks/bpe-encode.md),
#      RSS_GB (as --rss-gb).
# Throughput is MB/s of input over the encode phase (tokenizer load excluded for every tool; tiktoken and HF also
# exclude their read+split). The machine may be shared: every ratio is computed from runs made back to back here.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
here=$REPO
OUT=${OUT:-$REPO/docs/benchmarks/bpe-encode.md}
SHARED=$SHARED_BENCH
quick=0; hf=1; rss_gb=${RSS_GB:-0}; encodings="gpt2 cl100k_base o200k_base"; families_mb=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;; --no-hf) hf=0 ;; --rss-gb) rss_gb=$2; shift ;; --encodings) encodings=$2; shift ;;
    --families) families_mb=$2; shift ;;
    *) sed -n '2,20p' "$0"; exit 2 ;;
  esac; shift
done
EXPECT_SHA=97b20718e1712ecd8e0a29d4e7c05a4c128d8458f2cd226c4e8bcdf04a2bd211
EXPECT_TOKENS=46749208
bench_need_lmkit
bench_need_corpora
bench_pip_peers
if [ "$families_mb" != 0 ]; then
  fout=$(dirname "$OUT")/bpe-families.md
  {
    echo "# \`lmkit bpe encode\` per model family vs HF tokenizers \`encode_batch\` (2 threads)"
    echo
    echo "Written by \`bench/bpe_encode.sh --families $families_mb\` on $(date -u +%Y-%m-%d\ %H:%M) UTC; $(bench_machine) at the start (a shared machine: CPU seconds are the steadier figure)."
    echo
    "$PEERS_PY" "$REPO/bench/bpe_families.py" "$LMKIT" "$CORPORA/debmix.txt" "$families_mb"
  } > "$fout.tmp" && mv "$fout.tmp" "$fout"
  cat "$fout"
  exit 0
fi
TIK=$(peer_label tiktoken)
HFL=$(peer_label tokenizers)
# Outputs go to tmpfs when there is one: lmkit's timed phase ends after the output file is fsync'ed and renamed, and on
# a disk that flush is a fixed cost that measures the disk, not the encoder (the peers' timings exclude writing).
W=$(mktemp -d "$([ -d /dev/shm ] && echo /dev/shm || echo /tmp)/bpe-encode-bench.XXXXXX"); trap 'rm -rf "$W"' EXIT
input=$CORPORA/debmix.txt
if [ $quick = 1 ]; then head -c 20000000 "$input" > "$W/quick.txt"; input=$W/quick.txt; fi
bytes=$(stat -c %s "$input")
in_label="$(basename "$CORPORA/debmix.txt")$([ $quick = 1 ] && echo ', first 20 MB' || true)"
j() {  # a field of a JSON document (lmkit's, pretty) or of the last JSON line (a peer's)
  python3 -c "
import json,sys
s=sys.stdin.read().strip()
try: d=json.loads(s)
except ValueError: d=json.loads(s.splitlines()[-1])
print(d$1)"
}
tv() { awk -F': ' -v k="$1" '$1 ~ k {print $2}' "$2" | tail -1; }  # field of /usr/bin/time -v output

rows=()
run_lmkit() {  # encoding threads
  local enc=$1 t=$2
  /usr/bin/time -v -o "$W/time" "$LMKIT" --json --threads "$t" bpe encode --tokenizer "$enc" --dtype uint32 "$input" \
    -o "$W/lmkit.u32" > "$W/sum.json"
  local secs mbs sha tok rss cpu
  secs=$(j "['seconds']" < "$W/sum.json"); tok=$(j "['tokens']" < "$W/sum.json")
  mbs=$(python3 -c "print(f'{$bytes/1e6/$secs:.1f}')"); sha=$(sha256sum "$W/lmkit.u32" | cut -d' ' -f1)
  rss=$(tv "Maximum resident" "$W/time"); cpu=$(python3 -c "print(f'{$(tv 'User time' "$W/time")+$(tv 'System time' "$W/time"):.2f}')")
  LAST_WALL=$(tv "Elapsed" "$W/time" | awk -F: '{s=0; for(i=1;i<=NF;i++) s=s*60+$i; print s}'); LAST_CPU=$cpu
  echo "lmkit $enc t=$t: $mbs MB/s encode, ${secs}s, process ${LAST_WALL}s wall ${cpu}s cpu, $tok tokens, sha $sha, rss ${rss}kB" >&2
  LAST_MBS=$mbs; LAST_SHA=$sha; LAST_TOK=$tok
  rows+=("| $enc | **lmkit** $(git -C "$here" describe --always --dirty 2>/dev/null) | $t | $mbs | $(printf %.2f "$secs") | ${cpu} | $((rss/1024)) | $tok | ${sha:0:12} |")
}
run_peer() {  # encoding label threads cmd...
  local enc=$1 label=$2 t=$3; shift 3
  /usr/bin/time -v -o "$W/time" "$@" > "$W/peer.json"
  local mbs secs sha tok rss cpu
  mbs=$(j "['MB_per_s']" < "$W/peer.json"); secs=$(j "['encode_s']" < "$W/peer.json")
  sha=$(j "['ids_sha256']" < "$W/peer.json"); tok=$(j "['tokens']" < "$W/peer.json")
  rss=$(tv "Maximum resident" "$W/time"); cpu=$(python3 -c "print(f'{$(tv 'User time' "$W/time")+$(tv 'System time' "$W/time"):.2f}')")
  echo "$enc $label: $mbs MB/s, encode ${secs}s, process cpu ${cpu}s, sha $sha, rss ${rss}kB" >&2
  LAST_MBS=$mbs; LAST_SHA=$sha; LAST_TOK=$tok; LAST_ENC_S=$secs; LAST_CPU=$cpu
  rows+=("| $enc | $label | $t | $mbs | $secs | $cpu (whole process) | $((rss/1024)) | $tok | ${sha:0:12} |")
}
tiktoken() {  # encoding threads: pip's tiktoken, encode() per chunk (1) or encode_batch(num_threads=N)
  local how="encode"; [ "$2" -gt 1 ] && how="encode_batch"
  run_peer "$1" "$TIK $how" "$2" "$PEERS_PY" "$SHARED/py/peer_tiktoken_encode.py" "$input" --encoding "$1" --threads "$2"
}

# What two CPUs of this machine can give at best: two independent one-thread encodes at the same time (no shared
# state at all); their combined rate over one process's rate is the ceiling for the 2-thread speed-up.
run_pair() {
  local i
  for i in 1 2; do
    "$LMKIT" --json --threads 1 bpe encode --tokenizer gpt2 --dtype uint32 "$input" -o "$W/pair$i.u32" > "$W/pair$i.json" &
  done
  wait
  local s1 s2
  s1=$(j "['seconds']" < "$W/pair1.json"); s2=$(j "['seconds']" < "$W/pair2.json")
  rm -f "$W/pair1.u32" "$W/pair2.u32"
  PAIR_MBS=$(python3 -c "print(f'{2*$bytes/1e6/max($s1,$s2):.1f}')")
  echo "two 1-thread processes at once: $PAIR_MBS MB/s combined" >&2
}
r() { python3 -c "print(f'{$1:.${2:-1}f}')"; }

# GPT-2, back to back: tiktoken, lmkit 1 thread, lmkit 2 threads, two 1-thread processes, lmkit 1 thread again,
# tiktoken again, tiktoken encode_batch on 2 threads, then HF.
tiktoken gpt2 1; tik1=$LAST_MBS; tik_sha=$LAST_SHA; tik1_s=$LAST_ENC_S; tik1_cpu=$LAST_CPU
run_lmkit gpt2 1; l1a=$LAST_MBS; sha1=$LAST_SHA; tok1=$LAST_TOK; l1a_wall=$LAST_WALL; l1a_cpu=$LAST_CPU
run_lmkit gpt2 2; l2=$LAST_MBS; sha2=$LAST_SHA
run_pair
run_lmkit gpt2 1; l1b=$LAST_MBS
tiktoken gpt2 1; tik2=$LAST_MBS
tiktoken gpt2 2; tikb=$LAST_MBS; tikb_sha=$LAST_SHA
shas=("$sha1" "$sha2" "$tik_sha" "$tikb_sha")
if [ $hf = 1 ]; then
  run_peer gpt2 "$HFL encode" 1 env RAYON_NUM_THREADS=1 CS336_FIXTURES="$SHARED/../fixtures/cs336" "$PEERS_PY" \
    "$SHARED/py/peer_hf_encode.py" gpt2 "$input" --mode seq; hf1=$LAST_MBS; shas+=("$LAST_SHA")
  run_peer gpt2 "$HFL encode_batch" 2 env RAYON_NUM_THREADS=2 CS336_FIXTURES="$SHARED/../fixtures/cs336" "$PEERS_PY" \
    "$SHARED/py/peer_hf_encode.py" gpt2 "$input" --mode batch; hf2=$LAST_MBS; shas+=("$LAST_SHA")
fi

want=$EXPECT_SHA; [ $quick = 1 ] && want=$tik_sha
ok=yes; for s in "${shas[@]}"; do [ "$s" = "$want" ] || ok=NO; done
[ $quick = 1 ] || [ "$tok1" = "$EXPECT_TOKENS" ] || ok=NO
ratio1=$(r "min($l1a,$l1b)/max($tik1,$tik2)")
ratio1b="$(r "$l1a/$tik1")× and $(r "$l1b/$tik2")×"
# Against the faster of the two 1-thread runs: a transient slowdown of the VM during one of them must not flatter it.
ratio2=$(r "$l2/max($l1a,$l1b)" 2)
ratio2b=$(r "$l2/$tikb")
ceiling=$(r "$PAIR_MBS/max($l1a,$l1b)" 2)
summary_row "GPT-2 encode, 1 thread" "$in_label" "$TIK encode: $(r "max($tik1,$tik2)") MB/s" \
  "**${ratio1b}** the throughput (two back-to-back pairs); ids identical: $ok" "≥ 10× (#33)"
summary_row "GPT-2 encode, 1 thread, whole process" "$in_label" "$TIK encode calls: ${tik1_s} s" \
  "**$(r "$tik1_s/$l1a_wall")×** wall (lmkit process ${l1a_wall} s), $(r "$tik1_cpu/$l1a_cpu")× CPU s (whole processes)" "≥ 10× (#41)"
summary_row "GPT-2 encode, 2 threads" "$in_label" "$TIK encode_batch, 2 threads: $tikb MB/s" \
  "**${ratio2b}×** ($l2 MB/s)" ""
summary_row "GPT-2 encode, 2 threads vs 1" "$in_label" "two independent 1-thread lmkit processes: ${ceiling}×" \
  "**${ratio2}×**" "≥ 1.9× (#33)"
if [ $hf = 1 ]; then
  summary_row "GPT-2 encode" "$in_label" "$HFL encode / encode_batch (2 threads): $hf1 / $hf2 MB/s" \
    "$(r "max($l1a,$l1b)/$hf1")× (1 thread) / $(r "$l2/$hf2")× (2 threads)" ""
fi

# cl100k_base and o200k_base: tiktoken and lmkit, 1 and 2 threads.
other=()
for enc in $encodings; do
  [ "$enc" = gpt2 ] && continue
  tiktoken "$enc" 1; t1=$LAST_MBS; ts=$LAST_SHA; t1_s=$LAST_ENC_S; t1_cpu=$LAST_CPU
  run_lmkit "$enc" 1; m1=$LAST_MBS; ms1=$LAST_SHA; m1_wall=$LAST_WALL; m1_cpu=$LAST_CPU
  tiktoken "$enc" 2; t2=$LAST_MBS; ts2=$LAST_SHA
  run_lmkit "$enc" 2; m2=$LAST_MBS; ms2=$LAST_SHA
  same=yes; for s in "$ms1" "$ts2" "$ms2"; do [ "$s" = "$ts" ] || same=NO; done
  [ $same = yes ] || ok=NO
  other+=("- $enc: lmkit / tiktoken $(r "$m1/$t1")× on 1 thread, $(r "$m2/$t2")× on 2 threads (encode_batch); ids identical: **$same**")
  other+=("  - whole lmkit process (1 thread, loading included) against tiktoken's encode calls alone: $(r "$t1_s/$m1_wall")× wall; CPU seconds, both whole processes: $(r "$t1_cpu/$m1_cpu")×")
  summary_row "$enc encode, 1 thread, whole process" "$in_label" "$TIK encode calls: ${t1_s} s" \
    "**$(r "$t1_s/$m1_wall")×** wall (lmkit process ${m1_wall} s), $(r "$t1_cpu/$m1_cpu")× CPU s (whole processes)" "≥ 10× (#41)"
  summary_row "$enc encode, 1 / 2 threads" "$in_label" "$TIK encode / encode_batch: $t1 / $t2 MB/s" \
    "**$(r "$m1/$t1")× / $(r "$m2/$t2")×**; ids identical: $same" ""
done

rss_rows=()
if [ "$rss_gb" != 0 ]; then
  reps=$(python3 -c "import math; print(math.ceil($rss_gb*1e9/$(stat -c %s "$CORPORA/debmix.txt")))")
  for t in 1 2 8; do
    (for _ in $(seq "$reps"); do cat "$CORPORA/debmix.txt"; done) | /usr/bin/time -v -o "$W/time" "$LMKIT" --threads "$t" \
      bpe encode --tokenizer gpt2 --format bin - > /dev/null
    rss=$(tv "Maximum resident" "$W/time"); wall=$(tv "Elapsed" "$W/time")
    echo "rss t=$t: ${rss}kB, wall $wall" >&2
    rss_rows+=("| $t | $(python3 -c "print(f'{$reps*$(stat -c %s "$CORPORA/debmix.txt")/1e9:.2f}')") GB | $((rss/1024)) MB | $wall |")
  done
  "$LMKIT" --json bpe encode --tokenizer gpt2 /dev/null -o "$W/empty.bin" > "$W/empty.json"
  tokrss=$(j "['peak_rss_bytes']" < "$W/empty.json")
fi

{
  echo "# \`lmkit bpe encode\` vs tiktoken and HF tokenizers"
  echo
  echo "Written by \`bench/bpe_encode.sh$([ $quick = 1 ] && echo ' --quick')\` on $(date -u +%Y-%m-%d\ %H:%M) UTC; $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end (a shared machine: compare rows of one run, not across runs)."
  [ $quick = 1 ] && echo "**Smoke run on a 20 MB input (--quick): it shows the script works, not the speed.**"
  echo "Input: $(basename "$input"), $bytes bytes. Ids: raw little-endian uint32; for GPT-2 the sha256 must be $([ $quick = 1 ] && echo "tiktoken's in this run" || echo "$EXPECT_SHA ($EXPECT_TOKENS tokens)"), for the others tiktoken's in this run."
  echo "Peers: $TIK (\`encode\` per 256k-character chunk, or \`encode_batch(num_threads=N)\`; every special token allowed) and"
  echo "$HFL (GPT-2 vocab.json + merges.txt, ByteLevel; \`encode\` or \`encode_batch\`, RAYON_NUM_THREADS threads), from ../shared/bench/py."
  echo
  echo "| encoding | tool | threads | MB/s (encode) | encode s | CPU s | peak RSS MB | tokens | ids sha256 |"
  echo "|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "- ids identical to the reference in this run: **$ok**"
  echo "- lmkit 1 thread / tiktoken, back to back: $ratio1b (worst pairing: $ratio1×); target ≥ 10×"
  echo "- lmkit 2 threads / lmkit 1 thread (the faster of its two runs): $ratio2×; target ≥ 1.8×"
  echo "- lmkit 2 threads / tiktoken encode_batch on 2 threads: $ratio2b×"
  echo "- ceiling on this machine: two independent 1-thread lmkit processes at once gave $PAIR_MBS MB/s combined, $ceiling× one process (the two CPUs share caches and memory bandwidth)"
  if [ "$rss_gb" != 0 ]; then
    echo
    echo "Bounded memory: debmix repeated to about $rss_gb GB, piped through \`lmkit bpe encode --tokenizer gpt2 --format bin - > /dev/null\`"
    echo "(peak RSS from /usr/bin/time -v; the tokenizer alone, loading and encoding nothing, peaks at $((tokrss/1048576)) MB):"
    echo
    echo "| threads | input | peak RSS | wall |"
    echo "|---|---|---|---|"
    printf '%s\n' "${rss_rows[@]}"
  fi
  [ ${#other[@]} -gt 0 ] && { echo; printf '%s\n' "${other[@]}"; }
  summary_block
} > "$OUT"
cat "$OUT"
[ $ok = yes ]
