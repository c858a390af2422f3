"""partition-clamped-loops: an innermost loop whose body clamps or range-tests an index affine in the
loop variable runs in three parts, and the middle part, where every such test passes, has none.

Window ops read `x[min(max(s*o + c, 0), D - 1)]` and test `0 <= s*o + c < D`, so that a padded
window never reads outside x. The tests only bite at the edges, but LLVM cannot see that (D and the
output size are run-time values related by a shape rule it does not know), and the clamped reads
stay scalar. As Halide partitions loops around its boundary conditions (and LLVM's IRCE does for
range checks), the loop over [lb, ub) becomes

    [lb, lo)   the original body           (the windows that hang over the low edge)
    [lo, hi)   the body with every clamp replaced by its operand and every test by true
    [hi, ub)   the original body           (the windows that hang over the high edge)

where [lo, hi) is where each condition `L <= s*v + r` or `s*v + r <= U` the body relies on holds
(s > 0 a constant; r, L and U loop-invariant), clipped to [lb, ub). The outer parts keep the
original body, so the result is the same for any range; the middle part reads at stride s, which
LLVM vectorizes. A loop whose body only tests (its reads clamp-free, or moved into branches on the
tests by branch-guarded-reads) stays whole: its tests are vector compares, and peeled scalar edges
would cost more than they save on short rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i1
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from tilegrad.passes.applying import chosen
from tilegrad.passes.common import constant_index, enclosing_func, loop_axis, stage_number
from tilegrad.passes.loop_affine import INDEX, IndexBuilder, LoopAffine, copy_of_loop
from tilegrad.schedule import Directive, Partition, PartitionBy

# arith.cmpi's signed predicates, and each one with its operands swapped
_SLT, _SLE, _SGT, _SGE = 2, 3, 4, 5
_MIRROR = {_SLT: _SGT, _SLE: _SGE, _SGT: _SLT, _SGE: _SLE}


@dataclass
class _Condition:
    """s*v + r >= bound + shift (upper=False) or s*v + r <= bound + shift (upper=True)."""

    value: SSAValue
    bound: SSAValue
    upper: bool
    shift: int = 0


def _conditions(loop: scf.ForOp) -> tuple[list[_Condition], dict[Operation, int | None], LoopAffine]:
    """The conditions the body's clamps and range tests rely on, and the ops that become their
    operand (a clamp: the operand's position) or true (a test: None) in the middle part."""
    affine = LoopAffine(loop)
    conditions: list[_Condition] = []
    folded: dict[Operation, int | None] = {}
    for op in loop.body.walk():
        if isinstance(op, (arith.MaxSIOp, arith.MinSIOp)) and op.result.type == INDEX:
            for varying, fixed in ((0, 1), (1, 0)):
                s, f = affine.scale(op.operands[varying]), affine.scale(op.operands[fixed])
                if s is not None and s > 0 and f == 0:
                    conditions.append(_Condition(op.operands[varying], op.operands[fixed],
                                                 upper=isinstance(op, arith.MinSIOp)))
                    folded[op] = varying
                    affine.seen_through[op.result] = affine.seen_through.get(op.operands[varying],
                                                                             op.operands[varying])
                    break
        elif isinstance(op, arith.CmpiOp) and op.predicate.value.data in _MIRROR:
            predicate = op.predicate.value.data
            for varying, fixed, p in ((op.lhs, op.rhs, predicate), (op.rhs, op.lhs, _MIRROR[predicate])):
                s, f = affine.scale(varying), affine.scale(fixed)
                if s is not None and s > 0 and f == 0:
                    conditions.append(_Condition(varying, fixed, upper=p in (_SLT, _SLE),
                                                 shift={_SLT: -1, _SGT: 1}.get(p, 0)))
                    folded[op] = None
                    break
    return conditions, folded, affine


def _unique(conditions: list[_Condition], affine: LoopAffine) -> list[_Condition]:
    """One of each condition (a clamp and the test beside it state the same bound)."""
    kept: dict[tuple, _Condition] = {}
    for c in conditions:
        kept.setdefault((affine.seen_through.get(c.value, c.value), c.bound, c.upper, c.shift), c)
    return list(kept.values())


def _middle_range(loop: scf.ForOp, conditions: list[_Condition], affine: LoopAffine) -> tuple[SSAValue, SSAValue]:
    at = IndexBuilder(loop)
    built: dict[SSAValue, SSAValue] = {}
    lo, hi = loop.lb, loop.ub
    for c in conditions:
        s = affine.scale(c.value)
        assert s is not None
        room = at.emit(arith.SubiOp(at.add(affine.at_zero(c.bound, at, built), c.shift),
                                    affine.at_zero(c.value, at, built)))
        if c.upper:  # s*v + r <= U  <=>  v < ⌊(U - r) / s⌋ + 1
            hi = at.emit(arith.MinSIOp(hi, at.add(at.floordiv(room, s), 1)))
        else:  # s*v + r >= L  <=>  v >= ⌈(L - r) / s⌉
            lo = at.emit(arith.MaxSIOp(lo, at.ceildiv(room, s)))
    lo = at.emit(arith.MinSIOp(lo, loop.ub))
    hi = at.emit(arith.MaxSIOp(lo, at.emit(arith.MinSIOp(hi, loop.ub))))
    return lo, hi


def _partition(loop: scf.ForOp) -> bool:
    if constant_index(loop.step) != 1:
        return False
    conditions, folded, affine = _conditions(loop)
    if not any(operand is not None for operand in folded.values()):
        return False
    lo, hi = _middle_range(loop, _unique(conditions, affine), affine)
    mapping: dict[SSAValue, SSAValue] = {}
    middle = copy_of_loop(loop, mapping)
    last = copy_of_loop(loop)
    true: SSAValue | None = None
    for op, operand in folded.items():
        copy = mapping[op.results[0]].owner
        assert isinstance(copy, Operation)
        if operand is None:
            if true is None:
                true_op = arith.ConstantOp(IntegerAttr(1, i1))
                middle.body.block.insert_op_before(true_op, middle.body.block.first_op)
                true = true_op.result
            copy.results[0].replace_all_uses_with(true)
        else:
            copy.results[0].replace_all_uses_with(copy.operands[operand])
        copy.detach()
        copy.erase()
    loop.parent_block().insert_ops_after([middle, last], loop)
    loop.operands = (loop.lb, lo, *loop.operands[2:])
    middle.operands = (lo, hi, *middle.operands[2:])
    last.operands = (hi, *last.operands[1:])
    if loop.results:  # carried values run through the three parts in order
        for old, new in zip(loop.results, last.results):
            old.replace_all_uses_with(new)
        middle.operands = (*middle.operands[:3], *loop.results)
        last.operands = (*last.operands[:3], *middle.results)
    return True


def partitioned_loops(root: Operation) -> list[scf.ForOp]:
    """The innermost loops partition-clamped-loops partitions: a clamp to fold (its decision, which
    the cpu planner lists too; partitioning one leaves the others' decision as it was)."""
    innermost = [o for o in root.walk() if isinstance(o, scf.ForOp)
                 and not any(isinstance(inner, scf.ForOp) for inner in o.body.walk())]
    return [loop for loop in innermost if constant_index(loop.step) == 1
            and any(operand is not None for operand in _conditions(loop)[1].values())]


@dataclass(frozen=True)
class PartitionClampedLoops(ModulePass):
    """Split innermost loops around the iterations where an index clamp or range test can bite, so
    the iterations in between run without them; with `directives`, the loops they name."""

    name = "partition-clamped-loops"
    directives: str | None = None
    """Partition(by=clamp) directives, printed, `;`-separated (passes/applying.py): the loops they name."""
    takes_text: ClassVar[str] = "Partition(by='clamp')"

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Partition) and directive.by == PartitionBy.CLAMP

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        candidates = [(Partition(stage=stage_number(enclosing_func(loop)), axis=loop_axis(loop)), loop)
                      for loop in partitioned_loops(op)]
        for loop, _ in chosen(self, candidates, "innermost loop with a clamp or range test"):
            _partition(loop)
