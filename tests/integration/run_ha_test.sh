#!/usr/bin/env bash
# A job that outlives its lighthouse's host (scripts/testhosts.sh): hosts
# 0-2 each run an etcd member (one 3-member cluster) and an `ftc lighthouse
# --etcd`; hosts 3-5 each run one replica group of two ranks (`ftc run
# --host`), given all three lighthouses. While it trains:
#   1. the leader lighthouse's host is split from the other two (it still
#      reaches the training hosts): it loses its lease and stops deciding,
#      the majority side elects another, the job goes on;
#   2. the leader lighthouse's host dies (link down, kill -9 of everything
#      on it, its etcd member too): a standby takes over, etcd goes on with
#      2 of 3 members, the job goes on;
#   3. one more etcd member freezes (SIGSTOP): etcd has no quorum, the
#      leader cannot renew its lease and stops, the job stalls (nothing
#      commits, nothing diverges); SIGCONT: a leader again, the job goes on.
# Every quorum id the job's status shows is larger than or equal to the
# one before, and the three groups end at the last step with one
# checksum.
# A phase reads the job's quorum before it reads the leader from etcd and
# then waits for a quorum of a later lighthouse term (each elected leader
# gives the job a new, larger epoch: the id's high 32 bits). Under load a
# late renewal can move the lead on its own between the two reads; in
# that order the fault still ends the term the quorum was read in, or a
# term that came after it.
# Needs root and etcd.
# usage: run_ha_test.sh FTC_BINARY HARNESS TRAINER
set -euo pipefail
ftc=$1
hosts=$2
trainer=$3
name="h$(($$ % 100000))"
work=$(mktemp -d)
port=29620
steps=12000
prefix="ftc/ha-test-$$"

test_name=run_ha_test
# shellcheck source=hosts_kit.sh
source "$(dirname "$0")/hosts_kit.sh"
[[ $(id -u) -eq 0 ]] || fail "needs root (network namespaces)"
command -v etcd >/dev/null || fail "etcd is not installed (scripts/deps.sh)"
export FTC_TOKEN="run-ha-$$-$RANDOM$RANDOM"
trap 'disown -a; "$hosts" down "$name"; rm -rf "$work"' EXIT

"$hosts" up "$name" 6
addr() { "$hosts" addr "$name" "$1"; }

# etcd, tuned as docs/operations.md says (its shortest lease is then 1 s).
cluster="e0=http://$(addr 0):2380,e1=http://$(addr 1):2380,e2=http://$(addr 2):2380"
etcd_urls="http://$(addr 0):2379,http://$(addr 1):2379,http://$(addr 2):2379"
for i in 0 1 2; do
  "$hosts" exec "$name" $i etcd --name e$i --data-dir "$work/etcd$i" \
    --listen-client-urls "http://$(addr $i):2379" \
    --advertise-client-urls "http://$(addr $i):2379" \
    --listen-peer-urls "http://$(addr $i):2380" \
    --initial-advertise-peer-urls "http://$(addr $i):2380" \
    --initial-cluster "$cluster" --initial-cluster-state new \
    --heartbeat-interval 50 --election-timeout 500 --pre-vote \
    >"$work/etcd$i.out" 2>&1 &
  eval "etcd$i=\$!"
done

# TLS on every HTTP plane, one certificate naming the six hosts (the
# token may not cross hosts in clear text).
sans=$(for i in 0 1 2 3 4 5; do printf 'IP:%s,' "$(addr $i)"; done)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -days 2 -subj /CN=run-ha -addext "subjectAltName=${sans%,}" \
  -keyout "$work/tls.key" -out "$work/tls.pem" 2>/dev/null ||
  fail "openssl could not make the test certificate"
export FTC_TLS_CERT="$work/tls.pem" FTC_TLS_KEY="$work/tls.key"
export FTC_TLS_CA="$work/tls.pem"

lhs=""
for i in 0 1 2; do
  "$hosts" exec "$name" $i "$ftc" lighthouse --bind "$(addr $i):$port" \
    --etcd "$etcd_urls" --etcd-prefix "$prefix" --lease-ms 1000 \
    >"$work/lighthouse$i.out" 2>&1 &
  lhs="$lhs${lhs:+,}https://$(addr $i):$port"
done

runs=()
for i in 0 1 2; do
  h=$((i + 3))
  "$hosts" exec "$name" $h "$ftc" run --quiet --show-events \
    --host "$(addr $h)" \
    --lighthouse "$lhs" --job ha --replicas 1 --ranks 2 --first-replica $i \
    --total-replicas 3 --env FTC_TIMEOUT_MS=2000 \
    --summary-json "$work/summary$i.json" -- \
    "$trainer" --steps $steps --step-sleep-ms 3 >"$work/run$i.out" 2>&1 &
  runs+=($!)
done

# quorum: "<members> <max_step> <quorum_id>" of the job's quorum, read from
# host 3 through the lighthouse list; every id read is checked against the
# largest seen so far.
last_id=0
quorum() {
  "$hosts" exec "$name" 3 "$ftc" status --addr "$lhs" --job ha --json \
    --timeout-ms 3000 2>/dev/null | python3 -c '
import json, sys
q = json.load(sys.stdin).get("quorum") or {}
print(len(q.get("members", [])), q.get("max_step", 0), q.get("quorum_id", 0))' \
    2>/dev/null || true
}
read_quorum() {
  read -r members step id <<<"$(quorum)" || true
  members=${members:-0} step=${step:-0} id=${id:-0}
  if ((id > 0)); then
    ((id >= last_id)) || fail "quorum id $id after $last_id: ids went back"
    last_id=$id
  fi
}

# The leader's host index, from its key in etcd (read from host 3).
leader() {
  "$hosts" exec "$name" 3 curl -s -m 3 -X POST \
    "http://$(addr ${1:-0}):2379/v3/kv/range" \
    -d "{\"key\":\"$(printf '%s/leader' "$prefix" | base64 -w0)\"}" |
    python3 -c '
import base64, json, sys
kvs = json.load(sys.stdin).get("kvs") or []
v = base64.b64decode(kvs[0]["value"]).decode() if kvs else ""
print(int(v.split(":")[0].split(".")[-1]) - 1 if v else -1)'
}

until_quorum "the three groups never trained together" "members == 3 && step >= 30"

# 1. The leader ends up on the minority side: its host is split from the
# other two etcd and lighthouse hosts but still reaches the training
# hosts. It cannot renew its lease and stops deciding; the majority side
# elects another; the job goes on with it (quorum ids still only grow).
read_quorum
before_id=$last_id
split_at=$step
minority=$(leader 0)
((minority >= 0 && minority <= 2)) || fail "no leader in etcd ($minority)"
t0=$(date +%s%N)
for i in 0 1 2; do
  ((i == minority)) || "$hosts" split "$name" "$minority" $i
done
until_quorum "the job did not go on after its leader ended up alone" \
  "members == 3 && step >= split_at + 30 && id >> 32 > before_id >> 32"
majority=$(leader $(((minority + 1) % 3)))
((majority >= 0 && majority != minority)) ||
  fail "the majority side's leader is $majority (minority $minority)"
for i in 0 1 2; do
  ((i == minority)) || "$hosts" join "$name" "$minority" $i
done
echo "run_ha_test: leader host $minority split from the majority; host" \
  "$majority leads, the job 30 steps further" \
  "$(( ($(date +%s%N) - t0) / 1000000 )) ms later"

# 2. The leader's host dies.
read_quorum
before_id=$last_id
killed_at=$step
old=$(leader "$majority")
((old >= 0 && old <= 2)) || fail "no leader in etcd ($old)"
t0=$(date +%s%N)
"$hosts" crash "$name" "$old"
alive=$(((old + 1) % 3))
until_quorum "the job did not go on after the leader's host died" \
  "members == 3 && step >= killed_at + 30 && id >> 32 > before_id >> 32"
echo "run_ha_test: leader host $old died; the job went on with a new" \
  "leader $(( ($(date +%s%N) - t0) / 1000000 )) ms later (30 steps)"
new=$(leader "$alive")
((new >= 0 && new != old)) || fail "the new leader is $new (old $old)"

# 3. etcd loses its quorum: the other surviving member freezes.
other=$((3 - old - new))
frozen=$(eval echo "\$etcd$other")
kill -STOP "$frozen"
until_stalled "the job kept committing without an etcd quorum"
stalled=$step
kill -CONT "$frozen"
until_quorum "the job did not go on once etcd had its quorum back" \
  "members == 3 && step >= stalled + 30"

for i in 0 1 2; do
  wait "${runs[i]}" || fail "the run on host $((i + 3)) failed"
done
python3 "$(dirname "$0")/one_quorum_per_step.py" "$work"/run*.out ||
  fail "two quorums committed one step"
python3 - "$steps" "$work"/summary*.json <<'EOF' ||
import json, sys
steps = int(sys.argv[1])
groups = [json.load(open(p))["replica_groups"][0] for p in sys.argv[2:]]
assert len(groups) == 3, groups
assert all(g["status"] == "finished" and g["last_step"] == steps
           for g in groups), groups
sums = {g["checksum"] for g in groups}
assert len(sums) == 1 and "" not in sums, sums
print("run_ha_test: 3 groups of 2 ranks ended at step", steps,
      "with checksum", sums.pop(), "; restarts",
      [g["restarts"] for g in groups])
EOF
  fail "the three replica groups do not match"
echo "run_ha_test: passed"
