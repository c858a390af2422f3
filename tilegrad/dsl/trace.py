"""The stages an op body writes besides a buffer's `assign` (tensor.py): `tg.scatter_add`, `tg.check`,
the buffers `tg.temp` and `tg.output`; and the recursion limit tracing and emitting need.

What a trace records, and which trace is being recorded, is record.py's.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from tilegrad.dsl.expr import as_expr, cast, user_line
from tilegrad.dsl.record import Check, Scatter, current_trace
from tilegrad.dsl.tensor import Buffer, index_vars
from tilegrad.dtypes import dtype_of

DEEP_RECURSION_LIMIT = 20_000
"""Python's recursion limit while an op is traced and emitted. An expression is as deep as the
chain of operations that built it (`for _ in range(500): y = y * 2 + 1` is 1000 levels), and
tracing and emitting walk it recursively: Python's default limit of 1000 stops near 300 chained
operations. From Python 3.11 on, Python-to-Python calls use no C stack, so a higher limit cannot
overflow it; on 3.10 the limit stays as it is."""

_deep_lock = threading.Lock()
_deep_users = 0
_deep_saved = 0


@contextmanager
def deep_recursion() -> Iterator[None]:
    """Raise the recursion limit to DEEP_RECURSION_LIMIT (never lower it) while any thread traces
    or emits an op; the last one out restores it."""
    global _deep_users, _deep_saved
    if sys.version_info < (3, 11):
        yield
        return
    with _deep_lock:
        if _deep_users == 0:
            _deep_saved = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_deep_saved, DEEP_RECURSION_LIMIT))
        _deep_users += 1
    try:
        yield
    finally:
        with _deep_lock:
            _deep_users -= 1
            if _deep_users == 0:
                sys.setrecursionlimit(_deep_saved)


def too_deep(op: str, where: str | None = None) -> str:
    """The message for an op whose expressions nest beyond the recursion limit."""
    at = f" ({where})" if where else ""
    limit = max(sys.getrecursionlimit(), DEEP_RECURSION_LIMIT if sys.version_info >= (3, 11) else 0)
    return (f"{op}: an expression of the op nests too deeply to compile{at}: Python's recursion limit "
            f"({limit}) allows about {limit // 3} chained operations in one element; assign part of the "
            f"chain to a tg.temp, so each stage holds a shorter one")


def scatter_add(
    buffer: Buffer,
    domain: Sequence,
    index: Callable[..., Sequence],
    value: Callable[..., object],
    when: Callable[..., object] | None = None,
    message: str | None = "index out of range",
) -> None:
    """For every point r of `domain`: buffer[index(r)] += value(r), where `when(r)` holds.

    Every computed index is checked against the buffer's extent and never writes out of bounds:
    out of range, it raises `IndexOutOfRangeError(message)`, or with `message=None` the point
    is skipped (a sampler's "zero outside").
    """
    vars_ = index_vars(len(domain), "r")
    picked = tuple(cast(as_expr(i), "i") for i in index(*vars_))
    if len(picked) != buffer.rank:
        raise ValueError(f"scatter into {buffer.name} needs {buffer.rank} indices, got {len(picked)}")
    cond = cast(as_expr(when(*vars_)), "b") if when is not None else None
    stage = Scatter(buffer, tuple(as_expr(d) for d in domain), vars_, picked,
                    as_expr(value(*vars_)), cond, message, user_line())
    current_trace().stages.append(stage)


def check(domain: Sequence, ok: Callable[..., object], message: str) -> None:
    """Raise `IndexOutOfRangeError(message)` at run time unless ok(r) holds for all r in domain."""
    vars_ = index_vars(len(domain), "r")
    stage = Check(tuple(as_expr(d) for d in domain), vars_, cast(as_expr(ok(*vars_)), "b"), message)
    current_trace().stages.append(stage)


def temp(name: str, shape: Sequence, dtype: str = "compute") -> Buffer:
    """A temporary buffer the op writes and reads; the tiler places it in UB or the workspace.
    dtype "compute" is the op's float compute type (float64 when an output is, else float32)."""
    trace = current_trace()
    if dtype == "compute":
        dtype = "float64" if any(b.dtype.name == "float64" for b in trace.outputs.values()) else "float32"
    buffer = Buffer(name, shape, dtype_of(dtype), "temp")
    trace.temps.append(buffer)
    return buffer


def output(name: str) -> Buffer:
    """The op's declared output `name`, to write stage by stage."""
    trace = current_trace()
    if name not in trace.outputs:
        raise KeyError(f"op has no output {name!r}; it declares {', '.join(trace.outputs)}")
    return trace.outputs[name]
