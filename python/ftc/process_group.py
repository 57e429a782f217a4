"""ftc.ProcessGroup: collectives and point-to-point on CPU tensors
(torch.Tensor) or arrays (numpy.ndarray), zero-copy: libftc reads and
writes their memory directly. Every call starts the operation and
returns an ftc.Work; the tensors stay alive in it until it is released,
and dropping a running Work waits for it."""
from ftc import _ftc

# libftc's dtype and op codes (include/ftc/pg.h).
_DTYPES = {
    "float32": 0, "float64": 1, "float16": 2, "bfloat16": 3,
    "int8": 4, "uint8": 5, "int32": 6, "int64": 7,
}
_OPS = {"sum": 0, "avg": 1, "min": 2, "max": 3, "prod": 4}

ANY_SOURCE = -1
_NONE = (0, -1, None)  # no buffer: count < 0


def _buffer(t, what, writable):
    """(address, element count, dtype name) of a C-contiguous CPU buffer."""
    if hasattr(t, "data_ptr") and hasattr(t, "is_contiguous"):  # torch
        if t.device.type != "cpu":
            raise ValueError(f"{what}: a {t.device.type} tensor; ftc's "
                             "Python process groups take CPU tensors")
        if not t.is_contiguous():
            raise ValueError(f"{what} is not contiguous")
        return t.data_ptr(), t.numel(), str(t.dtype).rsplit(".", 1)[-1]
    ai = getattr(t, "__array_interface__", None)
    if ai is not None:  # numpy and friends
        if not t.flags["C_CONTIGUOUS"]:
            raise ValueError(f"{what} is not C-contiguous")
        addr, readonly = ai["data"]
        if writable and readonly:
            raise ValueError(f"{what} is read-only")
        return addr, t.size, t.dtype.name
    raise TypeError(f"{what}: a torch.Tensor or numpy.ndarray is needed, "
                    f"got {type(t).__name__}")


def _dtype(name, what):
    code = _DTYPES.get(name)
    if code is None:
        raise TypeError(f"{what}: dtype {name} is not supported (ftc has "
                        f"{', '.join(_DTYPES)})")
    return code


def _op(op):
    code = _OPS.get(str(op).lower().rsplit(".", 1)[-1])
    if code is None:
        raise ValueError(f"op {op!r}: one of {', '.join(_OPS)}")
    return code


class ProcessGroup:
    """ProcessGroup(store, prefix, rank, size, *, backend=None,
    timeout=None, connect_timeout=None, host=None)

    A process group of size members formed through store (an ftc.Store)
    under prefix; every member calls it with its rank. backend: "tcp"
    (default, or FTC_PG_BACKEND), "xccl", "baby-tcp", "baby-xccl", ...
    timeout: each operation's default deadline (None: 300 s)."""

    def __init__(self, store, prefix, rank, size, *, backend=None,
                 timeout=None, connect_timeout=None, host=None):
        self._pg = _ftc._ProcessGroup(store, prefix, rank, size,
                                      backend=backend, timeout=timeout,
                                      connect_timeout=connect_timeout,
                                      host=host)

    rank = property(lambda self: self._pg.rank, doc="this member's rank")
    size = property(lambda self: self._pg.size, doc="number of members")

    def _submit(self, coll, inp=None, out=None, op="sum", root=0, tag=0,
                timeout=None, counts=None, recv_counts=None):
        ins = _buffer(inp, "input", False) if inp is not None else _NONE
        outs = _buffer(out, "output", True) if out is not None else _NONE
        names = {n for n in (ins[2], outs[2]) if n is not None}
        if len(names) > 1:
            raise TypeError(f"input and output dtypes differ: "
                            f"{ins[2]} and {outs[2]}")
        dtype = _dtype(names.pop(), "tensor") if names else 0
        keep = tuple(t for t in (inp, out) if t is not None)
        return self._pg.submit(coll, ins[0], ins[1], outs[0], outs[1], dtype,
                               _op(op), root, tag, timeout, keep,
                               counts=counts, recv_counts=recv_counts)

    def allreduce(self, tensor, op="sum", *, out=None, timeout=None):
        """out (default: tensor, in place) = op over every rank's tensor."""
        return self._submit("allreduce", tensor,
                            tensor if out is None else out, op=op,
                            timeout=timeout)

    def broadcast(self, tensor, root=0, *, timeout=None):
        """root's tensor into every rank's tensor."""
        return self._submit("broadcast", None, tensor, root=root,
                            timeout=timeout)

    def reduce(self, tensor, root=0, op="sum", *, out=None, timeout=None):
        """At root, out (default: tensor) = op over every rank's tensor."""
        if out is None and self.rank == root:
            out = tensor
        return self._submit("reduce", tensor, out, op=op, root=root,
                            timeout=timeout)

    def allgather(self, tensor, out, *, timeout=None):
        """out (size x tensor's elements) = every rank's tensor, in order."""
        return self._submit("allgather", tensor, out, timeout=timeout)

    def reduce_scatter(self, tensor, out, op="sum", *, timeout=None):
        """out = op over ranks of block `rank` of their tensor."""
        return self._submit("reduce_scatter", tensor, out, op=op,
                            timeout=timeout)

    def alltoall(self, tensor, out, *, timeout=None):
        """Block j of this rank's tensor goes to block `rank` of j's out."""
        return self._submit("alltoall", tensor, out, timeout=timeout)

    def alltoallv(self, tensor, out, send_counts, recv_counts, *,
                  timeout=None):
        """send_counts[j] elements (consecutive blocks of tensor, in rank
        order) go to rank j; recv_counts[j] come from rank j into out."""
        return self._submit("alltoallv", tensor, out, timeout=timeout,
                            counts=send_counts, recv_counts=recv_counts)

    def allgatherv(self, tensor, out, counts, *, timeout=None):
        """out = every rank's tensor in rank order, rank r's counts[r]
        elements long (tensor has counts[rank])."""
        return self._submit("allgatherv", tensor, out, timeout=timeout,
                            counts=counts)

    def gather(self, tensor, out=None, root=0, *, timeout=None):
        """At root, out (size x tensor's elements) = every rank's tensor."""
        return self._submit("gather", tensor, out, root=root,
                            timeout=timeout)

    def scatter(self, out, tensor=None, root=0, *, timeout=None):
        """Block r of root's tensor into rank r's out."""
        return self._submit("scatter", tensor, out, root=root,
                            timeout=timeout)

    def barrier(self, *, timeout=None):
        return self._submit("barrier", timeout=timeout)

    def send(self, tensor, dst, tag=0, *, timeout=None):
        return self._submit("send", tensor, None, root=dst, tag=tag,
                            timeout=timeout)

    def recv(self, tensor, src=ANY_SOURCE, tag=0, *, timeout=None):
        """Work.source() tells the sender (useful with ANY_SOURCE)."""
        return self._submit("recv", None, tensor, root=src, tag=tag,
                            timeout=timeout)

    def abort(self):
        """Fails every pending operation at once, on every member."""
        self._pg.abort()

    def status(self):
        """Raises the group's failure (ftc.Error), if it failed."""
        self._pg.status()

    def close(self):
        self._pg.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
