#!/usr/bin/env bash
# Builds the CUDA test and benchmark binaries HERE (nvcc is on every machine; no GPU needed) and packs them, with the
# shared libraries a bare GPU machine lacks, into .gpu-bundle/ for scripts/gpu-check.sh to run there.
#
# Why: the lent GPU machine has no package registry (fmt, CLI11, nlohmann-json, Catch2, PCRE2 cannot be installed
# there) and its minutes are few; building there would cost minutes even where it works. So the device call is
#   run(command="bash scripts/gpu-check.sh", carry=[".gpu-bundle"])
# after `bash scripts/gpu-bundle.sh` here. The bundle records a digest of the sources it was built from, and
# gpu-check.sh refuses a bundle that no longer matches the tree (a stale binary would report on other code).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build=${BUILD_DIR:-build-gpu}
out=.gpu-bundle
# MPI off: its libraries would have to travel too, and no GPU test uses it. The default architectures (CMakeLists:
# sm_80 and sm_90 machine code) let H100/H200 run sm_90 directly, with no PTX JIT against the device's driver.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLMKIT_CUDA=ON -DLMKIT_MPI=OFF -DLMKIT_WERROR=ON >/dev/null
cmake --build "$build" -j "$(nproc)" --target lmkit_tests lmkit
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib/fallback"
cp "$build/lmkit" "$build/lmkit_tests" "$out/bin/"
# Libraries outside glibc go in lib/ (used always); the C++ runtime goes in lib/fallback/, used only when the
# machine's own is older than the one these binaries were linked against (a newer one is compatible, and replacing it
# could break the machine's other programs in the same process, such as the CUDA driver's helpers).
ldd "$build/lmkit_tests" "$build/lmkit" | awk '/=> \//{print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*) ;;
    libstdc++.so*|libgcc_s.so*) cp -L "$lib" "$out/lib/fallback/" ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
bash scripts/gpu-check.sh --digest >"$out/SOURCE_DIGEST"
git rev-parse HEAD >"$out/COMMIT" 2>/dev/null || echo unknown >"$out/COMMIT"
echo "gpu-bundle: $(du -sh "$out" | cut -f1) in $out (sources $(cut -c1-12 "$out/SOURCE_DIGEST"), commit $(cut -c1-12 "$out/COMMIT"))"
echo "gpu-bundle: on the GPU machine: bash scripts/gpu-check.sh   (carry .gpu-bundle)"
