#!/usr/bin/env bash
# configure.sh BUILD_DIR [CMAKE_ARGS...]: the one CMake configure of lmkit's features, shared by README's first command
# (quickstart.sh) and its second (test.sh), so both binaries read the same inputs: CUDA and MPI when found, Parquet
# always (Arrow C++ from the pyarrow of build/venv, which scripts/venv.sh makes from tests/requirements.txt).
# ccache, when installed, caches compiles across build folders and clones of the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1
shift
bash scripts/venv.sh build/venv tests/requirements.txt
py=$PWD/build/venv/bin/python
launcher=()
if command -v ccache >/dev/null; then
  # The precompiled headers need these sloppiness settings, or ccache declines every compile that uses one.
  cc="env;CCACHE_BASEDIR=$PWD;CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime;ccache"
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="$cc" -DCMAKE_CUDA_COMPILER_LAUNCHER="$cc")
fi
cmake -S . -B "$dir" -G Ninja -DLMKIT_PARQUET=ON -DLMKIT_PYARROW_PYTHON="$py" -DLMKIT_TEST_PYTHON="$py" \
  "${launcher[@]}" "$@" >/dev/null
