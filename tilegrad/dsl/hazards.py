"""Traces whose result would depend on the loop order, or on memory no stage wrote: refused at definition.

A stage computes every element of its buffer (or adds every point of a scatter) in whatever order
the target's schedule picks: split over cores, tiled through UB, vectorized. So a stage may read
the buffer it writes only at the element it is writing (`out[i] = out[i] * 2`, the prior value of
a blended output), or as a scan: along one axis, only at elements before the one it writes
(`acc[n, d] = x[n, d] + acc[n, d - 1]`) or only after it (`acc[n, d + 1]`), which the compiler then
walks in that order, rows in parallel (passes/scan_reductions.py). Any other read at another
element (`acc[n + 1, d - 1]`, or both `acc[n, d - 1]` and `acc[n, d + 1]`) sees that element
before or after its own write depending on the schedule, and a scatter that reads its
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
        scan = _scan_axis(stage) if isinstance(stage, Compute) else None
        for read in _reads(stage):
            if scan is not None and read.buffer.name == target and read.buffer is stage.buffer:
                continue  # a scan: an element the steps before wrote (passes/scan_reductions.py)
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
            f"wrote instead (tg.cumsum and tg.scan are scans of another buffer)")
    if _same_element(read, stage):
        return
    written = f"{target}[{', '.join(v.name for v in stage.vars)}]"
    raise DefinitionError(
        f"{op}: {at}: the stage that writes {written} reads {describe_read(read)}{alias}: "
        f"another element of the buffer it is writing, and not as a scan does, so the result would depend on the "
        f"order the elements are computed in. A stage may read its own buffer at the element it writes, or as a "
        f"scan along one axis: every other element it reads is that axis's index minus a constant "
        f"({target}[n, i - 1], walked up) or every one plus a constant ({target}[n, i + 1], walked down), the "
        f"other indices its own (tg.cumsum and tg.scan state the common scans); read values an earlier stage "
        f"wrote instead")


def _scan_axis(stage: Compute) -> tuple[int, int] | None:
    """(axis, sign) if every read of the stage's own buffer at another element is at its own index on
    every axis but one, and on that one its index plus a constant of one sign: a scan along it."""
    found: set[tuple[int, int]] = set()
    for read in _reads(stage):
        if read.buffer is not stage.buffer or _same_element(read, stage):
            continue
        moved = [(axis, _constant_offset(index, var))
                 for axis, (index, var) in enumerate(zip(read.indices, stage.vars)) if index is not var]
        if len(moved) != 1 or moved[0][1] is None:
            return None
        found.add((moved[0][0], 1 if moved[0][1] > 0 else -1))
    return found.pop() if len(found) == 1 else None


def _constant_offset(index: Expr, var: Var) -> int | None:
    """c for `var + c` or `var - c` (c a nonzero integer constant), else None."""
    if isinstance(index, BinOp) and index.op in ("add", "sub") and index.a is var and isinstance(index.b, Const) \
            and index.b.kind == "i" and index.b.value != 0:
        return index.b.value if index.op == "add" else -index.b.value
    return None


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
