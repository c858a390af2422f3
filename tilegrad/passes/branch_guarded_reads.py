"""branch-guarded-reads: a read that a select's condition already keeps inside its tensor runs in a
branch on that condition, without the clamp that kept it in bounds.

A window op reads `a[min(max(v, 0), D - 1)]` under `where(0 <= v < D and ..., f(a[...]), 0)`: the
emitter clamps every computed index, so the read never leaves the tensor even where the select
throws its value away. Where v moves with the innermost loop, the clamp makes neighbouring
iterations read non-neighbouring elements, so LLVM cannot load them as one vector, and
partition-clamped-loops peels the iterations where a clamp can bite into scalar copies of the
body (divisive normalization's windows of 3x3: the first and last iterations of each row ran
scalar beside its vector loop, and its tiled stage was three times its size). Here

    %t = f(load A[min(max(v, 0), D - 1)])         %r = scf.if %c -> (T) {
    %r = arith.select %c, %t, %f           ->        scf.yield f(load A[v])
                                                   } else { scf.yield %f }

where the conjunction %c holds `v >= 0` and `v < D` (the clamp's own values). The ops that compute
%t and nothing else move into the branch; a clamp the condition proves is dropped where v is
affine in the innermost loop around the select, any other clamp stays. LLVM's vectorizer turns
the branch into masked vector loads over the whole row, edges included, and partition-clamped-
loops has no clamp left to peel. Where the select keeps a value it is computed by the same ops:
results are bitwise unchanged.

It runs before split-stride-phases, so a strided window (pooling with stride 2, whose index is
still `(v + c) / s` here) keeps its clamps and its partition: there the branches' masks, computed
on 64-bit indices, cost more than the scalar edges they replace (max pooling 2-D ran 0.81x as
fast), and LLVM turned a one-term window's stores into scatters (max pooling 3-D, 0.36x).

A select's branch is `Specialize(stage=S, axis=A, condition='x in bounds')`: the body of loop A
(the innermost around the select) runs a version of its read of x where the bounds test holds,
unclamped, and the select's other value where it does not. One directive names the selects of a
loop whose unclamped reads are of the same tensors (a window's terms: one per term would list
dozens); with `directives`, the pass branches exactly those they name (versioned=False: the
selects and clamps stay).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.passes.applying import given_directives, in_force, refuse_unnamed
from tilegrad.passes.common import (
    constant_index,
    enclosing_func,
    feeding_ops,
    functions,
    loop_axis,
    stage_number,
    tensor_name,
    viewed,
)
from tilegrad.passes.loop_affine import LoopAffine
from tilegrad.schedule import Directive, Specialize

_SGT, _SGE, _SLT = 4, 5, 2


def _conjuncts(cond: SSAValue) -> list[arith.CmpiOp]:
    """The comparisons a condition is the conjunction of (through arith.andi)."""
    owner = cond.owner
    if isinstance(owner, arith.AndIOp):
        return _conjuncts(owner.lhs) + _conjuncts(owner.rhs)
    return [owner] if isinstance(owner, arith.CmpiOp) else []


def _known_bounds(cond: SSAValue) -> tuple[set[SSAValue], set[tuple[SSAValue, SSAValue]]]:
    """(values known >= 0, pairs (v, D) with v < D known) where the condition holds."""
    nonnegative: set[SSAValue] = set()
    below: set[tuple[SSAValue, SSAValue]] = set()
    for test in _conjuncts(cond):
        predicate = test.predicate.value.data
        lhs, rhs = test.lhs, test.rhs
        if predicate == _SGT:  # a > b  is  b < a
            predicate, lhs, rhs = _SLT, rhs, lhs
        if predicate == _SGE and constant_index(rhs) == 0:
            nonnegative.add(lhs)
        elif predicate == _SLT:
            below.add((lhs, rhs))
            if constant_index(lhs) == 0:
                nonnegative.add(rhs)
    return nonnegative, below


def _clamped(index: SSAValue) -> tuple[SSAValue, SSAValue] | None:
    """(v, D) for the emitter's clamp `min(max(v, 0), D - 1)`, else None."""
    clamp = index.owner
    if not isinstance(clamp, arith.MinSIOp):
        return None
    for low, last in ((clamp.lhs, clamp.rhs), (clamp.rhs, clamp.lhs)):
        floor, top = low.owner, last.owner
        if isinstance(floor, arith.MaxSIOp) and isinstance(top, arith.SubiOp) and constant_index(top.rhs) == 1:
            for v, zero in ((floor.lhs, floor.rhs), (floor.rhs, floor.lhs)):
                if constant_index(zero) == 0:
                    return v, top.lhs
    return None


def _movable(op: Operation) -> bool:
    """Free of effects other than reading memory: it may run later, or not at all."""
    return isinstance(op, (memref.LoadOp, memref.DimOp)) or (op.name.startswith(("arith.", "math.")) and not op.regions)


def _guarded_ops(select: arith.SelectOp) -> list[Operation]:
    """The ops of the select's block that compute its true value and nothing else, in order; none
    where something between them and the select may write memory (a load moved past it could
    read another value)."""
    block = select.parent_block()
    assert block is not None
    moving: set[Operation] = set()
    for op in reversed(feeding_ops([select.lhs], block)):  # every use of an op comes after it
        if _movable(op) and all(use.operation in moving or (use.operation is select and use.index == 1)
                                for result in op.results for use in result.uses):
            moving.add(op)
    ops = list(block.ops)
    ordered = [o for o in ops if o in moving]
    if ordered and not all(_movable(o) for o in ops[ops.index(ordered[0]):ops.index(select)]):
        return []
    return ordered


def _loop_of(select: arith.SelectOp) -> scf.ForOp | None:
    """The innermost loop around the select."""
    loop = select.parent_op()
    while loop is not None and not isinstance(loop, scf.ForOp):
        loop = loop.parent_op()
    return loop


def _droppable(select: arith.SelectOp, loads: list[memref.LoadOp]) -> list[tuple[memref.LoadOp, int, SSAValue]]:
    """(load, index position, v) for each clamp `min(max(v, 0), D - 1)` the select's condition
    proves, where v moves with the innermost loop around the select (consecutive iterations read
    neighbouring elements, which one masked vector load covers; a clamp of any other index is
    not what keeps the loop scalar, and stays)."""
    loop = _loop_of(select)
    if loop is None:
        return []
    affine = LoopAffine(loop)
    nonnegative, below = _known_bounds(select.cond)
    found = []
    for load in loads:
        for position, index in enumerate(load.indices):
            clamp = _clamped(index)
            if clamp is not None and clamp[0] in nonnegative and clamp in below and affine.scale(clamp[0]):
                found.append((load, position, clamp[0]))
    return found


def _erase_dead(block: Block) -> None:
    """Drop what only computed the dropped clamps (reverse order: users before what they use)."""
    for op in reversed(list(block.ops)):
        if _movable(op) and not any(result.uses for result in op.results):
            op.detach()
            op.erase()


def _own(select: arith.SelectOp, droppable: list[tuple[memref.LoadOp, int, SSAValue]]) -> Directive:
    """The select's own directive: its loop's stage and axis, and the tensors it reads unclamped."""
    fn = enclosing_func(select)
    args = fn.body.block.args
    tensors = sorted({tensor_name(fn, load.memref) if viewed(load.memref) in args else "a stack buffer"
                      for load, _, _ in droppable})
    loop = _loop_of(select)
    assert loop is not None  # (droppable: there is one)
    return Specialize(stage=stage_number(fn), axis=loop_axis(loop), condition=f"{', '.join(tensors)} in bounds")


def _branch(select: arith.SelectOp, branches: Callable[[Directive], bool]) -> Directive | None:
    """Branch the select if it has a clamp to drop and its own directive `branches` accepts; that
    directive (None: nothing to drop)."""
    ops = _guarded_ops(select)
    droppable = _droppable(select, [o for o in ops if isinstance(o, memref.LoadOp)])
    if not droppable:
        return None
    own = _own(select, droppable)
    if not branches(own):
        return own
    then = Block()
    for op in ops:
        op.detach()
        then.add_op(op)
    then.add_op(scf.YieldOp(select.lhs))
    branch = scf.IfOp(select.cond, [select.result.type], Region([then]), Region([Block([scf.YieldOp(select.rhs)])]))
    select.parent_block().insert_op_before(branch, select)
    select.result.replace_all_uses_with(branch.results[0])
    select.detach()
    select.erase()
    for load, position, v in droppable:
        load.operands[1 + position] = v
    _erase_dead(then)
    return own


def branch_function(root: Operation, branches: Callable[[Directive], bool]) -> list[Directive]:
    """Branch the selects of `root` whose own directive `branches` accepts; the own directives of all
    that have a clamp to drop."""
    selects = [o for o in root.walk() if isinstance(o, arith.SelectOp)]
    seen = []
    for select in reversed(selects):  # an outer select (later in its block) takes the inner ones along
        own = _branch(select, branches)
        if own is not None:
            seen.append(own)
    return seen


def branched_reads(module: ModuleOp) -> tuple[Directive, ...]:
    """The selects branch-guarded-reads branches in `module`, by their own directives: its decision,
    which the cpu planner lists. As the pass goes, without branching (a branch leaves the others'
    decision as it was: it moves only ops that feed its select alone); where a select's branch
    takes another select along, that one is decided where it moved to: there a copy of the
    function is branched instead."""
    found: list[Directive] = []
    for fn in functions(module):
        decided: list[Directive] = []
        for select in reversed([o for o in fn.body.walk() if isinstance(o, arith.SelectOp)]):
            ops = _guarded_ops(select)
            droppable = _droppable(select, [o for o in ops if isinstance(o, memref.LoadOp)])
            if not droppable:
                continue
            if any(isinstance(o, arith.SelectOp) for o in ops):
                decided = branch_function(fn.clone(), lambda own: True)
                break
            decided.append(_own(select, droppable))
        found += decided
    return tuple(dict.fromkeys(found))


@dataclass(frozen=True)
class BranchGuardedReads(ModulePass):
    """Move what a select computes only for its true case into a branch on its condition, and drop
    the index clamps that condition makes redundant; with `directives`, the selects they name."""

    name = "branch-guarded-reads"
    directives: str | None = None
    """Specialize directives, printed, `;`-separated (passes/applying.py): the selects they name."""
    takes_text: ClassVar[str] = "Specialize (on bounds: condition='TENSORS in bounds')"

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Specialize)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        given = given_directives(self, self.takes)
        seen = branch_function(op, lambda own: in_force(given, own) is not None)
        refuse_unnamed(self, given, seen, "select on a bounds test of a clamped read")
