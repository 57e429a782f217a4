"""ftc.Manager: fault tolerance for one rank of a replica group, as
torchft's Manager gives it: each step joins a quorum (a replica that is
behind heals its registered state from the others), allreduces gradients
across the replica groups, and votes; a step commits only where every
rank of every participating group agreed."""
import atexit
import os
import threading
import weakref

from ftc import _ftc
from ftc import state as _st
from ftc.process_group import _DTYPES, _buffer, _dtype

_OPS = {"sum": 0, "avg": 1}
_NAMES = {code: name for name, code in _DTYPES.items()}
_SKELETON = "ftc.skeleton"


class Manager:
    """Manager(*, lighthouse=None, replica_id=None, group_rank=None,
    group_size=None, store_addr=None, store_prefix=None,
    min_replica_size=None, timeout=None, quorum_timeout=None,
    connect_timeout=None, advertise_host=None, from_env=None,
    backend=None, heartbeat_interval=None)

    Under `ftc run` no argument is needed: the launcher's environment
    (FTC_LIGHTHOUSE, FTC_REPLICA_ID, FTC_GROUP_RANK, FTC_GROUP_SIZE,
    FTC_STORE_ADDR, FTC_STORE_PREFIX, ...) gives them; keywords override
    it. from_env: read that environment (default: when FTC_LIGHTHOUSE is
    set). Timeouts and heartbeat_interval (how often the group's leader
    tells the lighthouse it lives; default 0.1 s) are seconds or
    timedeltas."""

    def __init__(self, *, from_env=None, load_state_dict=None,
                 state_dict=None, **options):
        if (load_state_dict is None) != (state_dict is None):
            raise ValueError("load_state_dict and state_dict go together")
        if from_env is None:
            from_env = "FTC_LIGHTHOUSE" in os.environ
        options = {k: v for k, v in options.items() if v is not None}
        self._m = _ftc._Manager(from_env=from_env, **options)
        self._state = []  # registered buffers: alive as long as the manager
        self._lent = []  # allreduce buffers, until the step's vote
        self._fns = {}  # key -> (load_state_dict, state_dict)
        self._signature = None  # of the state_dict registered last
        # _register_state runs on the quorum thread (serving a healer) or
        # on the training thread (a checksum for ftc run), never both at
        # once; the lock makes that certain.
        self._registering = threading.Lock()
        if state_dict is not None:
            self.register_state_dict_fn("default", load_state_dict,
                                        state_dict)

    def register(self, name, tensor):
        """Registers a contiguous CPU tensor (or array) of the state that a
        replica behind receives by healing, in place; every replica
        registers the same names in the same order."""
        if self._fns:
            raise RuntimeError("register: this Manager heals state_dicts "
                               "(register_state_dict_fn); not both")
        addr, count, dtype = _buffer(tensor, name, True)
        self._m.register(name, addr, count, _dtype(dtype, name))
        self._state.append(tensor)

    def register_state_dict_fn(self, key, load_state_dict, state_dict):
        """Heals what state_dict() returns under key (torchft's API): any
        nesting of dicts, lists and tuples of tensors and plain values
        (None, bool, int, float, str), the model's and the optimizer's
        alike, whose layout may change as training goes (an optimizer's
        state appears at its first step). state_dict() is called only when
        the state is read: on the manager's quorum thread in a round in
        which a peer heals from this replica (as torchft does), and on the
        training thread inside a committed should_commit when `ftc run`
        asks for a checksum; never on other steps. The state is
        registered as it is then (its tensors borrowed, copies only for
        device, non-contiguous or byte-typed ones) and must not change
        until wait_quorum returns; a replica that heals receives its
        source's state in the source's layout and gets it through
        load_state_dict(state), on the training thread inside wait_quorum.
        Nothing is pickled: tensors travel as ftc's checksummed buffers,
        the rest as JSON (ftc.state)."""
        if self._state and not self._fns:
            raise RuntimeError("register_state_dict_fn: this Manager heals "
                               "registered tensors (register); not both")
        if not self._fns:
            me = weakref.ref(self)
            self._m.set_adopt(lambda bufs: me()._adopt(bufs))
            self._m.set_prepare(lambda: _alive(me)._register_state())
            atexit.register(_close_at_exit, me)
        self._fns[key] = (load_state_dict, state_dict)
        self._signature = None

    def _register_state(self):
        """Registers the state_dicts as they are now (again only when their
        layout or memory moved; else the skeleton is rewritten in place):
        the manager's prepare function, right before it reads the state."""
        with self._registering:
            self._register_state_locked()

    def _register_state_locked(self):
        import torch
        state = {k: fn() for k, (_, fn) in self._fns.items()}
        skeleton, tensors = _st.flatten(state)
        bufs = [_st.as_buffer(t) for t in tensors]
        signature = tuple((b.data_ptr(), _st.dtype_name(b), tuple(b.shape))
                          for b in bufs) + (len(skeleton),)
        raw = torch.frombuffer(bytearray(skeleton), dtype=torch.uint8)
        if signature == self._signature:
            self._state[-1].copy_(raw)
            self._state[:-1] = bufs  # the copies made this time
            return
        self._m.clear_state()
        self._state = []
        self._signature = None
        for i, b in enumerate(bufs + [raw]):
            name = _SKELETON if i == len(bufs) else f"s{i}"
            addr, count, dtype = _buffer(b, name, True)
            self._m.register(name, addr, count, _dtype(dtype, name),
                             list(b.shape))
            self._state.append(b)
        self._signature = signature

    def _adopt(self, bufs):
        """A healed state in its source's layout, [(name, dtype code,
        shape, memoryview)], into the registered load_state_dict fns."""
        import torch
        if not bufs or bufs[-1][0] != _SKELETON:
            raise ValueError("healed state without its skeleton: the source "
                             "registered tensors, not state_dicts")
        tensors = []
        for name, code, shape, view in bufs[:-1]:
            dt = getattr(torch, _NAMES[code])
            t = torch.frombuffer(bytearray(view), dtype=dt) if len(view) \
                else torch.empty(0, dtype=dt)
            tensors.append(t.reshape(shape))
        state = _st.unflatten(bytes(bufs[-1][3]), tensors)
        for key, (load, _) in self._fns.items():
            load(state[key])
        with self._registering:
            self._signature = None  # loading may have moved the memory

    def register_parameters(self, module):
        """Registers every parameter and buffer of a torch module."""
        for name, t in module.state_dict(keep_vars=True).items():
            self.register(name, t.data)

    def start_quorum(self, *, shrink_only=False, allow_heal=True,
                     heal_in_place=False, timeout=None):
        self._m.start_quorum(shrink_only=shrink_only, allow_heal=allow_heal,
                             heal_in_place=heal_in_place, timeout=timeout)

    def wait_quorum(self, timeout=None):
        self._m.wait_quorum(timeout)

    def allreduce(self, tensor, op="avg", timeout=None):
        """Starts an allreduce of tensor across the quorum's replicas
        (avg: float32/float64); returns an ftc.ManagerWork. A failure is
        latched and makes the step vote no."""
        addr, count, dtype = _buffer(tensor, "tensor", True)
        code = _OPS.get(op)
        if code is None:
            raise ValueError(f"op {op!r}: 'sum' or 'avg'")
        work = self._m.allreduce(addr, count, _dtype(dtype, "tensor"), code,
                                 timeout)
        self._lent.append(tensor)
        return work

    def should_commit(self, timeout=None):
        """The step's vote: True only if every rank of every participating
        replica group voted yes."""
        try:
            return self._m.should_commit(timeout)
        finally:
            self._lent.clear()

    def report_error(self, message):
        self._m.report_error(str(message))

    def errored(self):
        """The step's latched error message, or None."""
        return self._m.errored()

    def state_dict(self):
        """The manager's progress, for a checkpoint beside the model's:
        {"step": committed steps, "batches_committed": ...}."""
        return {"step": self._m.current_step,
                "batches_committed": self._m.batches_committed}

    def load_state_dict(self, state):
        """Restores the progress of state_dict() from a checkpoint, with
        the registered state restored to the same step (torchft's
        Manager.load_state_dict): the next quorum round reports it, so a
        replica restored ahead of the others is the one they heal from.
        Before the first round or after a vote."""
        self._m.set_step(int(state["step"]), int(state["batches_committed"]))

    current_step = property(lambda self: self._m.current_step)
    batches_committed = property(lambda self: self._m.batches_committed)
    num_participants = property(lambda self: self._m.num_participants)
    participating = property(lambda self: self._m.participating)
    healing = property(lambda self: self._m.healing)
    replica_rank = property(lambda self: self._m.replica_rank)
    replica_world_size = property(lambda self: self._m.replica_world_size)
    quorum_id = property(lambda self: self._m.quorum_id)
    replica_id = property(lambda self: self._m.replica_id)

    def finish(self):
        """The run reached its end (its last step committed): close() then
        tells the lighthouse the job finished at this step, and a replica
        that missed the end is refused rather than training it again."""
        self._m.finish()

    def close(self):
        self._m.close()
        self._state = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _alive(ref):
    """The Manager behind ref (its prepare function outlives it only while
    it is being destroyed: then nothing is served)."""
    manager = ref()
    if manager is None:
        raise RuntimeError("the ftc.Manager is gone")
    return manager


def _close_at_exit(ref):
    """A Manager whose quorum thread calls into Python (state_dict
    functions) is closed before the interpreter finalizes; no prepare
    function runs from now on."""
    _ftc.set_finalizing()
    manager = ref()
    if manager is not None:
        manager.close()
