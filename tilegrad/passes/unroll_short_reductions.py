"""unroll-short-reductions: a reduction over a few constant terms (a pooling window, an LRN
neighbourhood) becomes straight-line code.

Left as a loop, LLVM sees a loop nest whose inner loops run 2-5 times: it unswitches them on
conditions that hold per window (a NaN y in max pooling) and the loop over output elements ends
up with branches and no vectorization. Unrolled here, that loop is innermost and straight-line,
and vectorizes. Only small bodies are unrolled (at most MAX_TRIPS trips and MAX_OPS ops in all).

Each unrolled window is `Unroll(stage=S, axis=A, factor=0)` (its reduction's axis); with `directives`
(the cpu tiled stage), the pass unrolls exactly the windows they name (factor=1: left a loop). In the
llvm stage of every backend it runs without them, a canonicalization: what is left is unrolled there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern
from xdsl.transforms.scf_for_loop_unroll import UnrollLoopPattern

from tilegrad.dialect.tg import LoopRole
from tilegrad.errors import ScheduleError
from tilegrad.passes.applying import given_directives, in_force, refuse_unnamed
from tilegrad.passes.common import SHORT_TRIPS, constant_index, enclosing_func, loop_axis, loop_role, stage_number
from tilegrad.passes.loop_utils import in_cold_version
from tilegrad.schedule import Directive, Unroll

MAX_TRIPS = SHORT_TRIPS
MAX_OPS = 400


def _trips(op: scf.ForOp) -> int | None:
    """The trip count of a reduction loop of a few constant trips, else None."""
    if loop_role(op) != LoopRole.REDUCE:
        return None
    bounds = [constant_index(v) for v in (op.lb, op.ub, op.step)]
    if None in bounds or bounds[2] <= 0:
        return None
    trips = len(range(*bounds))
    return trips if trips <= MAX_TRIPS else None


class _UnrollShort(RewritePattern):
    """Unroll each window (`_trips`, small body) whose own directive `unrolls` accepts; `seen` lists
    the own directive of every window met, unrolled or not."""

    def __init__(self, unrolls: Callable[[Directive], bool]) -> None:
        self.unrolls = unrolls
        self.seen: list[Directive] = []

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.ForOp, rewriter: PatternRewriter) -> None:
        trips = _trips(op)
        if trips is None or in_cold_version(op) or trips * sum(1 for _ in op.body.walk()) > MAX_OPS:
            return
        own = Unroll(stage=stage_number(enclosing_func(op)), axis=loop_axis(op), factor=0)
        self.seen.append(own)
        if self.unrolls(own):
            UnrollLoopPattern().match_and_rewrite(op, rewriter)


def unroll_windows(module: ModuleOp, unrolls: Callable[[Directive], bool]) -> list[Directive]:
    """Unroll the windows whose own directive `unrolls` accepts (inner ones first: an outer window's
    size is its body's once the inner ones are unrolled); the own directives of all met."""
    pattern = _UnrollShort(unrolls)
    PatternRewriteWalker(pattern, walk_regions_first=True).rewrite_module(module)
    return pattern.seen


def unrolled_windows(module: ModuleOp) -> tuple[Directive, ...]:
    """The windows unroll-short-reductions unrolls in `module`, by their own directives: its decision,
    which the cpu planner lists. As the pass goes, inner windows first, each outer one counted with
    its unrolled inner ones' copies (`_size`: what the pass's count of its ops will be), without
    unrolling anything; where a loop inside an unrolled window has a bound that is not a constant
    (the window's index may make it one), a copy is unrolled instead."""
    unrolled: list[Directive] = []
    sizes: dict[Operation, int] = {}
    for loop in _inner_first(module):
        size = sizes[loop] = _size(loop.body.block, sizes)
        trips = _trips(loop)
        if trips is None or trips * size > MAX_OPS:
            continue
        if any(isinstance(o, scf.ForOp) and None in (constant_index(v) for v in o.operands[:3])
               for o in loop.body.walk()):
            return tuple(dict.fromkeys(unroll_windows(module.clone(), lambda own: True)))
        sizes[loop] = -trips * size  # (negative: unrolled, the parent counts trips copies of its body)
        unrolled.append(Unroll(stage=stage_number(enclosing_func(loop)), axis=loop_axis(loop), factor=0))
    return tuple(dict.fromkeys(unrolled))


def _inner_first(root: Operation) -> list[scf.ForOp]:
    """The loops of `root`, each after the loops inside it."""
    return [o for o in root.walk(region_first=True) if isinstance(o, scf.ForOp)]


def _size(block: Block, sizes: dict[Operation, int]) -> int:
    """The ops of `block` (a walk's count, its yield included) once the loops `sizes` marks unrolled
    (negative: the ops their copies leave, each copy's index constant in place of its yield) are."""
    total = 0
    for op in block.ops:
        if sizes.get(op, 0) < 0:
            total -= sizes[op]
        else:
            total += 1 + sum(_size(b, sizes) for r in op.regions for b in r.blocks)
    return total


@dataclass(frozen=True)
class UnrollShortReductions(ModulePass):
    """Fully unroll reduction loops of a few constant trips with small bodies (inner ones first); with
    `directives`, the windows they name (factor 0: unrolled, 1: left a loop)."""

    name = "unroll-short-reductions"
    directives: str | None = None
    """Unroll directives, printed, `;`-separated (passes/applying.py): the windows they name."""
    takes_text: ClassVar[str] = "Unroll"

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Unroll)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        given = given_directives(self, self.takes)

        def unrolls(own: Directive) -> bool:
            directive = in_force(given, own)
            if directive is not None and directive.factor != 0:
                raise ScheduleError(f"{directive}: unroll-short-reductions unrolls a window fully (factor=0) or "
                                    f"leaves it a loop (factor=1)")
            return directive is not None

        refuse_unnamed(self, given, unroll_windows(op, unrolls), "window of a few terms")
