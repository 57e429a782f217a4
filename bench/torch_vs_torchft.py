#!/usr/bin/env python3
"""torch_vs_torchft.py - PyTorch + ftc against PyTorch + torchft, side by
side in one run: the same trainer (bench/torch_vs_torchft_trainer.py: a
small MLP, torchft's DDP and Optimizer wrappers, one rank per replica
group), the same PyTorch, only the `torchft` import differs.

Configurations, interleaved pass by pass (the order rotates):
  ftc                 ftc.torchft with the arguments of torchft's
                      train_ddp.py, `ftc lighthouse` at its defaults
                      (heartbeat every 100 ms, dead after 500 ms)
  ftc aggressive      1 s timeouts, a 20 ms heartbeat, dead after 100 ms
                      (lighthouse --heartbeat-timeout-ms 100)
  torchft defaults    the same script on torchft; its lighthouse as its
                      README runs it (--quorum_tick_ms 100
                      --join_timeout_ms 10000; heartbeat 100 ms, dead
                      after 5 s)
  torchft aggressive  the same settings as ftc aggressive, which are its
                      own tests' (1 s timeouts, lighthouse
                      --join_timeout_ms 100 --heartbeat_timeout_ms 100)
                      with the 20 ms heartbeat that a 100 ms timeout
                      needs (no healthy replica was lost in 1,500 steps)
Per pass and configuration:
  steady  3 replicas, no pacing: the median time between commits, next
          to the bare model (3 replicas without fault tolerance, the same
          contention for the 2 cores): overhead = steady - bare
  faults  3 replicas paced at --step-ms; replica 2 is killed with
          SIGKILL and restarted at once, then frozen with SIGSTOP (then
          killed and restarted), each at a seeded random point of a step
          (the same for every configuration of a pass): the time from the
          kill until the kernel has closed the victim's files (its stdout
          pipe; its sockets close at the same point, once its address
          space is torn down: the floor of any detection by a closed
          connection), from the fault to the later survivor's first
          commit by 2 replicas, from the kill to the restarted victim's
          first commit (and from its "ready", imports done, to it), then
          every replica stops at one step and their parameter checksums
          must be equal.
Prints medians over passes [min..max] and torchft / ftc ratios of the
medians (> 1: ftc faster), with the load average; --json writes every
sample.

usage: .venv/bin/python bench/torch_vs_torchft.py [--passes 3]
           [--step-ms 25] [--steady-steps 300] [--seed 1] [--json FILE]
Needs the venv (scripts/pydeps.sh: torch, torchft-nightly) and a build
(build/python, build/tools/ftc/ftc)."""
import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, ".venv", "bin")
TRAINER = os.path.join(ROOT, "bench", "torch_vs_torchft_trainer.py")
FTC = os.path.join(ROOT, "build", "tools", "ftc", "ftc")
WAIT_S = 120  # the longest any phase may take before the run fails

CONFIGS = {
    "ftc": dict(impl="ftc", profile="defaults",
                lighthouse=[FTC, "lighthouse", "--insecure"]),
    "ftc aggressive": dict(impl="ftc", profile="aggressive", heartbeat_ms=20,
                           lighthouse=[FTC, "lighthouse", "--insecure",
                                       "--heartbeat-timeout-ms", "100"]),
    "torchft defaults": dict(
        impl="torchft", profile="defaults",
        lighthouse=[os.path.join(VENV, "torchft_lighthouse"),
                    "--min_replicas", "1", "--quorum_tick_ms", "100",
                    "--join_timeout_ms", "10000"]),
    "torchft aggressive": dict(
        impl="torchft", profile="aggressive",
        lighthouse=[os.path.join(VENV, "torchft_lighthouse"),
                    "--min_replicas", "1", "--quorum_tick_ms", "100",
                    "--join_timeout_ms", "100",
                    "--heartbeat_timeout_ms", "100"],
        heartbeat_ms=20),
}


class BenchError(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lighthouse:
    def __init__(self, argv, logdir):
        self.port = free_port()
        self.log = open(os.path.join(logdir, "lighthouse.log"), "ab")
        self.proc = subprocess.Popen(
            argv + ["--bind", f"127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT)
        delay = 0.01
        deadline = time.monotonic() + 10
        while True:  # up when it accepts a connection
            try:
                socket.create_connection(("127.0.0.1", self.port), 1).close()
                return
            except OSError:
                if (self.proc.poll() is not None
                        or time.monotonic() > deadline):
                    raise BenchError(f"lighthouse {argv[0]} did not start")
                time.sleep(delay)
                delay = min(delay * 2, 0.2)

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()


class Replica:
    """One trainer process; its JSON events collected by a reader thread."""

    def __init__(self, index, config, lighthouse, args, logdir, cond):
        self.index = index
        self.cond = cond
        self.events = []
        self.closed = None  # when its stdout reached end of file
        env = dict(os.environ,
                   PYTHONPATH=os.path.join(ROOT, "build", "python"),
                   TORCHFT_LIGHTHOUSE=f"http://127.0.0.1:{lighthouse.port}"
                   if lighthouse else "")
        self.err = open(os.path.join(logdir, f"replica{index}.err"), "ab")
        self.spawned = time.monotonic()
        self.proc = subprocess.Popen(
            [os.path.join(VENV, "python"), TRAINER, "--impl", config["impl"],
             "--profile", config["profile"], "--replica", str(index),
             "--step-ms", str(args.step_ms), "--finish-file", args.finish,
             "--heartbeat-ms", str(config.get("heartbeat_ms", 0))],
            stdout=subprocess.PIPE, stderr=self.err, env=env)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            with self.cond:
                self.events.append(ev)
                self.cond.notify_all()
        # The kernel closes a killed process's files, this pipe and its
        # sockets alike, only after tearing down its address space.
        with self.cond:
            self.closed = time.monotonic()
            self.cond.notify_all()

    def commits(self, since=0.0, n=None):
        return [e for e in self.events if e["ev"] == "commit"
                and e["t"] > since and (n is None or e["n"] == n)]

    def first(self, ev, since=0.0):
        return next((e for e in self.events if e["ev"] == ev
                     and e["t"] > since), None)

    def signal(self, sig):
        self.proc.send_signal(sig)

    def reap(self):
        self.proc.kill()
        self.proc.wait()
        self.err.close()


def wait_for(cond, what, predicate, replicas):
    deadline = time.monotonic() + WAIT_S
    with cond:
        while True:
            value = predicate()
            if value:
                return value
            dead = [r.index for r in replicas if r.proc.poll() is not None]
            left = deadline - time.monotonic()
            if dead or left <= 0:
                raise BenchError(f"waiting for {what}: " + (
                    f"replica(s) {dead} exited" if dead else "timed out"))
            cond.wait(min(left, 0.5))


def all_have(replicas, count, n, since=0.0):
    return all(len(r.commits(since, n)) >= count for r in replicas)


def finish(cond, replicas, finish_path):
    """Every replica stops at one step a little ahead of the fastest."""
    with cond:
        top = max(r.commits()[-1]["step"] for r in replicas)
    tmp = finish_path + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(top + 20))
    os.replace(tmp, finish_path)
    done = wait_for(cond, "the finish step", lambda: [
        r.first("done") for r in replicas] if all(
            r.first("done") for r in replicas) else None, [])
    return len({d["checksum"] for d in done}) == 1 and len(
        {d["step"] for d in done}) == 1


class Run:
    """One configuration's lighthouse and replicas for one phase."""

    def __init__(self, name, args, pacing):
        self.config = CONFIGS.get(name, dict(impl="bare",
                                             profile="defaults"))
        self.args = argparse.Namespace(**vars(args))
        self.args.step_ms = pacing
        self.logdir = args.logdir
        self.args.finish = os.path.join(self.logdir, "finish")
        if os.path.exists(self.args.finish):
            os.unlink(self.args.finish)
        self.cond = threading.Condition()
        self.lighthouse = (Lighthouse(self.config["lighthouse"], self.logdir)
                           if "lighthouse" in self.config else None)
        self.replicas = [self.spawn(i) for i in range(3)]

    def spawn(self, index):
        return Replica(index, self.config, self.lighthouse, self.args,
                       self.logdir, self.cond)

    def wait(self, what, predicate, replicas=None):
        return wait_for(self.cond, what, predicate,
                        self.replicas if replicas is None else replicas)

    def close(self):
        for r in self.replicas:
            r.reap()
        if self.lighthouse:
            self.lighthouse.stop()


def steady(name, args):
    """Median time between commits of 3 replicas, past a warm-up."""
    run = Run(name, args, pacing=0)
    try:
        n = 1 if run.config["impl"] == "bare" else 3
        warm, count = 50, args.steady_steps
        run.wait("the warm-up", lambda: all_have(run.replicas, warm, n))
        run.wait("the measured steps",
                 lambda: all_have(run.replicas, warm + count, n))
        gaps = []
        with run.cond:
            for r in run.replicas:
                ts = [e["t"] for e in r.commits(n=n)[warm:warm + count]]
                gaps += [b - a for a, b in zip(ts, ts[1:])]
        return statistics.median(gaps)
    finally:
        run.close()


def first_shared_commit(run, survivors, since):
    """When the later survivor first committed without the victim."""
    got = run.wait("the survivors' commit by 2", lambda: [
        r.commits(since, 2)[0] for r in survivors] if all(
            r.commits(since, 2) for r in survivors) else None)
    return max(e["t"] for e in got) - since


def faults(name, args, offsets):
    """offsets: where in a step each fault lands (s after a commit)."""
    run = Run(name, args, pacing=args.step_ms)
    out = {}
    try:
        run.wait("3 replicas training", lambda: all_have(run.replicas, 20, 3))
        survivors = run.replicas[:2]

        time.sleep(offsets[0])
        killed = time.monotonic()
        dead = run.replicas[2]
        dead.reap()
        run.replicas[2] = victim = run.spawn(2)
        out["kill_survivors_s"] = first_shared_commit(run, survivors, killed)
        out["kill_closed_s"] = run.wait(
            "the victim's files closed", lambda: dead.closed) - killed
        out["kill_after_close_s"] = (out["kill_survivors_s"] -
                                     out["kill_closed_s"])
        back = run.wait("the victim's first commit",
                        lambda: victim.commits(n=3)[:1])[0]
        out["kill_victim_back_s"] = back["t"] - killed
        out["victim_ready_to_back_s"] = back["t"] - victim.first("ready")["t"]

        run.wait("3 replicas training again",
                 lambda: all_have(run.replicas, 10, 3, back["t"]))
        time.sleep(offsets[1])
        stopped = time.monotonic()
        victim.signal(signal.SIGSTOP)
        out["sigstop_survivors_s"] = first_shared_commit(run, survivors,
                                                         stopped)
        victim.reap()  # SIGKILL ends a stopped process too
        run.replicas[2] = victim = run.spawn(2)
        t = run.wait("the frozen victim replaced",
                     lambda: victim.commits(n=3)[:1])[0]["t"]
        run.wait("3 replicas after the freeze",
                 lambda: all_have(run.replicas, 5, 3, t))
        out["bit_identical"] = finish(run.cond, run.replicas, run.args.finish)
        return out
    finally:
        run.close()


def summary(samples):
    med = statistics.median(samples)
    return med, min(samples), max(samples)


def fmt(value, unit):
    med, lo, hi = value
    if unit == "ms":
        return f"{med * 1e3:.1f} ms [{lo * 1e3:.1f}..{hi * 1e3:.1f}]"
    return f"{med:.3f} s [{lo:.3f}..{hi:.3f}]"


# The ratios printed: (numerator, denominator) configurations.
RATIOS = [("torchft defaults", "ftc"), ("torchft aggressive", "ftc"),
          ("torchft aggressive", "ftc aggressive")]


def report(results, passes):
    names = list(CONFIGS)
    rows = [("steady step (no pacing)", "steady", "ms"),
            ("overhead over the bare model", "overhead", "ms"),
            ("kill -9 -> the victim's files close (kernel)",
             "kill_closed_s", "s"),
            ("kill -9 -> survivors' next commit", "kill_survivors_s", "s"),
            ("  of which after the files closed", "kill_after_close_s",
             "s"),
            ("kill -9 -> victim commits again", "kill_victim_back_s", "s"),
            ("  of which after its imports", "victim_ready_to_back_s", "s"),
            ("SIGSTOP -> survivors' next commit", "sigstop_survivors_s",
             "s")]
    print(f"\n{passes} interleaved passes; median [min..max]; bare model "
          f"steady step {fmt(summary(results['bare']['steady']), 'ms')}")
    print("\n| measurement | " + " | ".join(names) + " | " + " | ".join(
        f"{a} / {b}" for a, b in RATIOS) + " |")
    print("|---" * (len(names) + len(RATIOS) + 1) + "|")
    for label, key, unit in rows:
        med = {n: summary(results[n][key]) for n in names}
        ratios = [f"{med[a][0] / med[b][0]:.1f}x" if med[b][0] > 0 else "-"
                  for a, b in RATIOS]
        print(f"| {label} | " + " | ".join(fmt(med[n], unit) for n in names)
              + " | " + " | ".join(ratios) + " |")
    print("| bit-identical at the end | " + " | ".join(
        f"{sum(results[n]['bit_identical'])}/{passes}" for n in names) +
          " |" * (len(RATIOS) + 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--step-ms", type=float, default=25)
    ap.add_argument("--steady-steps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1,
                    help="of where in a step each fault lands")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    args.logdir = tempfile.mkdtemp(prefix="torch_vs_torchft.")
    print(f"logs in {args.logdir}; load average at the start "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    names = list(CONFIGS)
    results = {n: {} for n in names + ["bare"]}
    rng = random.Random(args.seed)
    for p in range(args.passes):
        # Waits end on a commit: without an offset every fault would land
        # just after one. The same offsets for every configuration of a
        # pass.
        offsets = [rng.uniform(0, args.step_ms / 1000) for _ in range(2)]
        order = names[p % len(names):] + names[:p % len(names)]
        bare = steady("bare", args)
        results["bare"].setdefault("steady", []).append(bare)
        for name in order:
            s = steady(name, args)
            sample = dict(steady=s, overhead=s - bare, **faults(name, args, offsets))
            for key, value in sample.items():
                results[name].setdefault(key, []).append(value)
            print(f"pass {p + 1} {name}: " + json.dumps(
                {k: round(v, 4) for k, v in sample.items()}), flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    report(results, args.passes)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        sys.exit(f"torch_vs_torchft: {e} (logs: see the first line)")
