"""One rank of a 2-process gloo job whose store is a TCPStore client of the
ftc store at 127.0.0.1:$FTC_STORE_PORT: init_process_group, all_reduce,
new_group and an all_reduce on it. Usage: store_pg.py RANK PREFIX.
Runs under torch 1.13 and torch 2.x (tests/interop)."""
import datetime
import os
import sys

import torch
import torch.distributed as dist

rank = int(sys.argv[1])
prefix = sys.argv[2]
port = int(os.environ["FTC_STORE_PORT"])
timeout = datetime.timedelta(seconds=60)
# Each torch version's pair works under its own prefix, so both pairs can
# share the server at once.
base = dist.TCPStore("127.0.0.1", port, None, False, timeout)
store = dist.PrefixStore(prefix, base)
dist.init_process_group("gloo", store=store, rank=rank, world_size=2,
                        timeout=timeout)
t = torch.tensor([float(rank + 1)] * 4)
dist.all_reduce(t)
assert t.tolist() == [3.0] * 4, t
group = dist.new_group([0, 1])
u = torch.tensor([float(10 * (rank + 1))])
dist.all_reduce(u, group=group)
assert u.item() == 30.0, u
dist.barrier()
dist.destroy_process_group()
print("rank", rank, "torch", torch.__version__, "gloo over ftc store ok")
