#!/usr/bin/env python3
"""torch_ftc_vs_gloo.py - dist.all_reduce through the "ftc" backend
(import ftc.torch) against PyTorch's own "gloo", side by side in one run,
same PyTorch, same processes' code, loopback.

For each pass, group size N and backend (the order rotates between
passes), N worker processes (this script with --worker) join a TCPStore
the parent serves and time float32 all_reduce SUM of each size: per
iteration a barrier, then the all_reduce; a sample is the slowest rank's
time. Prints per cell the median over passes of the median sample (4 KiB:
latency in us; larger: busbw GB/s, nccl-tests style), its [min..max],
and gloo's time / ftc's (> 1: ftc faster). The load average is printed
before each run.

usage: bench/torch_ftc_vs_gloo.py [--ranks 2,4] [--passes 3]
           [--sizes 4K,16M] [--iters 200]
Needs the venv's PyTorch (.venv, scripts/pydeps.sh) and a build
(build/python holds the ftc package).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = {"4K": 4 << 10, "64K": 64 << 10, "1M": 1 << 20, "16M": 16 << 20,
         "64M": 64 << 20}


def worker(rank, world, port, backend, sizes, iters):
    import torch
    import torch.distributed as dist
    import ftc.torch  # noqa: F401
    store = dist.TCPStore("127.0.0.1", port, is_master=False)
    dist.init_process_group(backend, store=store, rank=rank,
                            world_size=world)
    for size in sizes:
        x = torch.ones(SIZES[size] // 4)
        n = iters if SIZES[size] <= (1 << 20) else max(iters // 10, 10)
        for _ in range(5):  # warm-up: connections, buffers
            dist.all_reduce(x)
        times = torch.zeros(n, dtype=torch.float64)
        for i in range(n):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(x)
            times[i] = time.perf_counter() - t0
        dist.all_reduce(times, op=dist.ReduceOp.MAX)  # the slowest rank
        if rank == 0:
            print(json.dumps({"size": size, "p50_s": float(
                times.median())}), flush=True)
    dist.destroy_process_group()


def run(world, backend, args):
    import torch.distributed as dist
    server = dist.TCPStore("127.0.0.1", 0, is_master=True,
                           wait_for_workers=False)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "build", "python"))
    procs = [subprocess.Popen(
        [sys.executable, __file__, "--worker", str(r), str(world),
         str(server.port), backend, args.sizes, str(args.iters)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for r in range(world)]
    rows = []
    for r, p in enumerate(procs):
        out, err = p.communicate(timeout=1800)
        if p.returncode != 0:
            sys.exit(f"{backend} rank {r} failed:\n{err[-2000:]}")
        rows += [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    return rows


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        r, w, port, backend, sizes, iters = sys.argv[2:8]
        worker(int(r), int(w), int(port), backend, sizes.split(","),
               int(iters))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--sizes", default="4K,16M")
    ap.add_argument("--iters", type=int, default=200)
    args = ap.parse_args()
    backends = ["ftc", "gloo"]
    p50 = {}
    for p in range(args.passes):
        for world in [int(n) for n in args.ranks.split(",")]:
            order = backends[p % 2:] + backends[:p % 2]
            for b in order:
                with open("/proc/loadavg") as f:
                    load = f.read().split()[0]
                print(f"# pass {p + 1}, N={world}, {b}, load {load}",
                      flush=True)
                for row in run(world, b, args):
                    p50.setdefault((world, row["size"], b), []).append(
                        row["p50_s"])
    print(f"\n# {args.passes} passes; median [min..max] over passes")
    print("| N | size | ftc | gloo | gloo / ftc (time) |")
    print("|---|---|---|---|---|")
    for world in [int(n) for n in args.ranks.split(",")]:
        for size in args.sizes.split(","):
            cells, ratios = [], []
            for b in backends:
                v = p50[(world, size, b)]
                if SIZES[size] <= 64 << 10:
                    s = [t * 1e6 for t in v]
                    cells.append(f"{statistics.median(s):.1f} us "
                                 f"[{min(s):.1f}..{max(s):.1f}]")
                else:
                    bw = [2 * (world - 1) / world * SIZES[size] / t / 1e9
                          for t in v]
                    cells.append(f"{statistics.median(bw):.2f} GB/s "
                                 f"[{min(bw):.2f}..{max(bw):.2f}]")
            for f_t, g_t in zip(p50[(world, size, "ftc")],
                                p50[(world, size, "gloo")]):
                ratios.append(g_t / f_t)
            print(f"| {world} | {size} | {cells[0]} | {cells[1]} | "
                  f"{statistics.median(ratios):.2f} "
                  f"[{min(ratios):.2f}..{max(ratios):.2f}] |")


if __name__ == "__main__":
    main()
