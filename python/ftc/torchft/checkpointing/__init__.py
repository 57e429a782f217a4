"""torchft's checkpoint transports, accepted: ftc heals over its own
checksummed HTTP (typed buffers and a JSON skeleton, never pickle)."""
from ftc.torchft.checkpointing.http_transport import HTTPTransport
from ftc.torchft.checkpointing.pg_transport import PGTransport

__all__ = ("HTTPTransport", "PGTransport")
