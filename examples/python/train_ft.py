#!/usr/bin/env python3
"""A fault-tolerant PyTorch training loop on ftc: one rank per replica
group, run by the launcher, which kills and restarts groups at will:

    ftc run --replicas 3 --kill-every 3 -- \
        python3 examples/python/train_ft.py --step-ms 40

(`make demo TRAINER=torch` runs it through `ftc demo`.)

Each step: join the quorum (a restarted replica heals its parameters from
the others here), compute gradients on this replica's shard of a
synthetic regression batch, average them across the replica groups, and
apply them only if every group voted to commit. As in PyTorch's DDP, the
average of each parameter's gradient starts while the backward pass
still computes the others' (a hook per parameter: one bucket each), so
communication overlaps computation; under `ftc run --trace DIR` the
trace shows it, with the forward, backward, grad-wait and optimizer
phases marked through ftc.trace. Prints the launcher's
FTC_EVENT lines (docs/operations.md) so `ftc run` shows the loss with its
progress; the manager reports steps, heals and a checksum of the
parameters by itself, so with --no-events `ftc run` still shows progress,
kills, recoveries and whether the replicas ended bit-identical."""
import argparse
import hashlib
import json
import os
import time

import torch

import ftc


EVENTS = True


def event(**fields):
    if EVENTS:
        print("FTC_EVENT " + json.dumps(fields), flush=True)


def batch(step, shard, size=32):
    """A pure function of (step, shard): a retried step draws the same."""
    g = torch.Generator().manual_seed(step * 1000 + shard)
    x = torch.randn(size, 8, generator=g)
    w_true = torch.arange(1.0, 9.0).reshape(8, 1)
    return x, x @ w_true + 0.01 * torch.randn(size, 1, generator=g)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--step-ms", "--step-sleep-ms", type=float, default=0,
                    help="pacing: the least time a step takes (ftc demo "
                         "passes --step-sleep-ms)")
    ap.add_argument("--hidden", type=int, default=16,
                    help="width of the hidden layers")
    ap.add_argument("--layers", type=int, default=1,
                    help="hidden layers (more: more backward to overlap)")
    ap.add_argument("--backend", default=None,
                    help="ftc backend of the cross-replica group")
    ap.add_argument("--no-events", action="store_true",
                    help="print no FTC_EVENT line: only the manager reports "
                         "to ftc run")
    args = ap.parse_args()
    global EVENTS
    EVENTS = not args.no_events
    if args.backend:
        os.environ["FTC_PG_BACKEND"] = args.backend
    torch.manual_seed(0)
    layers = [torch.nn.Linear(8, args.hidden), torch.nn.Tanh()]
    for _ in range(args.layers - 1):
        layers += [torch.nn.Linear(args.hidden, args.hidden), torch.nn.Tanh()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(args.hidden, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    manager = ftc.Manager()  # everything from `ftc run`'s environment
    manager.register_parameters(model)
    rank0 = int(os.environ.get("FTC_GROUP_RANK", "0")) == 0
    works = []

    def reduce_when_ready(p):
        # DDP's bucket hook: the gradient is final, so its average starts
        # now, while backward goes on with the layers below.
        works.append(manager.allreduce(p.grad, "avg"))

    for p in model.parameters():
        p.register_post_accumulate_grad_hook(reduce_when_ready)
    loss = torch.zeros(())
    while manager.current_step < args.steps:
        started = time.monotonic()
        try:
            manager.start_quorum()
            manager.wait_quorum()
        except ftc.Error as e:  # a failed round: the next one retries
            if e.name == "FTC_EFINISHED":  # the job finished without this group
                event(kind="ended", message=str(e)[:120])
                manager.close()
                return
            event(kind="error", message=str(e)[:120])
            continue
        ftc.trace_step(manager.current_step)
        x, y = batch(manager.current_step, manager.replica_rank)
        opt.zero_grad()
        works.clear()
        with ftc.trace("forward"):
            loss = torch.nn.functional.mse_loss(model(x), y)
        with ftc.trace("backward"):
            loss.backward()  # the hooks start the averages
        with ftc.trace("wait_grads"):
            for w in works:
                try:
                    w.wait()
                except ftc.Error:
                    pass  # latched: the vote below says no
        committed = manager.should_commit()
        if committed:
            with ftc.trace("optimizer"):
                opt.step()
        if rank0:
            event(kind="step", step=manager.current_step,
                  committed=committed, loss=loss.item(),
                  participants=manager.num_participants,
                  quorum_id=manager.quorum_id)
        pause = args.step_ms / 1000 - (time.monotonic() - started)
        if pause > 0:
            time.sleep(pause)  # pacing, so kills land mid-run
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().numpy().tobytes())
    event(kind="result", checksum=digest.hexdigest()[:16],
          final_loss=loss.item(), steps=manager.current_step)
    manager.finish()  # the goodbye says the job finished here
    manager.close()


if __name__ == "__main__":
    main()
