"""unroll-short-reductions: a reduction over a few constant terms (a pooling window, an LRN
neighbourhood) becomes straight-line code.

Left as a loop, LLVM sees a loop nest whose inner loops run 2-5 times: it unswitches them on
conditions that hold per window (a NaN y in max pooling) and the loop over output elements ends
up with branches and no vectorization. Unrolled here, that loop is innermost and straight-line,
and vectorizes. Only small bodies are unrolled (at most MAX_TRIPS trips and MAX_OPS ops in all).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern
from xdsl.transforms.scf_for_loop_unroll import UnrollLoopPattern

from tilegrad.dialect.tg import LoopRole
from tilegrad.passes.common import SHORT_TRIPS, constant_index, loop_role

MAX_TRIPS = SHORT_TRIPS
MAX_OPS = 400


class _UnrollShort(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.ForOp, rewriter: PatternRewriter) -> None:
        if loop_role(op) != LoopRole.REDUCE:
            return
        bounds = [constant_index(v) for v in (op.lb, op.ub, op.step)]
        if None in bounds or bounds[2] <= 0:
            return
        trips = len(range(*bounds))
        size = sum(1 for _ in op.body.walk())
        if trips > MAX_TRIPS or trips * size > MAX_OPS:
            return
        UnrollLoopPattern().match_and_rewrite(op, rewriter)


@dataclass(frozen=True)
class UnrollShortReductions(ModulePass):
    """Fully unroll reduction loops of a few constant trips with small bodies (inner ones first)."""

    name = "unroll-short-reductions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(_UnrollShort(), walk_regions_first=True).rewrite_module(op)
