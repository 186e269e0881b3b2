#!/usr/bin/env bash
# venv.sh DIR REQUIREMENTS: makes (or reuses) a Python virtual environment at DIR with the pinned PyPI packages of
# REQUIREMENTS, installing only when the file changed since the last install. Used by scripts/test.sh for the PyPI
# packages that make tests real (e.g. pip's tiktoken for parity); never touches the system Python.
set -euo pipefail
dir=$1 req=$2
stamp="$dir/.requirements.sha256"
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ -x "$dir/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then exit 0; fi
[ -x "$dir/bin/python" ] || /usr/bin/python3 -m venv "$dir"
"$dir/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
echo "$want" >"$stamp"
