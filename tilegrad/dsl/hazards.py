"""Traces whose result would depend on the loop order, or on memory no stage wrote: refused at definition.

A stage computes every element of its buffer (or adds every point of a scatter) in whatever order
the target's schedule picks: split over cores, tiled through UB, vectorized. So a stage may read
the buffer it writes only at the element it is writing (`out[i] = out[i] * 2`, the prior value of
a blended output); a read at another element (`acc[n, d] = x[n, d] + acc[n, d + 1]`, a scan) sees
that element before or after its own write depending on the schedule, and a scatter that reads its
destination anywhere depends on the order its points add in. An output declared in place of an
input (`in_place={"dx": "dy"}`) may be that input, so the input counts as the output once the
output is written. A temporary starts as uninitialised memory: it must be assigned before any
stage reads it or a scatter adds into it, and a scatter into an output needs it filled first.
"""

from __future__ import annotations

from tilegrad.dsl.expr import BinOp, Cast, Const, Dim, Expr, Param, Read, Var, subexpressions
from tilegrad.dsl.record import Check, Compute, Scatter, Stage, Trace, stage_exprs
from tilegrad.errors import DefinitionError


def refuse_hazards(op: str, trace: Trace, in_place: dict[str, str], where: str) -> None:
    """Raise DefinitionError naming the op, the source line and the buffer for the first stage
    that reads what it writes at another element, reads a temporary no earlier stage wrote, or
    scatters into a buffer no earlier stage filled. `where` is the op's own location, for stages
    made from a value the body returned."""
    may_be = {source: output for output, source in in_place.items()}  # input -> the output it may be
    written: set[str] = set()
    for stage in trace.stages:
        target = None if isinstance(stage, Check) else stage.buffer.name
        for read in _reads(stage):
            name = read.buffer.name
            line = read.line or getattr(stage, "line", None) or where
            if target is not None and target in (name, may_be.get(name)):
                _refuse_own_read(op, stage, read, line)
            elif may_be.get(name) in written:
                raise DefinitionError(
                    f"{op}: {line}: {name} is read after a stage wrote {may_be[name]}, which is declared in place of "
                    f"{name} (in_place={{{may_be[name]!r}: {name!r}}}): called in place, the read would see "
                    f"{may_be[name]}'s values. Read {name} before the stage that writes {may_be[name]}, or keep "
                    f"what you need in a tg.temp")
            if getattr(read.buffer, "role", None) == "temp" and name not in written:
                raise DefinitionError(
                    f"{op}: {line}: temporary {name} is read before any stage writes it, so it would read "
                    f"uninitialised memory; assign it first ({name}.assign(...) or {name}.fill(0))")
        if isinstance(stage, Scatter) and getattr(stage.buffer, "role", None) in ("temp", "output") \
                and target not in written:
            kind = "temporary" if stage.buffer.role == "temp" else "output"
            raise DefinitionError(
                f"{op}: {stage.line or where}: scatter_add into {kind} {target} adds to elements no earlier stage "
                f"wrote (uninitialised memory); fill it first: {_spelled(stage.buffer)}.fill(0)")
        if target is not None:
            written.add(target)


def _refuse_own_read(op: str, stage: Stage, read: Read, line: str) -> None:
    """A read of the buffer `stage` writes (or of the input it may be in place of)."""
    name, target = read.buffer.name, stage.buffer.name
    alias = f" ({target} is declared in place of {name}, so it may be {name})" if name != target else ""
    at = line if stage.line in (None, line) else f"{line}, in the stage of {stage.line}"
    if isinstance(stage, Scatter):
        raise DefinitionError(
            f"{op}: {at}: the scatter_add into {target} reads {describe_read(read)}{alias}: "
            f"each point's value would depend on the order the points add in. Read a buffer an earlier stage "
            f"wrote instead (tilegrad has no scan primitive yet)")
    if _same_element(read, stage):
        return
    written = f"{target}[{', '.join(v.name for v in stage.vars)}]"
    raise DefinitionError(
        f"{op}: {at}: the stage that writes {written} reads {describe_read(read)}{alias}: "
        f"another element of the buffer it is writing, so the result would depend on the order the elements are "
        f"computed in (a scan). A stage may read its own buffer only at the element it writes; read values an "
        f"earlier stage wrote instead (tilegrad has no scan primitive yet)")


def _same_element(read: Read, stage: Compute) -> bool:
    """Each index is the stage's own loop variable for that axis (or 0 on an axis of size 1)."""
    return all(index is var or (_is_int(index, 0) and _is_int(size, 1))
               for index, var, size in zip(read.indices, stage.vars, stage.buffer.shape))


def _is_int(e: Expr, value: int) -> bool:
    return isinstance(e, Const) and e.kind == "i" and e.value == value


def _reads(stage: Stage) -> list[Read]:
    return [e for expr in stage_exprs(stage) for e in subexpressions(expr) if isinstance(e, Read)]


def _spelled(buffer) -> str:
    return f"tg.output({buffer.name!r})" if buffer.role == "output" else buffer.name


_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "div": "/", "mod": "%"}


def describe_read(read: Read) -> str:
    """`acc[i0, i1 + 1]`: the read as the stage's variables name its indices."""
    return f"{read.buffer.name}[{', '.join(_index(i) for i in read.indices)}]"


def _index(e: Expr, depth: int = 0) -> str:
    match e:
        case Var():
            return e.name
        case Const():
            return str(e.value)
        case Dim():
            return f"{e.tensor}.shape[{e.axis}]"
        case Param():
            return e.name
        case Read():
            return describe_read(e)
        case Cast():
            return _index(e.a, depth)
        case BinOp() if e.op in _SYMBOLS:
            text = f"{_index(e.a, depth + 1)} {_SYMBOLS[e.op]} {_index(e.b, depth + 1)}"
            return f"({text})" if depth else text
    return "..."
