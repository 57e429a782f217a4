"""``import ftc.torch`` registers "ftc" as a torch.distributed backend:

    import ftc.torch
    dist.init_process_group("ftc", init_method="tcp://host:port", ...)
    dist.new_group(ranks, backend="ftc")

Any rendezvous works: with a TCPStore (env://, tcp://, or one you pass,
served by PyTorch or by ftc.StoreServer) each group connects its own
ftc.Store to that server; with another (file://) rank 0 serves an ftc
store and publishes its address through it (FTC_ADVERTISE_HOST, default
127.0.0.1). Each group forms an ftc process group under its name. With
FTC_TOKEN set (ftc run sets it), the group's ftc.Store authenticates with
it, unless the server is PyTorch's own, which cannot; a store that rank 0
serves takes it too. CPU tensors only for now. Collectives start at
once and complete through one completion thread that sets each call's
future; a failed operation fails the future inside PyTorch, so DDP and
Work.wait() raise a RuntimeError with ftc's message. FTC_PG_BACKEND picks
ftc's own backend (tcp, xccl, baby-tcp, baby-xccl)."""
import collections
import os
import threading
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.futures import Future

import ftc
from ftc import _completion, _ftc
from ftc.process_group import _buffer, _dtype

_OPS = {
    dist.ReduceOp.SUM: 0, dist.ReduceOp.AVG: 1, dist.ReduceOp.MIN: 2,
    dist.ReduceOp.MAX: 3, dist.ReduceOp.PRODUCT: 4,
}


class _Failed:
    """A failed operation's error, carried as a future's value: a future
    failed from Python crashes DDP's reducer (torch 2.13), one failed
    inside a `then` callback raises cleanly."""

    def __init__(self, error):
        self.error = error


def _unwrap(fut):
    value = fut.value()
    if isinstance(value, _Failed):
        raise RuntimeError(f"ftc: {value.error}")
    return value


def _complete(w):
    """Hands a finished operation's result to its future (after the copies
    that result needs)."""
    if w is None:
        return
    fut, finish = w.keep[1], w.keep[2]
    try:
        w.wait()
        value = finish(w)
    except Exception as e:  # the future carries it to the caller
        value = _Failed(e)
    fut.set_result(value)


def _complete_forever():
    """The completion thread, until the interpreter exits."""
    while True:
        w = _ftc.next_completed()
        if not _completion.run(lambda: _complete(w)):
            return
        # Not held while waiting for the next one: a work keeps its
        # process group, whose peers would see a dropped group live on.
        del w


_completer = None
_completer_lock = threading.Lock()


def _start_completer():
    global _completer
    with _completer_lock:
        if _completer is None:
            _completer = threading.Thread(target=_complete_forever,
                                          name="ftc-torch-completion",
                                          daemon=True)
            _completer.start()


def _timeout(td):
    """A c10d timeout (a timedelta; negative: unset) for ftc."""
    return None if td is None or td < timedelta(0) else td


def _op(reduce_op):
    code = _OPS.get(getattr(reduce_op, "op", reduce_op))  # its RedOpType
    if code is None:
        raise ValueError(f"ftc: reduce op {reduce_op} is not supported")
    return code


def _reduce_opts(opts, cls):
    """c10d's options of a reduction, from opts: None, the options, or a
    bare ReduceOp (torch's allreduce(tensors, op) overload)."""
    if opts is None or hasattr(opts, "reduceOp"):
        return opts or cls()
    made = cls()
    made.reduceOp = opts
    return made


def _token():
    return os.environ.get("FTC_TOKEN") or None


def _connect(host, port, timeout):
    """An ftc.Store on the rendezvous's server, authenticated with the
    job's token when there is one. A server that answers as PyTorch's
    cannot authenticate: outside ftc run (a rendezvous the user chose) the
    store is then used as PyTorch's own clients use it, with a warning,
    since an impostor could answer so too; under ftc run (its stores are
    ftc's) that is refused, as is any other failure (a wrong token, an ftc
    server without one)."""
    token = _token()
    try:
        return ftc.Store(host, port, timeout=timeout, token=token)
    except ftc.Error as e:
        if token is None or e.name != "FTC_ENOTSUP" or \
                os.environ.get("FTC_RUN_DIR"):
            raise
    warnings.warn(f"ftc.torch: the store at {host}:{port} answers as "
                  "PyTorch's TCPStore, which cannot authenticate: using it "
                  "without the token (its keys are open to whoever reaches "
                  "it; the process group's own connections still check "
                  "FTC_TOKEN)", RuntimeWarning, stacklevel=3)
    return ftc.Store(host, port, timeout=timeout)


class ProcessGroupFtc(dist.ProcessGroup):
    """A torch.distributed process group whose operations run on an ftc
    process group (see the module's docstring)."""

    _created = collections.Counter()  # groups made, per name and rank

    def __init__(self, store, rank, size, timeout=None, group_name="0",
                 prefix=None):
        """prefix: where the members meet in the store, the same on every
        member and new for every group (torchft's reconfigure passes one
        per communicator). By default: the group's name, its restart
        (ftc run's incarnation, torchrun's restart count) and how many
        groups of that name this rank made before, which agree because
        every rank creates groups in the same order (c10d requires it)."""
        super().__init__(rank, size)
        self._name = group_name
        self._timeout = _timeout(timeout)
        self._server = None  # ftc's own store, when the rendezvous has none
        host, port = self._store_address(store, rank)
        self._store = _connect(host, port, self._timeout)
        if prefix is None:
            restart = os.environ.get(
                "FTC_INCARNATION",
                os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
            made = self._created[(group_name, rank)]
            self._created[(group_name, rank)] += 1
            prefix = f"ftc/torch/{restart}/{group_name}/{made}"
        self._pg = _ftc._ProcessGroup(self._store, prefix, rank, size,
                                      timeout=self._timeout)
        _start_completer()

    def _store_address(self, store, rank):
        """The TCP store the ftc group meets on: the rendezvous's TCPStore,
        or (file://, any other store) one that rank 0 serves, its address
        published through the rendezvous store."""
        tcp = getattr(store, "_underlying_non_prefix_store", store)
        host, port = getattr(tcp, "host", None), getattr(tcp, "port", None)
        if host is not None and port is not None:
            return host, port
        key = "ftc/store_address"
        if rank == 0:
            host = os.environ.get("FTC_ADVERTISE_HOST", "127.0.0.1")
            self._server = ftc.StoreServer(host, 0, token=_token())
            store.set(key, f"{host}:{self._server.port}")
        host, _, port = store.get(key).decode().rpartition(":")
        return host, int(port)

    # c10d hands this object out as the group itself, and on 2.13 a group
    # reads its name from its backends, which a Python group has none of:
    # destroy_process_group(group) needs the name, so it lives here.
    @property
    def group_name(self):
        return self._name

    def _set_group_name(self, name):
        self._name = name

    def getBackendName(self):
        return "ftc"

    # ------------------------------------------------------------ helpers

    def _start(self, coll, inp, out, op=0, root=0, tag=0, finish=None,
               timeout=None, counts=None, recv_counts=None):
        """Starts one ftc operation; returns its torch future (whose value
        is finish()'s)."""
        ins = _buffer(inp, "input", False) if inp is not None else (0, -1,
                                                                    None)
        outs = _buffer(out, "output", True) if out is not None else (0, -1,
                                                                     None)
        name = outs[2] or ins[2]
        dtype = _dtype(name, "tensor") if name else 0
        fut = Future()
        keep = ((inp, out), fut, finish or (lambda w: [out]))
        self._pg.submit(coll, ins[0], ins[1], outs[0], outs[1], dtype, op,
                        root, tag, _timeout(timeout) or self._timeout, keep,
                        notify=True, counts=counts, recv_counts=recv_counts)
        return fut.then(_unwrap)

    def _work(self, futures, value):
        """One c10d Work for several futures, whose value is value()."""
        if len(futures) == 1:  # f.value() raises the operation's error
            return _FutureWork(futures[0].then(
                lambda f: (f.value(), value())[1]))
        all_done = torch.futures.collect_all(futures)
        return _FutureWork(all_done.then(
            lambda f: ([g.value() for g in f.value()], value())[1]))

    # ------------------------------------------------------- collectives

    def allreduce(self, tensors, opts=None):
        opts = _reduce_opts(opts, dist.AllreduceOptions)
        futs = [self._start("allreduce", t, t, _op(opts.reduceOp),
                            timeout=opts.timeout) for t in tensors]
        return self._work(futs, lambda: tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        opts = _reduce_opts(opts, dist.AllreduceCoalescedOptions)
        futs = [self._start("allreduce", t, t, _op(opts.reduceOp),
                            timeout=opts.timeout) for t in tensors]
        return self._work(futs, lambda: tensors)

    def broadcast(self, tensors, opts=None):
        opts = opts or dist.BroadcastOptions()
        futs = [self._start("broadcast", None, t, root=opts.rootRank,
                            timeout=opts.timeout) for t in tensors]
        return self._work(futs, lambda: tensors)

    def reduce(self, tensors, opts=None):
        opts = opts or dist.ReduceOptions()
        futs = [self._start("reduce", t, t if self.rank() == opts.rootRank
                            else None, _op(opts.reduceOp),
                            root=opts.rootRank, timeout=opts.timeout)
                for t in tensors]
        return self._work(futs, lambda: tensors)

    def allgather(self, output_lists, inputs, opts=None):
        timeout = getattr(opts, "timeout", None)
        futs = []
        for outs, inp in zip(output_lists, inputs):
            flat = torch.empty((len(outs),) + tuple(inp.shape),
                               dtype=inp.dtype)
            futs.append(self._start(
                "allgather", inp.contiguous(), flat, timeout=timeout,
                finish=lambda w, outs=outs, flat=flat: [
                    o.copy_(f) for o, f in zip(outs, flat)]))
        return self._work(futs, lambda: output_lists)

    def allgather_coalesced(self, output_lists, inputs, opts=None):
        """output_lists[r][i] receives rank r's inputs[i]."""
        per_input = [[outs[i] for outs in output_lists]
                     for i in range(len(inputs))]
        work = self.allgather(per_input, inputs, opts)
        return self._work([work.get_future()], lambda: output_lists)

    def _allgather_base(self, output, inp, opts=None):
        fut = self._start("allgather", inp, output,
                          timeout=getattr(opts, "timeout", None))
        return self._work([fut], lambda: [output])

    all_gather_single = _allgather_base

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        timeout = getattr(opts, "timeout", None)
        futs = [self._start("allgather", i, o, timeout=timeout)
                for o, i in zip(outputs, inputs)]
        return self._work(futs, lambda: outputs)

    def reduce_scatter(self, outputs, input_lists, opts=None):
        opts = opts or dist.ReduceScatterOptions()
        futs = [self._start("reduce_scatter", torch.cat(
                    [t.reshape(-1) for t in ins]), out, _op(opts.reduceOp),
                    timeout=opts.timeout)
                for out, ins in zip(outputs, input_lists)]
        return self._work(futs, lambda: outputs)

    def _reduce_scatter_base(self, output, inp, opts=None):
        opts = opts or dist.ReduceScatterOptions()
        fut = self._start("reduce_scatter", inp, output, _op(opts.reduceOp),
                          timeout=opts.timeout)
        return self._work([fut], lambda: [output])

    reduce_scatter_single = _reduce_scatter_base

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        opts = opts or dist.ReduceScatterOptions()
        futs = [self._start("reduce_scatter", i, o, _op(opts.reduceOp),
                            timeout=opts.timeout)
                for o, i in zip(outputs, inputs)]
        return self._work(futs, lambda: outputs)

    def alltoall_base(self, output, inp, output_splits, input_splits,
                      opts=None):
        timeout = getattr(opts, "timeout", None)
        if not list(output_splits) and not list(input_splits):
            fut = self._start("alltoall", inp, output, timeout=timeout)
        else:  # splits are rows of dimension 0: counts are elements
            n = self.size()
            row_in = inp[0].numel() if inp.shape[0] else 0
            row_out = output[0].numel() if output.shape[0] else 0
            ins = list(input_splits) or [inp.shape[0] // n] * n
            outs = list(output_splits) or [output.shape[0] // n] * n
            fut = self._start("alltoallv", inp, output, timeout=timeout,
                              counts=[k * row_in for k in ins],
                              recv_counts=[k * row_out for k in outs])
        return self._work([fut], lambda: [output])

    all_to_all_single = alltoall_base

    def alltoall(self, outputs, inputs, opts=None):
        flat_in = torch.cat([t.reshape(-1) for t in inputs])
        flat_out = torch.empty_like(flat_in)
        fut = self._start(
            "alltoall", flat_in, flat_out,
            timeout=getattr(opts, "timeout", None),
            finish=lambda w: [o.copy_(f.reshape(o.shape)) for o, f in zip(
                outputs, flat_out.split([t.numel() for t in outputs]))])
        return self._work([fut], lambda: outputs)

    def gather(self, output_lists, inputs, opts=None):
        opts = opts or dist.GatherOptions()
        inp = inputs[0]
        root = self.rank() == opts.rootRank
        flat = (torch.empty((self.size(),) + tuple(inp.shape),
                            dtype=inp.dtype) if root else None)
        fut = self._start(
            "gather", inp.contiguous(), flat, root=opts.rootRank,
            timeout=opts.timeout,
            finish=lambda w: [o.copy_(f) for o, f in zip(
                output_lists[0], flat)] if root else [])
        return self._work([fut], lambda: output_lists)

    def scatter(self, outputs, input_lists, opts=None):
        opts = opts or dist.ScatterOptions()
        root = self.rank() == opts.rootRank
        flat = (torch.cat([t.reshape(-1) for t in input_lists[0]])
                if root else None)
        fut = self._start("scatter", flat, outputs[0], root=opts.rootRank,
                          timeout=opts.timeout)
        return self._work([fut], lambda: outputs)

    def barrier(self, opts=None):
        fut = self._start("barrier", None, None,
                          timeout=getattr(opts, "timeout", None),
                          finish=lambda w: [])
        return self._work([fut], lambda: [])

    def send(self, tensors, dst, tag=0):
        futs = [self._start("send", t, None, root=dst, tag=tag,
                            finish=lambda w: []) for t in tensors]
        return self._work(futs, lambda: tensors)

    def recv(self, tensors, src, tag=0):
        futs = [self._start("recv", None, t, root=src, tag=tag)
                for t in tensors]
        return self._work(futs, lambda: tensors)

    def recv_anysource(self, tensors, tag=0):
        source = []
        fut = self._start("recv", None, tensors[0], root=ftc.ANY_SOURCE,
                          tag=tag, finish=lambda w: (source.append(
                              w.source()), [tensors[0]])[1])
        return _SourceWork(fut, source)

    # ------------------------------------------------------------- control

    def abort(self):
        self._pg.abort()

    def shutdown(self):
        self._pg.close()
        self._store.close()
        if self._server is not None:
            self._server.close()


class _FutureWork(dist.Work):
    """A c10d Work over a future whose wait() raises the operation's error,
    as Gloo's does. (torch's _create_work_from_future makes one whose
    wait() returns True even when the future failed, leaving the outputs
    untouched: a caller that waits and reads would read stale values.)"""

    def __init__(self, fut):
        super().__init__()
        self._fut = fut

    def wait(self, timeout=None):
        self._fut.wait()  # raises the future's error
        return True

    def is_completed(self):
        return self._fut.done()

    def get_future(self):
        return self._fut

    def result(self):
        return self._fut.value()


class _SourceWork(_FutureWork):
    """The Work of a receive from any source: c10d asks it the sender."""

    def __init__(self, fut, source):
        super().__init__(fut)
        self._source = source  # filled at completion

    def _source_rank(self):
        return self._source[0]


def _create(dist_opts, backend_opts=None):
    return ProcessGroupFtc(dist_opts.store, dist_opts.group_rank,
                           dist_opts.group_size, dist_opts.timeout,
                           dist_opts.group_id)


if "ftc" not in dist.Backend.backend_list:
    dist.Backend.register_backend("ftc", _create, extended_api=True,
                                  devices=["cpu"])
