#!/usr/bin/env python3
"""Writes the streaming DiLoCo regression fixtures (fixtures/*.json).

An independent reference for the C implementation in src/algo/: it
simulates, in PyTorch and in lockstep, what torchft's DiLoCo class does
(torchft/local_sgd.py: _StreamingDiLoCoFragment.prepare_sync/perform_sync
and DiLoCo._step_post_hook) for a few replicas with a mock model and a mock
inner optimizer, using the real torch.optim.SGD(nesterov=True) as each
fragment's outer optimizer and torch.lerp for the mixing. The C test
(diloco_regression_test.c) replays every scenario on threads over the
simulated comm and must reproduce every recorded float bit for bit.

Regenerate (needs the torch 2.x venv; the output is deterministic):
    .venv/bin/python tests/unit/algo/gen_fixtures.py
and commit the changed fixtures with a note saying why they changed.
"""

import copy
import json
import os
import re
import sys

import numpy
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")

REPLICAS = 3
INIT = [1.0, -0.5, 2.0, 0.25, -1.5, 0.75]
TARGET = [0.125, 0.5, -0.75, 1.5, -0.25, 0.625]
RESTART = [3.0, 3.0, 3.0, 3.0, 3.0, 3.0]  # a restarted replica's parameters
INNER_LR = 0.05
OUTER_LR = 0.7
OUTER_MOMENTUM = 0.9
SYNC_EVERY = 6
STEPS = 24
FAULT_STEP = 1  # committed step whose first round the fault hits
FAULT_RANK = 2
HEAL_STEP = 2  # replica FAULT_RANK restarts, then heals at this step


def split(n, nfrag):
    """Contiguous near-equal ranges, the first n % nfrag one longer."""
    base, extra = divmod(n, nfrag)
    ranges, off = [], 0
    for i in range(nfrag):
        count = base + (1 if i < extra else 0)
        ranges.append((off, count))
        off += count
    return ranges


class Fragment:
    """One fragment of one replica: parameters, global backup, outer SGD."""

    def __init__(self, values):
        self.param = torch.nn.Parameter(torch.tensor(values, dtype=torch.float32))
        self.original = self.param.detach().clone()
        self.outer = torch.optim.SGD(
            [self.param], lr=OUTER_LR, momentum=OUTER_MOMENTUM, nesterov=True
        )
        self.pseudo = None

    def momentum(self):
        state = self.outer.state.get(self.param, {})
        buf = state.get("momentum_buffer")
        return [0.0] * self.param.numel() if buf is None else buf.tolist()


class Replica:
    def __init__(self, rank, ranges, values):
        self.rank = rank
        self.ranges = ranges
        self.step = 0  # committed steps (the manager's current_step)
        self.local_step = 0
        self.pending = None
        self.fragments = [Fragment(values[o : o + c]) for o, c in ranges]

    def inner_step(self):
        """Mock inner optimizer: p -= lr * (rank + 1) * (p - target)."""
        c = INNER_LR * (self.rank + 1)
        with torch.no_grad():
            for (off, count), frag in zip(self.ranges, self.fragments):
                target = torch.tensor(TARGET[off : off + count])
                frag.param.sub_((frag.param - target) * c)

    def params(self):
        return shortest(x for f in self.fragments for x in f.param.tolist())

    def globals(self):
        return shortest(x for f in self.fragments for x in f.original.tolist())

    def heal_from(self, src):
        """The manager's state transfer: parameters and every fragment's
        original_parameters and outer optimizer state, and the step."""
        with torch.no_grad():
            for mine, theirs in zip(self.fragments, src.fragments):
                mine.param.copy_(theirs.param)
                mine.original.copy_(theirs.original)
                mine.outer.load_state_dict(copy.deepcopy(theirs.outer.state_dict()))
        self.step = src.step


def average(values, participating):
    """The manager's allreduce AVG: SUM in rank order (non-participants
    contribute zeros), divided by the number of participants."""
    acc = torch.zeros_like(values[0])
    for v, part in zip(values, participating):
        acc = acc + (v if part else torch.zeros_like(v))
    return acc / sum(participating)


def simulate(nfrag, delay, alpha, scenario):
    ranges = split(len(INIT), nfrag)
    reps = [Replica(r, ranges, INIT) for r in range(REPLICAS)]
    period = SYNC_EVERY // nfrag
    used = set()
    fail = False
    avg = None
    restart_after = HEAL_STEP * period - 1
    hist = [{"params": [], "global": [], "outcome": [], "step": []} for _ in reps]
    for t in range(STEPS):
        for rep in reps:
            rep.inner_step()
        outcomes = [0] * REPLICAS
        for rep in reps:
            rep.local_step += 1
        if reps[0].local_step == period - delay:
            # start_quorum(): faults of the first round at this step.
            step = reps[0].step
            fault_here = scenario != "none" and step == (
                HEAL_STEP if scenario == "heal" else FAULT_STEP
            )
            fault_here = fault_here and scenario not in used
            if fault_here:
                used.add(scenario)
            fail = fault_here and scenario == "fail"
            participating = [
                not (fault_here and scenario == "nonparticipant" and r == FAULT_RANK)
                for r in range(REPLICAS)
            ]
            if fault_here and scenario == "heal":
                reps[FAULT_RANK].heal_from(reps[0])
            # prepare_sync(): pseudo-gradient = original - local, averaged.
            for rep in reps:
                rep.pending = rep.step % nfrag
                frag = rep.fragments[rep.pending]
                frag.pseudo = frag.original - frag.param.detach()
            frag_id = reps[0].pending
            avg = average([rep.fragments[frag_id].pseudo for rep in reps], participating)
        if reps[0].local_step == period:
            # perform_sync(): restore, should_commit, outer step, lerp.
            commit = not fail
            for rep in reps:
                frag = rep.fragments[rep.pending]
                with torch.no_grad():
                    local = frag.param.detach().clone()
                    frag.param.copy_(frag.original)
                if commit:
                    frag.param.grad = avg.clone()
                    frag.outer.step()
                    with torch.no_grad():
                        frag.original.copy_(frag.param)
                        frag.param.lerp_(local, alpha)
                    rep.step += 1
                frag.outer.zero_grad()
                rep.local_step = 0
                outcomes[rep.rank] = 1 if commit else 2
            fail = False
        for rep in reps:
            h = hist[rep.rank]
            h["params"].append(rep.params())
            h["global"].append(rep.globals())
            h["outcome"].append(outcomes[rep.rank])
            h["step"].append(rep.step)
        if scenario == "heal" and t == restart_after:
            # The replica dies and restarts from scratch: fresh state.
            reps[FAULT_RANK] = Replica(FAULT_RANK, ranges, RESTART)
    for rep in reps:
        hist[rep.rank]["momentum"] = shortest(
            x for f in rep.fragments for x in f.momentum()
        )
    config = {
        "replicas": REPLICAS,
        "n_params": len(INIT),
        "fragments": ranges,
        "sync_every": SYNC_EVERY,
        "fragment_sync_delay": delay,
        "fragment_update_alpha": alpha,
        "outer_lr": OUTER_LR,
        "outer_momentum": OUTER_MOMENTUM,
        "inner_lr": INNER_LR,
        "init": INIT,
        "target": TARGET,
        "restart": RESTART,
        "steps": STEPS,
        "scenario": scenario,
        "fault_step": HEAL_STEP if scenario == "heal" else FAULT_STEP,
        "fault_rank": FAULT_RANK,
        "restart_after": restart_after if scenario == "heal" else -1,
    }
    return {"config": config, "replicas": hist}


def shortest(values):
    """float32 values as the shortest decimals that read back to the same
    float32 (the C test parses them as double and rounds to float)."""
    return [float(str(numpy.float32(v))) for v in values]


def dump(data, path):
    """JSON with every list of numbers on one line, for readable diffs."""
    text = json.dumps(data, indent=1)
    text = re.sub(
        r"\[\s*([-+0-9.e]+(?:,\s*[-+0-9.e]+)*)\s*\]",
        lambda m: "[" + ", ".join(re.split(r",\s*", m.group(1))) + "]",
        text,
    )
    with open(path, "w") as f:
        f.write(text + "\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    cases = []
    for nfrag in (1, 2):
        for delay in (0, 1):
            for alpha in (0.0, 0.5, 1.0):
                for scenario in ("none", "fail"):
                    cases.append((nfrag, delay, alpha, scenario))
            for scenario in ("nonparticipant", "heal"):
                cases.append((nfrag, delay, 0.5, scenario))
    names = []
    for nfrag, delay, alpha, scenario in cases:
        name = "diloco_f%d_d%d_a%03d_%s.json" % (nfrag, delay, int(alpha * 100), scenario)
        dump(simulate(nfrag, delay, alpha, scenario), os.path.join(OUT, name))
        names.append(name)
    dump({"torch": torch.__version__, "fixtures": names}, os.path.join(OUT, "index.json"))
    print("wrote %d fixtures to %s (torch %s)" % (len(names), OUT, torch.__version__))
    return 0


if __name__ == "__main__":
    sys.exit(main())
