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

import ftc.torch  # noqa: E402,F401  registers "ftc" (in spawned ranks too)
from torch.testing._internal.common_distributed import \
    DistTestCases  # noqa: E402

for feature in ("plugin", "ddp", "subgroup"):
    DistTestCases.backend_feature[feature].add("ftc")

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
