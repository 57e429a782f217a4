#!/usr/bin/env bash
# scripts/testhosts.sh against a real lighthouse: three test hosts, `ftc
# lighthouse` on host 0, `ftc status` from hosts 1 and 2. A host whose link
# is cut cannot read it while the other can; after restore it can again; a
# split pair cannot reach each other while a third host still reaches both;
# `down` leaves no namespace, interface or process behind, also when run
# twice. Needs root (ctest runs it as root in make check).
# usage: testhosts_test.sh FTC_BINARY HARNESS
set -euo pipefail
ftc=$1
hosts=$2
name="t$(($$ % 100000))"
port=29600

fail() {
  echo "testhosts_test: FAIL: $*" >&2
  exit 1
}
[[ $(id -u) -eq 0 ]] || fail "needs root (network namespaces)"
trap '"$hosts" down "$name"' EXIT

# status I: ftc status from host I, 500 ms at most.
status() {
  "$hosts" exec "$name" "$1" "$ftc" status --addr "$lh" --timeout-ms 500 \
    >/dev/null 2>&1
}

# eventually CMD...: true once CMD succeeds, trying for up to 10 s with
# growing pauses (what a link coming back up may take to route).
eventually() {
  local pause=0.01 end=$((SECONDS + 10))
  until "$@"; do
    ((SECONDS < end)) || return 1
    sleep "$pause"
    pause=$(awk -v p="$pause" 'BEGIN { print (p < 0.5 ? p * 2 : p) }')
  done
}

"$hosts" up "$name" 3
if "$hosts" up "$name" 3 2>/dev/null; then
  fail "a second 'up' of the same name was accepted"
fi
lh="$("$hosts" addr "$name" 0):$port"
"$hosts" exec "$name" 0 "$ftc" lighthouse --bind "$lh" --insecure \
  >/dev/null 2>&1 &
lighthouse=$!

eventually status 1 || fail "host 1 never read the lighthouse on host 0"
status 2 || fail "host 2 cannot read the lighthouse"

"$hosts" cut "$name" 1
if status 1; then fail "host 1 read the lighthouse with its link cut"; fi
status 2 || fail "host 2 lost the lighthouse when host 1 was cut"
"$hosts" restore "$name" 1
eventually status 1 || fail "host 1 did not come back after restore"

"$hosts" split "$name" 2 0
if status 2; then fail "host 2 reached host 0 across a split"; fi
status 1 || fail "host 1 lost the lighthouse when 2 and 0 were split"
# The split is silent (frames vanish), not refused: it takes the timeout.
start=$(date +%s%N)
status 2 || true
took_ms=$((($(date +%s%N) - start) / 1000000))
((took_ms >= 400)) || fail "host 2's read failed in ${took_ms} ms: refused, not lost"
"$hosts" join "$name" 2 0
eventually status 2 || fail "host 2 did not reach host 0 after join"

"$hosts" down "$name"
[[ -z $("$hosts" left "$name") ]] || fail "left behind: $("$hosts" left "$name")"
# Killed, so at most a zombie until this shell reaps it.
state=$(awk '{print $3}' "/proc/$lighthouse/stat" 2>/dev/null || echo gone)
[[ $state == Z || $state == gone ]] ||
  fail "the lighthouse inside host 0 outlived down (state $state)"
wait "$lighthouse" 2>/dev/null || true
"$hosts" down "$name" # nothing there: still succeeds
echo "testhosts_test: passed"
