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
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.passes.common import constant_index, feeding_ops
from tilegrad.passes.loop_affine import LoopAffine

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


def _droppable(select: arith.SelectOp, loads: list[memref.LoadOp]) -> list[tuple[memref.LoadOp, int, SSAValue]]:
    """(load, index position, v) for each clamp `min(max(v, 0), D - 1)` the select's condition
    proves, where v moves with the innermost loop around the select (consecutive iterations read
    neighbouring elements, which one masked vector load covers; a clamp of any other index is
    not what keeps the loop scalar, and stays)."""
    loop = select.parent_op()
    while loop is not None and not isinstance(loop, scf.ForOp):
        loop = loop.parent_op()
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


def _branch(select: arith.SelectOp) -> bool:
    ops = _guarded_ops(select)
    droppable = _droppable(select, [o for o in ops if isinstance(o, memref.LoadOp)])
    if not droppable:
        return False
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
    return True


def branch_function(root: Operation) -> None:
    selects = [o for o in root.walk() if isinstance(o, arith.SelectOp)]
    for select in reversed(selects):  # an outer select (later in its block) takes the inner ones along
        _branch(select)


@dataclass(frozen=True)
class BranchGuardedReads(ModulePass):
    """Move what a select computes only for its true case into a branch on its condition, and drop
    the index clamps that condition makes redundant."""

    name = "branch-guarded-reads"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        branch_function(op)
