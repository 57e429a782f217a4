"""torchft's API on ftc: a torchft script changes only its imports.

    from ftc.torchft import (DistributedDataParallel, DistributedSampler,
                             Manager, Optimizer, ProcessGroupGloo)
    from ftc.torchft.checkpointing.pg_transport import PGTransport

The modules mirror torchft's paths (ftc.torchft.manager, .optim, .ddp,
.data, .process_group, .local_sgd, .checkpointing.pg_transport,
.checkpointing.http_transport). Underneath is ftc.Manager: quorums from
an ftc lighthouse, healing over ftc's checksummed HTTP (never pickle),
the cross-replica allreduce on an ftc process group. Where ftc's
semantics differ from torchft's, docs/python.md says how and
docs/decisions.md why."""
from ftc.torchft.data import DistributedSampler
from ftc.torchft.ddp import DistributedDataParallel
from ftc.torchft.manager import Manager, WorldSizeMode
from ftc.torchft.optim import OptimizerWrapper as Optimizer
from ftc.torchft.process_group import (
    ProcessGroupBabyGloo,
    ProcessGroupBabyNCCL,
    ProcessGroupBabyXCCL,
    ProcessGroupGloo,
    ProcessGroupNCCL,
    ProcessGroupXCCL,
)

__all__ = (
    "DistributedDataParallel",
    "DistributedSampler",
    "Manager",
    "Optimizer",
    "ProcessGroupBabyGloo",
    "ProcessGroupBabyNCCL",
    "ProcessGroupBabyXCCL",
    "ProcessGroupGloo",
    "ProcessGroupNCCL",
    "ProcessGroupXCCL",
    "WorldSizeMode",
)
