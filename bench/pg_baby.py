#!/usr/bin/python3
"""pg_baby.py - what a Baby process group costs over its inner backend,
side by side in one run on this machine's loopback.

Each pass runs `ftc bench pg --backend tcp,baby-tcp,xccl,baby-xccl` twice,
the order alternating between passes: once with ordinary buffers (a Baby
group copies them into its shared segment and back) and once with
--shared-buffers (ftc_pg_mem_alloc: no copy). Inside one run the four
backends are interleaved per op and size, so load hits them alike. The
ordinary run also times --rebuilds: every rank aborts its group, destroys
it, creates a new one and runs one allreduce on it (what a membership
change costs). The load average (/proc/loadavg) is printed before each
run.

Prints per op and size the median over passes of each backend's p50 and
of the per-run ratios baby-X / X (with [min..max]), the added time per
call (baby-X - X, median), and the rebuild times. Backends that cannot run
here (xccl without oneCCL) are left out with their reason.

usage: bench/pg_baby.py [--ranks 2] [--passes 3] [--sizes 4K,1M,16M]
          [--op allreduce,allgather] [--budget S] [--rebuilds K]
          [--backends tcp,baby-tcp,xccl,baby-xccl]
Needs a build (scripts/build.sh build) and, for xccl, oneCCL
(scripts/ccl_deps.sh, or FTC_CCL_LIBRARY naming libccl.so.2).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FTC = os.path.join(ROOT, "build", "tools", "ftc", "ftc")
TIMEOUT_S = 1800


def load():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def run(args, shared):
    cmd = [FTC, "bench", "pg", "--json", "--ranks", str(args.ranks),
           "--backend", args.backends, "--op", args.op, "--sizes", args.sizes,
           "--budget", str(args.budget)]
    if shared:
        cmd.append("--shared-buffers")
    elif args.rebuilds > 0:
        cmd += ["--rebuilds", str(args.rebuilds)]
    print(f"# load {load()}: {' '.join(cmd[1:])}", flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    for line in p.stderr.splitlines():
        if "not available" in line:
            print(f"#   {line}", flush=True)
    if p.returncode != 0:
        sys.exit(f"pg_baby: {' '.join(cmd)} failed:\n{p.stderr}")
    return [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]


def spread(v):
    return f"{statistics.median(v):.2f} [{min(v):.2f}..{max(v):.2f}]"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--sizes", default="4K,1M,16M")
    ap.add_argument("--op", default="allreduce,allgather")
    ap.add_argument("--budget", type=float, default=1)
    ap.add_argument("--rebuilds", type=int, default=10)
    ap.add_argument("--backends", default="tcp,baby-tcp,xccl,baby-xccl")
    args = ap.parse_args()
    # (mode, backend, op, bytes) -> p50 per pass; rebuild p50 per backend.
    p50 = {}
    ratio = {}
    added = {}
    rebuild = {}
    for i in range(args.passes):
        for shared in ([False, True] if i % 2 == 0 else [True, False]):
            mode = "shared" if shared else "copied"
            rows = run(args, shared)
            cell = {}
            for r in rows:
                if r["op"] == "rebuild":
                    rebuild.setdefault(r["backend"], []).append(r["p50_ms"])
                    continue
                key = (r["op"], r["bytes"])
                cell[(r["backend"],) + key] = r["p50_us"]
                p50.setdefault((mode, r["backend"]) + key, []).append(
                    r["p50_us"])
            for (backend, op, size), t in cell.items():
                inner = backend[len("baby-"):]
                if backend.startswith("baby-") and (inner, op, size) in cell:
                    base = cell[(inner, op, size)]
                    k = (mode, backend, op, size)
                    ratio.setdefault(k, []).append(t / base)
                    added.setdefault(k, []).append(t - base)
    print(f"\n# {args.ranks} ranks, {args.passes} passes: p50 us (median "
          "over passes); baby-X / X ratio and added us, median [min..max]")
    print("| buffers | backend | op | size | p50 us | / inner | added us |")
    print("|---|---|---|---|---|---|---|")
    for (mode, backend, op, size), v in sorted(p50.items()):
        k = (mode, backend, op, size)
        r = spread(ratio[k]) if k in ratio else ""
        a = spread(added[k]) if k in added else ""
        print(f"| {mode} | {backend} | {op} | {size} | "
              f"{statistics.median(v):.1f} | {r} | {a} |")
    if rebuild:
        print("\n| backend | abort -> rebuilt group -> first allreduce, ms "
              "(p50 per pass: median [min..max]) |")
        print("|---|---|")
        for backend, v in sorted(rebuild.items()):
            print(f"| {backend} | {spread(v)} |")


if __name__ == "__main__":
    main()
