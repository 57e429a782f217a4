"""torchft's process-group classes, as the choice of ftc backend for the
Manager's cross-replica group: ProcessGroupGloo is ftc's own TCP backend
("tcp"), ProcessGroupXCCL and ProcessGroupNCCL the vendor backends,
the Baby variants run the same in a child process ("baby-tcp", ...).
torchft reconfigures the object on every quorum; ftc's manager builds its
group itself, so these carry the backend name and the timeout only.
ProcessGroupDummy is the one-rank group that soaks up DDP's own
collectives (the gradients go through the Manager)."""
from datetime import timedelta

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import _create_work_from_future
from torch.futures import Future


class ProcessGroup:
    """The backend of a Manager's cross-replica process group."""

    backend = "tcp"

    def __init__(self, timeout=timedelta(seconds=60), *args, **kwargs):
        if isinstance(timeout, (int, float)):
            timeout = timedelta(seconds=timeout)
        if not isinstance(timeout, timedelta):
            raise TypeError(f"timeout: a timedelta or seconds, not "
                            f"{type(timeout).__name__}")
        self.timeout = timeout

    def getBackendName(self):
        return "ftc-" + self.backend

    def __repr__(self):
        return f"{type(self).__name__}(backend={self.backend!r}, " \
               f"timeout={self.timeout})"


def _backend(name, backend, doc):
    return type(name, (ProcessGroup,), {"backend": backend, "__doc__": doc,
                                        "__module__": __name__})


ProcessGroupGloo = _backend("ProcessGroupGloo", "tcp", "ftc's TCP backend.")
ProcessGroupXCCL = _backend("ProcessGroupXCCL", "xccl", "oneCCL.")
ProcessGroupNCCL = _backend("ProcessGroupNCCL", "nccl", "NCCL.")
ProcessGroupBabyGloo = _backend("ProcessGroupBabyGloo", "baby-tcp",
                                "ftc's TCP backend in a child process.")
ProcessGroupBabyXCCL = _backend("ProcessGroupBabyXCCL", "baby-xccl",
                                "oneCCL in a child process.")
ProcessGroupBabyNCCL = _backend("ProcessGroupBabyNCCL", "baby-nccl",
                                "NCCL in a child process.")


def _done(value):
    fut = Future()
    fut.set_result(value)
    return _create_work_from_future(fut)


class ProcessGroupDummy(dist.ProcessGroup):
    """A group of one rank: every operation completes at once with its
    input as its output."""

    def __init__(self, rank=0, world=1):
        if (rank, world) != (0, 1):
            raise ValueError("ProcessGroupDummy has one rank")
        super().__init__(rank, world)

    def getBackendName(self):
        return "ftc-dummy"

    def allreduce(self, tensors, opts=None):
        return _done(tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        return _done(tensors)

    def broadcast(self, tensors, opts=None):
        return _done(tensors)

    def allgather(self, output_lists, inputs, opts=None):
        for outs, t in zip(output_lists, inputs):
            outs[0].copy_(t)
        return _done(output_lists)

    def _allgather_base(self, output, inp, opts=None):
        output.copy_(inp.reshape(output.shape))
        return _done([output])

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        for o, i in zip(outputs, inputs):
            o.copy_(i.reshape(o.shape))
        return _done(outputs)

    def barrier(self, opts=None):
        return _done([torch.zeros(0)])
