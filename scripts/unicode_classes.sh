#!/usr/bin/env bash
# Regenerates src/lmkit/bpe/pretokenize/unicode_classes_table.cpp from Unicode 16.0 (scripts/unicode_classes.py) in a cached venv
# with the pinned unicodedata2 (build/unicode-venv; LMKIT_UNICODE_VENV picks another). Extra arguments (--check) are
# passed on.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${LMKIT_UNICODE_VENV:-build/unicode-venv}
bash scripts/venv.sh "$venv" scripts/unicode_classes.requirements.txt
exec "$venv/bin/python" scripts/unicode_classes.py "$@"
