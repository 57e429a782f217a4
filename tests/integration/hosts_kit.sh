# Shared by the tests of jobs over test hosts (run_hosts_test.sh,
# run_ha_test.sh); sourced after they set $test_name and $work
# (their scratch folder), and define read_quorum, which sets $members and
# $step from the job's current quorum (0 and 0 while there is none).

# fail TEXT: says why, shows the tail of every output, exits 1.
fail() {
  echo "$test_name: FAIL: $*" >&2
  for f in "$work"/*.out; do
    echo "--- $f" >&2
    { grep -v '^raft\|^[0-9-]* [0-9:.]* [A-Z] |\|FTC_EVENT' "$f" || true; } |
      tail -20 >&2
  done
  exit 1
}

# until_quorum TEXT TEST: polls (up to 60 s) until TEST (an arithmetic
# expression of $members and $step) holds.
until_quorum() {
  local end=$((SECONDS + 60)) pause=0.02
  while :; do
    read_quorum
    (($2)) && return 0
    ((SECONDS < end)) || fail "$1 (last quorum: $members members, step $step)"
    sleep "$pause"
    pause=$(awk -v p="$pause" 'BEGIN { print (p < 0.2 ? p * 2 : p) }')
  done
}

# until_stalled TEXT: polls (up to 60 s) until the quorum's step has not
# moved for 2 s.
until_stalled() {
  local end=$((SECONDS + 60)) last=-1 since=$SECONDS
  while :; do
    read_quorum
    if ((step != last)); then
      last=$step since=$SECONDS
    elif ((SECONDS - since >= 2)); then
      return 0
    fi
    ((SECONDS < end)) || fail "$1 (step $step)"
    sleep 0.1
  done
}
