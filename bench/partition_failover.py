#!/usr/bin/env python3
"""What a network partition costs a job over test hosts, and how fast it
mends. Needs root (scripts/testhosts.sh makes network namespaces).

Four test hosts: `ftc lighthouse` on host 0, one `ftc run` per training
host with one replica group of one rank of examples/train_ddp each (group
I on host I+1), as tests/integration/run_hosts_test.sh runs them. Faults,
interleaved pass by pass, each held --hold-s and then healed:
  lighthouse  host 2 split from host 0: group 1 cut off from the
              lighthouse but not from the other groups;
  majority    host 1 split from hosts 2 and 3: group 0 cut off from the
              other groups, all still reaching the lighthouse (the
              others' reports leave it out);
  pair        hosts 1 and 2 split from each other: groups 0 and 1 cannot
              reach each other, group 2 reaches both (one of the pair is
              left out).
Timed from the split (ms): the last step the cut group committed (its
stop: the group left out) and another group 10 steps further. Timed
from the heal: every group in the quorum again (a committed step with 3
participants). Steps are read from each launcher's FTC_EVENT lines as
they arrive. Prints medians with the range and one JSON line per fault.

usage: sudo bench/partition_failover.py [--passes 5] [--hold-s 3]
       [--ftc build/tools/ftc/ftc] [--trainer build/examples/train_ddp]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

HOSTS = "scripts/testhosts.sh"


def now_ms():
    return time.monotonic() * 1000.0


class Group:
    """One launcher's group: its committed steps, timestamped on arrival."""

    def __init__(self, proc):
        self.proc = proc
        self.lock = threading.Lock()
        self.commits = []  # (ms, step, participants)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            at = now_ms()
            line = raw.decode(errors="replace")
            tag = line.find("FTC_EVENT ")
            if tag < 0:
                continue
            try:
                ev = json.loads(line[tag + len("FTC_EVENT "):])
            except ValueError:
                continue
            if ev.get("kind") == "step" and ev.get("committed"):
                with self.lock:
                    self.commits.append(
                        (at, ev["step"], ev.get("participants", 0)))

    def since(self, t):
        with self.lock:
            return [c for c in self.commits if c[0] >= t]

    def last_before(self, t):
        with self.lock:
            old = [c for c in self.commits if c[0] < t]
        return old[-1] if old else None


def wait(cond, timeout_s, what):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        got = cond()
        if got:
            return got
        time.sleep(0.005)
    sys.exit(f"partition_failover: {what} within {timeout_s} s")


SPLITS = {"lighthouse": [(2, 0)], "majority": [(1, 2), (1, 3)],
          "pair": [(1, 2)]}


def together(groups, after):
    """The first time after `after` every group committed a step with all
    of them participating (the latest of those), else None."""
    firsts = []
    for g in groups:
        both = [c for c in g.since(after) if c[2] == len(groups)]
        if not both:
            return None
        firsts.append(both[0][0])
    return max(firsts)


def last_commit(group, split, heal):
    return max((c[0] for c in group.since(split) if c[0] < heal),
               default=split)


def one_pass(args, name, groups, kind):
    wait(lambda: together(groups, now_ms() - 1000), 60,
         "the groups did not train together")
    split = now_ms()
    for pair in SPLITS[kind]:
        subprocess.run([HOSTS, "split", name, *map(str, pair)], check=True)
    res = {"fault": kind}
    # Group 2 is never cut; it goes 10 steps further.
    before = groups[2].last_before(split)
    target = (before[1] if before else 0) + 10
    res["other_10_steps_ms"] = wait(
        lambda: next((c[0] - split for c in groups[2].since(split)
                      if c[1] >= target), None), 60,
        "group 2 did not go on")
    time.sleep(args.hold_s)  # the partition's length, not a wait for state
    heal = now_ms()
    # The cut group: group 1 split from the lighthouse, group 0 from the
    # others; of a pair, the one that stopped first (the one left out).
    cut = {"lighthouse": [1], "majority": [0], "pair": [0, 1]}[kind]
    res["last_commit_after_split_ms"] = min(
        last_commit(groups[g], split, heal) for g in cut) - split
    for pair in SPLITS[kind]:
        subprocess.run([HOSTS, "join", name, *map(str, pair)], check=True)
    res["whole_again_ms"] = wait(
        lambda: (lambda t: t - heal if t else None)(together(groups, heal)),
        60, "the groups did not train together again")
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--hold-s", type=float, default=3.0)
    ap.add_argument("--ftc", default="build/tools/ftc/ftc")
    ap.add_argument("--trainer", default="build/examples/train_ddp")
    ap.add_argument("--step-sleep-ms", type=int, default=5)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("partition_failover: needs root (network namespaces)")
    ftc, trainer = os.path.abspath(args.ftc), os.path.abspath(args.trainer)
    name = f"pb{os.getpid() % 10000}"
    subprocess.run([HOSTS, "up", name, "4"], check=True)
    procs = []
    try:
        addr = [subprocess.run([HOSTS, "addr", name, str(i)], check=True,
                               capture_output=True, text=True).stdout.strip()
                for i in range(4)]
        lh = f"{addr[0]}:29650"
        procs.append(subprocess.Popen(
            [HOSTS, "exec", name, "0", ftc, "lighthouse", "--insecure", "--bind",
             lh],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        groups = []
        for i in (0, 1, 2):
            p = subprocess.Popen(
                [HOSTS, "exec", name, str(i + 1), "stdbuf", "-oL", ftc, "run",
                 "--insecure", "--show-events", "--host", addr[i + 1],
                 "--lighthouse", lh, "--job", "part", "--replicas", "1",
                 "--first-replica", str(i), "--total-replicas", "3",
                 "--env", "FTC_TIMEOUT_MS=2000", "--", trainer,
                 "--steps", "100000000", "--step-sleep-ms",
                 str(args.step_sleep_ms)],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            procs.append(p)
            groups.append(Group(p))
        rows = []
        for _ in range(args.passes):
            for kind in SPLITS:
                r = one_pass(args, name, groups, kind)
                print(json.dumps(r), flush=True)
                rows.append(r)
        load = os.getloadavg()
        print(f"\n{args.passes} passes, hold {args.hold_s} s, load average "
              f"{load[0]:.1f}/{load[1]:.1f}; ms, median (range):")
        for kind in SPLITS:
            for key in ("last_commit_after_split_ms", "other_10_steps_ms",
                        "whole_again_ms"):
                v = [r[key] for r in rows if r["fault"] == kind and key in r]
                if v:
                    print(f"  {kind:10s} {key:28s} {statistics.median(v):7.0f}"
                          f" ({min(v):.0f}-{max(v):.0f})")
    finally:
        for p in procs:
            p.terminate()
        subprocess.run([HOSTS, "down", name])


if __name__ == "__main__":
    main()
