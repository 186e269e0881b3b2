#!/bin/bash
# Tokenizer load time: lmkit (whole `bpe encode` process on a 12-byte input, one thread) against HF tokenizers'
# Tokenizer.from_file and tiktoken's Encoding over the same ranks (load_tiktoken_bpe + constructor), on generated
# byte-level tokenizer.json files of 32 k, 128 k and 256 k tokens (bench/gen_tokenizer_json.py), and on real
# tokenizer.json files given as arguments. Best of 3 wall-clock runs each, taskset to one core where available.
#   bench/bpe_load.sh [tokenizer.json ...]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need_lmkit
py=$(bash "$REPO/scripts/heavy-venv.sh")
work=$(mktemp -d /tmp/lmkit-bpe-load.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "hello world" > "$work/in.txt"
one=""; command -v taskset >/dev/null && one="taskset -c 0"
files=()
for n in 32000 128000 256000; do
  "$py" "$REPO/bench/gen_tokenizer_json.py" "$n" "$work/gen$n.json" "$work/gen$n.tiktoken"
  files+=("$work/gen$n.json")
done
files+=("$@")
printf "| file | lmkit (process) | HF Tokenizer.from_file | tiktoken (same ranks) |\n|---|---|---|---|\n"
for f in "${files[@]}"; do
  best=999
  for _ in 1 2 3; do
    t0=$(date +%s.%N)
    $one "$LMKIT" --threads 1 bpe encode -t "$f" "$work/in.txt" -o "$work/out.bin" >/dev/null 2>&1
    t=$(echo "$(date +%s.%N) - $t0" | bc)
    best=$(echo "if ($t < $best) $t else $best" | bc)
  done
  tik="${f%.json}.tiktoken"
  read -r hf tk < <($one "$py" - "$f" "$tik" <<'PY'
import os, sys, time
from tokenizers import Tokenizer
def best(fn):
    b = 1e9
    for _ in range(3):
        t = time.perf_counter(); fn(); b = min(b, time.perf_counter() - t)
    return b
hf = best(lambda: Tokenizer.from_file(sys.argv[1]))
tk = float("nan")
if os.path.exists(sys.argv[2]):
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    tk = best(lambda: tiktoken.Encoding("x", pat_str=r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
                                        mergeable_ranks=load_tiktoken_bpe(sys.argv[2]), special_tokens={}))
print("%.3f %.3f" % (hf, tk))
PY
)
  printf "| %s (%s) | %.3f s | %s s | %s s |\n" "$(basename "$f")" "$(du -h "$f" | cut -f1)" "$best" "$hf" "$tk"
done
