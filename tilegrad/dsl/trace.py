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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tilegrad.dsl.expr import Expr, Reduce, Var, as_expr, cast, subexpressions
from tilegrad.dsl.tensor import Buffer, index_vars, to_tensor_expr
from tilegrad.dtypes import dtype_of


@dataclass(eq=False)
class Compute:
    buffer: Buffer
    vars: tuple[Var, ...]
    value: Expr


@dataclass(eq=False)
class Scatter:
    buffer: Buffer
    domain: tuple[Expr, ...]
    vars: tuple[Var, ...]
    index: tuple[Expr, ...]
    value: Expr
    when: Expr | None
    message: str | None


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
        from tilegrad.dsl.expr import walk_reads

        written: set[str] = set()
        read: set[str] = set()
        for stage in self.stages:
            for expr in _stage_exprs(stage):
                read |= {name for name in walk_reads(expr) if name not in written}
            if not isinstance(stage, Check):
                written.add(stage.buffer.name)
        return read

    def float_sums(self) -> list[Reduce]:
        """Every float sum of the stages, once each, in stage order and each expression's pre-order
        (the same list for every trace of one specialization key)."""
        sums: dict[int, Reduce] = {}
        for stage in self.stages:
            for expr in _stage_exprs(stage):
                for e in subexpressions(expr):
                    if isinstance(e, Reduce) and e.combine == "sum" and e.kind == "f":
                        sums.setdefault(id(e), e)
        return list(sums.values())


def _stage_exprs(stage: Stage) -> list[Expr]:
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


def compute(buffer: Buffer, value) -> None:
    """buffer[i...] = value[i...] for every index of the buffer."""
    vars_ = index_vars(buffer.rank)
    tensor = to_tensor_expr(value)
    if tensor is not None:
        element = tensor.at(vars_[len(vars_) - tensor.rank:]) if tensor.rank else tensor.at(())
    elif callable(value):
        element = as_expr(value(*vars_))
    else:
        element = as_expr(value)
    current_trace().stages.append(Compute(buffer, vars_, element))


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
                    as_expr(value(*vars_)), cond, message)
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
