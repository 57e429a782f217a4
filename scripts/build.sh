#!/usr/bin/env bash
# Configures and builds one build tree: scripts/build.sh DIR [cmake args...]
# Quiet when the build succeeds; prints the build log when it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1
shift
mkdir -p "$dir"
if [[ ! -f "$dir/build.ninja" ]]; then
  if ! cmake -G Ninja -S . -B "$dir" \
      -DFTC_TORCH1_PYTHON=/usr/bin/python3 \
      -DFTC_TORCH2_PYTHON="$PWD/.venv/bin/python" "$@" >"$dir/configure.log" 2>&1; then
    cat "$dir/configure.log"
    exit 1
  fi
fi
if ! ninja -C "$dir" >"$dir/build.log" 2>&1; then
  grep -vE '^\[[0-9]+/[0-9]+\] ' "$dir/build.log"
  exit 1
fi
