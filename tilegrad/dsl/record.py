"""What tracing an op body records, and which trace is being recorded: the algorithm, with no schedule in it.

A body runs once per specialization (dtypes, ranks, attributes). What it records:
- `Compute`: every element of a buffer equals an expression of its index ("each output element
  equals ..."), like TVM's `te.compute`;
- `Scatter`: for every point of a domain, add a value into the buffer element the point picks,
  like a Halide update over an RDom (`out[idx[r], d] += grad[r, d]`);
- `Check`: a condition on every point of a domain, reported as an `IndexOutOfRangeError`.

This module sits below the tensors (tensor.py), whose `assign` records a `Compute` into the current
trace, and below the functions that record the other stages (trace.py).
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field

from tilegrad.dsl.expr import Expr, Reduce, Var, subexpressions, walk_reads


@dataclass(eq=False)
class Compute:
    buffer: object  # the Buffer (or updated TensorArg) written: dsl/tensor.py, above this module
    vars: tuple[Var, ...]
    value: Expr
    line: str | None = None
    """The op's source line that assigned the buffer (None: a value the body returned)."""


@dataclass(eq=False)
class Scatter:
    buffer: object  # a Buffer, as Compute's
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
    temps: list = field(default_factory=list)  # of Buffer
    outputs: dict = field(default_factory=dict)  # name -> Buffer
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
