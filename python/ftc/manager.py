"""ftc.Manager: fault tolerance for one rank of a replica group, as
torchft's Manager gives it: each step joins a quorum (a replica that is
behind heals its registered state from the others), allreduces gradients
across the replica groups, and votes; a step commits only where every
rank of every participating group agreed."""
import os

from ftc import _ftc
from ftc.process_group import _buffer, _dtype

_OPS = {"sum": 0, "avg": 1}


class Manager:
    """Manager(*, lighthouse=None, replica_id=None, group_rank=None,
    group_size=None, store_addr=None, store_prefix=None,
    min_replica_size=None, timeout=None, quorum_timeout=None,
    connect_timeout=None, advertise_host=None, from_env=None)

    Under `ftc run` no argument is needed: the launcher's environment
    (FTC_LIGHTHOUSE, FTC_REPLICA_ID, FTC_GROUP_RANK, FTC_GROUP_SIZE,
    FTC_STORE_ADDR, FTC_STORE_PREFIX, ...) gives them; keywords override
    it. from_env: read that environment (default: when FTC_LIGHTHOUSE is
    set). Timeouts are seconds or timedeltas."""

    def __init__(self, *, from_env=None, **options):
        if from_env is None:
            from_env = "FTC_LIGHTHOUSE" in os.environ
        options = {k: v for k, v in options.items() if v is not None}
        self._m = _ftc._Manager(from_env=from_env, **options)
        self._state = []  # registered buffers: alive as long as the manager
        self._lent = []  # allreduce buffers, until the step's vote

    def register(self, name, tensor):
        """Registers a contiguous CPU tensor (or array) of the state that a
        replica behind receives by healing, in place; every replica
        registers the same names in the same order."""
        addr, count, dtype = _buffer(tensor, name, True)
        self._m.register(name, addr, count, _dtype(dtype, name))
        self._state.append(tensor)

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

    current_step = property(lambda self: self._m.current_step)
    batches_committed = property(lambda self: self._m.batches_committed)
    num_participants = property(lambda self: self._m.num_participants)
    participating = property(lambda self: self._m.participating)
    healing = property(lambda self: self._m.healing)
    replica_rank = property(lambda self: self._m.replica_rank)
    replica_world_size = property(lambda self: self._m.replica_world_size)
    quorum_id = property(lambda self: self._m.quorum_id)
    replica_id = property(lambda self: self._m.replica_id)

    def close(self):
        self._m.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
