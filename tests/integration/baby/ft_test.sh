#!/bin/sh
# Fault tolerance on a Baby backend: `ftc run` with 3 replica groups x 2
# ranks of TRAINER on BACKEND, a replica group killed (-9) or stopped
# (SIGSTOP for 3 s) at four steps spread over the run, chosen at random
# with a fixed seed (at steps rather than every 5 s: a failure in the
# last seconds would leave its victim no time to catch up before the
# others finish, whatever the backend). Every replica group must
# finish every step (the survivors of each failure commit without the
# victim, the victim comes back and heals) with the same parameters'
# checksum, and ftc run must have injected failures.
# Usage: ft_test.sh FTC_CLI TRAINER BACKEND STEPS (TRAINER may be a program
# and its first arguments, e.g. "python3 train_ft.py": it is split on
# spaces).
set -eu
ftc=$1 trainer=$2 backend=$3 steps=$4
out=$(mktemp)
trap 'rm -f "$out"' EXIT
at="$((steps / 10)),$((steps * 3 / 10)),$((steps / 2)),$((steps * 7 / 10))"
if ! "$ftc" run --replicas 3 --ranks 2 --kill-at-steps "$at" \
     --kill-mode mixed --seed 7 --quiet -- \
     $trainer --backend "$backend" --steps "$steps" \
     >"$out" 2>&1; then
  grep -v CCL_WARN "$out" | tail -40
  echo "FAIL: ftc run on $backend"
  exit 1
fi
grep -v CCL_WARN "$out" | sed -n '/ftc run summary/,$p'
injected=$(awk '$1 == "failures" { print $2 }' "$out")
sums=$(awk '$1 ~ /^replica_[0-9]+$/ && $2 == "finished" && $4 == '"$steps"' \
            { print $6 }' "$out" | sort -u)
finished=$(awk '$1 ~ /^replica_[0-9]+$/ && $2 == "finished"' "$out" | wc -l)
if [ "$finished" -ne 3 ] || [ "$(echo "$sums" | wc -l)" -ne 1 ] ||
   [ -z "$sums" ] || [ "${injected:-0}" -ne 4 ]; then
  echo "FAIL: $finished groups finished, checksums '$sums', $injected injected"
  exit 1
fi
echo "PASS: 3 groups on $backend survived $injected failures, checksum $sums"
