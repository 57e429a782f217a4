#!/usr/bin/env python3
"""How long training waits when its lighthouse fails, side by side.

Two jobs train at once on this host, each 2 replica groups x 1 rank of
examples/train_ddp under `ftc run`:
  ha    three `ftc lighthouse --etcd` over one etcd (tuned as
        docs/operations.md says), the groups given all three addresses;
  lone  one `ftc lighthouse`, restarted on its port the moment it dies
        (a supervisor with no restart delay: the best a lone lighthouse
        can do, and only while its host lives).
Faults, interleaved pass by pass: kill -9 of the ha leader, kill -9 (and
restart) of the lone lighthouse, SIGSTOP of the ha leader (SIGCONT once
training went on), SIGTERM of the ha leader. Each is timed from the
signal to (a) the first quorum of the new lighthouse (its created time at
the lighthouse) and (b) the job having committed 10 more steps. Prints
medians with the range and one JSON line per fault.

usage: bench/lighthouse_failover.py [--passes 3] [--lease-ms 1000]
       [--ftc build/tools/ftc/ftc] [--trainer build/examples/train_ddp]
"""
import argparse
import base64
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def now_ms():
    return time.time() * 1000.0


def status(addrs, job):
    """The job's status from whichever lighthouse answers, or None."""
    for a in addrs:
        try:
            with urllib.request.urlopen(
                    f"http://{a}/v1/jobs/{job}/status", timeout=0.2) as r:
                return json.load(r)
        except (OSError, ValueError):
            continue
    return None


def wait(cond, timeout_s, what):
    end = time.time() + timeout_s
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.01)
    sys.exit(f"lighthouse_failover: {what} within {timeout_s} s")


class Scene:
    def __init__(self, args, work):
        self.args, self.work, self.procs = args, work, []

    def spawn(self, argv, out):
        p = subprocess.Popen(argv, stdout=open(out, "ab"),
                             stderr=subprocess.STDOUT,
                             start_new_session=True)
        self.procs.append(p)
        return p

    def train(self, job, lighthouse):
        self.spawn([self.args.ftc, "run", "--quiet", "--job", job,
                    "--lighthouse", lighthouse, "--replicas", "2",
                    "--ranks", "1", "--", self.args.trainer, "--steps",
                    "100000000", "--step-sleep-ms", "3"],
                   f"{self.work}/{job}.out")

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


class Ha(Scene):
    def __init__(self, args, work):
        super().__init__(args, work)
        cport, pport = free_port(), free_port()
        self.etcd = f"http://127.0.0.1:{cport}"
        self.spawn(["etcd", "--name", "b", "--data-dir", f"{work}/etcd",
                    "--listen-client-urls", self.etcd,
                    "--advertise-client-urls", self.etcd,
                    "--listen-peer-urls", f"http://127.0.0.1:{pport}",
                    "--initial-advertise-peer-urls",
                    f"http://127.0.0.1:{pport}", "--initial-cluster",
                    f"b=http://127.0.0.1:{pport}", "--heartbeat-interval",
                    "50", "--election-timeout", "500"], f"{work}/etcd.out")
        self.addrs = [f"127.0.0.1:{free_port()}" for _ in range(3)]
        self.lh = [self.start_lighthouse(i) for i in range(3)]
        self.train("ha", ",".join(self.addrs))

    def start_lighthouse(self, i):
        return self.spawn([self.args.ftc, "lighthouse", "--bind",
                           self.addrs[i], "--etcd", self.etcd,
                           "--lease-ms", str(self.args.lease_ms),
                           "--min-replicas", "2"], f"{self.work}/lh{i}.out")

    def leader(self):
        key = base64.b64encode(b"ftc/lighthouse/leader").decode()
        req = urllib.request.Request(f"{self.etcd}/v3/kv/range",
                                     data=json.dumps({"key": key}).encode())
        with urllib.request.urlopen(req, timeout=2) as r:
            kvs = json.load(r).get("kvs") or []
        name = base64.b64decode(kvs[0]["value"]).decode() if kvs else ""
        return self.addrs.index(name) if name in self.addrs else None


class Lone(Scene):
    def __init__(self, args, work):
        super().__init__(args, work)
        self.addrs = [f"127.0.0.1:{free_port()}"]
        self.lh = self.start_lighthouse()
        self.train("lone", self.addrs[0])

    def start_lighthouse(self):
        return self.spawn([self.args.ftc, "lighthouse", "--bind",
                           self.addrs[0], "--min-replicas", "2"],
                          f"{self.work}/lone_lh.out")


def training(scene, job, steps=30):
    """The job's status once it has committed steps."""
    def ok():
        t = status(scene.addrs, job)
        return t if t and t.get("quorum") and \
            t["quorum"]["max_step"] >= steps else None
    return wait(ok, 60, f"{job}: not training")


def timed(scene, job, fault, after=None):
    """Applies fault(); returns (ms to the new lighthouse's first quorum,
    ms to 10 more committed steps), then calls after()."""
    before = training(scene, job)
    epoch, step = before["epoch"], before["quorum"]["max_step"]

    def went_on():
        t = status(scene.addrs, job)
        return t if t and t["epoch"] != epoch and t.get("quorum") and \
            t["quorum"]["max_step"] >= step + 10 else None
    t0 = now_ms()
    fault()
    s = wait(went_on, 60, f"{job}: no progress after the fault")
    resumed = now_ms() - t0
    first = min(c["wall_ms"] for c in s["changes"] if c["epoch"] == s["epoch"])
    if after:
        after()
    return first - t0, resumed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--lease-ms", type=int, default=1000)
    ap.add_argument("--ftc", default="build/tools/ftc/ftc")
    ap.add_argument("--trainer", default="build/examples/train_ddp")
    args = ap.parse_args()
    if shutil.which("etcd") is None:
        sys.exit("lighthouse_failover: etcd is not installed (scripts/deps.sh)")
    work = tempfile.mkdtemp(prefix="ftc-failover-")
    ha, lone = Ha(args, work), Lone(args, work)
    results = {}
    try:
        for _ in range(args.passes):
            for kind in ("kill9", "lone_kill9_restart", "sigstop", "sigterm"):
                if kind == "lone_kill9_restart":
                    def fault():
                        lone.lh.kill()
                        lone.lh.wait()
                        lone.lh = lone.start_lighthouse()
                    r = timed(lone, "lone", fault)
                else:
                    training(ha, "ha")
                    l = ha.leader()
                    sig = {"kill9": signal.SIGKILL, "sigstop": signal.SIGSTOP,
                           "sigterm": signal.SIGTERM}[kind]

                    def restart(l=l, kind=kind):
                        if kind == "sigstop":
                            ha.lh[l].send_signal(signal.SIGCONT)
                        else:
                            ha.lh[l].wait()
                            ha.lh[l] = ha.start_lighthouse(l)
                    r = timed(ha, "ha", lambda: ha.lh[l].send_signal(sig),
                              restart)
                results.setdefault(kind, []).append(r)
                print(json.dumps({"bench": "lighthouse_failover",
                                  "kind": kind, "quorum_ms": round(r[0]),
                                  "resumed_ms": round(r[1]),
                                  "lease_ms": args.lease_ms}), flush=True)
    finally:
        ha.stop()
        lone.stop()
        shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()
    print(f"\nlighthouse failover, {args.passes} passes, lease "
          f"{args.lease_ms} ms, load {load[0]:.1f} {load[1]:.1f} "
          f"{load[2]:.1f}; ms from the fault, median (min-max)")
    print(f"{'fault':<34} {'first quorum':>20} {'10 more steps':>20}")
    names = {"kill9": "ha: kill -9 of the leader",
             "lone_kill9_restart": "lone: kill -9, restarted at once",
             "sigstop": "ha: SIGSTOP of the leader",
             "sigterm": "ha: SIGTERM of the leader"}
    for kind, rs in results.items():
        cells = []
        for i in (0, 1):
            v = [r[i] for r in rs]
            cells.append(f"{statistics.median(v):.0f} ({min(v):.0f}-"
                         f"{max(v):.0f})")
        print(f"{names[kind]:<34} {cells[0]:>20} {cells[1]:>20}")


if __name__ == "__main__":
    main()
