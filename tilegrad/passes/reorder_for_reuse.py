"""reorder-for-reuse: a tile of rows that every outer iteration re-reads stays in cache.

Logits of the fused linear cross-entropy are Σ_k x[i, k]·w[j, k]: for each row i the tile loop
over j streams all of w. When w is larger than the cache, every row i reads it again from memory
(or the last-level cache). Here the tile loop moves outside the parallel loop around it, and its
step is sized so that the rows a tile reads (tile x reduction extent elements) fill at most
`cache_bytes`: every i then reads the same tile of w from the core's own cache, as a GEMM's
cache blocking does. Only loops whose iterations are independent (parallel, tile) are reordered, so
each result is computed exactly as before. The cpu planner lists each move as `Reorder(stage,
order=(tile axis, outer axis))`; a Reorder in the loops' own order leaves them as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import LoopRole
from tilegrad.passes.applying import reordered
from tilegrad.passes.common import REDUCTION_ROLES, depends_on, enclosing_func, loop_axis, loop_role, stage_number
from tilegrad.schedule import Directive, Reorder

MIN_TILE = 16


def _reused_rows(outer: scf.ForOp, tile: scf.ForOp) -> tuple[SSAValue, memref.LoadOp] | None:
    """A reduction inside `tile` reading data that depends on the tile's points but not on `outer`'s
    variable (the rows every outer iteration re-reads): its extent and that load, else None."""
    i = outer.body.block.args[0]
    points = [o.body.block.args[0] for o in tile.walk() if isinstance(o, scf.ForOp) and o is not tile
              and loop_role(o) == LoopRole.PARALLEL]
    for reduction in tile.walk():
        if not (isinstance(reduction, scf.ForOp) and loop_role(reduction) in REDUCTION_ROLES):
            continue
        for load in (o for o in reduction.walk() if isinstance(o, memref.LoadOp)):
            if any(depends_on(x, i) for x in load.indices):
                continue
            if any(depends_on(x, j) for x in load.indices for j in points):
                return (reduction.ub, load) if loop_role(reduction) == LoopRole.REDUCE else None
    return None


def _reorder(outer: scf.ForOp, tile: scf.ForOp, extent: SSAValue, cache_bytes: int, element_bytes: int) -> None:
    """for i: {pre; for t step s: body(t, i)}  ->  for t step s': for i: {pre; body(t, i)}."""
    block = outer.parent_block()
    index = IndexType()
    budget = arith.ConstantOp(IntegerAttr(max(cache_bytes // element_bytes, 1), index))
    rows = arith.DivUIOp(budget, extent)
    least = arith.ConstantOp(IntegerAttr(MIN_TILE, index))
    step = arith.MaxSIOp(rows, least)
    block.insert_ops_before([budget, rows, least, step], outer)
    tile.step.replace_uses_with_if(step.result, lambda use: tile.is_ancestor(use.operation))
    rows.result.name_hint, step.result.name_hint = "fit", "reuse_tile"
    body = Block(arg_types=[index])
    tile.body.block.args[0].replace_all_uses_with(body.args[0])
    new_tile = scf.ForOp(tile.lb, tile.ub, step, [], Region([body]))
    new_tile.attributes.update(tile.attributes)
    stage = outer.attributes.pop("tg.stage", None)
    if stage is not None:
        new_tile.attributes["tg.stage"] = stage
    block.insert_op_before(new_tile, outer)
    outer.detach()
    body.add_ops([outer, scf.YieldOp()])
    for op in list(tile.body.block.ops):
        op.detach()
        if isinstance(op, scf.YieldOp):
            op.erase()
        else:
            tile.parent_block().insert_op_before(op, tile)
    tile.detach()
    tile.erase()


def _pairs(root: Operation) -> list[tuple[scf.ForOp, scf.ForOp]]:
    """Each parallel loop whose only loop is a tile loop, with that tile loop."""
    found = []
    for outer in [o for o in root.walk() if isinstance(o, scf.ForOp) and loop_role(o) == LoopRole.PARALLEL]:
        inner = [o for o in outer.body.block.ops if isinstance(o, scf.ForOp)]
        if len(inner) == 1 and loop_role(inner[0]) == LoopRole.TILE:
            found.append((outer, inner[0]))
    return found


def _moved_bounds(outer: scf.ForOp, tile: scf.ForOp) -> list[Operation]:
    """The tiler's constants among the tile loop's bounds, which move out with the loop."""
    return list(dict.fromkeys(b.owner for b in (tile.lb, tile.ub, tile.step)
                              if isinstance(b.owner, arith.ConstantOp) and b.owner.parent_op() is outer))


def reuse_reorders(root: Operation) -> list[tuple[Reorder, tuple[int, int], tuple[scf.ForOp, scf.ForOp, tuple]]]:
    """The tile loops reorder-for-reuse moves outside the parallel loop around them, each as (its
    Reorder: the tile loop's axis, then the parallel loop's; the order they have now; (parallel
    loop, tile loop, the re-read rows' extent and load)): its decision, which the cpu planner lists too."""
    found = []
    for outer, tile in _pairs(root):
        reused = _reused_rows(outer, tile)
        moved = _moved_bounds(outer, tile)
        if reused is None or any(outer.is_ancestor(v.owner) and v.owner not in moved
                                 for v in (tile.lb, tile.ub, tile.step, reused[0])):
            continue
        present = (loop_axis(outer), loop_axis(tile))
        found.append((Reorder(stage=stage_number(enclosing_func(outer)), order=present[::-1]), present,
                      (outer, tile, reused)))
    return found


@dataclass(frozen=True)
class ReorderForReuse(ModulePass):
    """Move tile loops whose data every outer iteration re-reads outside that loop, sized to
    `cache_bytes`; with `directives` (Reorder, printed, `;`-separated: passes/applying.py), the
    loops they name (the tile loop's axis and the parallel loop's): the tile loop outside moves it,
    the parallel loop outside leaves them as they are."""

    name = "reorder-for-reuse"
    cache_bytes: int = 1 << 18
    directives: str | None = None
    takes_text: ClassVar[str] = "Reorder"

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Reorder)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pairs = _pairs(op)
        moving = {outer: reused for outer, _, reused in
                  reordered(self, reuse_reorders(op), "tile loop re-read by every iteration of the loop around it")}
        for outer, tile in pairs:
            for constant in _moved_bounds(outer, tile):  # (whether or not the tile loop moves)
                constant.detach()
                outer.parent_block().insert_op_before(constant, outer)
            if outer in moving:
                extent, load = moving[outer]
                element_bytes = max(getattr(load.results[0].type, "bitwidth", 32) // 8, 1)
                _reorder(outer, tile, extent, self.cache_bytes, element_bytes)
