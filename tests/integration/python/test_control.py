"""ftc.ControlCollectives from Python: 4 ranks (threads, each with its own
ftc.Store) run every collective and check every rank's result; key reuse,
a rejoining rank and a missing rank raise ftc errors."""
import threading
import unittest

import ftc

WORLD = 4


def run_ranks(port, fn, world=WORLD, generation=-1):
    """fn(group, rank) on world threads; returns their results in rank
    order (an exception is returned as the result)."""
    out = [None] * world

    def rank_main(r):
        try:
            with ftc.Store("127.0.0.1", port, timeout=30) as s:
                g = ftc.ControlCollectives(s, r, world,
                                           generation=generation)
                out[r] = fn(g, r)
        except Exception as e:  # reported to the test, which asserts
            out[r] = e

    threads = [threading.Thread(target=rank_main, args=(r,))
               for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive(), "a rank did not finish"
    return out


class Control(unittest.TestCase):
    def setUp(self):
        self.server = ftc.StoreServer("127.0.0.1", 0)

    def tearDown(self):
        self.server.close()

    def results(self, fn, **kw):
        out = run_ranks(self.server.port, fn, **kw)
        for r, v in enumerate(out):
            if isinstance(v, Exception):
                raise AssertionError(f"rank {r}: {v!r}") from v
        return out

    def test_every_collective(self):
        def body(g, r):
            got = {}
            g.barrier()
            got["all_gather"] = g.all_gather("ag", f"rank{r}".encode())
            got["all_sum"] = g.all_sum("sum", r + 1)
            if r == 0:
                g.broadcast_send("bc", b"hello")
                got["broadcast"] = b"hello"
            else:
                got["broadcast"] = g.broadcast_recv("bc")
            if r == 2:
                got["gather"] = g.gather_recv("ga", b"r2")
            else:
                g.gather_send("ga", f"r{r}".encode())
            if r == 1:
                got["scatter"] = g.scatter_send(
                    "sc", [f"to{i}".encode() for i in range(WORLD)])
            else:
                got["scatter"] = g.scatter_recv("sc")
            got["generation"] = g.generation
            return got

        out = self.results(body)
        names = [f"rank{r}".encode() for r in range(WORLD)]
        for r, got in enumerate(out):
            self.assertEqual(got["all_gather"], names)
            self.assertEqual(got["all_sum"], sum(range(1, WORLD + 1)))
            self.assertEqual(got["broadcast"], b"hello")
            self.assertEqual(got["scatter"], f"to{r}".encode())
            self.assertEqual(got["generation"], out[0]["generation"])
        self.assertEqual(out[2]["gather"],
                         [f"r{r}".encode() for r in range(WORLD)])

    def test_automatic_keys(self):
        def body(g, r):
            g.barrier()
            g.barrier()
            return g.all_gather(None, bytes([r]))

        out = self.results(body)
        for got in out:
            self.assertEqual(got, [bytes([r]) for r in range(WORLD)])

    def test_key_used_twice(self):
        def body(g, r):
            g.barrier("once")
            try:
                g.barrier("once", timeout=5)
            except ftc.Error as e:
                return e.name
            return "no error"

        self.assertEqual(self.results(body), ["FTC_EEXIST"] * WORLD)

    def test_missing_rank_times_out(self):
        """Every present rank fails naming the missing one: by its own
        timeout, or told by the first rank that gave up (abandoned)."""
        def body(g, r):
            if r == WORLD - 1:
                return "absent"
            try:
                g.barrier("b", timeout=0.3)
            except ftc.Error as e:
                return e
            return "no error"

        out = run_ranks(self.server.port, body)
        self.assertEqual(out[WORLD - 1], "absent")
        for e in out[:-1]:
            self.assertIsInstance(e, ftc.Error)
            self.assertIn(e.name, ("FTC_ETIMEDOUT", "FTC_ECANCELED"))
            self.assertIn(f"missing ranks {WORLD - 1}", str(e))
        self.assertTrue(any(isinstance(e, ftc.TimeoutError)
                            for e in out[:-1]))

    def test_rejoining_a_generation_is_refused(self):
        with ftc.Store("127.0.0.1", self.server.port) as s:
            ftc.ControlCollectives(s, 0, 1, generation=7).barrier()
            with self.assertRaises(ftc.Error) as cm:
                ftc.ControlCollectives(s, 0, 1, generation=7)
            self.assertEqual(cm.exception.name, "FTC_ESTALE")

    def test_bad_arguments(self):
        with ftc.Store("127.0.0.1", self.server.port) as s:
            with self.assertRaises(ftc.Error) as cm:
                ftc.ControlCollectives(s, 3, 2)
            self.assertEqual(cm.exception.name, "FTC_EINVAL")
            with self.assertRaises(TypeError):
                ftc.ControlCollectives("not a store", 0, 1)
            g = ftc.ControlCollectives(s, 0, 1)
            with self.assertRaises(ValueError):
                g.scatter_send("s", [b"a", b"b"])
            with self.assertRaises(TypeError):
                g.all_gather("x", 12)
            s.close()
            with self.assertRaises(ftc.PeerError):
                g.barrier()


if __name__ == "__main__":
    unittest.main(verbosity=2)
