"""One PyTorch rank of a mixed PyTorch/ftc control-collective test.

Runs torch.distributed's own _StoreCollectives (torch >= 2.4, < 2.14) over a
TCPStore client of the store at argv[1], as rank argv[2] of a world of
argv[3], through the same script of collectives the ftc ranks run
(tests/interop/control_mixed_test.c). Exits 0 when every result is right.
"""
import sys
from datetime import timedelta

import torch.distributed as dist


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    rank, world = int(sys.argv[2]), int(sys.argv[3])
    timeout = timedelta(seconds=float(sys.argv[4]) if len(sys.argv) > 4 else 20)
    store = dist.TCPStore(host, int(port), is_master=False,
                          wait_for_workers=False, timeout=timeout)
    cc = dist._StoreCollectives(store, rank, world)

    cc.barrier("mixed/barrier", timeout, True)

    got = cc.all_gather("mixed/all_gather", f"r{rank}", timeout)
    want = [f"r{i}".encode() for i in range(world)]
    assert list(got) == want, f"all_gather: {got!r}"

    total = cc.all_sum("mixed/all_sum", rank + 1, timeout)
    assert total == sum(range(1, world + 1)), f"all_sum: {total}"

    # Rank 0 (PyTorch) broadcasts; every other rank receives.
    if rank == 0:
        cc.broadcast_send("mixed/broadcast", "from-torch", timeout)
    else:
        got = cc.broadcast_recv("mixed/broadcast", timeout)
        assert got == b"from-torch", f"broadcast: {got!r}"

    # The last rank (ftc) gathers; PyTorch ranks send.
    if rank != world - 1:
        cc.gather_send("mixed/gather", f"g{rank}", timeout)

    # Rank 1 (PyTorch) scatters; everyone receives its own item.
    if rank == 1:
        mine = cc.scatter_send("mixed/scatter",
                               [f"s{i}" for i in range(world)], timeout)
    else:
        mine = cc.scatter_recv("mixed/scatter", timeout)
    assert mine == f"s{rank}".encode(), f"scatter: {mine!r}"

    cc.barrier("mixed/done", timeout, True)
    print(f"torch rank {rank}: all collectives agreed", flush=True)


if __name__ == "__main__":
    main()
