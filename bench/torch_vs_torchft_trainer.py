#!/usr/bin/env python3
"""One replica group (one rank) of bench/torch_vs_torchft.py: the same
training loop on torchft or on ftc.torchft (only the import differs), or
on the bare model with no fault tolerance at all.

It prints one JSON line per event on stdout, with time.monotonic()
(CLOCK_MONOTONIC, shared by every process of the host) in "t":
  {"ev": "ready"}                       imports done, model built
  {"ev": "commit", "step", "n"}         a step committed, by n replicas
  {"ev": "done", "step", "checksum"}    the finish step reached
The driver writes the finish step into --finish-file; every replica
stops at that step, so their checksums must be equal."""
import argparse
import hashlib
import json
import os
import sys
import time
from datetime import timedelta


def emit(ev, **fields):
    fields.update(ev=ev, t=time.monotonic())
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--impl", choices=("torchft", "ftc", "bare"),
                    required=True)
    ap.add_argument("--profile", choices=("defaults", "aggressive"),
                    default="defaults",
                    help="torchft's settings as its train_ddp.py has them, "
                    "or the shortest its own tests use")
    ap.add_argument("--heartbeat-ms", type=float, default=0,
                    help="the Manager's heartbeat_interval (0: its own)")
    ap.add_argument("--replica", type=int, default=0)
    ap.add_argument("--step-ms", type=float, default=0,
                    help="pacing: the least time a step takes")
    ap.add_argument("--steps", type=int, default=100000,
                    help="stop here if no finish step comes first")
    ap.add_argument("--finish-file", default="")
    return ap.parse_args()


# The Manager's timeouts (seconds) of each profile. "defaults" is
# torchft's examples/train_ddp.py (a 5 s Gloo timeout, 30 s for the
# rest); "aggressive" is 1 s everywhere, the shortest torchft's own tests
# use.
PROFILES = {
    "defaults": dict(pg_timeout=5, timeout=30),
    "aggressive": dict(pg_timeout=1, timeout=1),
}


def checksum(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def finish_step(path, cached):
    if cached is not None or not path or not os.path.exists(path):
        return cached
    with open(path) as f:
        text = f.read().strip()
    return int(text) if text else None


def build(args, torch):
    from torch import nn, optim

    torch.manual_seed(args.replica)  # different inits: healing aligns them
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256),
                          nn.ReLU(), nn.Linear(256, 10))
    inner = optim.AdamW(model.parameters(), lr=1e-3)
    if args.impl == "bare":
        return model, inner, None
    if args.impl == "torchft":
        import torchft as tf
    else:
        from ftc import torchft as tf
    prof = PROFILES[args.profile]
    store = torch.distributed.TCPStore("127.0.0.1", 0, is_master=True,
                                       wait_for_workers=False)
    extra = {}
    if args.heartbeat_ms:
        extra["heartbeat_interval"] = timedelta(
            milliseconds=args.heartbeat_ms)
    timeout = timedelta(seconds=prof["timeout"])
    manager = tf.Manager(
        pg=tf.ProcessGroupGloo(timeout=timedelta(seconds=prof["pg_timeout"])),
        min_replica_size=1,
        load_state_dict=lambda sd: (model.load_state_dict(sd["model"]),
                                    inner.load_state_dict(sd["optim"])),
        state_dict=lambda: {"model": model.state_dict(),
                            "optim": inner.state_dict()},
        replica_id=f"bench_{args.replica}", rank=0, world_size=1,
        timeout=timeout,
        quorum_timeout=timeout, connect_timeout=timeout,
        store_addr="127.0.0.1", store_port=store.port, **extra)
    manager._bench_store = store  # lives as long as the manager
    return (tf.DistributedDataParallel(manager, model),
            tf.Optimizer(manager, inner), manager)


def main():
    args = parse_args()
    import torch

    torch.set_num_threads(1)  # three replicas share two cores
    model, optimizer, manager = build(args, torch)
    loss_fn = torch.nn.CrossEntropyLoss()
    emit("ready")
    finish = None
    step = 0
    while True:
        started = time.monotonic()
        current = manager.current_step() if manager else step
        g = torch.Generator().manual_seed(current)  # the same on every replica
        x = torch.randn(32, 64, generator=g)
        y = torch.randint(0, 10, (32,), generator=g)
        optimizer.zero_grad()  # starts the quorum
        loss_fn(model(x), y).backward()
        optimizer.step()  # only if the step commits
        if manager is None:
            step += 1
            emit("commit", step=step, n=1)
        elif manager.current_step() > current:
            step = manager.current_step()
            emit("commit", step=step, n=manager.num_participants())
        finish = finish_step(args.finish_file, finish)
        if step >= (finish if finish is not None else args.steps):
            emit("done", step=step, checksum=checksum(model))
            os._exit(0)  # no shutdown handshake: the peers stop here too
        pause = args.step_ms / 1000 - (time.monotonic() - started)
        if pause > 0:
            time.sleep(pause)  # pacing, so faults land mid-run


if __name__ == "__main__":
    main()
