#!/usr/bin/env bash
# One job over test hosts (scripts/testhosts.sh), the way it runs on real
# machines: `ftc lighthouse` on host 0, one `ftc run --host ADDR
# --lighthouse ...` per training host, each with its own range of replica
# groups (group I on host I+1), then a partition:
#   lighthouse  three groups of two ranks; group 1 is split from the
#               lighthouse's host but still reaches the others: the job
#               goes on with groups 0 and 2, group 1 commits nothing, and
#               after the split heals it rejoins, heals and all three
#               finish bit-identical;
#   peers       the two groups are split from each other, both still
#               reaching the lighthouse: each reports the other
#               unreachable, and neither is more than half of the job, so
#               no step commits (the job stalls, nobody diverges) until
#               the split heals; then it goes on and both finish
#               bit-identical;
#   majority    three groups of two ranks on three training hosts; group
#               0's host is split from the other two, all still reaching
#               the lighthouse: the reports leave group 0 out, groups 1
#               and 2 go on, and after the split heals group 0 rejoins,
#               heals and all three finish bit-identical;
#   pair        three groups of two ranks; the hosts of groups 0 and 1 are
#               split from each other, group 2 reaching both: their reports
#               leave one of the pair out, the other two go on, and after
#               the split heals all three finish bit-identical;
#   flap        three groups of two ranks; group 1's host's link goes
#               down and up five times: each time it may drop out and heal
#               back; all three finish bit-identical;
#   chaos       each launcher kills or stops its own group every 3 s
#               (seeded) for the whole run, and group 1's host is split
#               from the lighthouse's for 3 s meanwhile: both finish
#               bit-identical.
# Needs root.
# usage: run_hosts_test.sh FTC_BINARY HARNESS TRAINER
#        lighthouse|peers|majority|pair|flap|chaos
set -euo pipefail
ftc=$1
hosts=$2
trainer=$3
mode=$4
name="r$(($$ % 100000))"
work=$(mktemp -d)
port=29610
steps=4000

test_name=run_hosts_test
# shellcheck source=hosts_kit.sh
source "$(dirname "$0")/hosts_kit.sh"
[[ $(id -u) -eq 0 ]] || fail "needs root (network namespaces)"
# One token for the whole job, exported on every host as on real machines:
# it guards the lighthouse, the stores and heals, and the process groups
# between hosts protect every message (FTC_PG_PROTECT's default, auto).
export FTC_TOKEN="run-hosts-$$-$RANDOM$RANDOM"
trap '"$hosts" down "$name"; rm -rf "$work"' EXIT

# Training hosts 1..$training; the lighthouse on host 0. The partition
# cases run three groups of two ranks; peers (two groups: no majority)
# and chaos (two groups per host, killed and stopped) keep two hosts.
training=3 ranks=2
if [[ $mode == peers || $mode == chaos ]]; then
  training=2 ranks=1
fi
"$hosts" up "$name" $((training + 1))
lh="$("$hosts" addr "$name" 0):$port"

# TLS on every HTTP plane (the lighthouse, each rank's healing server): one
# certificate naming the three hosts' addresses, trusted by every client
# (on real machines: each host's own certificate from the cluster's CA).
# The token may not cross hosts in clear text, so the job trains only if
# TLS works end to end.
sans=$(for ((i = 0; i <= training; i++)); do
  printf 'IP:%s,' "$("$hosts" addr "$name" $i)"
done)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -days 2 -subj /CN=run-hosts -addext "subjectAltName=${sans%,}" \
  -keyout "$work/tls.key" -out "$work/tls.pem" 2>/dev/null ||
  fail "openssl could not make the test certificate"
export FTC_TLS_CERT="$work/tls.pem" FTC_TLS_KEY="$work/tls.key"
export FTC_TLS_CA="$work/tls.pem"

# (At info level the lighthouse logs each quorum, loss and restart, which
# a failure shows.)
FTC_LOG=info "$hosts" exec "$name" 0 "$ftc" lighthouse --bind "$lh" \
  >"$work/lighthouse.out" 2>&1 &
lh="https://$lh"

# One ftc run per training host; replica group I on host I+1.
# chaos: two groups per host, and each launcher kills (kill -9) or stops
# (SIGSTOP for 1 s) one of its own every 3 s, seeded.
per_host=1 chaos=()
if [[ $mode == chaos ]]; then
  per_host=2 chaos=(--kill-every 3 --kill-mode mixed --stop-duration 1)
fi
all=$((training * per_host))
runs=()
for ((i = 0; i < training; i++)); do
  "$hosts" exec "$name" $((i + 1)) "$ftc" run --quiet --show-events \
    --host "$("$hosts" addr "$name" $((i + 1)))" --lighthouse "$lh" \
    --job hosts --replicas $per_host --ranks $ranks \
    --first-replica $((i * per_host)) \
    --total-replicas $all "${chaos[@]}" ${chaos:+--seed $((17 + i))} \
    --env FTC_TIMEOUT_MS=2000 --summary-json "$work/summary$i.json" -- \
    "$trainer" --steps $steps --step-sleep-ms 3 >"$work/run$i.out" 2>&1 &
  runs+=($!)
done

# quorum: "<members> <max_step>" of the job's current quorum, read from
# host 0 (empty while there is none).
quorum() {
  "$hosts" exec "$name" 0 "$ftc" status --addr "$lh" --job hosts --json \
    --timeout-ms 2000 2>/dev/null | python3 -c '
import json, sys
q = json.load(sys.stdin).get("quorum") or {}
print(len(q.get("members", [])), q.get("max_step", 0))' 2>/dev/null || true
}

read_quorum() {
  read -r members step <<<"$(quorum)" || true
  members=${members:-0} step=${step:-0}
}

until_quorum "the hosts never trained together" \
  "members == all && step >= 30"
case $mode in
lighthouse)
  "$hosts" split "$name" 2 0
  until_quorum "groups 0 and 2 did not go on without group 1" "members == 2"
  split_step=$step
  until_quorum "groups 0 and 2 stopped while group 1 was split" \
    "members == 2 && step >= split_step + 30"
  "$hosts" join "$name" 2 0
  until_quorum "group 1 did not come back" "members == 3"
  ;;
peers)
  "$hosts" split "$name" 1 2
  until_stalled "the job kept committing across the split"
  stalled_step=$step
  "$hosts" join "$name" 1 2
  until_quorum "the job did not go on after the split healed" \
    "members == 2 && step >= stalled_step + 30"
  ;;
majority)
  "$hosts" split "$name" 1 2
  "$hosts" split "$name" 1 3
  until_quorum "groups 1 and 2 did not go on without group 0" "members == 2"
  split_step=$step
  until_quorum "groups 1 and 2 stopped while group 0 was split" \
    "members == 2 && step >= split_step + 30"
  "$hosts" join "$name" 1 2
  "$hosts" join "$name" 1 3
  until_quorum "group 0 did not come back" "members == 3"
  grep -q "lighthouse.exclude.*replica_0" "$work/lighthouse.out" ||
    fail "the lighthouse did not say it left group 0 out"
  ;;
pair)
  "$hosts" split "$name" 1 2
  until_quorum "the job did not go on without one of the pair" \
    "members == 2"
  split_step=$step
  until_quorum "the job stopped while the pair was split" \
    "members == 2 && step >= split_step + 30"
  "$hosts" join "$name" 1 2
  until_quorum "the pair's group left out did not come back" "members == 3"
  grep -q "lighthouse.exclude.*replica_[01]" "$work/lighthouse.out" ||
    fail "the lighthouse did not say it left one of the pair out"
  ;;
flap)
  # Group 1's link goes down and up five times, each cut around the
  # heartbeat timeout (0.4-0.8 s), a second apart: the schedule of the
  # fault, not a wait for anything.
  for k in 4 5 6 7 8; do
    "$hosts" cut "$name" 2
    sleep "0.$k"
    "$hosts" restore "$name" 2
    sleep 1
  done
  until_quorum "group 1 did not come back once the link held" "members == 3"
  flap_step=$step
  until_quorum "the job did not go on once the link held" \
    "members == 3 && step >= flap_step + 30"
  ;;
chaos)
  # Kills and stops go on all along; in the middle, group 1's host is
  # split from the lighthouse's for 3 s (the fault's length, not a wait).
  until_quorum "the job made no progress under the kills" "step >= 500"
  "$hosts" split "$name" 2 0
  sleep 3
  "$hosts" join "$name" 2 0
  until_quorum "host 2's groups did not come back after the split" \
    "members == all"
  ;;
*) fail "mode lighthouse, peers, majority, pair, flap or chaos, not '$mode'" ;;
esac

grep -q "^dashboard: https://" "$work/lighthouse.out" ||
  fail "the lighthouse did not serve https"
for ((i = 0; i < training; i++)); do
  wait "${runs[i]}" || fail "the run on host $((i + 1)) failed"
done
# No step committed by two quorums, chaos included: each launcher keeps
# one of its groups healthy, so some group always holds the committed
# step and nobody trains it again from step 0.
python3 "$(dirname "$0")/one_quorum_per_step.py" "$work"/run*.out ||
  fail "two quorums committed one step"
python3 - "$steps" "$mode" "$work"/summary*.json <<'EOF' ||
import json, sys
steps, mode = int(sys.argv[1]), sys.argv[2]
groups = [g for p in sorted(sys.argv[3:])
          for g in json.load(open(p))["replica_groups"]]
assert [g["replica_id"] for g in groups] == [
    f"replica_{i}" for i in range(len(groups))], groups
assert [g["replica_index"] for g in groups] == list(range(len(groups)))
# Under chaos a group frozen when training finished is ended, not compared.
done = [g for g in groups if mode != "chaos" or g["status"] != "ended"]
assert len(done) >= len(groups) - 2 * (mode == "chaos") >= 2, groups
assert all(g["status"] == "finished" and g["last_step"] == steps
           for g in done), groups
sums = {g["checksum"] for g in done}
assert len(sums) == 1 and "" not in sums, sums
# split from the lighthouse, group 1 fell behind and came back by healing;
# left out, group 0 did
assert mode != "lighthouse" or groups[1]["heals"] >= 1, groups[1]
assert mode != "majority" or groups[0]["heals"] >= 1, groups[0]
assert mode != "pair" or groups[0]["heals"] + groups[1]["heals"] >= 1, groups
# under chaos every group was hit and came back
assert mode != "chaos" or all(g["restarts"] >= 1 or g["heals"] >= 1
                              for g in groups), groups
print("run_hosts_test:", len(done), "of", len(groups),
      "groups on", len(sys.argv) - 3, "hosts ended at step",
      steps, "with checksum", sums.pop(), "; heals",
      [g["heals"] for g in groups], "restarts",
      [g["restarts"] for g in groups])
EOF
  fail "the hosts' replica groups do not match"
echo "run_hosts_test: passed"
