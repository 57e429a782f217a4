#!/usr/bin/env python3
"""store_vs_torch.py - ftc's key-value store against PyTorch's TCPStore, in one run.

(a) server against server: one PyTorch client workload (modelled on
    ../shared/anchors/tcpstore_bench.py), run with torch 1.13 clients and with
    torch 2.x clients, against PyTorch's own TCPStore server and against
    `ftc store`. The ratio is ftc server / PyTorch server.
(b) end to end: PyTorch client + PyTorch server (the runs of (a)) against ftc's
    C client + ftc's server (`ftc bench store --json`). The ratio is ftc /
    PyTorch.
--floor adds, interleaved with the passes above, bench/store_floor: the
    same clients and request patterns against an epoll server that does no
    protocol work (build/bench/store_floor), i.e. what this machine's
    loopback allows any server; (b) then also prints the floor and
    floor / PyTorch per cell, so a target ratio can be checked against what
    is physically reachable here. --part b skips the passes that only (a)
    needs (PyTorch clients against ftc's server).

Ratios are > 1 when ftc is better: ops/s divided by PyTorch's; for barrier
latency, PyTorch's latency divided by ftc's.

Workload (every client its own connection, K in --tp-k, as processes):
  set / get / add      16 B values, keys c<id>/k<i%1000>; add hits one counter
  set / get 1 MiB      keys c<id>/k<i%8>
  barrier (K in --bar-k: processes up to 64, threads above): n = add(cnt, 1);
                       the K-th sets done; all wait([done]); latency per round
                       as the last client leaves (the anchor's "period").
                       In (b) ftc's barrier is c10d's store barrier
                       (ftc_store_client_barrier: one request per client on
                       ftc's server), which also writes the rank keys.
set sends no reply: each client ends with one add() round trip so the time
includes the server applying every set.

usage: bench/store_vs_torch.py [--ftc PATH] [--torch1 PY] [--torch2 PY]
                               [--duration S] [--repeat N] [--quick]
                               [--floor [--store-floor PATH]] [--part b]
                               [--out FILE.jsonl]
Internal modes (run under a torch interpreter): --serve, --workload ADDR.
"""
import argparse
import datetime
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SMALL = b"v" * 16
BIG = b"x" * (1 << 20)
PROCS_MAX = 64  # barrier clients as processes up to this K, threads above
TIMEOUT = datetime.timedelta(seconds=300)


# --------------------------------------------------------------- torch side

def raise_nofile():
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def serve(legacy):
    """A PyTorch TCPStore server until stdin closes."""
    import torch.distributed as dist
    raise_nofile()
    kw = {"wait_for_workers": False}
    if legacy:
        kw["use_libuv"] = False
    store = dist.TCPStore("127.0.0.1", 0, None, True, TIMEOUT, **kw)
    print("PORT %d" % store.port, flush=True)
    sys.stdin.read()
    del store


def client(addr):
    import torch.distributed as dist
    host, port = addr.rsplit(":", 1)
    return dist.TCPStore(host, int(port), None, False, TIMEOUT,
                         wait_for_workers=False)


def percentile(sorted_ns, q):
    if not sorted_ns:
        return 0.0
    return sorted_ns[min(len(sorted_ns) - 1, int(q * (len(sorted_ns) - 1)))] / 1e3


def tp_client(addr, cid, op, size, duration, bar, q):
    st = client(addr)
    value = BIG if size > 16 else SMALL
    nkeys = 8 if size > 16 else 1000
    keys = ["p/c%d/k%d" % (cid, i) for i in range(nkeys)]
    if op == "get":
        for k in keys:
            st.set(k, value)
    bar.wait()
    lat = []
    n = 0
    now = time.perf_counter_ns
    t0 = time.monotonic()
    end = t0 + duration
    while time.monotonic() < end:
        for _ in range(50 if size <= 16 else 1):
            a = now()
            if op == "set":
                st.set(keys[n % nkeys], value)
            elif op == "get":
                v = st.get(keys[n % nkeys])
                assert len(v) == size
            else:
                st.add("p/ctr", 1)
            lat.append(now() - a)
            n += 1
    if op == "set":
        st.add("p/sync", 0)
    q.put((n, t0, time.monotonic(), lat))


def barrier_loop(st, k, rounds, prefix):
    exits = []
    for r in range(rounds):
        if st.add("%s/b%d/cnt" % (prefix, r), 1) == k:
            st.set("%s/b%d/done" % (prefix, r), "1")
        st.wait(["%s/b%d/done" % (prefix, r)])
        exits.append(time.monotonic())
    return exits


def barrier_proc(addr, k, rounds, prefix, q):
    q.put(barrier_loop(client(addr), k, rounds, prefix))


def in_processes(ctx, k, target, args):
    """Runs target(*args(i), q) in k processes; returns what they put."""
    q = ctx.Queue()
    ps = [ctx.Process(target=target, args=args(i) + (q,)) for i in range(k)]
    for p in ps:
        p.start()
    out = [q.get(timeout=600) for _ in range(k)]
    for p in ps:
        p.join(60)
    return out


def rounds_for(k):
    return 400 if k <= 4 else 200 if k <= 16 else 100 if k <= 64 else 40 if k <= 256 else 20


def run_barrier(ctx, addr, k, prefix):
    rounds = rounds_for(k)
    if k <= PROCS_MAX:
        out = in_processes(ctx, k, barrier_proc,
                           lambda i: (addr, k, rounds, prefix))
        mode = "procs"
    else:
        stores = [client(addr) for _ in range(k)]
        out = [None] * k

        def body(i):
            out[i] = barrier_loop(stores[i], k, rounds, prefix)
        th = [threading.Thread(target=body, args=(i,)) for i in range(k)]
        for t in th:
            t.start()
        for t in th:
            t.join()
        del stores
        mode = "threads"
    last = [max(e[r] for e in out) for r in range(rounds)]
    per = sorted(last[r] - last[r - 1] for r in range(1, rounds))
    return {"op": "barrier", "clients": k, "value_bytes": 0,
            "ops_per_s": round((rounds - 1) / (last[-1] - last[0]), 1),
            "p50_us": round(per[len(per) // 2] * 1e6, 1),
            "p99_us": round(per[(len(per) * 99) // 100] * 1e6, 1), "mode": mode}


def workload(addr, duration, tp_ks, bar_ks):
    """The PyTorch client workload against addr; one JSON line per cell."""
    import multiprocessing as mpm
    raise_nofile()
    ctx = mpm.get_context("fork")
    cell = 0
    for op, size in [("set", 16), ("get", 16), ("add", 0),
                     ("set", 1 << 20), ("get", 1 << 20)]:
        for k in tp_ks:
            bar = ctx.Barrier(k)
            res = in_processes(ctx, k, tp_client,
                               lambda c: (addr, c, op, size, duration, bar))
            ops = sum(r[0] for r in res)
            wall = max(r[2] for r in res) - min(r[1] for r in res)
            lat = sorted(x for r in res for x in r[3])
            print(json.dumps({"op": op, "clients": k, "value_bytes": size,
                              "ops_per_s": round(ops / wall, 1),
                              "p50_us": round(percentile(lat, 0.5), 1),
                              "p99_us": round(percentile(lat, 0.99), 1),
                              "mode": "procs"}), flush=True)
    for k in bar_ks:
        cell += 1
        print(json.dumps(run_barrier(ctx, addr, k, "bar%d" % cell)), flush=True)


# -------------------------------------------------------------- orchestrator

def read_line_matching(proc, pattern, timeout):
    """The first stdout line of proc matching pattern, within timeout s."""
    found = {}

    def reader():
        for line in proc.stdout:
            m = re.search(pattern, line)
            if m:
                found["m"] = m
                return
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    t.join(timeout)
    if "m" not in found:
        raise RuntimeError("%s: no line matching %r within %d s"
                           % (proc.args, pattern, timeout))
    return found["m"]


def stop(proc):
    if proc.poll() is None:
        try:
            if proc.stdin:
                proc.stdin.close()
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_torch_server(py):
    p = subprocess.Popen([py, os.path.abspath(__file__), "--serve"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return p, "127.0.0.1:%s" % read_line_matching(p, r"PORT (\d+)", 120).group(1)


def start_ftc_server(ftc):
    p = subprocess.Popen([ftc, "store", "--port", "0", "--bind", "127.0.0.1"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    return p, "127.0.0.1:%s" % read_line_matching(p, r"port (\d+)", 30).group(1)


def run_jsonl(cmd, timeout):
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=timeout,
                         check=True).stdout
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")]


def medians(raw):
    """(client, server) -> {cell: result with the median of each metric}."""
    groups = {}
    for r in raw:
        groups.setdefault((r["client"], r["server"]), {}) \
              .setdefault(key(r), []).append(r)
    out = {}
    for sys_key, cells in groups.items():
        out[sys_key] = {}
        for c, rs in cells.items():
            m = dict(rs[0])
            for f in ("ops_per_s", "p50_us", "p99_us"):
                m[f] = statistics.median(x[f] for x in rs)
            out[sys_key][c] = m
    return out


def key(r):
    return (r["op"], r["clients"], r["value_bytes"])


def label(k):
    op, clients, size = k
    size_s = "" if size == 0 else (" 1MiB" if size == 1 << 20 else " %dB" % size)
    return "%s%s K=%d" % (op, size_s, clients)


def ratio(ftc, torch, barrier):
    if not ftc or not torch:
        return "-"
    if barrier:
        return "%.2fx" % (torch["p50_us"] / ftc["p50_us"]) if ftc["p50_us"] else "-"
    return "%.2fx" % (ftc["ops_per_s"] / torch["ops_per_s"]) if torch["ops_per_s"] else "-"


def metric(r, barrier):
    if r is None:
        return "-"
    return "%.0f us" % r["p50_us"] if barrier else "%.0f/s" % r["ops_per_s"]


def table(title, columns, rows):
    print("\n" + title)
    widths = [max(len(str(x)) for x in col) for col in zip(columns, *rows)]
    for line in [columns] + rows:
        print("  ".join(str(x).rjust(w) if i else str(x).ljust(w)
                        for i, (x, w) in enumerate(zip(line, widths))))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ftc", default=os.path.join(ROOT, "build/tools/ftc/ftc"))
    ap.add_argument("--torch1", default="/usr/bin/python3")
    ap.add_argument("--torch2", default=os.path.join(ROOT, ".venv/bin/python"))
    ap.add_argument("--duration", type=float, default=2.0)
    ap.add_argument("--tp-k", default="1,4,16,64")
    ap.add_argument("--bar-k", default="4,16,64,256,1024")
    ap.add_argument("--repeat", type=int, default=1,
                    help="interleaved passes; cells report the median")
    ap.add_argument("--quick", action="store_true",
                    help="0.5 s cells, K up to 16 (a smoke run)")
    ap.add_argument("--floor", action="store_true",
                    help="also run bench/store_floor (the loopback floor)")
    ap.add_argument("--store-floor",
                    default=os.path.join(ROOT, "build/bench/store_floor"))
    ap.add_argument("--part", choices=["ab", "b"], default="ab",
                    help="b: only what (b) needs (PyTorch's servers)")
    ap.add_argument("--out", help="append every measurement to this JSONL file")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--legacy", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--workload", metavar="ADDR", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.quick:
        a.duration, a.tp_k, a.bar_k = 0.5, "1,16", "4,16"
    tp_ks = [int(x) for x in a.tp_k.split(",") if x]
    bar_ks = [int(x) for x in a.bar_k.split(",") if x]
    if a.serve:
        return serve(a.legacy)
    if a.workload:
        return workload(a.workload, a.duration, tp_ks, bar_ks)

    raw = []
    wl = ["--workload", None, "--duration", str(a.duration),
          "--tp-k", a.tp_k, "--bar-k", a.bar_k]
    # Passes are interleaved (every system once, then again) and each cell
    # reports the median over passes, as the anchors do on a shared machine.
    for rep in range(a.repeat):
        for name, py in [("torch 1.13", a.torch1), ("torch 2.x", a.torch2)]:
            order = ["pytorch", "ftc"] if rep % 2 == 0 else ["ftc", "pytorch"]
            if a.part == "b":
                order = ["pytorch"]
            for server in order:
                print("pass %d/%d (a): %s clients, %s server ..."
                      % (rep + 1, a.repeat, name, server),
                      file=sys.stderr, flush=True)
                proc, addr = (start_torch_server(py) if server == "pytorch"
                              else start_ftc_server(a.ftc))
                try:
                    wl[1] = addr
                    rs = run_jsonl([py, os.path.abspath(__file__)] + wl, 3600)
                finally:
                    stop(proc)
                for r in rs:
                    r.update({"client": name, "server": server, "pass": rep})
                raw += rs
        print("pass %d/%d (b): ftc bench store ..." % (rep + 1, a.repeat),
              file=sys.stderr, flush=True)
        # The floor right before or after ftc's own cells, alternating.
        benches = [("ftc", [a.ftc, "bench", "store"])]
        if a.floor:
            benches.append(("floor", [a.store_floor]))
            if rep % 2 == 1:
                benches.reverse()
        for name, cmd in benches:
            if name == "floor":
                print("pass %d/%d (b): store_floor ..." % (rep + 1, a.repeat),
                      file=sys.stderr, flush=True)
            for k in sorted(set(tp_ks) | set(bar_ks)):
                ops = ",".join(([] if k not in tp_ks else ["set", "get", "add"]) +
                               ([] if k not in bar_ks else ["barrier"]))
                for r in run_jsonl(cmd + ["--json", "--clients", str(k),
                                          "--ops", ops,
                                          "--duration", str(a.duration)], 3600):
                    r.update({"client": name, "server": name, "pass": rep})
                    raw.append(r)
    runs = medians(raw)
    ours = runs.get(("ftc", "ftc"), {})

    floor = runs.get(("floor", "floor"), {})
    cells = sorted({key(r) for r in raw if r["client"] not in ("ftc", "floor")},
                   key=lambda k: (["set", "get", "add", "barrier"].index(k[0]),
                                  k[2], k[1]))
    rows = []
    for c in cells:
        b = c[0] == "barrier"
        row = [label(c)]
        for name in ["torch 1.13", "torch 2.x"]:
            t = runs.get((name, "pytorch"), {}).get(c)
            f = runs.get((name, "ftc"), {}).get(c)
            row += [metric(t, b), metric(f, b), ratio(f, t, b)]
        rows.append(row)
    if a.part == "ab":
        table("(a) server vs server: PyTorch clients; ops/s, or barrier p50 latency",
              ["cell", "1.13 srv", "ftc srv", "ratio", "2.x srv", "ftc srv",
               "ratio"], rows)
    rows = []
    for c in cells:
        b = c[0] == "barrier"
        t1 = runs.get(("torch 1.13", "pytorch"), {}).get(c)
        t2 = runs.get(("torch 2.x", "pytorch"), {}).get(c)
        f = ours.get(c)
        row = [label(c), metric(t1, b), metric(t2, b), metric(f, b),
               ratio(f, t1, b), ratio(f, t2, b)]
        if a.floor:
            fl = floor.get(c)
            row += [metric(fl, b), ratio(fl, t1, b), ratio(fl, t2, b),
                    ratio(f, fl, b)]
        rows.append(row)
    columns = ["cell", "torch 1.13", "torch 2.x", "ftc", "vs 1.13", "vs 2.x"]
    if a.floor:
        # floor vs X: the most any server could reach here against X;
        # ftc/floor: how much of the floor ftc reaches (1.00x = all of it).
        columns += ["floor", "floor vs 1.13", "floor vs 2.x", "ftc/floor"]
    table("(b) end to end: PyTorch client+server vs ftc client+server",
          columns, rows)
    if a.out:
        with open(a.out, "a") as fh:
            for r in raw:
                fh.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    sys.exit(main())
