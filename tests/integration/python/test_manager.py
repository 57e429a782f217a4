"""ftc.Manager: argument and environment errors, and one replica's steps
against a real lighthouse (`ftc lighthouse`, FTC_CLI) and store, a work
kept past close (its fault tolerance is tested under `ftc run` by
python_ft_train_test)."""
import json
import os
import re
import subprocess
import time
import unittest
import urllib.request
from datetime import timedelta

import numpy as np

import ftc


class ManagerErrors(unittest.TestCase):
    def test_missing_options_name_what_is_missing(self):
        saved = {k: v for k, v in os.environ.items()
                 if k.startswith("FTC_")}
        for k in saved:
            del os.environ[k]
        try:
            with self.assertRaises(ftc.Error) as cm:
                ftc.Manager()
        finally:
            os.environ.update(saved)
        self.assertEqual(cm.exception.name, "FTC_EINVAL")
        self.assertIn("lighthouse", str(cm.exception))

    def test_environment_is_read_under_ftc_run(self):
        os.environ["FTC_LIGHTHOUSE"] = "127.0.0.1:1"
        try:
            with self.assertRaises(ftc.Error) as cm:
                ftc.Manager()  # the rest of the launcher's variables
            self.assertEqual(cm.exception.name, "FTC_EINVAL")
            self.assertIn("FTC_", str(cm.exception))
        finally:
            del os.environ["FTC_LIGHTHOUSE"]

    def test_bad_keywords(self):
        with self.assertRaises(TypeError):
            ftc.Manager(no_such_option=1)
        with self.assertRaises(ValueError):
            ftc.Manager(timeout=-1)

    def test_store_unreachable(self):
        with self.assertRaises(ftc.Error):
            ftc.Manager(lighthouse="127.0.0.1:1", replica_id="r",
                        group_rank=0, group_size=1,
                        store_addr="127.0.0.1:1", connect_timeout=0.3)

    def test_register_checks_the_buffer(self):
        # the checks run in Python, before the manager is reached
        from ftc.manager import Manager
        m = Manager.__new__(Manager)
        m._state, m._fns = [], {}
        with self.assertRaises(TypeError):
            Manager.register(m, "w", [1.0, 2.0])
        with self.assertRaises(ValueError):
            Manager.register(m, "w", np.zeros(4, np.float32)[::2])


class ManagerSteps(unittest.TestCase):
    def setUp(self):
        cli = os.environ.get("FTC_CLI")
        self.assertIsNotNone(cli, "FTC_CLI names the ftc program")
        self.lighthouse = subprocess.Popen(
            [cli, "lighthouse", "--bind", "127.0.0.1:0"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in self.lighthouse.stdout:
            m = re.search(r"serving on (\S+)", line)
            if m:
                self.address = m.group(1)
                break
        self.store = ftc.StoreServer("127.0.0.1", 0)

    def tearDown(self):
        self.lighthouse.terminate()
        self.lighthouse.wait(30)
        self.lighthouse.stdout.close()
        self.store.close()

    def test_steps_and_a_work_kept_past_close(self):
        m = ftc.Manager(lighthouse=self.address, replica_id="solo",
                        group_rank=0, group_size=1,
                        store_addr=f"127.0.0.1:{self.store.port}",
                        from_env=False, quorum_timeout=30)
        w = np.array([1.0, 2.0], np.float32)
        m.register("w", w)
        for step in range(3):
            m.start_quorum()
            m.wait_quorum()
            grad = np.array([2.0, 4.0], np.float32)
            m.allreduce(grad, "avg").wait()
            self.assertEqual(grad.tolist(), [2.0, 4.0])  # 1 participant
            self.assertTrue(m.should_commit())
            self.assertEqual(m.current_step, step + 1)
        self.assertEqual(m.num_participants, 1)
        self.assertTrue(m.replica_id.startswith("solo:"))
        m.start_quorum()
        kept = m.allreduce(np.ones(2, np.float32), "sum")
        m.close()  # releases the work
        with self.assertRaises(ftc.Error) as cm:
            kept.wait()
        self.assertEqual(cm.exception.name, "FTC_EMISUSE")
        with self.assertRaises(ftc.PeerError):
            m.start_quorum()
        del kept  # must not release it a second time

    def status(self):
        url = f"http://{self.address}/v1/jobs/default/status"
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.load(r)

    def test_heartbeat_interval_is_the_leaders(self):
        """A leader told to heartbeat every 5 s is seen unhealthy once the
        lighthouse's 500 ms have passed after its round (the default
        0.1 s would keep it healthy); 0 is refused."""
        opts = dict(lighthouse=self.address, replica_id="slow",
                    group_rank=0, group_size=1,
                    store_addr=f"127.0.0.1:{self.store.port}",
                    from_env=False, quorum_timeout=30)
        with self.assertRaises(ftc.Error) as cm:
            ftc.Manager(heartbeat_interval=0, **opts)
        self.assertEqual(cm.exception.name, "FTC_EINVAL")
        m = ftc.Manager(heartbeat_interval=timedelta(seconds=5), **opts)
        m.start_quorum()
        m.wait_quorum()
        self.assertTrue(m.should_commit())
        deadline = time.monotonic() + 4  # before its second heartbeat
        seen = None
        while time.monotonic() < deadline:
            seen = [h for h in self.status()["heartbeats"]
                    if h["replica_id"] == m.replica_id]
            if seen and not seen[0]["healthy"]:
                break
            time.sleep(0.05)  # polling the outcome, bounded above
        m.close()
        self.assertTrue(seen, "the lighthouse never saw a heartbeat")
        self.assertFalse(seen[0]["healthy"], seen)
        self.assertGreaterEqual(seen[0]["age_ms"], 500)


if __name__ == "__main__":
    unittest.main(verbosity=2)
