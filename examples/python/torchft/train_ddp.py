#!/usr/bin/env python3
"""torchft's examples/train_ddp.py on ftc: the same training loop and the
same calls, with `torchft` imports changed to `ftc.torchft`, generated
CIFAR-shaped data instead of the CIFAR-10 download, and no 1 GB filler
layer (it only slows the run). Under `ftc run`:

    ftc run --replicas 2 --kill-every 5 -- \
        python3 examples/python/torchft/train_ddp.py --steps 200

The Manager reports every step, heal and, at exit, a checksum of the
healed state to `ftc run`, so its summary says whether the replicas ended
bit-identical."""
import argparse
import os
import time
from datetime import timedelta

import torch
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset

from ftc.torchft import (
    DistributedDataParallel,
    DistributedSampler,
    Manager,
    Optimizer,
    ProcessGroupGloo,
)
from ftc.torchft.checkpointing.pg_transport import PGTransport


def synthetic_cifar(n=4096):
    """Images 3x32x32 and 10 labels, the same on every replica."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 3, 32, 32, generator=g)
    return TensorDataset(x, torch.randint(0, 10, (n,), generator=g))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(3, 6, 5), nn.ReLU(), nn.MaxPool2d(2, 2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.classifier = nn.Sequential(
            nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84),
            nn.ReLU(), nn.Linear(84, 10))

    def forward(self, x):
        return self.classifier(torch.flatten(self.cnn(x), 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--step-ms", "--step-sleep-ms", type=float, default=0,
                    help="pacing: the least time a step takes")
    ap.add_argument("--min-replica-size", type=int, default=1)
    args = ap.parse_args()
    replica_group = int(os.environ.get("REPLICA_GROUP_ID", 0))
    num_replica_groups = int(os.environ.get("NUM_REPLICA_GROUPS", 2))
    torch.manual_seed(replica_group)  # different inits: healing aligns them

    trainset = synthetic_cifar()
    sampler = DistributedSampler(
        trainset, replica_rank=replica_group,
        num_replica_groups=num_replica_groups, group_rank=0,
        num_replicas=1, shuffle=True)
    trainloader = DataLoader(trainset, batch_size=64, sampler=sampler)

    def load_state_dict(state_dict):
        m.load_state_dict(state_dict["model"])
        optimizer.load_state_dict(state_dict["optim"])

    def state_dict():
        return {"model": m.state_dict(), "optim": optimizer.state_dict()}

    pg = ProcessGroupGloo(timeout=timedelta(seconds=5))
    transport = PGTransport(pg, timeout=timedelta(seconds=10), device="cpu")
    manager = Manager(
        pg=pg, min_replica_size=args.min_replica_size,
        load_state_dict=load_state_dict, state_dict=state_dict,
        replica_id=f"train_ddp_{replica_group}",
        timeout=timedelta(seconds=30), checkpoint_transport=transport)

    m = DistributedDataParallel(manager, Net())
    optimizer = Optimizer(manager, optim.AdamW(m.parameters()))
    criterion = nn.CrossEntropyLoss()

    while True:
        for inputs, labels in trainloader:
            started = time.monotonic()
            optimizer.zero_grad()  # starts the quorum
            loss = criterion(m(inputs), labels)
            loss.backward()  # bucket allreduces overlap the backward pass
            optimizer.step()  # only if the step commits
            if manager.current_step() % 100 == 0:
                print(f"[{manager.current_step()}] loss = {loss.item()}",
                      flush=True)
            if manager.current_step() >= args.steps:
                return
            pause = args.step_ms / 1000 - (time.monotonic() - started)
            if pause > 0:
                time.sleep(pause)  # pacing, so kills land mid-run


if __name__ == "__main__":
    main()
