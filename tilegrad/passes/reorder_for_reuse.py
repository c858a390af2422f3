"""reorder-for-reuse: a tile of rows that every outer iteration re-reads stays in cache.

Logits of the fused linear cross-entropy are Σ_k x[i, k]·w[j, k]: for each row i the tile loop
over j streams all of w. When w is larger than the cache, every row i reads it again from memory
(or the last-level cache). Here the tile loop moves outside the parallel loop around it, and its
step is sized so that the rows a tile reads (tile x reduction extent elements) fill at most
`cache_bytes`: every i then reads the same tile of w from the core's own cache, as a GEMM's
cache blocking does. Only loops whose iterations are independent (parallel, tile) are reordered, so
each result is computed exactly as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import LoopRole
from tilegrad.passes.common import REDUCTION_ROLES, depends_on, loop_role

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


def reorder_function(root: Operation, cache_bytes: int) -> None:
    for outer in [o for o in root.walk() if isinstance(o, scf.ForOp) and loop_role(o) == LoopRole.PARALLEL]:
        inner = [o for o in outer.body.block.ops if isinstance(o, scf.ForOp)]
        if len(inner) != 1 or loop_role(inner[0]) != LoopRole.TILE:
            continue
        tile = inner[0]
        reused = _reused_rows(outer, tile)
        for bound in (tile.lb, tile.ub, tile.step):  # the tiler's constants move out with the loop
            if isinstance(bound.owner, arith.ConstantOp) and bound.owner.parent_op() is outer:
                bound.owner.detach()
                outer.parent_block().insert_op_before(bound.owner, outer)
        if reused is None or any(outer.is_ancestor(v.owner) for v in (tile.lb, tile.ub, tile.step, reused[0])):
            continue
        element_bytes = max(getattr(reused[1].results[0].type, "bitwidth", 32) // 8, 1)
        _reorder(outer, tile, reused[0], cache_bytes, element_bytes)


@dataclass(frozen=True)
class ReorderForReuse(ModulePass):
    """Move tile loops whose data every outer iteration re-reads outside that loop, sized to
    `cache_bytes`."""

    name = "reorder-for-reuse"
    cache_bytes: int = 1 << 18

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        reorder_function(op, self.cache_bytes)
