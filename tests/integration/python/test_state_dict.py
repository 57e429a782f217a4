"""Healing state_dicts without pickle (ftc.state, Manager.
register_state_dict_fn): the skeleton round trip with every kind of value
and tensor, the refusal of values that would need code, and two replica
groups against a real lighthouse (`ftc lighthouse`, FTC_CLI) where a fresh
one, whose Adam optimizer has no state yet, heals model and optimizer from
one that trained alone, then both train on and end bit-identical; the
state_dict function runs only when a peer heals, not on steady steps."""
import json
import math
import os
import re
import subprocess
import threading
import unittest
import urllib.request

import torch

import ftc
from ftc import state


class Skeleton(unittest.TestCase):
    def test_round_trip_of_every_kind(self):
        a = torch.arange(6, dtype=torch.float32).reshape(2, 3)
        obj = {
            "model": {"w": a, "b": torch.tensor(2.5, dtype=torch.float64)},
            3: [torch.tensor([True, False, True]), (1, None, "x", 2.0)],
            (1, "k"): {"nan": math.nan, "inf": -math.inf, "big": 2 ** 70},
            "half": torch.ones(3, dtype=torch.bfloat16),
            "i16": torch.tensor([[1, -2], [3, 4]], dtype=torch.int16),
            "empty": torch.empty(0, 4),
        }
        skeleton, tensors = state.flatten(obj)
        json.loads(skeleton)  # plain JSON, nothing else
        self.assertEqual(len(tensors), 6)
        # what travels: native dtypes as themselves, others as bytes
        bufs = [state.as_buffer(t) for t in tensors]
        self.assertEqual([state.dtype_name(b) for b in bufs],
                         ["float32", "float64", "uint8", "bfloat16", "uint8",
                          "float32"])
        self.assertEqual(bufs[0].data_ptr(), a.data_ptr())  # borrowed
        back = state.unflatten(skeleton, [b.clone() for b in bufs])
        self.assertTrue(torch.equal(back["model"]["w"], a))
        self.assertEqual(back["model"]["b"].dtype, torch.float64)
        self.assertEqual(back[3][0].tolist(), [True, False, True])
        self.assertEqual(back[3][1], (1, None, "x", 2.0))
        self.assertTrue(math.isnan(back[(1, "k")]["nan"]))
        self.assertEqual(back[(1, "k")]["inf"], -math.inf)
        self.assertEqual(back[(1, "k")]["big"], 2 ** 70)
        self.assertTrue(torch.equal(back["i16"], obj["i16"]))
        self.assertEqual(back["empty"].shape, (0, 4))
        self.assertEqual(list(back), list(obj))  # key order kept

    def test_copies_only_where_needed(self):
        t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
        view = t.t()  # not contiguous
        b = state.as_buffer(view)
        self.assertNotEqual(b.data_ptr(), t.data_ptr())
        self.assertTrue(torch.equal(b, view))

    def test_values_that_need_code_are_refused(self):
        for bad in ({"opt": {"x": object()}}, [{1, 2}], {"f": len}):
            with self.assertRaises(TypeError) as cm:
                state.flatten(bad)
            self.assertIn("without pickle", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            state.flatten({"a": [1, {"b": b"bytes"}]})
        self.assertIn("state['a'][1]['b']", str(cm.exception))


def model_and_optimizer(seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 4))
    return model, torch.optim.Adam(model.parameters(), lr=0.01)


class Replica:
    """One replica group of one rank: a model, Adam, and extra values."""

    def __init__(self, name, seed, address, store):
        self.model, self.opt = model_and_optimizer(seed)
        self.extra = {"epoch": 0, "tag": name, 7: (1.5, None, True)}
        self.m = ftc.Manager(lighthouse=address, replica_id=name,
                             group_rank=0, group_size=1,
                             store_addr=f"127.0.0.1:{store.port}",
                             from_env=False, quorum_timeout=60, timeout=60)
        self.m.register_state_dict_fn("train", self.load, self.save)
        self.healed_with = None  # optimizer state entries when it healed
        self.error = None
        self.saves = 0  # state_dict calls

    def save(self):
        self.saves += 1
        return {"model": self.model.state_dict(),
                "optim": self.opt.state_dict(), "extra": self.extra}

    def load(self, sd):
        self.healed_with = len(sd["optim"]["state"])
        self.model.load_state_dict(sd["model"])
        self.opt.load_state_dict(sd["optim"])
        self.extra = sd["extra"]

    def train(self, until):
        try:
            while self.m.current_step < until:
                self.m.start_quorum()
                self.m.wait_quorum()
                step = self.m.current_step
                g = torch.Generator().manual_seed(step)
                x = torch.randn(32, 8, generator=g)
                y = torch.randn(32, 4, generator=g)
                self.opt.zero_grad()
                torch.nn.functional.mse_loss(self.model(x), y).backward()
                works = [self.m.allreduce(p.grad, "avg")
                         for p in self.model.parameters()]
                for w in works:
                    w.wait()
                if self.m.should_commit():
                    self.opt.step()
                    self.extra["epoch"] = self.m.current_step
        except Exception as e:  # reported by the test's thread
            self.error = e


class HealStateDicts(unittest.TestCase):
    def setUp(self):
        cli = os.environ.get("FTC_CLI")
        self.assertIsNotNone(cli, "FTC_CLI names the ftc program")
        self.lighthouse = subprocess.Popen(
            [cli, "lighthouse", "--bind", "127.0.0.1:0", "--min-replicas",
             "1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True)
        for line in self.lighthouse.stdout:
            m = re.search(r"serving on (\S+)", line)
            if m:
                self.address = m.group(1)
                break
        self.stores = [ftc.StoreServer("127.0.0.1", 0) for _ in range(2)]

    def tearDown(self):
        self.lighthouse.terminate()
        self.lighthouse.wait(30)
        self.lighthouse.stdout.close()
        for s in self.stores:
            s.close()

    def configure(self, **options):
        req = urllib.request.Request(
            f"http://{self.address}/v1/jobs/default", method="PUT",
            data=json.dumps(options).encode())
        with urllib.request.urlopen(req, timeout=10) as r:
            self.assertEqual(r.status, 200)

    def train_both(self, a, b, until):
        """a and b train on threads until step `until`."""
        threads = [threading.Thread(target=r.train, args=(until,))
                   for r in (a, b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
            self.assertFalse(t.is_alive(), "a replica did not finish")
        for r in (a, b):
            self.assertIsNone(r.error, repr(r.error))
            self.assertEqual(r.m.current_step, until)

    def test_a_fresh_replica_heals_model_and_optimizer(self):
        a = Replica("a", 1, self.address, self.stores[0])
        a.train(3)  # alone: Adam's state appears at its first step
        self.assertIsNone(a.error)
        self.assertEqual(len(a.opt.state), 4)
        self.configure(min_replicas=2)  # the next quorum waits for b
        b = Replica("b", 2, self.address, self.stores[1])
        self.assertEqual(len(b.opt.state), 0)
        self.train_both(a, b, 6)
        self.assertEqual(b.healed_with, 4)  # a's Adam state, for 4 params
        self.assertIsNone(a.healed_with)
        for pa, pb in zip(a.model.parameters(), b.model.parameters()):
            self.assertTrue(torch.equal(pa, pb))
        sa, sb = a.opt.state_dict(), b.opt.state_dict()
        self.assertEqual(sa["param_groups"], sb["param_groups"])
        for k in sa["state"]:
            for field in ("step", "exp_avg", "exp_avg_sq"):
                self.assertTrue(torch.equal(sa["state"][k][field],
                                            sb["state"][k][field]), field)
        self.assertEqual(b.extra, {"epoch": 6, "tag": "a",
                                   7: (1.5, None, True)})
        for r in (a, b):
            r.m.close()

    def test_state_dict_is_read_only_when_a_peer_heals(self):
        a = Replica("a", 1, self.address, self.stores[0])
        a.train(5)  # alone: no round reads its state
        self.assertIsNone(a.error)
        self.assertEqual(a.saves, 0)
        self.configure(min_replicas=2)
        b = Replica("b", 2, self.address, self.stores[1])
        self.train_both(a, b, 8)
        self.assertEqual(b.healed_with, 4)
        self.assertGreaterEqual(a.saves, 1)  # served b, on its quorum thread
        self.assertEqual(b.saves, 0)  # it adopts: nothing of its own read
        for pa, pb in zip(a.model.parameters(), b.model.parameters()):
            self.assertTrue(torch.equal(pa, pb))
        for r in (a, b):
            r.m.close()

    def test_register_and_state_dicts_do_not_mix(self):
        m = ftc.Manager(lighthouse=self.address, replica_id="x",
                        group_rank=0, group_size=1,
                        store_addr=f"127.0.0.1:{self.stores[0].port}",
                        from_env=False)
        m.register("w", torch.zeros(2))
        with self.assertRaises(RuntimeError):
            m.register_state_dict_fn("k", lambda sd: None, dict)
        m.close()
        with self.assertRaises(ValueError):
            ftc.Manager(state_dict=dict)


if __name__ == "__main__":
    unittest.main(verbosity=2)
