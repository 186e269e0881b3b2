#!/usr/bin/env bash
# Installs what lmkit needs to build and test on Debian 12, only what is missing. Safe to run again.
# Runs as root (CI, containers) or through sudo.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config git
      libcli11-dev libfmt-dev nlohmann-json3-dev catch2 libpcre2-dev
      libsimdjson-dev zlib1g-dev libzstd-dev libutf8proc-dev
      libprotobuf-dev protobuf-compiler
      python3 python3-dev python3-venv python3-numpy libopenmpi-dev openmpi-bin librsvg2-bin
      clang-format ccache)
[ "${LMKIT_SETUP_EXTRA:-}" ] && read -r -a extra <<<"$LMKIT_SETUP_EXTRA" && pkgs+=("${extra[@]}")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
