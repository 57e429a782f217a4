"""A rank under `ftc run` (test_torch.py): torchrun's and torchft's
variables are set, and dist.init_process_group("ftc") with its default
env:// rendezvous forms the replica group on the group's store."""
import os
import sys

import torch
import torch.distributed as dist

import ftc.torch  # noqa: F401

need = ["REPLICA_GROUP_ID", "NUM_REPLICA_GROUPS", "TORCHFT_LIGHTHOUSE",
        "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
        "MASTER_ADDR", "MASTER_PORT"]
missing = [k for k in need if k not in os.environ]
if missing:
    sys.exit(f"missing {missing}")
if not os.environ["TORCHFT_LIGHTHOUSE"].startswith("http://"):
    sys.exit("TORCHFT_LIGHTHOUSE is not a URL")
dist.init_process_group("ftc")  # env://
x = torch.full((3,), float(dist.get_rank() + 1))
dist.all_reduce(x)
world = int(os.environ["WORLD_SIZE"])
if x.tolist() != [world * (world + 1) / 2] * 3:
    sys.exit(f"all_reduce gave {x.tolist()}")
dist.destroy_process_group()
print(f"rank {os.environ['RANK']} of group {os.environ['REPLICA_GROUP_ID']}"
      " ok", flush=True)
