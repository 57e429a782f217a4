"""torchft's own process-group tests on ftc: the MultiPgBaseTest of
torchft.process_group_test (shipped in the torchft-nightly wheel the venv
installs) with its _create_pg giving a torchft reconfigurable group whose
process group is ftc's torch.distributed backend (ftc.torch.
ProcessGroupFtc), 3 ranks on threads of this process as torchft runs
them. Every collective the suite has runs twice: plainly, and with
resiliency (the last rank shuts its group down; the others' next
collective must fail with a timeout or a closed connection instead of
hanging, and succeed again after a reconfigure). torchft's Gloo class
skips alltoall_base and the reduce_scatters, which Gloo lacks; ftc has
them, so none is skipped here. Each case's pass and fail is torchft's."""
import sys
import unittest
from datetime import timedelta

from parameterized import parameterized
from torchft import process_group_test as suite
from torchft.process_group import ProcessGroupWrapper

import ftc.torch


class ProcessGroupTorchftOnFtc(ProcessGroupWrapper):
    """torchft's reconfigurable group over an ftc group: each reconfigure
    builds a new one on the rendezvous store, under the communicator id
    every member agreed on (torchft's uuid)."""

    def _create_pg(self, store, rank, world_size):
        return ftc.torch.ProcessGroupFtc(store, rank, world_size,
                                         timeout=self._timeout,
                                         prefix=f"torchft/{self._uuid}")

    def getBackendName(self):
        return "torchft-ftc"


class FtcMultiPgTest(suite.MultiPgBaseTest):
    BACKEND = "ftc"
    WORLD_SIZE = 3

    @classmethod
    def _create_pg(cls, backend):
        return ProcessGroupTorchftOnFtc(timeout=timedelta(seconds=10))

    @parameterized.expand(suite._ALL_COLLECTIVES)
    def test_collective(self, collective):
        self._run_parallel(collective, device="cpu")

    @parameterized.expand(suite._ALL_COLLECTIVES)
    def test_collective_with_resiliency(self, collective):
        self._run_with_resiliency(collective, device="cpu")


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    ran = result.testsRun - len(result.skipped)
    # 11 collectives, each plain and with resiliency: all must run
    if result.wasSuccessful() and ran < 2 * len(suite._ALL_COLLECTIVES):
        print(f"FAIL: only {ran} of torchft's cases ran")
        sys.exit(1)
    sys.exit(0 if result.wasSuccessful() else 1)
