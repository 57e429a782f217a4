"""torchft's DistributedSampler: torch's, over every rank of every
replica group (global rank = group_rank + num_replicas * replica_rank)."""
from torch.utils import data


class DistributedSampler(data.distributed.DistributedSampler):
    def __init__(self, dataset, replica_rank, num_replica_groups,
                 group_rank=None, num_replicas=None, **kwargs):
        if group_rank is None or num_replicas is None:
            import torch.distributed as dist
            group_rank = dist.get_rank() if group_rank is None else group_rank
            num_replicas = (dist.get_world_size() if num_replicas is None
                            else num_replicas)
        self.global_rank = group_rank + num_replicas * replica_rank
        self.global_world_size = num_replicas * num_replica_groups
        super().__init__(dataset, rank=self.global_rank,
                         num_replicas=self.global_world_size, **kwargs)
