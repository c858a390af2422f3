"""hoist-tile-loops: a tile loop that is all a parallel loop's body holds moves outside it.

    for r in rows:                     for t in tiles (step T):
      for t in tiles (step T):   ->      for r in rows:
        body(r, t)                         body(r, t)

tile-for-target strips a row into tiles of a cache-sized number of columns, inside the loop over
rows. A row shorter than a tile (a pooling plane's 56 columns against tiles of 13104) then runs
a one-trip tile loop per row, and everything the passes after it compute from the tile's bounds
(where the stride phases start, where the clamps stop biting, whether the vector tail overlaps)
is computed again for every row, since LLVM does not know the tile loop runs once. With the tile
loop outside, those values are the same for every row, and LLVM computes them once per tile.
The iterations are independent (both loops are parallel), so the order is free; the tile's bounds
come from outside the row loop, which holds nothing else.

This is a decision, not a canonicalization: where a row spans several tiles the two orders walk the
data differently (each tile for every row before the next tile, against each row whole), so the cpu
planner lists it as `Reorder(stage, order=(tile axis, row axis))`, and a Reorder in the loops' own
order leaves them as they are (the `directives` option, passes/applying.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import LoopRole
from tilegrad.passes.applying import reordered
from tilegrad.passes.common import enclosing_func, loop_axis, loop_role, stage_number
from tilegrad.schedule import Directive, Reorder


def _only_loop(loop: scf.ForOp) -> scf.ForOp | None:
    ops = list(loop.body.block.ops)
    if len(ops) == 2 and isinstance(ops[0], scf.ForOp) and isinstance(ops[1], scf.YieldOp):
        return ops[0]
    return None


def hoisted(module: Operation) -> list[tuple[Reorder, tuple[int, int], scf.ForOp]]:
    """The parallel loops hoist-tile-loops moves inside the tile loop that is all their body holds,
    each as (its Reorder: the tile loop's axis, then the parallel loop's; the order they have now;
    the parallel loop): its decision, which the cpu planner lists too."""
    found = []
    for outer in [o for o in module.walk() if isinstance(o, scf.ForOp)]:
        tile = _only_loop(outer)
        if tile is None or loop_role(tile) != LoopRole.TILE or loop_role(outer) != LoopRole.PARALLEL \
                or outer.results or tile.results or "tg.stage" in outer.attributes:
            continue
        present = (loop_axis(outer), loop_axis(tile))
        found.append((Reorder(stage=stage_number(enclosing_func(outer)), order=present[::-1]), present, outer))
    return found


def _hoist(outer: scf.ForOp) -> None:
    tile = _only_loop(outer)
    rows, tiles = outer.body.block, tile.body.block
    tile.detach()
    rows_yield = rows.last_op
    for op in list(tiles.ops):
        op.detach()
        rows.insert_op_before(op, rows_yield)
    rows_yield.detach()
    rows_yield.erase()
    outer.parent_block().insert_op_before(tile, outer)
    outer.detach()
    tiles.add_ops([outer, scf.YieldOp()])


@dataclass(frozen=True)
class HoistTileLoops(ModulePass):
    """Move a tile loop out of the parallel loop whose whole body it is; with `directives` (Reorder,
    printed, `;`-separated: passes/applying.py), the loops they name (the tile loop's axis and the
    parallel loop's): the tile loop outside hoists it, the parallel loop outside leaves them as they are."""

    name = "hoist-tile-loops"
    directives: str | None = None
    takes_text: ClassVar[str] = "Reorder"

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Reorder)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for loop in reordered(self, hoisted(op), "parallel loop holding only a tile loop"):
            _hoist(loop)
