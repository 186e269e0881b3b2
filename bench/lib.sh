# Sourced by bench/*.sh: where things are, the pip peers, timing a process, and the summary block each page ends with.
# Sets: REPO, SHARED_BENCH (../shared/bench), LMKIT (binary: $LMKIT, else build/release/lmkit, else build/lmkit),
#       CORPORA ($LMKIT_CORPORA, else /tmp/lmkit-corpora), PEERS ($LMKIT_PEERS, else /tmp/lmkit-peers).
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED_BENCH=${LMKIT_SHARED:-$REPO/../shared}/bench
[ -d "$SHARED_BENCH" ] || SHARED_BENCH=/work/shared/bench
if [ -z "${LMKIT:-}" ]; then
  LMKIT=$REPO/build/release/lmkit
  [ -x "$LMKIT" ] || LMKIT=$REPO/build/lmkit
fi
LMKIT=$(realpath "$LMKIT" 2>/dev/null || echo "$LMKIT")
CORPORA=${LMKIT_CORPORA:-${CORPORA:-/tmp/lmkit-corpora}}
export LMKIT_PEERS=${LMKIT_PEERS:-/tmp/lmkit-peers}
PEERS=$LMKIT_PEERS

bench_need_lmkit() {
  [ -x "$LMKIT" ] || { echo "$(basename "$0"): build lmkit first ($LMKIT; see README)" >&2; exit 1; }
  [ -x /usr/bin/time ] || { echo "$(basename "$0"): needs GNU time (apt-get install time)" >&2; exit 1; }
}
bench_need_corpora() { [ -f "$CORPORA/debmix.txt" ] || bash "$SHARED_BENCH/corpora.sh" "$CORPORA" >&2; }

# The pip peers of ../shared/bench (native tiktoken, HF tokenizers); installed when missing. npm peers are refused:
# every figure here names a native build.
bench_pip_peers() {
  [ "$(bash "$SHARED_BENCH/peers.sh" kind)" = pip ] || bash "$SHARED_BENCH/peers.sh" setup >&2
  local kind
  kind=$(bash "$SHARED_BENCH/peers.sh" kind)
  [ "$kind" = pip ] || { echo "$(basename "$0"): peers.sh setup gave '$kind' peers; these benchmarks need the pip peers (PyPI)" >&2; exit 1; }
  PEERS_PY=$(bash "$SHARED_BENCH/peers.sh" python)
}

# "name version (build)" of a peer, e.g. `peer_label tiktoken` -> "tiktoken 0.14.0 (pip, native Rust)".
peer_label() {
  case "$1" in
    tiktoken) echo "tiktoken $("$PEERS_PY" -c 'import tiktoken; print(tiktoken.__version__)') (pip, native Rust)" ;;
    tokenizers) echo "HF tokenizers $("$PEERS_PY" -c 'import tokenizers; print(tokenizers.__version__)') (pip, native Rust)" ;;
    sentencepiece) echo "sentencepiece $(dpkg-query -W -f='${Version}' sentencepiece 2>/dev/null | cut -d- -f1) (Debian spm_train, native C++)" ;;
    debian-torch) echo "PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') (Debian python3-torch, CPU)" ;;
    debian-numpy) echo "numpy $(/usr/bin/python3 -c 'import numpy; print(numpy.__version__)') (Debian python3-numpy)" ;;
    *) echo "$1" ;;
  esac
}

# timed NAME CMD...: runs CMD under /usr/bin/time -v, stdout kept in $BENCH_TMP/NAME.out, stderr in NAME.err; sets WALL (s), CPU
# (user + sys, s) and RSS_MB (peak resident set).
timed() {
  local name=$1; shift
  echo ">> $name" >&2
  /usr/bin/time -v -o "$BENCH_TMP/$name.time" "$@" >"$BENCH_TMP/$name.out" 2>"$BENCH_TMP/$name.err" ||
    { tail -20 "$BENCH_TMP/$name.err" >&2; echo "$(basename "$0"): '$name' failed" >&2; exit 1; }
  WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$BENCH_TMP/$name.time")
  CPU=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {printf "%.2f", u+s}' "$BENCH_TMP/$name.time")
  RSS_MB=$(awk -F': ' '/Maximum resident/ {printf "%.0f", $2/1024}' "$BENCH_TMP/$name.time")
}

# A field of a JSON document on stdin: jget "['a']['b']".
jget() { python3 -c "import json,sys; d=json.load(sys.stdin); print(d$1)"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {r = a / b; printf (r < 0.1 ? "%.3f" : "%.2f"), r}'; }

bench_machine() {  # one line: CPU model, cores, load average now
  echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
}

# The summary block bench/summary.py copies into docs/benchmarks.md: pipe-separated rows
#   task | input | peer (name, version, build): its figure | lmkit vs peer | target
# written between the markers below, at the end of the page.
SUMMARY_BEGIN='<!-- summary: rows for docs/benchmarks.md (bench/summary.py) -->'
SUMMARY_END='<!-- /summary -->'
summary_rows=()
summary_row() { summary_rows+=("| $1 | $2 | $3 | $4 | $5 |"); }
summary_block() {
  echo
  echo "$SUMMARY_BEGIN"
  echo "| task | input | peer | lmkit vs peer | target |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${summary_rows[@]}"
  echo "$SUMMARY_END"
}
