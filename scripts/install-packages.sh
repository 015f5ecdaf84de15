#!/usr/bin/env bash
# scripts/install-packages.sh PACKAGE...
# Installs the Debian packages named that are not installed yet (root, or
# through sudo); installs nothing when all are. bootstrap.sh calls it with
# what every build needs; the fuzz and sanitizer paths (scripts/fuzz.sh,
# scripts/test.sh --sanitize) call it with clang-22 and its runtimes, which
# the default build does not need.
set -euo pipefail

missing=()
for pkg in "$@"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "parc: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
