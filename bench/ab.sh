#!/usr/bin/env bash
# Compares two builds of ftc side by side: runs `ftc bench ARGS...` with the
# binary A, then B, then A... for PASSES rounds (interleaved, so load that
# comes and goes hits both), and prints each run's output tagged A/B with
# the load average before it. Usage:
#   bench/ab.sh OLD/tools/ftc/ftc NEW/tools/ftc/ftc PASSES pg --op allreduce
# A build of an older commit: git worktree add /tmp/old COMMIT &&
# (cd /tmp/old && scripts/build.sh build).
set -euo pipefail
if [[ $# -lt 4 ]]; then
  sed -n '2,8p' "$0" >&2
  exit 2
fi
a=$1 b=$2 passes=$3
shift 3
for ((p = 1; p <= passes; p++)); do
  for side in A B; do
    bin=$a
    [[ $side == B ]] && bin=$b
    echo "## pass $p $side ($bin) load $(cut -d' ' -f1-3 /proc/loadavg)"
    "$bin" bench "$@" | sed "s/^/$side /"
  done
done
