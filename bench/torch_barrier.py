"""Barrier latency of PyTorch's own store-based barrier, for comparison with
`ftc bench control --op barrier` in bench/control_vs_torch.sh.

The server is PyTorch's TCPStore (is_master=True) in its own process; K
clients (threads of one process, or processes) each hold their own TCPStore
client and run R barriers back to back. Two implementations:
  addwait  n = add(cnt, 1); if n == K: set(done); wait([done])
           (the store barrier torch.distributed itself used; any torch)
  c10d     torch's _StoreCollectives.barrier (torch >= 2.4, < 2.14)
Latency of round r = when the last client left round r minus when the last
client left round r-1; p50/p99 over rounds. One JSON object per line.
"""
import argparse
import datetime
import json
import multiprocessing as mp
import statistics
import sys
import threading
import time

import torch
import torch.distributed as dist

TIMEOUT = datetime.timedelta(seconds=120)


def serve(port_q, stop):
    store = dist.TCPStore("127.0.0.1", 0, None, True, TIMEOUT,
                          wait_for_workers=False)
    port_q.put(store.port)
    stop.wait(1800)


def client(port):
    return dist.TCPStore("127.0.0.1", port, None, False, TIMEOUT,
                         wait_for_workers=False)


def barrier_rounds(store, rank, K, R, prefix, impl):
    exits = []
    if impl == "c10d":
        cc = dist._StoreCollectives(store, rank, K)
        for r in range(R):
            cc.barrier(f"{prefix}/b{r}", TIMEOUT, True)
            exits.append(time.monotonic())
        return exits
    for r in range(R):
        n = store.add(f"{prefix}/b{r}/cnt", 1)
        if n == K:
            store.set(f"{prefix}/b{r}/done", "1")
        store.wait([f"{prefix}/b{r}/done"])
        exits.append(time.monotonic())
    return exits


def proc_rank(port, rank, K, R, prefix, impl, q):
    q.put(barrier_rounds(client(port), rank, K, R, prefix, impl))


def threads_case(port, K, R, prefix, impl, q):
    stores = [client(port) for _ in range(K)]
    out = [None] * K

    def body(k):
        out[k] = barrier_rounds(stores[k], k, K, R, prefix, impl)
    ts = [threading.Thread(target=body, args=(k,)) for k in range(K)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    q.put(out)


def latencies(all_exits):
    R = min(len(e) for e in all_exits)
    last = [max(e[r] for e in all_exits) for r in range(R)]
    lat = sorted((last[r] - last[r - 1]) * 1e6 for r in range(1, R))
    p = lambda x: lat[min(len(lat) - 1, max(0, int(round(x * len(lat))) - 1))]
    return round(statistics.median(lat), 1), round(p(0.99), 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="4,16,64")
    ap.add_argument("--mode", default="threads", choices=["threads", "procs"])
    ap.add_argument("--impl", default="addwait", choices=["addwait", "c10d"])
    ap.add_argument("--rounds", type=int, default=0)
    args = ap.parse_args()
    ctx = mp.get_context("fork")
    port_q, stop = ctx.Queue(), ctx.Event()
    srv = ctx.Process(target=serve, args=(port_q, stop), daemon=True)
    srv.start()
    port = port_q.get(timeout=60)
    for K in [int(x) for x in args.ranks.split(",") if x]:
        R = args.rounds or (200 if K <= 64 else 50)
        prefix = f"{args.impl}/{args.mode}/{K}"
        q = ctx.Queue()
        if args.mode == "threads":
            p = ctx.Process(target=threads_case,
                            args=(port, K, R, prefix, args.impl, q))
            p.start()
            out = q.get(timeout=900)
            p.join(60)
        else:
            ps = [ctx.Process(target=proc_rank,
                              args=(port, k, K, R, prefix, args.impl, q))
                  for k in range(K)]
            for p in ps:
                p.start()
            out = [q.get(timeout=900) for _ in range(K)]
            for p in ps:
                p.join(60)
        p50, p99 = latencies(out)
        print(json.dumps({"op": "barrier", "ranks": K, "mode": args.mode,
                          "impl": f"torch-{torch.__version__.split('+')[0]}-"
                                  f"{args.impl}",
                          "p50_us": p50, "p99_us": p99}), flush=True)
    stop.set()
    srv.join(30)


if __name__ == "__main__":
    sys.exit(main())
