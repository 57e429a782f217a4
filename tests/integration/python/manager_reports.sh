#!/bin/sh
# A PyTorch trainer that prints no FTC_EVENT line (examples/python/train_ft
# --no-events) under `ftc run` with a kill: the summary still has every
# step, the failure's recoveries and identical checksums, all reported by
# ftc.Manager (the C manager underneath) on the launcher's event socket.
# FTC_MIN_REPLICA_SIZE=2: a step commits only with both groups, so the
# survivor waits for the victim (whose restart takes seconds of torch
# import, more under load) instead of finishing alone, which would leave
# the victim to train from scratch on its own.
# Usage: manager_reports.sh FTC_CLI TRAIN_FT WORK_DIR (FTC_PYTHON runs
# train_ft.py and reads the summary).
set -eu
ftc=$1 trainer=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
if ! "$ftc" run --replicas 2 --kill-at-steps 40 --seed 3 --quiet \
     --env FTC_MIN_REPLICA_SIZE=2 \
     --summary-json "$work/summary.json" -- \
     "$trainer" --no-events --steps 80 --step-ms 20 >"$work/out" 2>&1; then
  tail -40 "$work/out"
  echo "FAIL: ftc run"
  exit 1
fi
"$FTC_PYTHON" - "$work/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
problems = []
def expect(what, ok):
    if not ok:
        problems.append(what)
expect("outcome finished", s["outcome"] == "finished")
expect("80 steps committed", s["steps_committed"] == 80)
expect("one failure injected", s["failures_injected"] == 1)
f = s["failures"][0]
expect("the survivors' recovery measured", f["survivors_recovery_ms"] is not None)
expect("the victim's recovery measured", f["victim_recovery_ms"] is not None)
expect("checksums from the managers", s["checksums_from"] == "manager")
expect("checksums identical", s["checksums_identical"] is True)
for g in s["replica_groups"]:
    expect(f"{g['replica_id']} finished at step 80",
           g["status"] == "finished" and g["last_step"] == 80)
    expect(f"{g['replica_id']} counted its steps",
           g["committed_steps"] >= 40)
if problems:
    print(json.dumps(s, indent=1))
    print("FAIL: " + "; ".join(problems))
    sys.exit(1)
print("PASS: the manager alone reported 80 steps, a recovery and checksum "
      + s["replica_groups"][0]["checksum"])
PY
