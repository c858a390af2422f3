"""UB staging of the GM accesses a tile does not cover (tile-for-target, scratchpad targets).

Tile staging (`ub_staging.py`) covers accesses whose innermost index walks a tile of the stage's
parallel axis. What is left reads or writes GM inside reductions, windows and gathers:

- a **run**: a load whose last index walks the loop right around it at unit slope: the loop's
  variable, or that plus or minus values the loop does not change, clamped by such values (a
  window's `x[.., o + k - p]`, a variable-extent reduction's `x[n, i + t]`, a flipped kernel's
  `w[.., 2 - k]`), of a tensor the stage does not write, its other indices unchanged by the loop.
  That loop is strip-mined by the run length R; before each strip the run the strip reads (the
  span between the index at the strip's first and last iteration: a monotone index of unit slope
  stays inside it, and it is at most R long) is copied GM->UB and the loads read it.
  The loop still visits the same elements in the same order: results are bitwise unchanged.
- an **element**: any other access (a per-row scalar, a data-indexed gather, a scatter's
  read-modify-write) moves through a one-element UB slot right where it happens: a load is
  `copy gm->slot; load slot`, a store is `store slot; copy slot->gm`, in the same block as the
  access, so it runs under the same conditions and in the same order as before.

After both, a tiled kernel on a scratchpad target has no direct GM load or store.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation, SSAValue

from tilegrad.dialect import tg
from tilegrad.dialect.tg import LoopRole
from tilegrad.dialect.values import INDEX, BlockBuilder
from tilegrad.passes.common import constant_index, loop_axis, loop_role, make_for, viewed, written_memrefs
from tilegrad.passes.tiling_plan import UBBuffer
from tilegrad.passes.ub_staging import defined_outside


@dataclass
class Run:
    """Loads of one GM tensor at the same indices whose last index walks `loop` at unit slope."""

    mem: SSAValue
    loop: scf.ForOp
    fixed: tuple[SSAValue, ...]
    last: SSAValue
    """The last index: the loop's variable, or a unit-slope monotone function of it."""
    accesses: list[memref.LoadOp] = field(default_factory=list)
    buffer: UBBuffer | None = None
    length: int = 0
    """R of its loop: the elements of the run buffer."""


@dataclass
class Leftovers:
    """What tile staging left in one stage: runs, and accesses that move one element at a time."""

    runs: list[Run] = field(default_factory=list)
    elements: list[Operation] = field(default_factory=list)
    slots: dict[str, UBBuffer] = field(default_factory=dict)
    """One single-element slot per element type ("f32" -> its buffer)."""

    @property
    def buffers(self) -> list[UBBuffer]:
        return [r.buffer for r in self.runs if r.buffer is not None] + list(self.slots.values())


def find_leftovers(nest: Operation, gm: set[SSAValue], covered: set[Operation],
                   points: set[scf.ForOp]) -> Leftovers:
    """Classify the GM accesses of a stage that no tile group covers into runs and elements."""
    written = written_memrefs(nest)
    runs: dict[tuple, Run] = {}
    left = Leftovers()
    for op in nest.walk():
        if not isinstance(op, (memref.LoadOp, memref.StoreOp)) or op.memref not in gm or op in covered:
            continue
        loop = op.parent_op()
        if isinstance(op, memref.LoadOp) and viewed(op.memref) not in written and _walks_run(op, loop, points):
            fixed, last = tuple(op.indices)[:-1], op.indices[-1]
            key = (op.memref, loop, fixed, last)
            run = runs.get(key) or runs.setdefault(key, Run(op.memref, loop, fixed, last))
            run.accesses.append(op)
        else:
            left.elements.append(op)
    left.runs = list(runs.values())
    return left


def _walks_run(load: memref.LoadOp, loop: Operation | None, points: set[scf.ForOp]) -> bool:
    if (not isinstance(loop, scf.ForOp) or loop in points
            or loop_role(loop) in (LoopRole.TILE, LoopRole.COPY, LoopRole.RUN)):
        return False
    indices = list(load.indices)
    if not indices or constant_index(loop.step) != 1:
        return False
    iv = loop.body.block.args[0]
    return _unit_slope(indices[-1], iv, loop) and all(_invariant(v, iv, loop) for v in indices[:-1])


_PURE = (arith.ConstantOp, arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.MinSIOp, arith.MaxSIOp,
         arith.DivUIOp, arith.DivSIOp, arith.RemUIOp, arith.RemSIOp)


def _inside(value: SSAValue, loop: scf.ForOp) -> Operation | None:
    """The op in the loop's own body that defines `value`, None if it is defined outside the loop."""
    owner = value.owner
    return owner if isinstance(owner, Operation) and owner.parent_op() is loop else None


def _invariant(value: SSAValue, iv: SSAValue, loop: scf.ForOp) -> bool:
    """Defined outside the loop, or by index arithmetic in its body of such values."""
    if defined_outside(value, loop):
        return True
    op = _inside(value, loop)
    return isinstance(op, _PURE) and all(_invariant(v, iv, loop) for v in op.operands)


def _unit_slope(value: SSAValue, iv: SSAValue, loop: scf.ForOp) -> bool:
    """`value` is iv, or iv plus or minus loop-invariant values, clamped (min, max) by such values:
    monotone in iv, and never more than one apart for consecutive iv."""
    if value is iv:
        return True
    op = _inside(value, loop)
    if not isinstance(op, (arith.AddiOp, arith.SubiOp, arith.MinSIOp, arith.MaxSIOp)):
        return False
    a, b = op.operands  # one side walks, the other does not change (inv - iv walks backwards)
    return (_unit_slope(a, iv, loop) and _invariant(b, iv, loop)) or (
        _unit_slope(b, iv, loop) and _invariant(a, iv, loop))


def _clone_at(values: list[SSAValue], loop: scf.ForOp, b: BlockBuilder, mapping: dict[SSAValue, SSAValue]) -> list:
    """The values as `b` computes them: the ops of the loop's body they come from are cloned there,
    with `mapping` (the loop variable -> a value at the builder) applied."""

    def value(v: SSAValue) -> SSAValue:
        if v in mapping:
            return mapping[v]
        op = _inside(v, loop)
        if op is None:
            return v
        clone = op.clone(value_mapper={o: value(o) for o in op.operands})
        b.add(clone)
        mapping[v] = clone.results[0]
        return mapping[v]

    return [value(v) for v in values]


def stage_runs(runs: list[Run], buffers: dict[int, SSAValue]) -> list[tg.CopyOp]:
    """Strip-mine each run loop by its runs' length and copy every run of it into its UB buffer.
    The copies built."""
    by_loop: dict[scf.ForOp, list[Run]] = {}
    built: list[tg.CopyOp] = []
    for run in runs:
        by_loop.setdefault(run.loop, []).append(run)
    for loop, loop_runs in by_loop.items():
        parent = loop.parent_block()
        size = arith.ConstantOp(IntegerAttr(loop_runs[0].length, INDEX))
        parent.insert_op_before(size, loop)
        axis = loop_axis(loop)
        strip, body = make_for(loop.lb, loop.ub, size.result, LoopRole.RUN, axis, list(loop.iter_args))
        parent.insert_op_before(strip, loop)
        if "tg.stage" in loop.attributes:  # the stage's outer loop: the strip is the stage now
            strip.attributes["tg.stage"] = loop.attributes.pop("tg.stage")
        for old, new in zip(loop.results, strip.results):
            old.replace_all_uses_with(new)
        start = body.args[0]
        b = BlockBuilder(body)
        end = b.add(arith.MinSIOp(b.add(arith.AddiOp(start, size.result)), loop.ub))
        count = b.add(arith.SubiOp(end, start))
        zero = b.index(0)
        iv = loop.body.block.args[0]
        firsts: dict[int, SSAValue] = {}
        for run in loop_runs:
            ub = buffers[id(run)]
            fixed = _clone_at(list(run.fixed), loop, b, {})
            if run.last is iv:  # the plain run: [start, end)
                first, length = start, count
            else:  # the span between the index at the strip's first and last iteration
                at_start = _clone_at([run.last], loop, b, {iv: start})[0]
                at_end = _clone_at([run.last], loop, b, {iv: b.add(arith.SubiOp(end, b.index(1)))})[0]
                first = b.add(arith.MinSIOp(at_start, at_end))
                length = b.add(arith.AddiOp(b.add(arith.SubiOp(b.add(arith.MaxSIOp(at_start, at_end)), first)),
                                            b.index(1)))
            firsts[id(run)] = first
            copy = tg.CopyOp("gm_to_ub", run.mem, [*fixed, first], ub, [zero], length)
            b.add(copy)
            built.append(copy)
        loop.detach()
        loop.operands = [start, end, loop.step, *body.args[1:]]
        body.add_op(loop)
        b.add(scf.YieldOp(*loop.results))
        for run in loop_runs:
            ub = buffers[id(run)]
            for load in run.accesses:
                a = BlockBuilder(load.parent_block(), load)
                local = a.add(arith.SubiOp(load.indices[-1], firsts[id(run)]))
                new = memref.LoadOp.get(ub, [local])
                load.parent_block().insert_op_before(new, load)
                load.res.replace_all_uses_with(new.res)
                load.detach()
                load.erase()
    return built


def stage_elements(elements: list[Operation], slots: dict[str, SSAValue]) -> list[tg.CopyOp]:
    """Move each access through the one-element slot of its element type. The copies built."""
    built: list[tg.CopyOp] = []
    for access in elements:
        slot = slots[str(access.memref.type.element_type)]
        b = BlockBuilder(access.parent_block(), access)
        zero = b.index(0)
        one = b.index(1)
        indices = list(access.indices)
        if isinstance(access, memref.LoadOp):
            copy = tg.CopyOp("gm_to_ub", access.memref, indices, slot, [zero], one)
            b.add(copy)
            new = memref.LoadOp.get(slot, [zero])
            access.parent_block().insert_op_before(new, access)
            access.res.replace_all_uses_with(new.res)
        else:
            b.add(memref.StoreOp.get(access.value, slot, [zero]))
            after = access.next_op
            copy = tg.CopyOp("ub_to_gm", slot, [zero], access.memref, indices, one)
            BlockBuilder(access.parent_block(), after).add(copy)
        built.append(copy)
        access.detach()
        access.erase()
    return built
