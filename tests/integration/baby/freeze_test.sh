#!/bin/sh
# A peer frozen inside the inner library: `ftc run` trains 3 replica groups
# x 2 ranks on BACKEND without injected failures; once every rank's groups
# exist, one rank's child process (ftc-baby) alone is stopped (SIGSTOP)
# and left so. Its parent must notice the silent heartbeat and kill it,
# the other members must be told and rebuild, and training must go on:
# every replica group finishes with the same parameters.
# Usage: freeze_test.sh FTC_CLI TRAINER BACKEND STEPS
set -eu
ftc=$1 trainer=$2 backend=$3 steps=$4
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$ftc" run --replicas 3 --ranks 2 --seed 7 --progress 1 -- \
  "$trainer" --backend "$backend" --steps "$steps" >"$out" 2>&1 &
run=$!
# The children of this run's trainers (other tests may run beside it)
# that serve a cross-replica group, with that group's prefix (their
# argv[1], the manager's "torchft/<quorum>/<rank>/baby").
children() {
  for c in $(pgrep -f "^ftc-baby torchft/" || true); do
    p=$(ps -o ppid= -p "$c" | tr -d ' ')
    [ -n "$p" ] && [ "$(ps -o ppid= -p "$p" | tr -d ' ')" = "$run" ] &&
      echo "$c $(ps -o args= -p "$c" | cut -d/ -f2)"
  done
}
victim=
tries=0
while [ -z "$victim" ] && [ $tries -lt 600 ]; do
  # Training in its steady state (a progress line with all 3 groups in
  # the quorum, past step 100): the children of that quorum are inside
  # oneCCL's collectives most of the time.
  full=
  if grep -Eq 'step [1-9][0-9]{2,} .* quorum 3 ' "$out"; then
    full=$(children | awk '{ n[$2]++; p[$2] = $1 } END {
                            for (q in n) if (n[q] == 6) print p[q] }')
  fi
  if [ -n "$full" ]; then
    victim=$full
  else
    sleep 0.1 # polling for the groups, not synchronising
    tries=$((tries + 1))
  fi
done
if [ -z "$victim" ]; then
  kill "$run" 2>/dev/null || true
  echo "FAIL: the groups never formed"
  exit 1
fi
echo "freezing $victim: $(ps -o args= -p "$victim")"
kill -STOP "$victim"
rc=0
wait "$run" || rc=$?
grep -v CCL_WARN "$out" | grep -E "heartbeat|summary|replica_[0-9] " || true
finished=$(awk '$1 ~ /^replica_[0-9]+$/ && $2 == "finished"' "$out" | wc -l)
sums=$(awk '$1 ~ /^replica_[0-9]+$/ && $2 == "finished" { print $6 }' "$out" |
       sort -u | wc -l)
if [ $rc -ne 0 ] || [ "$finished" -ne 3 ] || [ "$sums" -ne 1 ] ||
   ! grep -q "stopped answering its heartbeat" "$out"; then
  # What the ranks said about their failures, for the reader of a CI log.
  grep -v CCL_WARN "$out" | grep -E "trainer|ERROR|WARN|exited" | tail -40
  echo "FAIL: exit $rc, $finished groups finished, $sums checksums"
  exit 1
fi
echo "PASS: child $victim frozen on $backend; 3 groups finished alike"
