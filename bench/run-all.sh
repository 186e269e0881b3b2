#!/usr/bin/env bash
# Runs every side-by-side benchmark (lmkit vs its peers) in one go. Not part of CI: it builds real corpora from Debian
# and npm packages and installs the peers (../shared/bench). Each script writes docs/benchmarks/<area>.md.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
for s in bench/bpe.sh bench/quant.sh bench/quant_accuracy.sh bench/dataload.sh bench/distributed.sh; do
  [ -f "$s" ] || continue
  echo "== $s ==" >&2
  bash "$s" || { echo "bench: $s failed" >&2; status=1; }
done
exit $status
