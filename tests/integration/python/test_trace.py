"""Traces of a DDP run: `ftc run --trace DIR` on the PyTorch trainer
(examples/python/train_ft, whose per-parameter hooks start each
gradient's average while backward still runs, as DDP's buckets do), with
one replica group killed -9 and restarted.

Checks: every file left is valid trace-event JSON, one per rank and
incarnation (the killed incarnation leaves none: SIGKILL runs no exit
handler; the survivor's and the restarted one's are whole); each has
quorum rounds, commit votes and the trainer's phases; a heal succeeded;
the collectives carry bytes, backend and stream; and the bucket
allreduces overlap the backward pass of the same step. And the C
trainer (examples/train_ddp, 2 groups x 2 ranks) marks its phases
through the C calls next to its in-group and cross-group collectives."""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..",
                                    ".."))
CLI = os.environ["FTC_CLI"]
TRAINER = os.path.join(ROOT, "examples", "python", "train_ft")
TRAIN_DDP = os.environ["FTC_TRAIN_DDP"]
STEPS = 100  # at 100 ms: the victim is back (about 4 s) well before the end


def load(path):
    with open(path) as f:
        doc = json.load(f)
    assert doc["displayTimeUnit"] == "ms", path
    assert isinstance(doc["traceEvents"], list), path
    return doc


def complete(events, cat):
    """The X spans of a category: (name, start, end, args)."""
    return [(e["name"], e["ts"], e["ts"] + e["dur"], e.get("args", {}))
            for e in events if e["ph"] == "X" and e["cat"] == cat]


def collectives(events):
    """The async b/e pairs: (name, start, end, args of the begin)."""
    begins = {}
    out = []
    for e in events:
        if e["ph"] == "b":
            begins[(e["pid"], e["id"])] = e
        elif e["ph"] == "e":
            b = begins.pop((e["pid"], e["id"]))
            assert b["name"] == e["name"] and e["ts"] >= b["ts"]
            out.append((b["name"], b["ts"], e["ts"], b["args"]))
    assert not begins, "a collective began and never ended"
    return out


def overlapping_steps(events):
    """(steps with a backward span, steps where an allreduce of that step
    ran while its backward did)."""
    backward = {a["step"]: (s, t) for n, s, t, a in complete(events, "compute")
                if n == "backward"}
    overlap = set()
    for name, s, t, args in collectives(events):
        span = backward.get(args.get("step"))
        if name == "allreduce" and span and s < span[1] and t > span[0]:
            overlap.add(args["step"])
    return set(backward), overlap


class TraceOfADdpRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="ftc-trace-")
        cls.dir = os.path.join(cls.tmp.name, "traces")
        env = dict(os.environ, FTC_PYTHON=sys.executable)
        cmd = [CLI, "run", "--replicas", "2", "--quiet", "--seed", "3",
               "--kill-at-steps", "10", "--trace", cls.dir, "--",
               TRAINER, "--steps", str(STEPS), "--step-ms", "100",
               "--hidden", "128", "--layers", "3"]
        cls.job = subprocess.run(cmd, env=env, capture_output=True,
                                 text=True, timeout=240)
        cls.files = sorted(glob.glob(os.path.join(cls.dir, "*.json")))
        cls.docs = {os.path.basename(f): load(f) for f in cls.files}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_job_ran_with_the_kill(self):
        self.assertEqual(self.job.returncode, 0,
                         self.job.stdout + self.job.stderr)
        self.assertRegex(self.job.stdout, r"1 injected")

    def test_one_valid_file_per_rank_and_incarnation(self):
        names = set(self.docs)
        pattern = re.compile(r"trace-replica_(\d)-rank0-inc(\d)\.json")
        self.assertTrue(all(pattern.fullmatch(n) for n in names), names)
        restarted = [n for n in names if n.endswith("inc1.json")]
        self.assertEqual(len(restarted), 1, names)
        victim = pattern.fullmatch(restarted[0]).group(1)
        survivor = "1" if victim == "0" else "0"
        # the killed incarnation wrote nothing (no exit handler ran);
        # the survivor's and the restarted one's files are whole
        self.assertNotIn(f"trace-replica_{victim}-rank0-inc0.json", names)
        self.assertIn(f"trace-replica_{survivor}-rank0-inc0.json", names)
        for name, doc in self.docs.items():
            procs = [e for e in doc["traceEvents"]
                     if e["ph"] == "M" and e["name"] == "process_name"]
            self.assertEqual(len(procs), 1)
            self.assertIn(f"replica_{name[len('trace-replica_')]} rank 0",
                          procs[0]["args"]["name"])
            self.assertEqual(doc["otherData"]["dropped_events"], 0)

    def test_quorum_commit_and_heal_events(self):
        healed = []
        for name, doc in self.docs.items():
            ev = doc["traceEvents"]
            rounds = complete(ev, "quorum")
            votes = complete(ev, "commit")
            self.assertGreater(len(rounds), 5, name)
            self.assertTrue(any(a["rc"] == 0 and a["quorum_id"] > 0
                                for _, _, _, a in rounds), name)
            self.assertTrue(any(a["commit"] for _, _, _, a in votes), name)
            healed += [a for _, _, _, a in complete(ev, "heal")
                       if a["rc"] == 0]
        self.assertTrue(healed, "no successful heal in any trace")
        self.assertTrue(all(a["bytes"] > 0 for a in healed))

    def test_collectives_carry_bytes_backend_stream(self):
        for name, doc in self.docs.items():
            ar = [c for c in collectives(doc["traceEvents"])
                  if c[0] == "allreduce"]
            self.assertTrue(ar, name)
            for _, s, t, args in ar:
                self.assertGreater(args["bytes"], 0)
                self.assertEqual(args["backend"], "tcp")
                self.assertEqual(args["stream"], "cpu")
                self.assertEqual(args["dtype"], "f32")

    def test_bucket_allreduces_overlap_backward(self):
        for name, doc in self.docs.items():
            steps, overlap = overlapping_steps(doc["traceEvents"])
            print(f"{name}: {len(overlap)} of {len(steps)} backward passes "
                  "overlapped by their step's allreduces", flush=True)
            self.assertTrue(overlap, name)
            # every step's first bucket starts inside backward, so nearly
            # all do (not all: a step whose quorum failed has none)
            self.assertGreaterEqual(len(overlap), len(steps) // 2, name)
        for name, doc in self.docs.items():
            phases = {n for n, _, _, _ in
                      complete(doc["traceEvents"], "compute")}
            self.assertLessEqual({"forward", "backward", "wait_grads",
                                  "optimizer"}, phases, name)


class TraceOfTheCTrainer(unittest.TestCase):
    def test_train_ddp_marks_phases(self):
        with tempfile.TemporaryDirectory(prefix="ftc-trace-c-") as tmp:
            job = subprocess.run(
                [CLI, "run", "--replicas", "2", "--ranks", "2", "--quiet",
                 "--trace", tmp, "--", TRAIN_DDP, "--steps", "20"],
                capture_output=True, text=True, timeout=120)
            self.assertEqual(job.returncode, 0, job.stdout + job.stderr)
            files = sorted(glob.glob(os.path.join(tmp, "*.json")))
            self.assertEqual(
                [os.path.basename(f) for f in files],
                [f"trace-replica_{g}-rank{r}-inc0.json"
                 for g in range(2) for r in range(2)])
            for f in files:
                ev = load(f)["traceEvents"]
                phases = {n for n, _, _, _ in complete(ev, "compute")}
                self.assertEqual(phases,
                                 {"gradient", "sync_grads", "optimizer"}, f)
                names = {n for n, _, _, _ in collectives(ev)}
                # in the group (shards) and across the groups (FT-DDP)
                self.assertLessEqual({"allgather", "reduce_scatter",
                                      "allreduce"}, names, f)
                self.assertTrue(complete(ev, "quorum"), f)
                self.assertTrue(complete(ev, "commit"), f)
                steps = {a["step"] for n, _, _, a in complete(ev, "compute")}
                # tagged by ftc_trace_set_step (a late joiner starts
                # where it healed)
                self.assertLessEqual(steps, set(range(20)), f)
                self.assertIn(19, steps, f)


if __name__ == "__main__":
    unittest.main(verbosity=2)
