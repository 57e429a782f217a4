"""What torchft's transports share here: their arguments, kept; the
transfer is ftc's heal (see ftc.torchft.checkpointing)."""
from datetime import timedelta


class CheckpointTransport:
    def __init__(self, timeout=timedelta(seconds=60)):
        if not isinstance(timeout, timedelta):
            timeout = timedelta(seconds=timeout)
        self.timeout = timeout

    def shutdown(self, wait=True):
        """Nothing to stop: the heal server belongs to the Manager."""
