"""fold-affine-tests: a loop body's index compare whose two sides differ by a constant (the loop's
variable and every other term cancelling) becomes that constant, and what it decided goes away.

split-stride-phases leaves each phase of a strided window with tests such as
`(2q + 1) - 2(q + c - 1) < 3`: whether the window's cell lies inside the window, the same in every
iteration of that phase. Until they are folded, each dead term still reads its window's values at
clamped indices, and partition-clamped-loops peels iterations for clamps that guard nothing (the
windows a phase cannot reach). The compare is folded when `linear_form` writes both sides over the
same terms; a select on a folded condition is its picked operand, an `andi` / `ori` with a folded
operand simplifies, and the ops left unused (the dead terms' reads and clamps) are erased.

A canonicalization, not a schedule choice: a test the loop bounds decide is that constant (the cpu
planner lists nothing for it; docs/schedule.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from tilegrad.passes.common import constant_index, erase_unused, pure_arith
from tilegrad.passes.loop_affine import INDEX, PREDICATES, linear_form


def _flag(value: SSAValue) -> bool | None:
    constant = constant_index(value) if value.type == IntegerType(1) else None
    return None if constant is None else bool(constant)


def _decided(compare: arith.CmpiOp, loop: scf.ForOp) -> bool | None:
    """The compare's value when its sides differ by a constant, else None."""
    if compare.lhs.type != INDEX or compare.predicate.value.data not in PREDICATES:
        return None
    a, b = linear_form(compare.lhs, loop), linear_form(compare.rhs, loop)
    if a is None or b is None or a[0] != b[0]:
        return None
    return PREDICATES[compare.predicate.value.data](a[1], b[1])


def _simplified(op: Operation) -> SSAValue | None:
    """What a select, andi or ori with a constant condition operand equals, else None."""
    if isinstance(op, arith.SelectOp):
        picked = _flag(op.cond)
        return None if picked is None else op.lhs if picked else op.rhs
    if isinstance(op, (arith.AndIOp, arith.OrIOp)) and op.result.type == IntegerType(1):
        absorbing = isinstance(op, arith.OrIOp)  # true absorbs in or, false in and
        for flag, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            value = _flag(flag)
            if value is not None:
                return flag if value == absorbing else other
    return None


def fold_loop(loop: scf.ForOp) -> bool:
    folded = False
    for op in list(loop.body.walk()):
        if isinstance(op, arith.CmpiOp) and op.parent_op() is loop and op.result.uses:
            decided = _decided(op, loop)
            if decided is not None:
                constant = arith.ConstantOp(IntegerAttr(int(decided), IntegerType(1)))
                op.parent_block().insert_op_before(constant, op)
                op.result.replace_all_uses_with(constant.result)
                folded = True
        elif folded and op.results and op.results[0].uses:
            value = _simplified(op)
            if value is not None:
                op.results[0].replace_all_uses_with(value)
    if folded:  # xDSL's region_dce keeps the casts it has no effects declared for, and the loads behind them
        erase_unused(o for o in loop.body.walk() if pure_arith(o) or isinstance(o, memref.LoadOp))
    return folded


@dataclass(frozen=True)
class FoldAffineTests(ModulePass):
    """Fold index compares that are constant over a loop (strided windows' per-phase tests), and
    erase the terms they switched off."""

    name = "fold-affine-tests"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for loop in [o for o in op.walk() if isinstance(o, scf.ForOp)]:
            fold_loop(loop)
