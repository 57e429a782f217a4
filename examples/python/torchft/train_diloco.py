#!/usr/bin/env python3
"""torchft's examples/train_diloco.py on ftc: DiLoCo (USE_STREAMING=True:
streaming DiLoCo, one fragment per layer, each synced 5 steps after its
allreduce started) with `torchft` imports changed to `ftc.torchft`, its
generated data made the same on every replica, and no 500 MB filler
layer. Under `ftc run`:

    ftc run --replicas 2 --kill-every 5 -- \
        python3 examples/python/torchft/train_diloco.py --syncs 30

With one fragment every replica ends on the same global parameters: under
`ftc run` it reports their checksum (an FTC_EVENT result line), which the
summary compares; the Manager's own checksum would include the inner
optimizer's state, local to each replica by design. Streaming ends with
the later fragments' local progress, which differs too."""
import argparse
import hashlib
import json
import os
import time
from datetime import timedelta

import torch
from torch import nn

from ftc.torchft import Manager, ProcessGroupGloo
from ftc.torchft.checkpointing.http_transport import HTTPTransport
from ftc.torchft.local_sgd import DiLoCo

USE_STREAMING = os.getenv("USE_STREAMING", "False") == "True"


class MLPModule(nn.Module):
    def __init__(self, d_hid):
        super().__init__()
        self.net1 = nn.Linear(d_hid, d_hid)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(d_hid, d_hid)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


class MultiMLP(nn.Module):
    def __init__(self, d_hid, n_layers=2, num_classes=10):
        super().__init__()
        self.layers = nn.ModuleList([MLPModule(d_hid)
                                     for _ in range(n_layers)])
        self.classifier = nn.Linear(d_hid, num_classes)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.classifier(x)


def batch(step, replica, d_hid, size=64):
    """A pure function of (step, replica): a restarted replica draws the
    same batches."""
    g = torch.Generator().manual_seed(step * 1000 + replica)
    return (torch.rand(size, d_hid, generator=g),
            torch.randint(0, 10, (size,), generator=g))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--syncs", type=int, default=15,
                    help="outer steps (committed syncs) to train")
    ap.add_argument("--step-ms", "--step-sleep-ms", type=float, default=0,
                    help="pacing: the least time an inner step takes")
    ap.add_argument("--sync-every", type=int, default=20)
    ap.add_argument("--min-replica-size", type=int, default=1)
    args = ap.parse_args()
    replica_group = int(os.environ.get("REPLICA_GROUP_ID", 0))
    torch.manual_seed(replica_group)  # different inits: healing aligns them

    def load_state_dict(state_dict):
        m.load_state_dict(state_dict["model"])
        inner_optimizer.load_state_dict(state_dict["inner_optim"])
        outer_optimizer.load_state_dict(state_dict["outer_optim"])

    def state_dict():
        return {"model": m.state_dict(),
                "inner_optim": inner_optimizer.state_dict(),
                "outer_optim": outer_optimizer.state_dict()}

    manager = Manager(
        pg=ProcessGroupGloo(timeout=timedelta(seconds=10)),
        use_async_quorum=False, min_replica_size=args.min_replica_size,
        load_state_dict=load_state_dict, state_dict=state_dict,
        replica_id=f"train_diloco_{replica_group}",
        timeout=timedelta(seconds=30),
        checkpoint_transport=HTTPTransport(timeout=timedelta(seconds=10),
                                           num_chunks=0))
    d_hid, n_layers = 128, 2
    m = MultiMLP(d_hid, n_layers)
    inner_optimizer = torch.optim.AdamW(m.parameters(), lr=4e-4,
                                        weight_decay=0.1, betas=(0.9, 0.95))
    outer_optimizer = torch.optim.SGD(m.parameters(), lr=0.7, momentum=0.9,
                                      nesterov=True)
    criterion = nn.CrossEntropyLoss()
    fragments = [m.layers[0], nn.ModuleList([m.layers[1], m.classifier])] \
        if USE_STREAMING else [m]
    step = 0
    with DiLoCo(manager, fragments, inner_optimizer, outer_optimizer,
                backup_device="cpu", sync_every=20 if USE_STREAMING
                else args.sync_every,
                fragment_sync_delay=5 if USE_STREAMING else 0,
                should_quantize=False):
        while manager.current_step() < args.syncs:
            started = time.monotonic()
            inputs, labels = batch(step, replica_group, d_hid)
            inner_optimizer.zero_grad()
            loss = criterion(m(inputs), labels)
            loss.backward()
            inner_optimizer.step()  # syncs a fragment every few steps
            step += 1
            if step % 100 == 0:
                print(f"[{manager.current_step()}] loss = {loss.item()}",
                      flush=True)
            pause = args.step_ms / 1000 - (time.monotonic() - started)
            if pause > 0:
                time.sleep(pause)
    if "FTC_LIGHTHOUSE" in os.environ and not USE_STREAMING:
        digest = hashlib.sha256()
        for p in m.parameters():
            digest.update(p.detach().numpy().tobytes())
        print("FTC_EVENT " + json.dumps({
            "kind": "result", "checksum": digest.hexdigest()[:16],
            "final_loss": loss.item(), "steps": manager.current_step()}),
            flush=True)


if __name__ == "__main__":
    main()
