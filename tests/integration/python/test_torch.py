"""torch.distributed on the "ftc" backend (ftc.torch) with real PyTorch:
every collective dist.* offers on CPU tensors, a subgroup, DDP against a
single-process reference, bad tensors, and a peer that dies inside a DDP
step; ranks are processes (torch_worker.py)."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import unittest

import ftc

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "torch_worker.py")


def run(world, mode, port=None, silent=(), host="127.0.0.1"):
    """Runs world ranks of the worker; returns their JSON results (None for
    the ranks in silent, which print none)."""
    server = None
    if port is None:
        server = ftc.StoreServer("127.0.0.1", 0)
        port = server.port
    procs = [subprocess.Popen(
        [sys.executable, WORKER, str(r), str(world), host, str(port),
         mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for r in range(world)]
    results = []
    try:
        for r, p in enumerate(procs):
            out, err = p.communicate(timeout=150)
            lines = [l for l in out.splitlines() if l.startswith("{")]
            if p.returncode != 0 or (not lines and r not in silent):
                raise AssertionError(f"rank {r} exited {p.returncode}:\n"
                                     f"{out}\n{err[-3000:]}")
            results.append(json.loads(lines[-1]) if lines else None)
    finally:
        for p in procs:
            p.kill()
            p.wait()
        if server is not None:
            server.close()
    return results


class TorchBackend(unittest.TestCase):
    def check(self, world, results):
        n = world
        for r, got in enumerate(results):
            self.assertEqual(got["backend"], "ftc")
            self.assertEqual(got["sum"], [n * i + n * (n - 1) / 2
                                          for i in range(4)])
            self.assertEqual(got["max"], [float(n - 1)] * 3)
            self.assertEqual(got["avg_future"], [[(n + 1) / 2] * 2])
            self.assertEqual(got["broadcast"], [10 * (n - 1)])
            self.assertEqual(got["all_gather"], [[k, -k] for k in range(n)])
            self.assertEqual(got["all_gather_into_tensor"],
                             [v for k in range(n) for v in (k, 0.5)])
            self.assertEqual(got["reduce_scatter_tensor"],
                             [float(n * 2 * r), float(n * (2 * r + 1))])
            self.assertEqual(got["reduce_scatter"],
                             [float(sum(r + k for k in range(n)))])
            self.assertEqual(got["all_to_all_single"],
                             [r + 10 * k for k in range(n)])
            self.assertEqual(got["all_to_all_single_splits"],
                             [float(10 * k + r) for k in range(n)
                              for _ in range(r + 1)])
            self.assertEqual(got["all_to_all"],
                             [[float(k * n + r)] for k in range(n)])
            self.assertEqual(got["scatter"], [float(3 * r)])
            self.assertEqual(got["reduce"],
                             [float(n), float(n * (n - 1) / 2)] if r == 0
                             else [1.0, float(r)])
            if r < 2:
                self.assertEqual(got["subgroup"], [2.0])
            self.assertLess(got["ddp_max_diff"], 1e-6)
            self.assertEqual(got["bool"], "TypeError")
            self.assertEqual(got["strided"], "ValueError")
            self.assertEqual(got["after_errors"], [float(n)] * 2)
        self.assertEqual(results[0]["gather"], [[float(k)] for k in range(n)])
        self.assertEqual(results[0]["recv_any"], [[7.0], n - 1])

    def test_two_ranks_on_ftc_store(self):
        self.check(2, run(2, "store"))

    def test_four_ranks_on_ftc_store(self):
        self.check(4, run(4, "store"))

    def test_tcp_init_method(self):
        """init_method tcp://: rank 0 serves PyTorch's own TCPStore."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.check(2, run(2, "tcp", port))

    def test_file_init_method(self):
        """file://: no TCPStore; rank 0 serves an ftc store."""
        with tempfile.TemporaryDirectory() as d:
            self.check(2, run(2, "file", 0, host=os.path.join(d, "rdzv")))

    def test_peer_dies_in_ddp(self):
        """The survivors' DDP step raises RuntimeError naming the dead
        rank; no crash, no hang."""
        results = run(3, "peer_dies", silent=(2,))
        for got in results[:2]:
            self.assertIn("ftc:", got["error"])
            self.assertIn("rank 2", got["error"])

    def test_exit_during_a_callback(self):
        """A script that ends while the completion thread runs a future's
        callback exits cleanly once the callback returns (it used to die
        in PyTorch's C++ with SIGABRT at interpreter shutdown)."""
        results = run(2, "exit_in_callback")
        self.assertEqual(results[0], {"callback": "returned"})


    def test_a_dropped_group_is_gone_for_its_peers(self):
        """A rank that drops its group (torchft's shutdown() just lets go
        of it) closes its connections at once, so a peer's next collective
        fails with Gloo's "Connection closed by peer" and not at its 20 s
        timeout: the completion thread no longer keeps the last work it
        completed (and through it the group) alive. Ranks on threads, as
        torchft's tests run them; rank 1's recv is the last completion.
        The failure reaches both the future and Work.wait()."""
        import threading
        from datetime import timedelta

        import torch

        import ftc.torch
        server = ftc.StoreServer("127.0.0.1", 0)
        self.addCleanup(server.close)
        store = torch.distributed.TCPStore(
            "127.0.0.1", server.port, is_master=False,
            wait_for_workers=False)
        pgs = [None, None]

        def make(rank):
            pgs[rank] = ftc.torch.ProcessGroupFtc(
                store, rank, 2, timeout=timedelta(seconds=20), prefix="drop")
        threads = [threading.Thread(target=make, args=(r,)) for r in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        pgs[0].send([torch.ones(2)], 1, 0).get_future().wait()
        got = torch.zeros(2)
        pgs[1].recv([got], 0, 0).get_future().wait()
        self.assertEqual(got.tolist(), [1.0, 1.0])
        # Rank 0 starts collectives rank 1 never joins; then rank 1 lets
        # go of its group (torchft's shutdown()).
        first = pgs[0].allreduce([torch.ones(2)])
        # Work.wait() raises too (torch's future-made works returned True
        # and left the output as it was), for one operation and for a
        # coalesced call of several.
        waited = (pgs[0].allreduce([torch.ones(2)]),
                  pgs[0].allreduce_coalesced([torch.ones(2), torch.ones(3)]))
        pgs[1] = None
        with self.assertRaises(RuntimeError) as cm:
            first.get_future().wait()
        self.assertIn("Connection closed by peer rank 1", str(cm.exception))
        for work in waited:
            with self.assertRaises(RuntimeError) as cm:
                work.wait()
            self.assertIn("rank 1", str(cm.exception))


class UnderFtcRun(unittest.TestCase):
    def test_env_rendezvous(self):
        """ftc run sets torchrun's and torchft's variables: env:// forms
        each replica group's "ftc" group on the group's store."""
        ftc_cli = os.environ.get("FTC_CLI")
        self.assertIsNotNone(ftc_cli, "FTC_CLI names the ftc program")
        worker = os.path.join(os.path.dirname(WORKER),
                              "torch_env_worker.py")
        p = subprocess.run(
            [ftc_cli, "run", "--replicas", "2", "--ranks", "2",
             "--max-restarts", "0", "--", sys.executable, worker],
            capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        for g in range(2):
            for r in range(2):
                self.assertIn(f"rank {r} of group {g} ok", p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
