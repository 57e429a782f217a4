"""PyTorch's own distributed test suite (torch.testing._internal.
distributed.distributed_test, shipped in the wheel) against the "ftc"
backend: the harness PyTorch's test_distributed_spawn.py is for gloo and
nccl, with "ftc" registered (import ftc.torch) and added to the suite's
plugin, DDP and subgroup feature sets. Each test spawns WORLD_SIZE
processes (2 unless set) that rendezvous through file:// (the suite's
default: ftc serves the store). Passes only with no failure and at least
MIN_RAN tests run (not skipped), so a suite that skipped everything does
not pass; docs/python.md lists the skips and why."""
import os
import sys
import tempfile
import unittest

os.environ.setdefault("BACKEND", "ftc")
os.environ.setdefault("WORLD_SIZE", "2")
os.environ.setdefault("TEMP_DIR", tempfile.mkdtemp(prefix="ftc-dist-"))

import torch  # noqa: E402
import ftc.torch  # noqa: E402,F401  registers "ftc" (in spawned ranks too)
import torch.testing._internal.common_distributed as cd  # noqa: E402

for feature in ("plugin", "ddp", "subgroup"):
    cd.DistTestCases.backend_feature[feature].add("ftc")


# Three of the suite's skip decorators decide inside the spawned ranks,
# after two interpreters imported torch, on facts the parent knows: the
# accelerators and the world size. The same skips, with the same
# messages, decided before spawning (a third of the suite's time).
def _accelerators():
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _skip_if_lt_x_gpu(x, *, allow_cpu=False, _orig=cd.skip_if_lt_x_gpu):
    if _accelerators() < x and not allow_cpu and not (cd.TEST_HPU or
                                                      cd.TEST_XPU):
        return unittest.skip(cd.TEST_SKIPS[f"multi-gpu-{x}"].message)
    return _orig(x, allow_cpu=allow_cpu)


def _skip_if_no_gpu(func, _orig=cd.skip_if_no_gpu):
    if not (_accelerators() or cd.TEST_HPU or cd.TEST_XPU):
        return unittest.skip(cd.TEST_SKIPS["no_cuda"].message)(func)
    return _orig(func)


def _skip_if_small_worldsize(func, _orig=cd.skip_if_small_worldsize):
    if int(os.environ["WORLD_SIZE"]) < 8:  # never MPI here
        return unittest.skip(cd.TEST_SKIPS["small_worldsize"].message)(func)
    return _orig(func)


cd.skip_if_lt_x_gpu = _skip_if_lt_x_gpu
cd.skip_if_no_gpu = _skip_if_no_gpu
cd.skip_if_small_worldsize = _skip_if_small_worldsize

from torch.testing._internal.distributed.distributed_test import (  # noqa: E402,E501
    DistributedTest, TestDistBackend)

MIN_RAN = 60


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    ran = result.testsRun - len(result.skipped)
    print(f"torch distributed suite on ftc: {ran} ran, "
          f"{len(result.skipped)} skipped, {len(result.failures)} failed, "
          f"{len(result.errors)} errors")
    sys.exit(0 if result.wasSuccessful() and ran >= MIN_RAN else 1)
