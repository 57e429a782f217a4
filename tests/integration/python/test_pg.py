"""ftc.ProcessGroup from Python: every operation on 2 and 4 ranks (threads,
each with its own store connection) on numpy arrays and torch tensors,
checked against the values computed here; bad arguments raise before
anything starts; a missing peer times out; abort fails pending work."""
import threading
import unittest

import numpy as np
import torch

import ftc


def run_ranks(n, fn, prefix, timeout=60, backend=None):
    """fn(pg, rank) on n threads, one member each; returns the results
    (an exception is returned as the result)."""
    server = ftc.StoreServer("127.0.0.1", 0)
    out = [None] * n

    def member(r):
        try:
            with ftc.Store("127.0.0.1", server.port) as s, \
                    ftc.ProcessGroup(s, prefix, r, n, host="127.0.0.1",
                                     timeout=30, backend=backend) as pg:
                out[r] = fn(pg, r)
        except Exception as e:  # the test asserts on it
            out[r] = e

    threads = [threading.Thread(target=member, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a member did not finish"
    server.close()
    return out


class Collectives(unittest.TestCase):
    def ok(self, n, fn, prefix, backend=None):
        out = run_ranks(n, fn, prefix, backend=backend)
        for r, v in enumerate(out):
            if isinstance(v, Exception):
                raise AssertionError(f"rank {r}: {v!r}") from v
        return out

    def check_all(self, n, backend=None):
        def body(pg, r):
            got = {}
            for dt in (np.float32, np.float64, np.int32, np.int64, np.int8,
                       np.uint8, np.float16):
                a = (np.arange(5) + r).astype(dt)
                pg.allreduce(a).wait()
                got[("sum", np.dtype(dt).name)] = a.tolist()
            b = torch.arange(6, dtype=torch.bfloat16) * (r + 1)
            pg.allreduce(b, op="max").wait()
            got["bf16 max"] = b.tolist()
            f = torch.full((4,), float(r + 1))
            out = torch.empty(4)
            pg.allreduce(f, "avg", out=out).wait()
            got["avg"] = (out.tolist(), f.tolist())
            m = np.array([r + 2, -r], dtype=np.int64)
            pg.allreduce(m, "prod").wait()
            got["prod"] = m.tolist()
            m = np.array([r, -r], dtype=np.int32)
            pg.allreduce(m, "min").wait()
            got["min"] = m.tolist()
            bc = np.full(3, r, dtype=np.float32)
            pg.broadcast(bc, root=n - 1).wait()
            got["broadcast"] = bc.tolist()
            red = torch.tensor([r, 1], dtype=torch.int64)
            pg.reduce(red, root=1).wait()
            got["reduce"] = red.tolist()
            ag = torch.empty(2 * n, dtype=torch.int32)
            pg.allgather(torch.tensor([r, r * r], dtype=torch.int32),
                         ag).wait()
            got["allgather"] = ag.tolist()
            rs = np.empty(2, dtype=np.float64)
            pg.reduce_scatter(np.arange(2 * n, dtype=np.float64) * (r + 1),
                              rs).wait()
            got["reduce_scatter"] = rs.tolist()
            a2a = np.empty(n, dtype=np.int64)
            pg.alltoall(np.arange(n, dtype=np.int64) + 100 * r, a2a).wait()
            got["alltoall"] = a2a.tolist()
            ga = np.empty(n, dtype=np.int32) if r == 0 else None
            pg.gather(np.array([r * 7], dtype=np.int32), ga, root=0).wait()
            got["gather"] = None if ga is None else ga.tolist()
            sc = np.empty(1, dtype=np.int32)
            src = np.arange(n, dtype=np.int32) * 3 if r == 0 else None
            pg.scatter(sc, src, root=0).wait()
            got["scatter"] = sc.tolist()
            # rank r sends j+1 elements to rank j (values 10r + j)
            send = np.concatenate([np.full(j + 1, 10 * r + j, np.int64)
                                   for j in range(n)])
            recv = np.empty((r + 1) * n, np.int64)
            pg.alltoallv(send, recv, [j + 1 for j in range(n)],
                         [r + 1] * n).wait()
            got["alltoallv"] = recv.tolist()
            agv = np.empty(sum(range(1, n + 1)), np.float32)
            pg.allgatherv(np.full(r + 1, float(r), np.float32), agv,
                          [k + 1 for k in range(n)]).wait()
            got["allgatherv"] = agv.tolist()
            pg.barrier().wait()
            # a ring of send/recv, and a recv from any source
            right, left = (r + 1) % n, (r - 1) % n
            buf = np.empty(2, dtype=np.float32)
            w = pg.recv(buf, left, tag=5)
            pg.send(np.array([r, r + 0.5], dtype=np.float32), right,
                    tag=5).wait()
            w.wait()
            got["ring"] = buf.tolist()
            if r == 0:
                anyb = np.empty(1, dtype=np.int64)
                w = pg.recv(anyb, ftc.ANY_SOURCE, tag=9)
                w.wait()
                got["any"] = (anyb.tolist(), w.source())
            elif r == n - 1:
                pg.send(np.array([42], dtype=np.int64), 0, tag=9).wait()
            return got

        out = self.ok(n, body, f"all{n}{backend}", backend)
        tri = n * (n - 1) // 2
        for r, got in enumerate(out):
            for dt in ("float32", "float64", "int32", "int64", "int8",
                       "uint8", "float16"):
                self.assertEqual(got[("sum", dt)],
                                 [n * i + tri for i in range(5)], dt)
            self.assertEqual(got["bf16 max"], [n * i for i in range(6)])
            avg = sum(range(1, n + 1)) / n
            self.assertEqual(got["avg"], ([avg] * 4, [float(r + 1)] * 4))
            prod_a = 1
            for k in range(n):
                prod_a *= k + 2
            self.assertEqual(got["prod"][0], prod_a)
            self.assertEqual(got["min"], [0, -(n - 1)])
            self.assertEqual(got["broadcast"], [float(n - 1)] * 3)
            if r == 1:
                self.assertEqual(got["reduce"], [tri, n])
            else:
                self.assertEqual(got["reduce"], [r, 1])  # never modified
            self.assertEqual(got["allgather"],
                             [v for k in range(n) for v in (k, k * k)])
            tot = sum(range(1, n + 1))
            self.assertEqual(got["reduce_scatter"],
                             [float((2 * r) * tot), float((2 * r + 1) * tot)])
            self.assertEqual(got["alltoall"], [r + 100 * k for k in range(n)])
            self.assertEqual(got["scatter"], [3 * r])
            self.assertEqual(got["alltoallv"],
                             [10 * k + r for k in range(n)
                              for _ in range(r + 1)])
            self.assertEqual(got["allgatherv"],
                             [float(k) for k in range(n)
                              for _ in range(k + 1)])
            self.assertEqual(got["ring"], [float((r - 1) % n),
                                           (r - 1) % n + 0.5])
        self.assertEqual(out[0]["gather"], [7 * k for k in range(n)])
        self.assertEqual(out[0]["any"], ([42], n - 1))

    def test_two_ranks(self):
        self.check_all(2)

    def test_four_ranks(self):
        self.check_all(4)

    def test_baby_tcp(self):
        """The same on a Baby group: the tcp backend in a child process."""
        self.check_all(2, "baby-tcp")

    def test_bad_arguments(self):
        def body(pg, r):
            errors = []
            for call in (
                lambda: pg.allreduce([1.0, 2.0]),
                lambda: pg.allreduce(np.arange(8, dtype=np.float32)[::2]),
                lambda: pg.allreduce(torch.zeros(4, dtype=torch.complex64)),
                lambda: pg.allreduce(np.zeros(2, np.float32),
                                     out=np.zeros(2, np.float64)),
                lambda: pg.allreduce(np.zeros(2, np.float32), op="median"),
                lambda: pg.allgather(np.zeros(2, np.float32),
                                     np.zeros(3, np.float32)),
                lambda: pg.allreduce(np.zeros(2, np.int32), op="avg"),
                lambda: pg.broadcast(np.zeros(2, np.float32), root=5),
            ):
                try:
                    call()
                    errors.append("no error")
                except (TypeError, ValueError, ftc.Error) as e:
                    errors.append(type(e).__name__ if not isinstance(
                        e, ftc.Error) else e.name)
            ro = np.zeros(2, np.float32)
            ro.setflags(write=False)
            try:
                pg.allreduce(ro)
                errors.append("no error")
            except ValueError:
                errors.append("ValueError")
            # the group is still usable
            x = np.ones(3, np.float32)
            pg.allreduce(x).wait()
            return errors, x.tolist()

        for errors, x in self.ok(2, body, "bad"):
            self.assertEqual(errors, [
                "TypeError", "ValueError", "TypeError", "TypeError",
                "ValueError", "FTC_EINVAL", "FTC_EINVAL", "FTC_EINVAL",
                "ValueError"])
            self.assertEqual(x, [2.0, 2.0, 2.0])

    def test_timeout_fails_the_group(self):
        done = threading.Event()

        def body(pg, r):
            if r == 1:
                done.wait(30)  # silent until rank 0 has seen its timeout
                return None
            try:
                pg.recv(np.empty(1, np.float32), 1, timeout=0.2).wait()
                first = "no error"
            except ftc.TimeoutError as e:
                first = e.name
            try:
                pg.status()
                status = "healthy"
            except ftc.Error as e:
                status = e.name
            done.set()
            return first, status

        out = run_ranks(2, body, "timeout")
        self.assertEqual(out[0], ("FTC_ETIMEDOUT", "FTC_ETIMEDOUT"))

    def test_abort_fails_pending_work(self):
        aborted = threading.Event()

        def body(pg, r):
            if r == 1:
                aborted.wait(30)  # leaves only after rank 0's abort
                return None
            pending = pg.recv(np.empty(1, np.float32), 1, tag=3)
            self.assertFalse(pending.is_completed())
            pg.abort()
            aborted.set()
            self.assertTrue(pending.is_completed())
            try:
                pending.wait(timeout=5)
            except ftc.Error as e:
                return e.name
            return "no error"

        self.assertEqual(run_ranks(2, body, "abort")[0], "FTC_ECANCELED")

    def test_closed_group(self):
        with ftc.StoreServer("127.0.0.1", 0) as srv, \
                ftc.Store("127.0.0.1", srv.port) as s:
            pg = ftc.ProcessGroup(s, "solo", 0, 1, host="127.0.0.1")
            x = np.array([3.0], np.float32)
            pg.allreduce(x).wait()
            self.assertEqual(x.tolist(), [3.0])
            pg.close()
            with self.assertRaises(ftc.PeerError):
                pg.allreduce(x)
            with self.assertRaises(ftc.Error) as cm:
                ftc.ProcessGroup(s, "bad", 2, 1)
            self.assertEqual(cm.exception.name, "FTC_EINVAL")


if __name__ == "__main__":
    unittest.main(verbosity=2)
