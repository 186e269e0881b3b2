#!/usr/bin/env bash
# clang-tidy with the checks of .clang-tidy over src/ and commands/ (or the files given), using the compile commands of
# a build without CUDA (clang-tidy cannot read nvcc's flags). Exit status 1 when there is a finding.
#   bash scripts/tidy.sh [file.cpp ...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/tidy
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLMKIT_CUDA=OFF -DLMKIT_MPI=OFF -DLMKIT_TESTS=OFF \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
if [ $# -gt 0 ]; then files=("$@"); else mapfile -t files < <(git ls-files 'src/*.cpp' 'commands/*.cpp'); fi
# GCC's precompiled header is not readable by clang: tidy the sources without it.
sed -e 's/ -include [^ ]*cmake_pch\.hxx//g' -e 's/ -Winvalid-pch//g' "$build/compile_commands.json" \
  >"$build/compile_commands.tidy.json.tmp"
mkdir -p "$build/tidy-db"
mv "$build/compile_commands.tidy.json.tmp" "$build/tidy-db/compile_commands.json"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run-clang-tidy -quiet -p "$build/tidy-db" -j "${TIDY_JOBS:-$(nproc)}" "${files[@]}" 2>/dev/null |
  sed 's/\x1b\[[0-9;]*m//g' >"$out" || true
grep -E "^[^ ].*(warning|error):" "$out" | sort -u || true
! grep -qE "^[^ ].*(warning|error):" "$out"
