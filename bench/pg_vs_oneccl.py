#!/usr/bin/python3
"""pg_vs_oneccl.py - ftc process groups (tcp backend, xccl backend) against
raw oneCCL, side by side in one run, on this machine's loopback.

Each pass runs, for each group size N, every system in turn, the order
rotating between passes so slow phases of a shared machine hit everyone:
  ftc-tcp, ftc-xccl  one `ftc bench pg --backend tcp,xccl` (the two
                     backends interleaved per op and size inside it; xccl
                     only where the backend exists, else its one-line
                     reason is printed and ftc-tcp runs alone)
  oneccl-shm         build/bench/ccl_raw: raw oneCCL's C API timed by the
                     same code (tools/ftc/bench/bench_coll.c), in oneCCL's
                     best CPU configuration: FI_PROVIDER=shm,
                     CCL_ATL_SHM=1, CCL_YIELD=sched_yield, loopback
  oneccl-tcp         the same with oneCCL's tcp provider (--systems)
The method is ftc bench pg's: per iteration a barrier then the op, the
slowest rank's time, p50 over iterations; busbw nccl-tests style. ftc's
xccl backend runs under the anchor's oneCCL environment (the same
provider), so ftc-xccl / oneccl-shm is what ftc adds. The load average
(/proc/loadavg) is printed and kept before each pass.

Prints per cell the median over passes of the p50 time with its spread
[min..max] and busbw, and the ratios ftc-tcp / oneccl-shm and ftc-xccl /
oneccl-shm of the p50 times (above 1: slower than raw oneCCL); then issue
12's target (ftc-xccl within 5% of raw oneCCL).

usage: bench/pg_vs_oneccl.py [--ranks 2,4] [--passes 3]
          [--sizes 4K,1M,16M,64M] [--op LIST] [--budget S] [--iters K]
          [--systems ftc,oneccl-shm[,oneccl-tcp]] [--out FILE.jsonl]
Needs a build (scripts/build.sh build) and oneCCL (scripts/ccl_deps.sh,
or FTC_CCL_LIBRARY naming libccl.so.2).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KIB, MIB = 1 << 10, 1 << 20
TIMEOUT_S = 1800
ANCHOR = "oneccl-shm"


def parse_size(s):
    s = s.strip().upper()
    mult = {"K": KIB, "M": MIB, "G": 1 << 30}.get(s[-1:], 1)
    return int(s[:-1] if mult > 1 else s) * mult


def fmt_size(s):
    if s >= MIB:
        return "%d MiB" % (s // MIB)
    return "%d KiB" % (s // KIB) if s >= KIB else "%d B" % s


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def run(cmd, env):
    """Runs cmd; returns (JSON rows, stderr lines that are not oneCCL's
    warnings)."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=env,
                           timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return [], ["%s: timed out after %d s" % (cmd[0], TIMEOUT_S)]
    err = [l for l in p.stderr.splitlines() if "CCL_WARN" not in l]
    if p.returncode != 0:
        err.append("%s exited %d" % (" ".join(cmd[:4]), p.returncode))
    rows = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    return rows, err


def common_args(a, n):
    args = ["--ranks", str(n), "--json", "--op", a.op, "--sizes", a.sizes,
            "--budget", str(a.budget)]
    return args + (["--iters", str(a.iters)] if a.iters else [])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--sizes", default="4K,1M,16M,64M")
    ap.add_argument("--op", default="allreduce,broadcast,allgather,"
                    "reduce_scatter,alltoall")
    ap.add_argument("--budget", type=float, default=2,
                    help="seconds per op, size and system (bench --budget)")
    ap.add_argument("--iters", type=int, default=0)
    ap.add_argument("--systems", default="ftc,oneccl-shm",
                    help="ftc (tcp and xccl), oneccl-shm, oneccl-tcp")
    ap.add_argument("--backends", default="tcp,xccl",
                    help="ftc's backends (ftc bench pg --backend)")
    ap.add_argument("--ftc", default=os.path.join(ROOT, "build", "tools",
                                                  "ftc", "ftc"))
    ap.add_argument("--ccl-raw", default=os.path.join(ROOT, "build", "bench",
                                                      "ccl_raw"))
    ap.add_argument("--out", default=None, help="append raw rows (JSONL)")
    a = ap.parse_args()
    ranks = [int(x) for x in a.ranks.split(",")]
    systems = a.systems.split(",")
    env = dict(os.environ)
    lib = os.path.join(ROOT, ".deps", "oneccl", "lib", "libccl.so.2")
    if "FTC_CCL_LIBRARY" not in env and os.path.exists(lib):
        env["FTC_CCL_LIBRARY"] = lib
    # The anchor's configuration, for ccl_raw and for ftc's xccl backend.
    env.update(FI_PROVIDER="shm", CCL_ATL_SHM="1")
    env.setdefault("CCL_YIELD", "sched_yield")
    runners = {
        "ftc": lambda n: run([a.ftc, "bench", "pg", "--backend", a.backends]
                             + common_args(a, n), env),
        "oneccl-shm": lambda n: run([a.ccl_raw, "--provider", "shm"]
                                    + common_args(a, n), env),
        "oneccl-tcp": lambda n: run(
            [a.ccl_raw, "--provider", "tcp"] + common_args(a, n),
            dict(env, FI_PROVIDER="tcp", CCL_ATL_SHM="0")),
    }
    print("# %s" % " ".join([os.path.relpath(sys.argv[0], ROOT)]
                            + sys.argv[1:]))
    print("# FTC_CCL_LIBRARY=%s FI_PROVIDER=shm CCL_ATL_SHM=1 CCL_YIELD=%s, "
          "%d online cores" % (env.get("FTC_CCL_LIBRARY", "(loader path)"),
                               env["CCL_YIELD"], os.cpu_count()))
    rows, loads, said = [], [], set()
    for p in range(a.passes):
        for n in ranks:
            k = p % len(systems)
            for s in systems[k:] + systems[:k]:  # rotate the order
                load = loadavg()
                loads.append(float(load))
                print("# pass %d/%d  N=%d  %-10s load %s" %
                      (p + 1, a.passes, n, s, load), flush=True)
                got, err = runners[s](n)
                for e in err:
                    if e not in said:  # each reason once
                        said.add(e)
                        print("#   %s" % e)
                for r in got:
                    r.update(system="ftc-" + r["backend"] if s == "ftc"
                             else r["backend"], N=n, pass_=p, load=load)
                rows += got
    if a.out:
        with open(a.out, "a") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
    report(rows, ranks, loads)


def report(rows, ranks, loads):
    cells = {}
    for r in rows:
        cells.setdefault((r["system"], r["N"], r["op"], r["bytes"]),
                         []).append(r)
    names = ["ftc-tcp", "ftc-xccl", ANCHOR, "oneccl-tcp"]
    names = [s for s in names if any(k[0] == s for k in cells)]
    print("\nMedian over passes of the p50 time in us [min..max] (busbw "
          "GB/s); ratio = ftc's time / %s's. Load average %s..%s." %
          (ANCHOR, min(loads or [0]), max(loads or [0])))
    ratios = {}
    for n in ranks:
        print("\nN = %d" % n)
        print("%-14s %-7s" % ("op", "size") +
              "".join(" %29s" % s for s in names) +
              "".join(" %11s" % (s[4:] + "/oneccl") for s in names
                      if s.startswith("ftc-") and ANCHOR in names))
        keys = sorted({(k[2], k[3]) for k in cells if k[1] == n},
                      key=lambda k: (OPS.index(k[0]) if k[0] in OPS else 9,
                                     k[1]))
        for op, size in keys:
            line = "%-14s %-7s" % (op, fmt_size(size))
            med = {}
            for s in names:
                v = cells.get((s, n, op, size))
                if not v:
                    line += " %29s" % "-"
                    continue
                t = [r["p50_us"] for r in v]
                med[s] = statistics.median(t)
                line += " %9.1f [%6.1f..%6.1f] (%5.3f)" % (
                    med[s], min(t), max(t),
                    statistics.median([r["busbw_gbps"] for r in v]))
            for s in names:
                if s.startswith("ftc-") and ANCHOR in names:
                    if s in med and ANCHOR in med:
                        ratios[(s, n, op, size)] = med[s] / med[ANCHOR]
                        line += " %11.2f" % ratios[(s, n, op, size)]
                    else:
                        line += " %11s" % "-"
            print(line)
    print("\nTarget (issue 12): ftc-xccl's p50 within 5% of raw oneCCL's")
    xr = {k: v for k, v in ratios.items() if k[0] == "ftc-xccl"}
    if not xr:
        print("n/a  no ftc-xccl rows (the xccl backend did not run)")
    for (s, n, op, size), v in sorted(xr.items()):
        print("%-4s N=%d %s %s: %.3f" % ("ok" if v <= 1.05 else "FAIL", n, op,
                                          fmt_size(size), v))


OPS = ["allreduce", "broadcast", "allgather", "reduce_scatter", "alltoall"]

if __name__ == "__main__":
    main()
