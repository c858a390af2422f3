"""unroll-short-parallel-loops: sums that differ only by a short constant axis sweep their data once.

A sampler's dgrid[n, h, w, axis] is, for axis 0 and 1, a sum over the channels of the same four
corners of x times a different slope; a grid generator's dθ[n, i, j] sums the same dgrid elements
for j = 0, 1, 2. As a loop over that axis around the sum, every value of it reads all the terms
again. Unrolled here, the copies of the sum are siblings over the same range, which
fuse-sibling-reductions makes one loop carrying an accumulator per copy; the loads and the
arithmetic the copies share are then computed once (LLVM's GVN). Each sum still adds its own
terms in the same order: results are bitwise unchanged.

Only an innermost parallel loop inside a stage (never the stage's own nest), with constant bounds
of at most MAX_TRIPS trips and a reduction in its body, is unrolled.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import LoopRole
from tilegrad.passes.common import constant_index, copy_iteration, loop_role

MAX_TRIPS = 4


def _is_short_axis_around_sums(loop: scf.ForOp) -> bool:
    if loop_role(loop) != LoopRole.PARALLEL or "tg.stage" in loop.attributes or loop.iter_args:
        return False
    bounds = [constant_index(v) for v in (loop.lb, loop.ub, loop.step)]
    if None in bounds or bounds[2] <= 0 or len(range(*bounds)) > MAX_TRIPS:
        return False
    inner: list[Operation] = [o for o in loop.body.walk() if o is not loop]
    if any(isinstance(o, scf.ForOp) and loop_role(o) == LoopRole.PARALLEL for o in inner):
        return False
    return any(isinstance(o, scf.ForOp) and loop_role(o) == LoopRole.REDUCE for o in inner)


def _unroll(loop: scf.ForOp) -> None:
    block = loop.parent_block()
    lb, ub, step = (constant_index(v) for v in (loop.lb, loop.ub, loop.step))
    copies = Block()
    for at in range(lb, ub, step):
        value = arith.ConstantOp(IntegerAttr(at, IndexType()))
        copies.add_op(value)
        copy_iteration(loop, copies, value.result)
    for op in list(copies.ops):
        op.detach()
        block.insert_op_before(op, loop)
    loop.detach()
    loop.erase()


@dataclass(frozen=True)
class UnrollShortParallelLoops(ModulePass):
    """Fully unroll innermost parallel loops of a few constant trips around a reduction."""

    name = "unroll-short-parallel-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for loop in [o for o in op.walk() if isinstance(o, scf.ForOp) and _is_short_axis_around_sums(o)]:
            _unroll(loop)
