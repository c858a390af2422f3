"""UB staging of the GM accesses a tile does not cover (tile-for-target, scratchpad targets).

Tile staging (`ub_staging.py`) covers accesses whose innermost index walks a tile of the stage's
parallel axis. What is left reads or writes GM inside reductions, windows and gathers:

- a **run**: a load whose last index is the variable of the loop right around it (a reduction's
  contiguous axis), of a tensor the stage does not write. That loop is strip-mined by the run
  length R; before each strip the run `mem[..., r0:r0+R]` is copied GM->UB and the loads read it.
  The loop still visits the same elements in the same order: results are bitwise unchanged.
- an **element**: any other access (a per-row scalar, a column walk, a data-indexed gather, a
  scatter's read-modify-write) moves through a one-element UB slot right where it happens: a load is
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
    """Loads of one GM tensor at the same other indices whose last index walks `loop`."""

    mem: SSAValue
    loop: scf.ForOp
    fixed: tuple[SSAValue, ...]
    accesses: list[memref.LoadOp] = field(default_factory=list)
    buffer: UBBuffer | None = None


@dataclass
class Leftovers:
    """What tile staging left in one stage: runs, and accesses that move one element at a time."""

    runs: list[Run] = field(default_factory=list)
    elements: list[Operation] = field(default_factory=list)
    slots: dict[str, UBBuffer] = field(default_factory=dict)
    """One single-element slot per element type ("f32" -> its buffer)."""
    length: int = 0
    """R: the elements of every run."""

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
            fixed = tuple(op.indices)[:-1]
            key = (op.memref, loop, fixed)
            run = runs.get(key) or runs.setdefault(key, Run(op.memref, loop, fixed))
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
    if not indices or indices[-1] is not loop.body.block.args[0] or constant_index(loop.step) != 1:
        return False
    return all(defined_outside(v, loop) for v in indices[:-1])


def stage_runs(runs: list[Run], buffers: dict[int, SSAValue], length: int) -> None:
    """Strip-mine each run loop by `length` and copy every run of it into its UB buffer."""
    by_loop: dict[scf.ForOp, list[Run]] = {}
    for run in runs:
        by_loop.setdefault(run.loop, []).append(run)
    for loop, loop_runs in by_loop.items():
        parent = loop.parent_block()
        size = arith.ConstantOp(IntegerAttr(length, INDEX))
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
        for run in loop_runs:
            ub = buffers[id(run)]
            b.add(tg.CopyOp("gm_to_ub", run.mem, [*run.fixed, start], ub, [zero], count))
        loop.detach()
        loop.operands = [start, end, loop.step, *body.args[1:]]
        body.add_op(loop)
        b.add(scf.YieldOp(*loop.results))
        for run in loop_runs:
            ub = buffers[id(run)]
            for load in run.accesses:
                a = BlockBuilder(load.parent_block(), load)
                local = a.add(arith.SubiOp(load.indices[-1], start))
                new = memref.LoadOp.get(ub, [local])
                load.parent_block().insert_op_before(new, load)
                load.res.replace_all_uses_with(new.res)
                load.detach()
                load.erase()


def stage_elements(elements: list[Operation], slots: dict[str, SSAValue]) -> None:
    """Move each access through the one-element slot of its element type."""
    for access in elements:
        slot = slots[str(access.memref.type.element_type)]
        b = BlockBuilder(access.parent_block(), access)
        zero = b.index(0)
        one = b.index(1)
        indices = list(access.indices)
        if isinstance(access, memref.LoadOp):
            b.add(tg.CopyOp("gm_to_ub", access.memref, indices, slot, [zero], one))
            new = memref.LoadOp.get(slot, [zero])
            access.parent_block().insert_op_before(new, access)
            access.res.replace_all_uses_with(new.res)
        else:
            b.add(memref.StoreOp.get(access.value, slot, [zero]))
            after = access.next_op
            BlockBuilder(access.parent_block(), after).add(
                tg.CopyOp("ub_to_gm", slot, [zero], access.memref, indices, one))
        access.detach()
        access.erase()
