"""Tracing an op body into stages: the algorithm, with no schedule in it.

A body runs once per specialization (dtypes, ranks, attributes). What it records:
- `Compute`: every element of a buffer equals an expression of its index ("each output element
  equals ..."), like TVM's `te.compute`;
- `Scatter`: for every point of a domain, add a value into the buffer element the point picks,
  like a Halide update over an RDom (`out[idx[r], d] += grad[r, d]`);
- `Check`: a condition on every point of a domain, reported as an `IndexOutOfRangeError`.
"""

from __future__ import annotations

import contextvars
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from tilegrad.dsl.expr import Expr, Reduce, Var, as_expr, cast, subexpressions, user_line, walk_reads
from tilegrad.dsl.tensor import Buffer, index_vars, to_tensor_expr
from tilegrad.dtypes import dtype_of


@dataclass(eq=False)
class Compute:
    buffer: Buffer
    vars: tuple[Var, ...]
    value: Expr
    line: str | None = None
    """The op's source line that assigned the buffer (None: a value the body returned)."""


@dataclass(eq=False)
class Scatter:
    buffer: Buffer
    domain: tuple[Expr, ...]
    vars: tuple[Var, ...]
    index: tuple[Expr, ...]
    value: Expr
    when: Expr | None
    message: str | None
    line: str | None = None


@dataclass(eq=False)
class Check:
    domain: tuple[Expr, ...]
    vars: tuple[Var, ...]
    ok: Expr
    message: str


Stage = Compute | Scatter | Check


@dataclass
class Trace:
    stages: list[Stage] = field(default_factory=list)
    temps: list[Buffer] = field(default_factory=list)
    outputs: dict[str, Buffer] = field(default_factory=dict)
    requirements: list = field(default_factory=list)
    """Shape relations the body's broadcasts rely on (dsl/bounds.Requirement)."""

    def read_buffers(self) -> set[str]:
        """Names of the buffers any stage reads before the stage that first writes them."""
        written: set[str] = set()
        read: set[str] = set()
        for stage in self.stages:
            for expr in stage_exprs(stage):
                read |= {name for name in walk_reads(expr) if name not in written}
            if not isinstance(stage, Check):
                written.add(stage.buffer.name)
        return read

    def float_sums(self) -> list[Reduce]:
        """Every float sum of the stages, once each, in stage order and each expression's pre-order
        (the same list for every trace of one specialization key)."""
        sums: dict[int, Reduce] = {}
        for stage in self.stages:
            for expr in stage_exprs(stage):
                for e in subexpressions(expr):
                    if isinstance(e, Reduce) and e.combine == "sum" and e.kind == "f":
                        sums.setdefault(id(e), e)
        return list(sums.values())


def stage_exprs(stage: Stage) -> list[Expr]:
    if isinstance(stage, Compute):
        return [stage.value]
    if isinstance(stage, Scatter):
        return [stage.value, *stage.index, *([stage.when] if stage.when is not None else [])]
    return [stage.ok]


_current: contextvars.ContextVar[Trace] = contextvars.ContextVar("tilegrad_trace")


def current_trace() -> Trace:
    try:
        return _current.get()
    except LookupError:
        raise RuntimeError("tilegrad DSL calls are only valid inside an op body") from None


def active_trace() -> Trace | None:
    return _current.get(None)


def tracing(trace: Trace):
    return _current.set(trace)


def stop_tracing(token) -> None:
    _current.reset(token)


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


def compute(buffer: Buffer, value) -> None:
    """buffer[i...] = value[i...] for every index of the buffer."""
    line = user_line()
    vars_ = index_vars(buffer.rank)
    tensor = to_tensor_expr(value)
    if tensor is not None:
        element = tensor.at(vars_[len(vars_) - tensor.rank:]) if tensor.rank else tensor.at(())
    elif callable(value):
        element = as_expr(value(*vars_))
    else:
        element = as_expr(value)
    current_trace().stages.append(Compute(buffer, vars_, element, line))


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
