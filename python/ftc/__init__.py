"""ftc: fault-tolerant collective communication, from Python.

The C library (libftc) is linked into the extension module ``ftc._ftc``;
this package re-exports it:

- ``StoreServer``: ftc's store server on a thread of this process, which
  PyTorch's TCPStore clients (1.13 and 2.x) reach as well;
- ``Store``: a client of ftc's store or of PyTorch's TCPStore;
- ``ControlCollectives``: barrier, broadcast, gather, scatter, all_gather
  and all_sum of bytes through a store;
- ``Manager``: fault tolerance for a training loop (quorum, healing,
  cross-replica allreduce, commit vote), under ``ftc run`` or not;
- ``ProcessGroup`` (and ``Work``): collectives and point-to-point on CPU
  torch tensors or numpy arrays, zero-copy, on any ftc backend;
- ``Error`` (``.code``, ``.name``), ``TimeoutError`` and ``PeerError``;
- ``trace(name)`` (and ``trace_begin``/``trace_end``/``trace_step``/
  ``trace_flush``/``trace_enabled``): the trainer's phases in the trace
  that ``FTC_TRACE`` records.

Timeouts are seconds, ``datetime.timedelta`` or ``math.inf``; ``None``
takes the handle's default. Calls release the GIL while they wait.
"""
from ftc._ftc import (  # noqa: F401
    ControlCollectives,
    Error,
    PeerError,
    Store,
    StoreServer,
    TimeoutError,
    Work,
    version,
)
from ftc.manager import Manager  # noqa: F401
from ftc.process_group import ANY_SOURCE, ProcessGroup  # noqa: F401
from ftc.trace import (  # noqa: F401
    trace,
    trace_begin,
    trace_enabled,
    trace_end,
    trace_flush,
    trace_step,
)

__all__ = [
    "ANY_SOURCE",
    "ControlCollectives",
    "Error",
    "Manager",
    "PeerError",
    "ProcessGroup",
    "Store",
    "StoreServer",
    "TimeoutError",
    "Work",
    "trace",
    "trace_begin",
    "trace_enabled",
    "trace_end",
    "trace_flush",
    "trace_step",
    "version",
]
