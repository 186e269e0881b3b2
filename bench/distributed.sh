#!/bin/bash
# MPI overhead: `mpirun -n 2 lmkit ... --mpi --threads 1` against one process with `--threads 2` on debmix.txt, for
# bpe train (vocab 30,000) and bpe encode (GPT-2), outputs checked byte-identical (cmp) in the same run; plus the
# figures of the scaling model in docs/distributed.md (unique pre-tokens at two corpus sizes, counts-file size,
# reduction time).
#   bench/distributed.sh [--quick] [--reps N]
#     --quick   first 20 MB of debmix
#     --reps N  alternate the two configurations N times (default 2) and keep each one's fastest run
# Env: LMKIT (binary, default build/release/lmkit), LMKIT_CORPORA (/tmp/lmkit-corpora), OUT (docs/benchmarks/distributed.md).
# Times are wall clock of the whole command (process start, MPI start-up, reading, writing included). The machine is
# shared: the ratios come from runs made back to back in this script.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
here=$REPO
OUT=${OUT:-$here/docs/benchmarks/distributed.md}
SHARED=$SHARED_BENCH
bench_need_lmkit
quick=0; reps=2
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;; --reps) reps=$2; shift ;;
    *) sed -n '2,11p' "$0"; exit 2 ;;
  esac; shift
done
command -v mpirun >/dev/null || { echo "mpirun not found (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 1; }
[ -f "$CORPORA/debmix.txt" ] || "$SHARED/corpora.sh" "$CORPORA"
W=$(mktemp -d /tmp/dist-bench.XXXXXX); trap 'rm -rf "$W"' EXIT
input=$CORPORA/debmix.txt
if [ $quick = 1 ]; then head -c 20000000 "$input" > "$W/quick.txt"; input=$W/quick.txt; fi
bytes=$(stat -c %s "$input")
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none -n 2)
j() { python3 -c "import json,sys; d=json.load(sys.stdin); print(d$1)"; }
now() { date +%s.%N; }
best() { python3 -c "import sys; print(f'{min(map(float, sys.argv[1:])):.2f}')" "$@"; }

train_t=(); train_m=(); enc_t=(); enc_m=(); in_tt=(); in_tm=(); in_et=(); in_em=()
inproc_train() { python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['seconds']; print(sum(d.values()))" "$1"; }
inproc_enc() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['seconds']+d['load_seconds'])" "$1"; }
for ((i = 0; i < reps; i++)); do
  t0=$(now); "$LMKIT" --json --quiet --threads 2 bpe train "$input" --vocab-size 30000 --special-token '<|endoftext|>' \
    -o "$W/t" > "$W/train_t.json"; t1=$(now)
  train_t+=("$(python3 -c "print($t1-$t0)")")
  t0=$(now); "${MPIRUN[@]}" "$LMKIT" --json --quiet --threads 1 bpe train "$input" --vocab-size 30000 \
    --special-token '<|endoftext|>' --mpi -o "$W/m" > "$W/train_m.json"; t1=$(now)
  train_m+=("$(python3 -c "print($t1-$t0)")")
  for f in vocab.json merges.txt tokenizer.json; do cmp "$W/t/$f" "$W/m/$f"; done
  in_tt+=("$(inproc_train "$W/train_t.json")"); in_tm+=("$(inproc_train "$W/train_m.json")")
  t0=$(now); "$LMKIT" --json --quiet --threads 2 bpe encode -t gpt2 "$input" -o "$W/t.bin" > "$W/enc_t.json"; t1=$(now)
  enc_t+=("$(python3 -c "print($t1-$t0)")")
  t0=$(now); "${MPIRUN[@]}" "$LMKIT" --json --quiet --threads 1 bpe encode -t gpt2 "$input" --mpi -o "$W/m.bin" \
    > "$W/enc_m.json"; t1=$(now)
  enc_m+=("$(python3 -c "print($t1-$t0)")")
  cmp "$W/t.bin" "$W/m.bin"
  in_et+=("$(inproc_enc "$W/enc_t.json")"); in_em+=("$(inproc_enc "$W/enc_m.json")")
  echo "rep $i: train ${train_t[-1]} s (2 threads) vs ${train_m[-1]} s (2 ranks); encode ${enc_t[-1]} vs ${enc_m[-1]} s" >&2
done
bt=$(best "${train_t[@]}"); bm=$(best "${train_m[@]}"); et=$(best "${enc_t[@]}"); em=$(best "${enc_m[@]}")
ovt=$(python3 -c "print(f'{($bm/$bt-1)*100:+.1f}')"); ove=$(python3 -c "print(f'{($em/$et-1)*100:+.1f}')")
ibt=$(best "${in_tt[@]}"); ibm=$(best "${in_tm[@]}"); iet=$(best "${in_et[@]}"); iem=$(best "${in_em[@]}")
iovt=$(python3 -c "print(f'{($ibm/$ibt-1)*100:+.1f}')"); iove=$(python3 -c "print(f'{($iem/$iet-1)*100:+.1f}')")
starts=()
for ((i = 0; i < 3; i++)); do t0=$(now); "${MPIRUN[@]}" true; t1=$(now); starts+=("$(python3 -c "print($t1-$t0)")"); done
start=$(best "${starts[@]}")
# The fixed cost of an MPI command, whatever its input: the same encode of a 12-byte file, one process against mpirun
# (launch, MPI_Init/Finalize, a tokenizer per rank). What the MPI run spends beyond it scales with the input.
echo "hello world" > "$W/tiny.txt"
tiny_t=(); tiny_m=()
for ((i = 0; i < 3; i++)); do
  t0=$(now); "$LMKIT" --quiet --threads 2 bpe encode -t gpt2 "$W/tiny.txt" -o "$W/tiny_t.bin"; t1=$(now)
  tiny_t+=("$(python3 -c "print($t1-$t0)")")
  t0=$(now); "${MPIRUN[@]}" "$LMKIT" --quiet --threads 1 bpe encode -t gpt2 "$W/tiny.txt" --mpi -o "$W/tiny_m.bin"; t1=$(now)
  tiny_m+=("$(python3 -c "print($t1-$t0)")")
done
tt=$(best "${tiny_t[@]}"); tm=$(best "${tiny_m[@]}")
fixed=$(python3 -c "print(f'{$tm-$tt:.2f}')")
fixed_pct=$(python3 -c "print(f'{($tm-$tt)/$et*100:.1f}')")
net=$(python3 -c "print(f'{(($em-$tm)/($et-$tt)-1)*100:+.1f}')")

# Scaling-model figures from the single-process runs and two shard counts.
unique=$(j "['pretokens_unique']" < "$W/train_t.json"); total=$(j "['pretokens_total']" < "$W/train_t.json")
count_s=$(j "['seconds']['pretokenize_count']" < "$W/train_t.json"); merge_s=$(j "['seconds']['merge']" < "$W/train_t.json")
reduce_s=$(j "['seconds'].get('reduce', 0)" < "$W/train_m.json")
"$LMKIT" --json --quiet --threads 2 bpe count "$input" --shard 0/2 --special-token '<|endoftext|>' -o "$W/p0.counts" \
  > "$W/count0.json"
half_unique=$(j "['pretokens_unique']" < "$W/count0.json"); half_bytes=$(j "['range'][1]" < "$W/count0.json")
counts_bytes=$(stat -c %s "$W/p0.counts")
tokens=$(j "['tokens']" < "$W/enc_t.json")
rev=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo "?")
{
  echo "# Distributed BPE: 2 MPI ranks vs 2 threads"
  echo
  echo "\`bench/distributed.sh$([ $quick = 1 ] && echo ' --quick')\`, lmkit $rev, $(date -u +%Y-%m-%d), $(nproc) cores, load average"
  echo "$(cut -d' ' -f1-3 /proc/loadavg) at the end, Open MPI $(mpirun --version 2>/dev/null | head -1 | awk '{print $NF}'). Input: $(basename "$input"), $bytes bytes."
  echo "Wall time of the whole command, fastest of $reps alternated runs; outputs compared with \`cmp\` (identical)."
  echo
  echo "| command | 1 process, --threads 2 (s) | mpirun -n 2, --threads 1 (s) | MPI overhead |"
  echo "|---|---|---|---|"
  echo "| bpe train --vocab-size 30000 | $bt | $bm | $ovt % |"
  echo "| bpe encode -t gpt2 ($tokens tokens) | $et | $em | $ove % |"
  echo "| bpe train, in-process time (load, count, reduce, merge, write) | $ibt | $ibm | $iovt % |"
  echo "| bpe encode, in-process time (load, encode, gather, write) | $iet | $iem | $iove % |"
  echo "| \`mpirun -n 2 true\` (MPI start-up alone, fastest of 3) | | $start | |"
  echo "| bpe encode of a 12-byte file (fixed cost, fastest of 3) | $tt | $tm | +$fixed s |"
  echo
  echo "- Fixed cost of the MPI command over one process: **$fixed s**, $fixed_pct % of the single-process encode."
  echo "- Encode overhead net of that fixed cost (what grows with the input): **$net %**."
  echo
  echo "Runs: train ${train_t[*]} vs ${train_m[*]}; encode ${enc_t[*]} vs ${enc_m[*]} (s)."
  echo
  echo "Scaling-model figures (single process, 2 threads):"
  echo
  echo "| quantity | value |"
  echo "|---|---|"
  echo "| pre-tokens (total / unique) | $total / $unique |"
  echo "| unique pre-tokens in shard 0/2 ($half_bytes bytes) | $half_unique |"
  echo "| counts file of shard 0/2 | $counts_bytes bytes |"
  echo "| pre-tokenize + count, wall | $count_s s |"
  echo "| merges (30,000 vocab), wall | $merge_s s |"
  echo "| MPI reduction of 2 ranks' counts (rank 0) | $reduce_s s |"
  summary_row "\`mpirun -n 2\` vs 1 process × 2 threads" "debmix.txt$([ $quick = 1 ] && echo ", first 20 MB")" "—" \
    "train **$ovt %** wall, encode **$ove %** wall (fastest of $reps alternated runs); fixed cost of an MPI command $fixed s; outputs identical" "≤ 10%"
  summary_block
} > "$OUT"
cat "$OUT"
