"""One rank of test_torch.py: torch.distributed on the "ftc" backend.
argv: rank world_size host port mode; prints one JSON line of results.
mode: "tcp" (init_method tcp://, this rank 0 serves the store), "file"
(init_method file://HOST, HOST being a file path), "store"
(a TCPStore client of the test's server), "peer_dies" (as store, then the
last rank exits inside a DDP step and the others report their error),
"exit_in_callback" (as store; rank 0 exits while a callback runs)."""
import os
import json
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

import ftc.torch  # noqa: F401  registers "ftc"

rank, world, host, port, mode = (int(sys.argv[1]), int(sys.argv[2]),
                                 sys.argv[3], int(sys.argv[4]), sys.argv[5])
if mode == "peer_dies":
    store = dist.TCPStore(host, port, is_master=False)
    dist.init_process_group("ftc", store=store, rank=rank, world_size=world,
                            timeout=__import__("datetime").timedelta(
                                seconds=20))
    model = nn.parallel.DistributedDataParallel(nn.Linear(4, 2))
    model(torch.ones(2, 4)).sum().backward()  # one good step
    if rank == world - 1:
        os._exit(0)  # gone, as kill -9 would leave it
    try:
        model(torch.ones(2, 4)).sum().backward()
        x = torch.ones(1)
        dist.all_reduce(x)
        result = "no error"
    except RuntimeError as e:
        result = str(e)
    print(json.dumps({"error": result}), flush=True)
    os._exit(0)
elif mode == "exit_in_callback":
    # rank 0 leaves its script while the completion thread is inside a
    # future's callback, which returns only once the interpreter exits
    store = dist.TCPStore(host, port, is_master=False)
    dist.init_process_group("ftc", store=store, rank=rank, world_size=world)
    if rank == 0:
        import atexit
        import threading
        entered, leaving = threading.Event(), threading.Event()
        atexit.register(leaving.set)  # runs before ftc.torch's handler

        def callback(fut):
            entered.set()
            leaving.wait(20)
            print(json.dumps({"callback": "returned"}), flush=True)

        w = dist.all_reduce(torch.ones(1), async_op=True)
        w.get_future().then(callback)
        store.set("callback registered", "1")
        if not entered.wait(20):
            sys.exit("the callback never ran")
        sys.exit(0)
    store.wait(["callback registered"])
    dist.all_reduce(torch.ones(1))
    print(json.dumps({}), flush=True)
    os._exit(0)
elif mode == "file":  # port is unused: a file next to the worker's
    dist.init_process_group("ftc", init_method=f"file://{host}",
                            rank=rank, world_size=world)
elif mode == "tcp":
    dist.init_process_group("ftc", init_method=f"tcp://{host}:{port}",
                            rank=rank, world_size=world)
else:
    store = dist.TCPStore(host, port, is_master=False)
    dist.init_process_group("ftc", store=store, rank=rank, world_size=world)
out = {"backend": dist.get_backend()}

x = torch.arange(4, dtype=torch.float32) + rank
dist.all_reduce(x)
out["sum"] = x.tolist()
x = torch.full((3,), float(rank))
dist.all_reduce(x, op=dist.ReduceOp.MAX)
out["max"] = x.tolist()
x = torch.full((2,), float(rank + 1))
w = dist.all_reduce(x, op=dist.ReduceOp.AVG, async_op=True)
out["avg_future"] = [t.tolist() for t in w.get_future().wait()]
x = torch.tensor([rank * 10], dtype=torch.int64)
dist.broadcast(x, src=world - 1)
out["broadcast"] = x.tolist()
parts = [torch.zeros(2, dtype=torch.int32) for _ in range(world)]
dist.all_gather(parts, torch.tensor([rank, -rank], dtype=torch.int32))
out["all_gather"] = [p.tolist() for p in parts]
flat = torch.empty(2 * world)
dist.all_gather_into_tensor(flat, torch.tensor([rank, 0.5]))
out["all_gather_into_tensor"] = flat.tolist()
rs = torch.empty(2)
dist.reduce_scatter_tensor(rs, torch.arange(2 * world, dtype=torch.float32))
out["reduce_scatter_tensor"] = rs.tolist()
rs = torch.empty(1)
dist.reduce_scatter(rs, [torch.full((1,), float(r + rank))
                         for r in range(world)])
out["reduce_scatter"] = rs.tolist()
a2a = torch.empty(world, dtype=torch.int64)
dist.all_to_all_single(a2a, torch.arange(world, dtype=torch.int64) + 10 * rank)
out["all_to_all_single"] = a2a.tolist()
# unequal splits: rank r sends j + 1 rows of 2 to rank j
inp = torch.cat([torch.full((j + 1, 2), float(10 * rank + j))
                 for j in range(world)])
got = torch.empty((rank + 1) * world, 2)
dist.all_to_all_single(got, inp, output_split_sizes=[rank + 1] * world,
                       input_split_sizes=[j + 1 for j in range(world)])
out["all_to_all_single_splits"] = got[:, 0].tolist()
outs = [torch.empty(1) for _ in range(world)]
dist.all_to_all(outs, [torch.full((1,), float(rank * world + j))
                       for j in range(world)])
out["all_to_all"] = [o.tolist() for o in outs]
g = [torch.empty(1) for _ in range(world)] if rank == 0 else None
dist.gather(torch.tensor([float(rank)]), g, dst=0)
out["gather"] = None if g is None else [t.tolist() for t in g]
sc = torch.empty(1)
dist.scatter(sc, [torch.tensor([float(r * 3)]) for r in range(world)]
             if rank == 0 else None, src=0)
out["scatter"] = sc.tolist()
red = torch.tensor([1.0, rank])
dist.reduce(red, dst=0)
out["reduce"] = red.tolist()
dist.barrier()
if rank == 0:
    buf = torch.empty(1)
    src = dist.recv(buf)  # any source
    out["recv_any"] = [buf.tolist(), src]
elif rank == world - 1:
    dist.send(torch.tensor([7.0]), dst=0)
sub = dist.new_group([0, 1], backend="ftc")
if rank < 2:
    y = torch.ones(1)
    dist.all_reduce(y, group=sub)
    out["subgroup"] = y.tolist()

# DDP: each rank trains on its half of a global batch; the result must be
# the single-process model trained on the whole batch.
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
reference = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
reference.load_state_dict(model.state_dict())
ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.0001)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
gen = torch.Generator().manual_seed(1)
for step in range(5):
    data = torch.randn(8 * world, 4, generator=gen)
    target = torch.randn(8 * world, 2, generator=gen)
    mine = slice(8 * rank, 8 * (rank + 1))
    opt.zero_grad()
    nn.functional.mse_loss(ddp(data[mine]), target[mine]).backward()
    opt.step()
    ref_opt.zero_grad()
    nn.functional.mse_loss(reference(data), target).backward()
    ref_opt.step()
out["ddp_max_diff"] = max((a - b).abs().max().item() for a, b in zip(
    model.parameters(), reference.parameters()))

try:
    dist.all_reduce(torch.zeros(2, dtype=torch.bool))
    out["bool"] = "no error"
except (RuntimeError, TypeError, ValueError) as e:
    out["bool"] = type(e).__name__
try:
    dist.all_reduce(torch.zeros(4)[::2])
    out["strided"] = "no error"
except (RuntimeError, TypeError, ValueError) as e:
    out["strided"] = type(e).__name__
y = torch.ones(2)
dist.all_reduce(y)  # still usable
out["after_errors"] = y.tolist()
dist.destroy_process_group()
print(json.dumps(out), flush=True)
