"""torchft's DistributedDataParallel: torch's DDP over a one-rank dummy
group, its gradient buckets averaged across the replica groups by the
Manager from a comm hook. The hook returns at once and the bucket's
future completes when ftc's allreduce does, so communication overlaps the
rest of the backward pass."""
from torch.nn import parallel

from ftc.torchft.process_group import ProcessGroupDummy


class DistributedDataParallel(parallel.DistributedDataParallel):
    def __init__(self, manager, module, **kwargs):
        # find_unused_parameters keeps the reducer from rebuilding its
        # buckets after the first step: a replica that healed later would
        # bucket differently from the others (torchft does the same).
        super().__init__(module, process_group=ProcessGroupDummy(0, 1),
                         find_unused_parameters=True, **kwargs)
        self.register_comm_hook(manager, self._comm_hook)

    @staticmethod
    def _comm_hook(manager, bucket):
        return manager.allreduce(bucket.buffer()).get_future()
