"""ftc.Store and ftc.StoreServer from Python: every op against ftc's own
server and against PyTorch's TCPStore (both directions), errors as
exceptions, calls that release the GIL, close while a call waits."""
import datetime
import math
import threading
import time
import unittest

import ftc

try:
    import torch.distributed as dist
except ImportError:  # the interop cases say so and fail: torch is required
    dist = None


class StoreOps:
    """Cases run against self.store, a client of self's server."""

    def test_set_get_add(self):
        s = self.store
        s.set("k", b"v\x00bytes")
        self.assertEqual(s.get("k"), b"v\x00bytes")
        s.set("k", "text")
        self.assertEqual(s.get("k"), b"text")
        s.set("k", bytearray(b"ba"))
        self.assertEqual(s.get("k"), b"ba")
        self.assertEqual(s.add("n", 5), 5)
        self.assertEqual(s.add("n"), 6)
        self.assertEqual(s.add("n", -10), -4)
        big = bytes(range(256)) * 4096  # 1 MiB
        s.set("big", big)
        self.assertEqual(s.get("big"), big)

    def test_compare_set(self):
        s = self.store
        self.assertEqual(s.compare_set("c", b"", b"first"), b"first")
        self.assertEqual(s.compare_set("c", b"wrong", b"second"), b"first")
        self.assertEqual(s.compare_set("c", b"first", b"second"), b"second")

    def test_check_wait_delete_num_keys(self):
        s = self.store
        self.assertFalse(s.check(["w1"]))
        s.set("w1", b"1")
        self.assertTrue(s.check(["w1"]))
        s.wait(["w1"], timeout=5)
        before = s.num_keys()
        s.set("w2", b"2")
        self.assertEqual(s.num_keys(), before + 1)
        self.assertTrue(s.delete_key("w2"))
        self.assertFalse(s.delete_key("w2"))
        self.assertFalse(s.check(["w1", "w2"]))

    def test_multi(self):
        s = self.store
        s.multi_set(["m1", "m2", "m3"], [b"a", "b", b""])
        self.assertEqual(s.multi_get(["m3", "m1", "m2"]), [b"", b"a", b"b"])
        with self.assertRaises(ValueError):
            s.multi_set(["m1", "m2"], [b"a"])

    def test_timeouts(self):
        s = self.store
        for t in (0.05, datetime.timedelta(milliseconds=50)):
            with self.assertRaises(ftc.TimeoutError) as cm:
                s.wait(["never"], timeout=t)
            e = cm.exception
            self.assertIsInstance(e, TimeoutError)
            self.assertIsInstance(e, ftc.Error)
            self.assertEqual(e.name, "FTC_ETIMEDOUT")
            self.assertLess(e.code, 0)
            self.assertIn("never", str(e))
        with self.assertRaises(ftc.TimeoutError):
            s.get("never", timeout=0.05)
        # the client stays usable after a timeout
        s.set("after", b"ok")
        self.assertEqual(s.get("after"), b"ok")

    def test_bad_arguments(self):
        s = self.store
        with self.assertRaises(TypeError):
            s.set("k", 5)
        with self.assertRaises(ValueError):
            s.set("a\x00b", b"v")
        with self.assertRaises(TypeError):
            s.get(7)
        with self.assertRaises(ValueError):
            s.get("k", timeout=-1)
        with self.assertRaises(TypeError):
            s.get("k", timeout="soon")
        with self.assertRaises(TypeError):
            s.wait("not-a-list")
        s.set("k", b"unchanged")
        self.assertEqual(s.get("k"), b"unchanged")

    def test_wait_releases_the_gil(self):
        """A wait in one thread is released by a set from another thread
        on the same client: the waiting call does not hold the GIL."""
        got = []

        def waiter():
            got.append(self.other.get("late", timeout=30))

        t = threading.Thread(target=waiter)
        t.start()
        self.store.set("late", b"here")
        t.join(30)
        self.assertFalse(t.is_alive())
        self.assertEqual(got, [b"here"])


class FtcServer(StoreOps, unittest.TestCase):
    def setUp(self):
        self.server = ftc.StoreServer("127.0.0.1", 0)
        self.store = ftc.Store("127.0.0.1", self.server.port, timeout=30)
        self.other = ftc.Store(f"127.0.0.1:{self.server.port}")

    def tearDown(self):
        self.store.close()
        self.other.close()
        self.server.close()

    def test_queue_append_ping(self):
        s = self.store
        s.queue_push("q", b"one")
        s.queue_push("q", "two")
        self.assertEqual(s.queue_len("q"), 2)
        self.assertEqual(s.queue_pop("q"), b"one")
        self.assertEqual(s.queue_pop("q", block=False), b"two")
        with self.assertRaises(ftc.Error) as cm:
            s.queue_pop("q", block=False)
        self.assertEqual(cm.exception.name, "FTC_ENOENT")
        s.append("ap", b"ab")
        s.append("ap", b"cd")
        self.assertEqual(s.get("ap"), b"abcd")
        s.ping()

    def test_close_cancels_a_waiting_call(self):
        errors = []

        def waiter():
            try:
                self.other.get("never", timeout=math.inf)
            except ftc.Error as e:
                errors.append(e.name)

        t = threading.Thread(target=waiter)
        # the counters are a snapshot of the server loop's last pass: take
        # the base once it stopped moving (the connects' handshakes)
        base, deadline = -1, time.monotonic() + 30
        while base != self.server.stats()["requests"]:
            self.assertLess(time.monotonic(), deadline)
            base = self.server.stats()["requests"]
            time.sleep(0.05)
        t.start()
        # the waiter is inside its call once the server has its request
        deadline = time.monotonic() + 30
        while self.server.stats()["requests"] == base:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.001)
        self.other.close()
        t.join(30)
        self.assertFalse(t.is_alive())
        self.assertEqual(errors, ["FTC_ECANCELED"])
        with self.assertRaises(ftc.PeerError) as cm:
            self.other.get("k")
        self.assertEqual(cm.exception.name, "FTC_ECLOSED")
        self.other.close()  # twice is fine

    def test_server_gone(self):
        self.server.close()
        with self.assertRaises(ftc.Error):
            self.store.get("k", timeout=2)
        with self.assertRaises(ftc.PeerError):
            self.server.port

    def test_connect_refused(self):
        port = self.server.port
        self.server.close()
        with self.assertRaises(ftc.Error) as cm:
            ftc.Store("127.0.0.1", port, connect_timeout=0.3)
        self.assertIn(str(port), str(cm.exception))

    def test_bad_constructor_arguments(self):
        with self.assertRaises(ValueError):
            ftc.Store("127.0.0.1", 70000)
        with self.assertRaises(ValueError):
            ftc.Store("127.0.0.1", self.server.port, dialect="v3")
        with self.assertRaises(ValueError):
            ftc.StoreServer("127.0.0.1", 0, max_value_bytes=0)

    def test_value_limit(self):
        with ftc.StoreServer("127.0.0.1", 0, max_value_bytes=1024) as srv:
            with ftc.Store("127.0.0.1", srv.port) as s:
                s.set("small", b"x" * 1024)
                self.assertEqual(len(s.get("small")), 1024)
                s.set("big", b"x" * 1025)  # the server drops the client
                with self.assertRaises(ftc.Error):
                    s.get("big", timeout=2)
                # the counters are a snapshot of the server loop's last
                # pass: poll until it has counted the drop
                deadline = time.monotonic() + 30
                while srv.stats()["protocol_errors"] == 0:
                    self.assertLess(time.monotonic(), deadline)
                    time.sleep(0.001)
                self.assertEqual(srv.stats()["protocol_errors"], 1)

    def test_torch_client_on_ftc_server(self):
        """PyTorch's own TCPStore client against ftc's server."""
        self.assertIsNotNone(dist, "torch is required for interop")
        t = dist.TCPStore("127.0.0.1", self.server.port, is_master=False,
                          timeout=datetime.timedelta(seconds=30))
        t.set("from_torch", "1")
        self.assertEqual(self.store.get("from_torch"), b"1")
        self.store.set("from_ftc", b"2")
        self.assertEqual(t.get("from_ftc"), b"2")
        self.assertEqual(t.add("ctr", 3), 3)
        self.assertEqual(self.store.add("ctr", 4), 7)
        self.assertEqual(t.compare_set("from_ftc", "2", "3"), b"3")
        self.assertEqual(self.store.get("from_ftc"), b"3")


class FtcServerWithToken(StoreOps, unittest.TestCase):
    """Every op again with a token on both sides; clients without it reach
    only the open prefix."""

    TOKEN = "py-secret"

    def setUp(self):
        self.server = ftc.StoreServer("127.0.0.1", 0, token=self.TOKEN,
                                      open_prefixes=["torch/"])
        self.store = ftc.Store("127.0.0.1", self.server.port, timeout=30,
                               token=self.TOKEN)
        self.other = ftc.Store("127.0.0.1", self.server.port, timeout=30,
                               token=self.TOKEN)

    def tearDown(self):
        self.store.close()
        self.other.close()
        self.server.close()

    def test_wrong_or_missing_token(self):
        with self.assertRaises(ftc.Error) as e:
            ftc.Store("127.0.0.1", self.server.port, token="other")
        self.assertEqual(e.exception.name, "FTC_EAUTH")
        self.store.set("secret", b"s")
        anon = ftc.Store("127.0.0.1", self.server.port, timeout=30)
        anon.set("torch/mine", b"m")
        self.assertEqual(anon.num_keys(), 1)
        with self.assertRaises(ftc.Error) as e:
            anon.get("secret")
        self.assertIn("wants a token", str(e.exception))
        anon.close()
        self.assertEqual(self.store.num_keys(), 2)
        self.assertEqual(self.store.get("secret"), b"s")

    def test_torch_client_inside_the_open_prefix(self):
        """PyTorch's TCPStore client cannot authenticate: it works under
        torch/ and is cut off when it names a key outside."""
        self.assertIsNotNone(dist, "torch is required for interop")
        t = dist.TCPStore("127.0.0.1", self.server.port, is_master=False,
                          timeout=datetime.timedelta(seconds=30))
        t.set("torch/from_torch", "1")
        self.assertEqual(self.store.get("torch/from_torch"), b"1")
        self.store.set("outside", b"x")
        with self.assertRaises((RuntimeError, dist.DistError)):
            t.get("outside")
        self.assertEqual(self.store.num_keys(), 2)


class TorchServer(StoreOps, unittest.TestCase):
    """ftc.Store against PyTorch's TCPStore server (libuv, torch 2.x)."""

    def setUp(self):
        self.assertIsNotNone(dist, "torch is required for interop")
        self.server = dist.TCPStore("127.0.0.1", 0, is_master=True,
                                    wait_for_workers=False,
                                    timeout=datetime.timedelta(seconds=30))
        self.store = ftc.Store("127.0.0.1", self.server.port, timeout=30)
        self.other = ftc.Store("127.0.0.1", self.server.port, timeout=30)

    def tearDown(self):
        self.store.close()
        self.other.close()
        del self.server

    def test_token_refuses_torch_server(self):
        """PyTorch's server cannot prove it knows a token."""
        with self.assertRaises(ftc.Error) as e:
            ftc.Store("127.0.0.1", self.server.port, token="t")
        self.assertEqual(e.exception.name, "FTC_ENOTSUP")
        self.assertIn("PyTorch's TCPStore", str(e.exception))

    def test_torch_sees_ftc_writes(self):
        self.store.set("x", b"from ftc")
        self.assertEqual(self.server.get("x"), b"from ftc")
        self.server.set("y", "from torch")
        self.assertEqual(self.store.get("y"), b"from torch")


if __name__ == "__main__":
    unittest.main(verbosity=2)
