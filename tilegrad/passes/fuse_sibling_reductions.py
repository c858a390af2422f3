"""fuse-sibling-reductions: reductions over the same range sweep their data once.

Batch norm's dβ = Σ dy and dγ = Σ dy·x̂ are two reduction nests over the same channel; apart,
dy streams from memory twice. Two sibling reductions whose loops agree level by level (same
bounds, or the same condition for the blocked/plain choice) and that do not depend on each other
become one nest carrying both accumulators. Each sum keeps its own accumulator and its own terms
(LLVM may still spread a sum over vector lanes, as it does for a loop of one). The merge repeats
inwards: once two loops are one, their inner loops are siblings in the merged body.

Each set of sibling reductions merged into one is the choice `ComputeWith(stage=S, reductions=(i,
j, ...))`: S is the stage (the function's number), i, j, ... the reductions' numbers in the order
they are in it (outer before inner: every scf.for of a reduction role with results and every
blocked sum's scf.if counts). The merges inside a merged body come with it. With `directives`
(ComputeWith with reductions, printed, `;`-separated: passes/applying.py), only the sets they
name are merged (`fused=False`: each sweeps alone). The scratchpad targets run the pass as it
decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region
from xdsl.passes import ModulePass
from xdsl.traits import is_side_effect_free

from tilegrad.dialect.tg import LoopRole
from tilegrad.passes.applying import chosen
from tilegrad.passes.common import (
    REDUCTION_ROLES,
    functions,
    loop_role,
    read_memrefs,
    same_range,
    same_value,
    stage_number,
    written_memrefs,
)
from tilegrad.schedule import ComputeWith, Directive


def _is_reduction(op: Operation) -> bool:
    if isinstance(op, scf.ForOp):
        return loop_role(op) in REDUCTION_ROLES and bool(op.results)
    return (isinstance(op, scf.IfOp) and loop_role(op) == LoopRole.REDUCE and bool(op.results)
            and bool(op.false_region.blocks))


def _congruent(a: Operation, b: Operation) -> bool:
    if isinstance(a, scf.ForOp) and isinstance(b, scf.ForOp):
        return same_range(a, b)
    return isinstance(a, scf.IfOp) and isinstance(b, scf.IfOp) and same_value(a.cond, b.cond)


def _hoist_operands(b: Operation, a: Operation, over: list[Operation]) -> bool:
    """Move the bounds and index arithmetic that `b` takes from `over` above `a` (a dim, a
    constant: the second reduction's own copies); False if `b` needs anything else from them."""
    position = {op: k for k, op in enumerate(over)}
    needed: set[Operation] = set()
    pending = [v for o in b.walk() for v in o.operands]
    while pending:
        owner = pending.pop().owner
        if owner is a:
            return False
        if owner in position and owner not in needed:
            if owner.regions or not is_side_effect_free(owner):
                return False
            needed.add(owner)
            pending.extend(owner.operands)
    for op in sorted(needed, key=position.__getitem__):
        op.detach()
        a.parent_block().insert_op_before(op, a)
    return True


def _may_rise(b: Operation, a: Operation, over: list[Operation]) -> bool:
    """Whether `b` can join `a` above `over`: it reads nothing they write and takes from them (or
    from `a`) only index arithmetic, which moves up with it."""
    read = read_memrefs(b)
    if any(written_memrefs(o) & read for o in over):
        return False
    return _hoist_operands(b, a, over)


def _merge(a: Operation, b: Operation) -> Operation:
    if isinstance(a, scf.ForOp):
        assert isinstance(b, scf.ForOp)
        inner_a, inner_b = a.body.block, b.body.block
        body = Block(arg_types=[inner_a.args[0].type, *(v.type for v in a.iter_args), *(v.type for v in b.iter_args)])
        inner_b.args[0].replace_all_uses_with(body.args[0])  # one iteration variable
        for old, new in zip((*inner_a.args, *inner_b.args[1:]), body.args):
            old.replace_all_uses_with(new)
        merged = scf.ForOp(a.lb, a.ub, a.step, [*a.iter_args, *b.iter_args], Region([_moved(inner_a, inner_b, body)]))
    else:
        assert isinstance(a, scf.IfOp) and isinstance(b, scf.IfOp)
        types = [*a.result_types, *b.result_types]
        then = _moved(a.true_region.block, b.true_region.block, Block())
        other = _moved(a.false_region.block, b.false_region.block, Block())
        merged = scf.IfOp(a.cond, types, Region([then]), Region([other]))
    merged.attributes.update(a.attributes)
    return merged


def _moved(a: Block, b: Block, into: Block) -> Block:
    """The ops of `a` then of `b` in `into`, with one yield of both results."""
    yields = []
    for source in (a, b):
        for op in list(source.ops):
            op.detach()
            if isinstance(op, scf.YieldOp):
                yields.extend(op.operands)
                op.erase()
            else:
                into.add_op(op)
    into.add_op(scf.YieldOp(*yields))
    return into


@dataclass
class _Merges:
    """The reductions of a stage by their numbers as they were (`made`: each reduction, merged or
    not, -> the numbers it is made of), the merges of sibling reductions so far (`top`: not inside
    another merged one), and which merges may happen (`allow`, by the numbers; None: every one)."""

    made: dict[Operation, tuple[int, ...]] = field(default_factory=dict)
    top: list[Operation] = field(default_factory=list)
    merged: set[Operation] = field(default_factory=set)
    allow: set[tuple[int, ...]] | None = None

    @classmethod
    def of(cls, fn: func.FuncOp, allow: set[tuple[int, ...]] | None = None) -> _Merges:
        return cls({op: (number,) for number, op in enumerate(o for o in fn.walk() if _is_reduction(o))}, allow=allow)

    def may(self, a: Operation, b: Operation, inside: bool) -> bool:
        """Inside a merged reduction, its reductions merge as they can (they are siblings because of it)."""
        both = set(self.made.get(a, ()) + self.made.get(b, ()))
        return inside or self.allow is None or any(both <= set(run) for run in self.allow)

    def record(self, a: Operation, b: Operation, merged: Operation, inside: bool) -> None:
        self.made[merged] = tuple(sorted(self.made.pop(a, ()) + self.made.pop(b, ())))
        self.merged.add(merged)
        if not inside:
            self.top = [op for op in self.top if op not in (a, b)] + [merged]


def _fuse_once(block: Block, merges: _Merges, inside: bool) -> bool:
    ops = list(block.ops)
    for i, a in enumerate(ops):
        if not _is_reduction(a):
            continue
        for j in range(i + 1, len(ops)):
            b = ops[j]
            if not (_is_reduction(b) and _congruent(a, b) and merges.may(a, b, inside)
                    and _may_rise(b, a, ops[i + 1:j])):
                continue
            merged = _merge(a, b)
            block.insert_op_before(merged, a)
            for old, new in zip((*a.results, *b.results), merged.results):
                old.replace_all_uses_with(new)
            merges.record(a, b, merged, inside)
            a.detach()
            a.erase()
            b.detach()
            b.erase()
            return True
    return False


def fuse_block(block: Block, merges: _Merges | None = None, inside: bool = False) -> None:
    merges = merges or _Merges()
    while _fuse_once(block, merges, inside):
        pass
    for op in block.ops:
        for region in op.regions:
            for inner in region.blocks:
                fuse_block(inner, merges, inside or op in merges.merged)


def merged_reductions(fn: func.FuncOp) -> list[ComputeWith]:
    """The sets of sibling reductions fuse-sibling-reductions merges in `fn` (decided on a copy: `fn`
    is unchanged), each as the directive that names it: what the pass does by itself, and what the
    cpu planner lists."""
    copy = fn.clone()
    merges = _Merges.of(copy)
    fuse_block(copy.body.block, merges)
    runs = sorted(merges.made[op] for op in merges.top)
    return [ComputeWith(stage=stage_number(fn), reductions=run) for run in runs]


@dataclass(frozen=True)
class FuseSiblingReductions(ModulePass):
    """Merge sibling, independent reduction loops over the same range into one loop nest; with
    `directives` (ComputeWith with reductions, printed, `;`-separated: passes/applying.py), the sets
    they name (`fused=False`: none)."""

    name = "fuse-sibling-reductions"
    directives: str | None = None
    takes_text: ClassVar[str] = "ComputeWith(reductions=...)"

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, ComputeWith) and bool(directive.reductions)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.directives is None:
            for region in op.regions:
                for block in region.blocks:
                    fuse_block(block)
            return
        candidates = [(directive, fn) for fn in functions(op) for directive in merged_reductions(fn)]
        runs: dict[func.FuncOp, set[tuple[int, ...]]] = {fn: set() for fn in functions(op)}
        for fn, directive in chosen(self, candidates, "set of sibling reductions"):
            runs[fn].add(directive.reductions)
        for fn, allowed in runs.items():
            fuse_block(fn.body.block, _Merges.of(fn, allowed))
