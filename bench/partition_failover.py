#!/usr/bin/env python3
"""What a network partition costs a job over test hosts, and how fast it
mends. Needs root (scripts/testhosts.sh makes network namespaces).

Three test hosts: `ftc lighthouse` on host 0, one `ftc run` per training
host with one replica group of one rank of examples/train_ddp each (group
I on host I+1), as tests/integration/run_hosts_test.sh runs them. Faults,
interleaved pass by pass, each held --hold-s and then healed:
  lighthouse  host 2 split from host 0: group 1 cut off from the
              lighthouse but not from group 0;
  peers       hosts 1 and 2 split from each other, both still reaching
              the lighthouse.
Timed from the split (ms): the last step the cut group committed (its
stop; in the peers case the last step either group committed) and, in
the lighthouse case, the other group 10 steps further. Timed from the
heal: every group in the quorum again (a committed step with 2
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


def together(groups, after):
    """The first time after `after` both groups committed a step with two
    participants (the later of the two), else None."""
    firsts = []
    for g in groups:
        both = [c for c in g.since(after) if c[2] == 2]
        if not both:
            return None
        firsts.append(both[0][0])
    return max(firsts)


def one_pass(args, name, groups, kind):
    hosts = (2, 0) if kind == "lighthouse" else (1, 2)
    wait(lambda: together(groups, now_ms() - 1000), 60,
         "the groups did not train together")
    split = now_ms()
    subprocess.run([HOSTS, "split", name, *map(str, hosts)], check=True)
    cut = groups[1] if kind == "lighthouse" else None
    res = {"fault": kind}
    if kind == "lighthouse":
        before = groups[0].last_before(split)
        target = (before[1] if before else 0) + 10
        res["other_10_steps_ms"] = wait(
            lambda: next((c[0] - split for c in groups[0].since(split)
                          if c[1] >= target), None), 60,
            "group 0 did not go on")
    time.sleep(args.hold_s)  # the partition's length, not a wait for state
    heal = now_ms()
    stopped = [g.since(split) for g in ([cut] if cut else groups)]
    last = max((c[0] for cs in stopped for c in cs if c[0] < heal),
               default=split)
    res["last_commit_after_split_ms"] = last - split
    subprocess.run([HOSTS, "join", name, *map(str, hosts)], check=True)
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
    subprocess.run([HOSTS, "up", name, "3"], check=True)
    procs = []
    try:
        addr = [subprocess.run([HOSTS, "addr", name, str(i)], check=True,
                               capture_output=True, text=True).stdout.strip()
                for i in range(3)]
        lh = f"{addr[0]}:29650"
        procs.append(subprocess.Popen(
            [HOSTS, "exec", name, "0", ftc, "lighthouse", "--insecure", "--bind",
             lh],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        groups = []
        for i in (0, 1):
            p = subprocess.Popen(
                [HOSTS, "exec", name, str(i + 1), "stdbuf", "-oL", ftc, "run",
                 "--insecure", "--show-events", "--host", addr[i + 1],
                 "--lighthouse", lh, "--job", "part", "--replicas", "1",
                 "--first-replica", str(i), "--total-replicas", "2",
                 "--env", "FTC_TIMEOUT_MS=2000", "--", trainer,
                 "--steps", "100000000", "--step-sleep-ms",
                 str(args.step_sleep_ms)],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            procs.append(p)
            groups.append(Group(p))
        rows = []
        for _ in range(args.passes):
            for kind in ("lighthouse", "peers"):
                r = one_pass(args, name, groups, kind)
                print(json.dumps(r), flush=True)
                rows.append(r)
        load = os.getloadavg()
        print(f"\n{args.passes} passes, hold {args.hold_s} s, load average "
              f"{load[0]:.1f}/{load[1]:.1f}; ms, median (range):")
        for kind in ("lighthouse", "peers"):
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
