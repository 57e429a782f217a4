#!/usr/bin/python3
"""pg_vs_gloo_mpi.py - ftc process groups against Gloo (raw and through PyTorch)
and Open MPI, side by side in one run, on this machine's loopback.

For each repetition and each group size N, every system runs its benchmark
in turn (the order rotates between repetitions, so slow phases of a shared
machine hit everyone): float32 allreduce SUM at 4 KiB..64 MiB, broadcast and
allgather at 1 MiB and 16 MiB, the method of ../shared/anchors (per
iteration: barrier, then the op; latency = median over iterations of the
slowest rank; busbw nccl-tests style). Prints the median over repetitions
for each system and the ratios, then checks the targets of issue 4.

Systems:
  ftc         build/tools/ftc/ftc bench pg (this tree), over loopback TCP
  ftc-shm     the same over shared-memory lanes (FTC_PG_TRANSPORT=shm)
  gloo        raw Gloo C++ (Debian libgloo-dev), anchors/gloo_allreduce.cc
  torch-gloo  PyTorch 1.13 ProcessGroupGloo, anchors/torch_gloo_allreduce.py
  mpi-tcp     Open MPI ob1/tcp over lo, anchors/mpi_allreduce.c (if mpicc)
  mpi-vader   Open MPI shared memory (vader)

With --load 0,2 every repetition also runs each system while two busy
processes (a shell loop each, normal priority) compete for the cores, and
the report adds ftc's ratio to Gloo loaded against quiet (issue 16: no
worse by more than 25%).

usage: bench/pg_vs_gloo_mpi.py [--ranks 2,4] [--reps 3] [--systems ...]
                           [--load 0,2] [--out FILE.jsonl]
Needs /usr/bin/python3 (Debian's torch), g++ and libgloo-dev; Open MPI
(openmpi-bin, libopenmpi-dev) is optional.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ANCHORS = os.path.abspath(os.path.join(ROOT, "..", "..", "shared", "anchors"))
if not os.path.isdir(ANCHORS):
    ANCHORS = "/work/shared/anchors"
KIB, MIB = 1 << 10, 1 << 20
ALLREDUCE_SIZES = [4 * KIB, 64 * KIB, 1 * MIB, 16 * MIB, 64 * MIB]
OTHER_SIZES = [1 * MIB, 16 * MIB]
TIMEOUT_S = 900


def run(cmd, **kw):
    """Runs cmd under a timeout; returns its stdout lines (JSON objects)."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=TIMEOUT_S, **kw)
    if p.returncode != 0:
        sys.stderr.write("pg_vs_gloo: %s failed (%d):\n%s\n"
                         % (" ".join(cmd[:3]), p.returncode, p.stderr[-2000:]))
    out = []
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def build(tmp):
    """Compiles the C anchors into tmp; returns {name: path or None}."""
    bins = {"gloo": None, "mpi": None}
    src = os.path.join(ANCHORS, "gloo_allreduce.cc")
    exe = os.path.join(tmp, "gloo_allreduce")
    if shutil.which("g++") and os.path.exists(src):
        r = subprocess.run(["g++", "-O2", "-std=c++17", "-o", exe, src,
                            "-lgloo", "-lpthread"], capture_output=True)
        bins["gloo"] = exe if r.returncode == 0 else None
    src = os.path.join(ANCHORS, "mpi_allreduce.c")
    exe = os.path.join(tmp, "mpi_allreduce")
    if shutil.which("mpicc") and shutil.which("mpirun"):
        r = subprocess.run(["mpicc", "-O2", "-o", exe, src],
                           capture_output=True)
        bins["mpi"] = exe if r.returncode == 0 else None
    return bins


def norm(system, n, rows):
    """Maps each benchmark's JSON to (system, N, op, size) -> metrics."""
    out = []
    for r in rows:
        op = r.get("op", "allreduce")  # mpi_allreduce rows have no op
        size = r.get("size_bytes", r.get("bytes"))
        if size is None or op not in ("allreduce", "broadcast", "allgather"):
            continue
        lat = r.get("lat_us_median", r.get("p50_us"))
        bus = r.get("busbw_GBps", r.get("busbw_gbps"))
        sysname = system
        if system == "ftc" and r.get("backend", "").endswith("+shm"):
            sysname = "ftc-shm"
        if system == "mpi":
            sysname = "mpi-" + r.get("transport", "?")
        out.append({"system": sysname, "N": n, "op": op, "size": size,
                    "lat_us": lat, "busbw": bus,
                    "b2b_us": r.get("b2b_lat_us", r.get("b2b_us"))})
    return out


def run_ftc(ftc, n):
    """ftc over loopback TCP ("ftc") and over shared-memory lanes
    ("ftc-shm"), interleaved per op and size."""
    both = ["--backend", "tcp+tcp,tcp+shm"]
    rows = run([ftc, "bench", "pg", "--ranks", str(n), "--json", "--op",
                "allreduce", "--sizes", ",".join(map(str, ALLREDUCE_SIZES))]
               + both)
    rows += run([ftc, "bench", "pg", "--ranks", str(n), "--json", "--op",
                 "broadcast,allgather", "--sizes",
                 ",".join(map(str, OTHER_SIZES))] + both)
    return rows


def run_gloo(exe, n):
    d = tempfile.mkdtemp(prefix="pgvsgloo-")
    try:
        env = dict(os.environ, GLOO_SOCKET_IFNAME="lo")
        others = [subprocess.Popen([exe, str(r), str(n), d],
                                   stdout=subprocess.DEVNULL, env=env)
                  for r in range(1, n)]
        rows = run([exe, "0", str(n), d], env=env)
        for p in others:
            p.wait(timeout=TIMEOUT_S)
        return rows
    finally:
        shutil.rmtree(d, ignore_errors=True)


def run_torch(n):
    f = tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False)
    f.close()
    try:
        run(["/usr/bin/python3", os.path.join(ANCHORS,
                                              "torch_gloo_allreduce.py"),
             "--nprocs", str(n), "--out", f.name])
        with open(f.name) as fh:
            return [json.loads(l) for l in fh if l.startswith("{")]
    finally:
        os.unlink(f.name)


def run_mpi(exe, n):
    base = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
    rows = run(base + ["-np", str(n), exe, "vader"])
    rows += run(base + ["--mca", "pml", "ob1", "--mca", "btl", "tcp,self",
                        "--mca", "btl_tcp_if_include", "lo", "-np", str(n),
                        exe, "tcp"])
    return rows


class Busy:
    """k busy processes while the block runs: a reproducible load."""

    def __init__(self, k):
        self.k, self.procs = k, []

    def __enter__(self):
        self.procs = [subprocess.Popen(["/bin/sh", "-c", "while :; do :; done"])
                      for _ in range(self.k)]
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
            p.wait()


def median(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def fmt_size(s):
    return "%d %s" % ((s // MIB, "MiB") if s >= MIB else (s // KIB, "KiB"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--systems", default="ftc,gloo,torch-gloo,mpi")
    ap.add_argument("--ftc", default=os.path.join(ROOT, "build", "tools",
                                                  "ftc", "ftc"))
    ap.add_argument("--out", default=None, help="append raw rows (JSONL)")
    ap.add_argument("--load", default="0",
                    help="busy processes during each run, a list: every "
                    "repetition runs every level")
    a = ap.parse_args()
    ranks = [int(x) for x in a.ranks.split(",")]
    loads = [int(x) for x in a.load.split(",")]
    systems = a.systems.split(",")
    tmp = tempfile.mkdtemp(prefix="pgvsgloo-bin-")
    bins = build(tmp)
    runners = {
        "ftc": lambda n: run_ftc(a.ftc, n),
        "gloo": (lambda n: run_gloo(bins["gloo"], n)) if bins["gloo"] else None,
        "torch-gloo": run_torch,
        "mpi": (lambda n: run_mpi(bins["mpi"], n)) if bins["mpi"] else None,
    }
    for s in systems:
        if runners.get(s) is None:
            print("# %s: not available here, skipped" % s)
    active = [s for s in systems if runners.get(s) is not None]
    rows = []
    for rep in range(a.reps):
        for n in ranks:
            k = rep % len(active)
            for load in loads[rep % len(loads):] + loads[:rep % len(loads)]:
                for s in active[k:] + active[:k]:  # rotate the order
                    print("# rep %d/%d  N=%d  load %d  %s" %
                          (rep + 1, a.reps, n, load, s), flush=True)
                    with Busy(load):
                        got = norm(s, n, runners[s](n))
                    for g in got:
                        g["rep"], g["load"] = rep, load
                    rows += got
    shutil.rmtree(tmp, ignore_errors=True)
    if a.out:
        with open(a.out, "a") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
    for load in loads:
        if len(loads) > 1:
            print("\n=== %d busy processes" % load)
        report([r for r in rows if r["load"] == load], ranks)
    if len(loads) > 1:
        report_load(rows, ranks, loads)


def report_load(rows, ranks, loads):
    """ftc's busbw over Gloo's (the better of raw and PyTorch's) per
    repetition, loaded against quiet: issue 16 wants loaded / quiet >=
    0.75 for large allreduces."""
    def ratio(n, size, load, system):
        vals = []
        for rep in sorted({r["rep"] for r in rows}):
            def bus(s):
                v = [r["busbw"] for r in rows if r["system"] == s and
                     r["N"] == n and r["op"] == "allreduce" and
                     r["size"] == size and r["load"] == load and
                     r["rep"] == rep and r["busbw"]]
                return v[0] if v else None
            g = [b for b in (bus("gloo"), bus("torch-gloo")) if b]
            o = bus(system)
            if o and g:
                vals.append(o / max(g))
        return median(vals)

    print("\nLoaded vs quiet: ftc busbw / Gloo busbw (median of the "
          "per-repetition ratios), allreduce")
    for n in ranks:
        for size in (MIB, 16 * MIB, 64 * MIB):
            for system in ("ftc", "ftc-shm"):
                q = ratio(n, size, loads[0], system)
                line = "N=%d %-7s %-7s quiet %s" % (
                    n, fmt_size(size), system,
                    "-" if q is None else "%.2f" % q)
                for load in loads[1:]:
                    v = ratio(n, size, load, system)
                    line += "  load %d %s" % (load,
                                              "-" if v is None else "%.2f" % v)
                    if q and v:
                        line += " (%.2f of quiet%s)" % (
                            v / q, "" if v / q >= 0.75 else ", below 0.75")
                print(line)


def report(rows, ranks):
    table = {}
    for r in rows:
        key = (r["system"], r["N"], r["op"], r["size"])
        table.setdefault(key, []).append(r)
    med = {k: (median([r["lat_us"] for r in v]),
               median([r["busbw"] for r in v])) for k, v in table.items()}
    names = sorted({k[0] for k in med}, key=lambda s: (s != "ftc", s))
    others = [s for s in names if s != "ftc"]
    print("\nMedian over repetitions: p50 latency in us (busbw GB/s); "
          "ratio = other's latency / ftc's")
    for n in ranks:
        print("\nN = %d" % n)
        print("%-10s %-8s %20s" % ("op", "size", "ftc") +
              "".join(" %26s" % s for s in others))
        for op in ("allreduce", "broadcast", "allgather"):
            sizes = ALLREDUCE_SIZES if op == "allreduce" else OTHER_SIZES
            for size in sizes:
                ours = med.get(("ftc", n, op, size))
                if ours is None:
                    continue
                line = "%-10s %-8s %11.1f (%6.3f)" % (op, fmt_size(size),
                                                      ours[0], ours[1])
                for s in others:
                    o = med.get((s, n, op, size))
                    if o is None or o[0] is None:
                        line += " %26s" % "-"
                    else:
                        line += " %11.1f (%6.3f) %5.1fx" % (
                            o[0], o[1] or 0, o[0] / ours[0])
                print(line)
    check_targets(med, ranks)


def check_targets(med, ranks):
    """Issue 4's targets, each with the numbers behind it."""
    def get(s, n, op, size, i):
        v = med.get((s, n, op, size))
        return v[i] if v else None

    def gloo_best(n, op, size, i):
        vals = [get(s, n, op, size, i) for s in ("gloo", "torch-gloo")]
        vals = [v for v in vals if v is not None]
        if not vals:
            return None
        return min(vals) if i == 0 else max(vals)

    checks = []

    def check(text, ok):
        checks.append(ok)
        print("%-4s %s" % ("ok" if ok else ("FAIL" if ok is False else "n/a"),
                           text))

    print("\nTargets (issue 4):")
    for n, factor in ((2, 5), (4, 20)):
        if n not in ranks:
            continue
        ours, g = get("ftc", n, "allreduce", 4 * KIB, 0), \
            get("gloo", n, "allreduce", 4 * KIB, 0)
        check("N=%d 4 KiB allreduce %s us <= raw Gloo %s us / %d" %
              (n, ours, g, factor),
              None if g is None else ours <= g / factor)
        m = get("mpi-tcp", n, "allreduce", 4 * KIB, 0)
        check("N=%d 4 KiB allreduce %s us <= 2 x Open MPI TCP %s us" %
              (n, ours, m), None if m is None else ours <= 2 * m)
        for size in (16 * MIB, 64 * MIB):
            o, g = get("ftc", n, "allreduce", size, 1), \
                gloo_best(n, "allreduce", size, 1)
            check("N=%d %s allreduce busbw %s >= 1.2 x Gloo %s" %
                  (n, fmt_size(size), o, g),
                  None if g is None else o >= 1.2 * g)
        for op in ("broadcast", "allgather"):
            for size in OTHER_SIZES:
                o, g = get("ftc", n, op, size, 1), gloo_best(n, op, size, 1)
                check("N=%d %s %s busbw %s >= Gloo %s" %
                      (n, op, fmt_size(size), o, g),
                      None if g is None else o >= g)
    if 4 in ranks:
        o, g = get("ftc", 4, "allreduce", MIB, 1), \
            gloo_best(4, "allreduce", MIB, 1)
        check("N=4 1 MiB allreduce busbw %s >= 3 x Gloo %s" % (o, g),
              None if g is None else o >= 3 * g)
    failed = sum(1 for c in checks if c is False)
    print("%d of %d checked targets met" %
          (sum(1 for c in checks if c), sum(1 for c in checks
                                            if c is not None)))
    return failed


if __name__ == "__main__":
    main()
