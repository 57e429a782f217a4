"""torchft's Manager on ftc.Manager.

The arguments are torchft's; what they become:
- Under `ftc run` (FTC_LIGHTHOUSE set) the launcher's environment names
  the lighthouse, the replica group, its ranks and its store, and wins
  over replica_id, rank, world_size and the store arguments (the launcher
  restarts groups and reads their reports under its own names).
- Otherwise torchft's environment: lighthouse_addr or
  TORCHFT_LIGHTHOUSE (an ftc lighthouse), replica_id (else
  "replica_<REPLICA_GROUP_ID>"), rank or RANK, world_size or WORLD_SIZE,
  store_addr/store_port or MASTER_ADDR/MASTER_PORT (torchrun's store;
  each restart of the group writes under a fresh prefix). A group of one
  rank with no store gets one served by this process.
- pg picks the backend of the cross-replica group (ProcessGroupGloo: ftc's
  TCP); checkpoint_transport is accepted, healing is ftc's.
- Errors do not raise from the training loop's calls: a failed quorum or
  allreduce is latched and makes should_commit() say no, and the next
  zero_grad/start_quorum tries again (as torchft)."""
import atexit
import enum
import os
import threading
import uuid
import weakref
from datetime import timedelta

from torch.futures import Future

import ftc
from ftc import _completion
from ftc.torchft.process_group import ProcessGroup, ProcessGroupGloo


class WorldSizeMode(enum.Enum):
    DYNAMIC = 0
    FIXED_WITH_SPARES = 1


class ExceptionWithTraceback(Exception):
    """What errored() returns (torchft's shape): original_exception."""

    def __init__(self, original_exception):
        super().__init__(str(original_exception))
        self.original_exception = original_exception


def _env_int(name, default):
    value = os.environ.get(name)
    return default if value in (None, "") else int(value)


def _seconds(value):
    if value is None or isinstance(value, timedelta):
        return value
    return timedelta(seconds=value)


class Manager:
    def __init__(self, pg=None, load_state_dict=None, state_dict=None,
                 min_replica_size=1, use_async_quorum=True,
                 timeout=timedelta(seconds=60),
                 quorum_timeout=timedelta(seconds=900),
                 connect_timeout=timedelta(seconds=60), rank=None,
                 world_size=None,
                 world_size_mode=WorldSizeMode.DYNAMIC, store_addr=None,
                 store_port=None, lighthouse_addr=None, replica_id=None,
                 port=None, hostname=None, heartbeat_interval=None,
                 checkpoint_transport=None, init_sync=True,
                 max_retries=None, quorum_retries=0):
        if world_size_mode != WorldSizeMode.DYNAMIC:
            raise ValueError("world_size_mode: only DYNAMIC for now")
        if (load_state_dict is None) != (state_dict is None):
            raise ValueError("load_state_dict and state_dict go together")
        pg = pg if pg is not None else ProcessGroupGloo()
        if not isinstance(pg, ProcessGroup):
            raise TypeError("pg: one of ftc.torchft's ProcessGroup classes, "
                            f"not {type(pg).__name__}")
        self._pg = pg
        self._use_async_quorum = use_async_quorum
        self._checkpoint_transport = checkpoint_transport
        self._server = None
        options = dict(min_replica_size=min_replica_size,
                       timeout=_seconds(timeout),
                       quorum_timeout=_seconds(quorum_timeout),
                       connect_timeout=_seconds(connect_timeout),
                       heartbeat_interval=_seconds(heartbeat_interval),
                       backend=None if pg.backend == "tcp" else pg.backend)
        if "FTC_LIGHTHOUSE" not in os.environ:
            options.update(self._torchft_env(lighthouse_addr, replica_id,
                                             rank, world_size, store_addr,
                                             store_port))
        self._m = ftc.Manager(
            from_env="FTC_LIGHTHOUSE" in os.environ,
            **{k: v for k, v in options.items() if v is not None})
        self._waiter = _Waiter()
        # torchft's scripts end without shutdown(): closing at exit sends
        # the launcher the final checksum of the healed state.
        atexit.register(_shutdown_at_exit, weakref.ref(self))
        if state_dict is not None:
            self.register_state_dict_fn("default", load_state_dict,
                                        state_dict)

    def _torchft_env(self, lighthouse, replica_id, rank, world_size,
                     store_addr, store_port):
        lighthouse = lighthouse or os.environ.get("TORCHFT_LIGHTHOUSE")
        if not lighthouse:
            raise ValueError("no lighthouse: pass lighthouse_addr, set "
                             "TORCHFT_LIGHTHOUSE, or run under `ftc run`")
        if replica_id is None:
            replica_id = f"replica_{_env_int('REPLICA_GROUP_ID', 0)}"
        rank = _env_int("RANK", 0) if rank is None else rank
        world_size = (_env_int("WORLD_SIZE", 1) if world_size is None
                      else world_size)
        host = store_addr or os.environ.get("MASTER_ADDR")
        port = store_port or os.environ.get("MASTER_PORT")
        prefix = None
        if host is None and world_size == 1:
            host = os.environ.get("FTC_ADVERTISE_HOST", "127.0.0.1")
            self._server = ftc.StoreServer(host, 0)
            port = self._server.port
        elif host is None or port is None:
            raise ValueError("no store for the replica group: pass "
                             "store_addr and store_port or set MASTER_ADDR "
                             "and MASTER_PORT")
        elif "TORCHELASTIC_RUN_ID" in os.environ:  # torchrun's agent store
            prefix = "{}/{}/{}".format(
                replica_id, os.environ["TORCHELASTIC_RUN_ID"],
                os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
        elif world_size == 1:
            prefix = f"{replica_id}/{uuid.uuid4().hex}"
        return dict(lighthouse=lighthouse, replica_id=replica_id,
                    group_rank=rank, group_size=world_size,
                    store_addr=f"{host}:{port}", store_prefix=prefix)

    # ------------------------------------------------------------- state

    def register_state_dict_fn(self, key, load_state_dict, state_dict):
        self._m.register_state_dict_fn(key, load_state_dict, state_dict)

    def allow_state_dict_read(self):
        """torchft's guard while a step writes the state: ftc reads the
        state only inside the quorum round (see docs/python.md)."""

    def disallow_state_dict_read(self):
        """See allow_state_dict_read."""

    def state_dict(self):
        return self._m.state_dict()

    def load_state_dict(self, state_dict):
        self._m.load_state_dict(state_dict)

    # ------------------------------------------------------------- steps

    def start_quorum(self, allow_heal=True, shrink_only=False, timeout=None):
        try:
            self._m.start_quorum(allow_heal=allow_heal,
                                 shrink_only=shrink_only,
                                 timeout=_seconds(timeout))
            if not self._use_async_quorum:
                self._m.wait_quorum(_seconds(timeout))
        except ftc.Error as e:
            self.report_error(e)

    def wait_quorum(self):
        try:
            self._m.wait_quorum()
        except ftc.Error as e:
            self.report_error(e)

    def allreduce(self, tensor, should_quantize=False, reduce_op=None):
        """Averages tensor across the participating replica groups (SUM
        with reduce_op=torch.distributed.ReduceOp.SUM); returns a Work
        whose wait() and get_future() never raise: a failure makes the
        step vote no."""
        op = "sum" if str(reduce_op).upper().endswith("SUM") else "avg"
        try:
            work = self._m.allreduce(tensor, op)
        except ftc.Error as e:
            self.report_error(e)
            work = None
        return _Work(self, work, tensor)

    def should_commit(self, timeout=None):
        return self._m.should_commit(_seconds(timeout))

    def report_error(self, e):
        self._m.report_error(str(e))

    def errored(self):
        message = self._m.errored()
        return None if message is None else \
            ExceptionWithTraceback(RuntimeError(message))

    def wrap_future(self, fut, default, timeout=None):
        """fut's value, or default (and the error reported) if it fails."""
        def settle(f):
            try:
                return f.value()
            except Exception as e:
                self.report_error(e)
                return default
        return fut.then(settle)

    def current_step(self):
        return self._m.current_step

    def batches_committed(self):
        return self._m.batches_committed

    def num_participants(self):
        return self._m.num_participants

    def is_participating(self):
        return self._m.participating

    def participating_rank(self):
        return self._m.replica_rank if self._m.participating else None

    def replica_id(self):
        return self._m.replica_id

    def shutdown(self, wait=True):
        """Leaves the job (again: nothing)."""
        self._m.close()
        if self._server is not None:
            self._server.close()
            self._server = None


def _shutdown_at_exit(ref):
    manager = ref()
    if manager is not None:
        manager.shutdown()


class _Work:
    """torch Work-like: wait() and get_future() of one allreduce."""

    def __init__(self, manager, work, tensor):
        self._manager = manager
        self._work = work
        self._tensor = tensor
        self._lock = threading.Lock()
        self._future = None

    def _wait(self, timeout=None):
        with self._lock:
            work, self._work = self._work, None
        if work is not None:
            try:
                work.wait(_seconds(timeout))
            except ftc.Error:
                pass  # latched by the manager: the step votes no

    def wait(self, timeout=None):
        if self._future is not None:
            self._future.wait()
        else:
            self._wait(timeout)
        return True

    def get_future(self):
        """A torch future of the tensor, completed when the allreduce is
        (by the manager's waiting thread)."""
        if self._future is None:
            self._future = Future()
            self._manager._waiter.submit(self)
        return self._future


class _Waiter:
    """One thread per Manager that waits its allreduces in order and
    completes their futures."""

    def __init__(self):
        self._queue = []
        self._cv = threading.Condition()
        self._thread = None

    def submit(self, work):
        with self._cv:
            self._queue.append(work)
            self._cv.notify()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="ftc-torchft-allreduce",
                    daemon=True)
                self._thread.start()

    def _run(self):
        while True:
            with self._cv:
                while not self._queue:
                    self._cv.wait()
                work = self._queue.pop(0)
            work._wait()
            if not _completion.run(
                    lambda: work._future.set_result(work._tensor)):
                return
            del work  # not held (nor its tensor) while waiting for the next
