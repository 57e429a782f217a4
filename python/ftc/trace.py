"""Marks of the trainer's own phases in ftc's trace.

With ``FTC_TRACE=PATH`` in the environment (``ftc run --trace DIR`` sets
it for every rank), libftc records every collective, quorum round, heal
and commit vote into a Chrome/Perfetto trace-event file written at exit;
these calls add the trainer's compute phases to it, so the file shows
communication overlapping computation::

    with ftc.trace("backward"):
        loss.backward()

Without ``FTC_TRACE`` every call returns at once. Spans are per thread
and nest; ``trace_step(n)`` tags the events that follow with step n.
"""
import contextlib

from ftc import _ftc

trace_enabled = _ftc.trace_enabled
trace_begin = _ftc.trace_begin
trace_end = _ftc.trace_end
trace_step = _ftc.trace_set_step
trace_flush = _ftc.trace_flush


@contextlib.contextmanager
def trace(name):
    """A span named name around the with block (closed on an exception
    too)."""
    trace_begin(name)
    try:
        yield
    finally:
        trace_end(name)
