"""ftc.torchft, torchft's API on ftc: argument errors; LocalSGD's and
streaming DiLoCo's arithmetic and cadence, and a Manager resumed from a
checkpoint's step, on one replica against a real lighthouse (`ftc
lighthouse`, FTC_CLI); and torchft-style trainers
(examples/python/torchft: DDP with the Optimizer wrapper, DiLoCo, and
streaming DiLoCo) under `ftc run` with a replica group killed: every group
finishes every step, the failure is recovered, and the replicas end
bit-identical (DDP: the Managers' checksums of model and optimizer; DiLoCo:
the global parameters, reported by the trainer)."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from datetime import timedelta

import torch

import ftc
from ftc.torchft import (DistributedSampler, Manager, ProcessGroupGloo,
                         ProcessGroupXCCL)
from ftc.torchft.local_sgd import DiLoCo, LocalSGD

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "..", "examples", "python",
                        "torchft")
RUN_S = 240  # the deadline of one `ftc run`


class Errors(unittest.TestCase):
    def test_arguments(self):
        saved = {k: os.environ.pop(k) for k in list(os.environ)
                 if k.startswith(("FTC_", "TORCHFT_"))}
        self.addCleanup(os.environ.update, saved)
        with self.assertRaisesRegex(ValueError, "no lighthouse"):
            Manager(replica_id="r")
        with self.assertRaisesRegex(TypeError, "ProcessGroup"):
            Manager(pg=object(), lighthouse_addr="127.0.0.1:1")
        with self.assertRaisesRegex(ValueError, "go together"):
            Manager(state_dict=dict, lighthouse_addr="127.0.0.1:1")
        with self.assertRaisesRegex(ValueError, "no store"):
            Manager(lighthouse_addr="127.0.0.1:1", replica_id="r",
                    world_size=2, rank=0)
        with self.assertRaisesRegex(TypeError, "timedelta"):
            ProcessGroupGloo(timeout="5")
        self.assertEqual(ProcessGroupXCCL(timedelta(seconds=3)).backend,
                         "xccl")

    def test_sampler_shards_across_groups(self):
        data = list(range(12))
        seen = []
        for replica in range(3):
            for rank in range(2):
                s = DistributedSampler(data, replica_rank=replica,
                                       num_replica_groups=3, group_rank=rank,
                                       num_replicas=2, shuffle=False)
                self.assertEqual(s.global_rank, rank + 2 * replica)
                seen += list(s)
        self.assertEqual(sorted(seen), data)  # 6 shards, each index once


class OneReplica(unittest.TestCase):
    """A replica group alone: the average of one is itself, so what a sync
    does is the outer step's and the cadence's own."""

    def setUp(self):
        self.lighthouse = subprocess.Popen(
            [os.environ["FTC_CLI"], "lighthouse", "--bind", "127.0.0.1:0",
             "--min-replicas", "1"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.addCleanup(self._stop_lighthouse)
        for line in self.lighthouse.stdout:
            m = re.search(r"serving on (\S+)", line)
            if m:
                self.address = m.group(1)
                break
        saved = {k: os.environ.pop(k) for k in list(os.environ)
                 if k.startswith("FTC_")}
        self.addCleanup(os.environ.update, saved)

    def _stop_lighthouse(self):
        self.lighthouse.terminate()
        self.lighthouse.wait(30)
        self.lighthouse.stdout.close()

    def manager(self, **kw):
        m = Manager(lighthouse_addr=self.address, replica_id="solo", rank=0,
                    world_size=1, quorum_timeout=timedelta(seconds=30), **kw)
        self.addCleanup(m.shutdown)
        return m

    def test_local_sgd_syncs_every_n_steps(self):
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 1)
        ref = torch.nn.Linear(4, 1)
        ref.load_state_dict(model.state_dict())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
        m = self.manager(state_dict=model.state_dict,
                         load_state_dict=model.load_state_dict)
        with LocalSGD(m, model, opt, sync_every=3):
            for i in range(7):
                for net, o in ((model, opt), (ref, ref_opt)):
                    o.zero_grad()
                    net(torch.ones(2, 4)).sum().backward()
                    o.step()
                self.assertEqual(m.current_step(), (i + 1) // 3)
        # the average of one replica is itself: plain SGD's result
        for p, q in zip(model.parameters(), ref.parameters()):
            self.assertTrue(torch.equal(p, q))
        self.assertEqual(m.batches_committed(), 2)

    def test_streaming_diloco_outer_steps_in_turn(self):
        torch.manual_seed(0)

        def net():
            return torch.nn.Sequential(torch.nn.Linear(3, 3),
                                       torch.nn.Linear(3, 1))
        model, ref = net(), net()
        ref.load_state_dict(model.state_dict())
        inner = torch.optim.SGD(model.parameters(), lr=0.1)
        outer = torch.optim.SGD(model.parameters(), lr=0.5)
        ref_inner = torch.optim.SGD(ref.parameters(), lr=0.1)
        m = self.manager(use_async_quorum=False)

        def ref_step():
            ref_inner.zero_grad()
            ref(torch.ones(2, 3)).sum().backward()
            ref_inner.step()

        def outer_step(fragment, started, at_allreduce):
            # outer SGD on the pseudo-gradient (start - local at the
            # allreduce), applied to the fragment's starting parameters
            with torch.no_grad():
                for p, s, a in zip(fragment.parameters(), started,
                                   at_allreduce):
                    p.copy_(s.add(s - a, alpha=-0.5))

        start = [[p.detach().clone() for p in ref[f].parameters()]
                 for f in range(2)]
        snaps = []
        with DiLoCo(m, [model[0], model[1]], inner, outer, sync_every=4,
                    fragment_sync_delay=1):
            for i in range(4):
                inner.zero_grad()
                model(torch.ones(2, 3)).sum().backward()
                inner.step()
                ref_step()
                f = i // 2  # the quorum's step, mod 2: fragment 0 then 1
                if i % 2 == 0:  # the allreduce starts (delay 1)
                    snaps = [p.detach().clone() for p in ref[f].parameters()]
                else:  # the fragment syncs
                    outer_step(ref[f], start[f], snaps)
                    self.assertEqual(m.current_step(), f + 1)
        for p, q in zip(model.parameters(), ref.parameters()):
            torch.testing.assert_close(p, q, rtol=0, atol=1e-6)
        self.assertFalse(torch.equal(model[0].weight, start[0][0]))

    def test_load_state_dict_resumes_from_a_checkpoint(self):
        m = self.manager(use_async_quorum=False)
        checkpoint = {"step": 7, "batches_committed": 21}
        m.load_state_dict(checkpoint)
        self.assertEqual(m.state_dict(), checkpoint)
        m.start_quorum()
        self.assertTrue(m.should_commit())
        self.assertEqual(m.state_dict(), {"step": 8, "batches_committed": 22})
        with self.assertRaisesRegex(ftc.Error, "must not be negative"):
            m.load_state_dict({"step": -1, "batches_committed": 0})
        self.assertEqual(m.current_step(), 8)

    def test_diloco_arguments(self):
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with self.assertRaisesRegex(ValueError, "use_async_quorum"):
            DiLoCo(self.manager(), [model], opt, opt, sync_every=2)
        m = self.manager(use_async_quorum=False)
        with self.assertRaisesRegex(ValueError, "multiple"):
            DiLoCo(m, [model, model], opt, opt, sync_every=3)
        with self.assertRaisesRegex(ValueError, "fragment_sync_delay"):
            DiLoCo(m, [model], opt, opt, sync_every=2, fragment_sync_delay=2)


class UnderFtcRun(unittest.TestCase):
    def run_trainer(self, script, args, env=()):
        work = tempfile.mkdtemp(prefix="ftc-torchft-")
        summary = os.path.join(work, "summary.json")
        cmd = [os.environ["FTC_CLI"], "run", "--replicas", "2",
               "--kill-at-steps", "6", "--seed", "3", "--quiet",
               "--summary-json", summary]
        for e in env:
            cmd += ["--env", e]
        cmd += ["--", sys.executable, os.path.join(EXAMPLES, script)] + args
        out = subprocess.run(cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             timeout=RUN_S)
        self.assertEqual(out.returncode, 0, out.stdout[-4000:])
        with open(summary) as f:
            s = json.load(f)
        self.assertEqual(s["outcome"], "finished", out.stdout[-4000:])
        self.assertEqual(s["failures_injected"], 1)
        f = s["failures"][0]
        self.assertIsNotNone(f["survivors_recovery_ms"], s)
        self.assertIsNotNone(f["victim_recovery_ms"], s)
        for g in s["replica_groups"]:
            self.assertEqual(g["status"], "finished", g)
        self.assertNotIn("timed out", out.stdout)
        return s

    def test_ddp_with_optimizer_wrapper(self):
        # min_replica_size 2: the survivor waits for the victim (seconds of
        # torch import), so it cannot finish first and leave it alone
        s = self.run_trainer("train_ddp.py", ["--steps", "30",
                                              "--step-ms", "20",
                                              "--min-replica-size", "2"])
        self.assertEqual(s["steps_committed"], 30)
        self.assertEqual(s["checksums_from"], "manager")
        self.assertIs(s["checksums_identical"], True, s)
        heals = [g["heals"] for g in s["replica_groups"]]
        self.assertGreaterEqual(sum(heals), 1, s)

    def test_diloco(self):
        s = self.run_trainer("train_diloco.py", [
            "--syncs", "12", "--sync-every", "5", "--step-ms", "20",
            "--min-replica-size", "2"])
        self.assertEqual(s["steps_committed"], 12)
        self.assertEqual(s["checksums_from"], "trainer")
        self.assertIs(s["checksums_identical"], True, s)

    def test_streaming_diloco(self):
        s = self.run_trainer("train_diloco.py", [
            "--syncs", "12", "--step-ms", "10", "--min-replica-size", "2"],
            env=["USE_STREAMING=True"])
        self.assertEqual(s["steps_committed"], 12)


if __name__ == "__main__":
    unittest.main(verbosity=2)
