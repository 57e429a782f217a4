"""torchft's HTTPTransport(timeout, num_chunks): accepted; ftc's heal
chunks and stripes its transfer itself."""
from ftc.torchft.checkpointing._transport import CheckpointTransport


class HTTPTransport(CheckpointTransport):
    def __init__(self, timeout=None, num_chunks=0, state_dict=None):
        super().__init__(*([timeout] if timeout is not None else []))
        self.num_chunks = num_chunks
