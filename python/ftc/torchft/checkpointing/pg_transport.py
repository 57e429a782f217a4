"""torchft's PGTransport(pg, timeout, device): accepted; the Manager heals
over ftc's HTTP transfer, device tensors staged through host memory."""
from ftc.torchft.checkpointing._transport import CheckpointTransport


class PGTransport(CheckpointTransport):
    def __init__(self, pg=None, timeout=None, device="cpu", state_dict=None):
        super().__init__(*([timeout] if timeout is not None else []))
        self.pg = pg
        self.device = device
