"""Completing torch futures from a background thread, safely at exit.

A daemon thread caught by interpreter finalization inside a future's
set_result dies in PyTorch's C++ (a GIL taken in a noexcept destructor:
"terminate called without an active exception"). Every completion thread
of the package (ftc.torch's, ftc.torchft's) runs each completion through
run(); at exit, before finalization, stop() waits until none is running
and lets none start."""
import atexit
import threading

_busy = threading.Lock()
_stopping = False


def run(complete):
    """Runs complete() unless the interpreter is exiting; False then, and
    the calling thread should end."""
    with _busy:
        if _stopping:
            return False
        complete()
        return True


def stop():
    """Bounded: a completion stuck for 30 s is left to its fate."""
    global _stopping
    idle = _busy.acquire(timeout=30)
    _stopping = True
    if idle:
        _busy.release()


atexit.register(stop)
