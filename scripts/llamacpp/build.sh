#!/usr/bin/env bash
# Builds llama.cpp from PyPI, once, and the two tools lmkit compares with it; prints the cache directory. Used by
# scripts/llamacpp-check.sh and bench/gguf.sh (not CI).
#
# llama.cpp comes from the sdist of llama-cpp-python (PyPI), which carries llama.cpp's source under vendor/llama.cpp:
# only the llama library and ggml are built (CMake + Ninja, Release, ggml's default -march=native CPU backend), not the
# Python binding. A venv in the cache also holds `gguf` (llama.cpp's own GGUF reader, from PyPI) for the checks.
# The first run compiles ~80 files: about 10 minutes on 2 idle cores, under `nice`; later runs reuse the build.
#
# Environment: LLAMACPP_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/lmkit-llamacpp), LLAMA_CPP_PYTHON_VERSION (0.3.36),
# GGUF_VERSION (0.19.0), JOBS (2).
# Cache layout: venv/ (pip, gguf), src-V/ (the sdist), build-V/ (CMake), run_gguf, quantize_gguf, time_gguf, llamacpp.env (what was
# built: versions, llama.cpp commit, library directory).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cache=${LLAMACPP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lmkit-llamacpp}
version=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
gguf_version=${GGUF_VERSION:-0.19.0}
jobs=${JOBS:-2}
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9  # two scripts building at once would clobber each other's build directory
say() { echo "llamacpp: $*" >&2; }

if ! "$cache/venv/bin/python" -c "import gguf, sys; sys.exit(gguf.__version__ != '$gguf_version')" 2>/dev/null; then
  [ -x "$cache/venv/bin/python" ] || /usr/bin/python3 -m venv "$cache/venv"
  "$cache/venv/bin/python" -m pip install -q --disable-pip-version-check "gguf==$gguf_version" >&2
fi
gguf_version=$("$cache/venv/bin/python" -c 'import gguf; print(gguf.__version__)' 2>/dev/null ||
               "$cache/venv/bin/python" -m pip show gguf | sed -n 's/^Version: //p')

src=$cache/src-$version
if [ ! -f "$src/vendor/llama.cpp/include/llama.h" ]; then
  say "downloading llama-cpp-python $version (sdist, ~75 MB) from PyPI"
  rm -rf "$cache/sdist" "$src"
  # PyPI's JSON API names the sdist; `pip download --no-binary :all:` would also build its build backend from source.
  mkdir -p "$cache/sdist"
  "$cache/venv/bin/python" - "$version" "$cache/sdist/llama_cpp_python-$version.tar.gz" <<'PY' >&2
import json, sys, urllib.parse, urllib.request
version, out = sys.argv[1], sys.argv[2]
index = "https://pypi.org/pypi/llama-cpp-python/json"
meta = json.load(urllib.request.urlopen(index, timeout=60))
# A PyPI mirror may answer with file addresses relative to the index page.
url = urllib.parse.urljoin(index, next(f["url"] for f in meta["releases"][version] if f["packagetype"] == "sdist"))
urllib.request.urlretrieve(url, out)
PY
  mkdir -p "$src.tmp"
  tar xzf "$cache/sdist/llama_cpp_python-$version.tar.gz" -C "$src.tmp" --strip-components=1
  mv "$src.tmp" "$src"
  rm -rf "$cache/sdist"
fi

build=$cache/build-$version
lib=$build/bin
if [ ! -f "$build/.done" ]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S "$src/vendor/llama.cpp" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF "${launcher[@]}" >"$cache/cmake.log" 2>&1 ||
    { tail -20 "$cache/cmake.log" >&2; exit 1; }
  say "building llama.cpp (llama + ggml) from llama-cpp-python $version with $jobs jobs; log: $cache/ninja.log"
  nice -n 10 cmake --build "$build" -j "$jobs" --target llama >"$cache/ninja.log" 2>&1 ||
    { tail -30 "$cache/ninja.log" >&2; exit 1; }
  touch "$build/.done"
fi
[ -f "$lib/libllama.so" ] || { say "no libllama.so under $lib after the build"; exit 1; }

inc=(-I"$src/vendor/llama.cpp/include" -I"$src/vendor/llama.cpp/ggml/include")
for tool in run_gguf quantize_gguf time_gguf; do
  if [ ! -x "$cache/$tool" ] || [ "$repo/scripts/llamacpp/$tool.cpp" -nt "$cache/$tool" ] || [ "$build/.done" -nt "$cache/$tool" ]; then
    g++ -std=c++17 -O2 "$repo/scripts/llamacpp/$tool.cpp" "${inc[@]}" -L"$lib" -lllama -lggml -lggml-base \
      -Wl,-rpath,"$lib" -o "$cache/$tool"
  fi
done
# The sdist keeps llama.cpp's git metadata, so the vendored commit is known (CMake's "-dirty" only says that the sdist's
# files are not git's checkout).
commit=$(git -C "$src/vendor/llama.cpp" rev-parse --short=7 HEAD 2>/dev/null ||
         sed -n 's/.*ggml commit: *//p' "$cache/cmake.log" | head -1 | sed 's/-dirty$//')
{
  echo "LLAMACPP_LIB=$lib"
  echo "LLAMA_CPP_PYTHON_VERSION=$version"
  echo "LLAMACPP_COMMIT=${commit:-unknown}"
  echo "LLAMACPP_VERSION=$(sed -n 's/.*llama.cpp version: *//p' "$cache/cmake.log" | head -1)"
  echo "GGML_VERSION=$(sed -n 's/.*ggml version: *//p' "$cache/cmake.log" 2>/dev/null | head -1)"
  echo "GGUF_VERSION=$gguf_version"
  echo "GGUF_PYTHON=$cache/venv/bin/python"
} >"$cache/llamacpp.env"
echo "$cache"
