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
would cost more than they save on short rows. But a loop that walks a sum's terms (a reduction's
loop, or the row a column sum accumulates: interchange-column-reductions) whose tests decide a
branch is partitioned: each of its terms is one multiply-add, which the masks of its branched reads
(64-bit compares, one per lane) cost several times over (depthwise conv2d backward at
8x128x56x56, one process, load 5-6: grad_input as row accumulations over its taps 78 -> 7 ms;
grad_weight's sum over the positions, a row of dy against a shifted row of x, 42 -> 5.4 ms), and a
sum's row is the whole tile or the whole axis, long beside its two edges.

A window loop: an output loop with loops inside it whose ranges do not change along it (a
convolution's taps, `x[o - p + d*j]` tested `0 <= o - p + d*j < W` for j in [0, S)), whose tests
or clamps read those inner variables. Its tests sit inside the sums, one per term and not a vector
compare, so it is partitioned whether they are clamps or tests: a condition `s*v + Σ c_k*u_k + r`
holds for every u_k in its loop's [lb, ub - 1] where it holds at the extreme u_k (lb or ub - 1 by
the sign of c_k), and the middle part runs the whole window without its tests. Inner loops are
partitioned first (a window loop copies them partitioned). A loop stepping s > 1 (columns jammed by
unroll-jam, their clamped copies `min(v + k, ub - 1)` among its conditions) keeps its iterations:
the middle part starts and ends at lb + a multiple of s.

A version marked cold (a pack's fallback, `tg.cold`: loop_utils.in_cold_version) is left as it is,
and a window loop is partitioned for the tests of its fast code only: not for those in a cold
version or in a copy loop (a pack's, whose positions' loop is an innermost loop of its own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i1
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import LoopRole
from tilegrad.passes.applying import chosen, given_directives, in_force
from tilegrad.passes.common import SHORT_TRIPS, constant_index, enclosing_func, loop_axis, loop_role, stage_number
from tilegrad.passes.loop_affine import INDEX, IndexBuilder, LoopAffine, copy_of_loop
from tilegrad.passes.loop_utils import COLD, in_cold_version
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


def _conditions(loop: scf.ForOp, window: bool = False, hot: bool = False) \
        -> tuple[list[_Condition], dict[Operation, int | None], LoopAffine]:
    """The conditions the body's clamps and range tests rely on, and the ops that become their
    operand (a clamp: the operand's position) or true (a test: None) in the middle part (window:
    also those affine in the variables of the loops inside, _WindowAffine; hot: only those outside
    cold versions and copy loops, `_hot`)."""
    affine = _WindowAffine(loop) if window else LoopAffine(loop)
    conditions: list[_Condition] = []
    folded: dict[Operation, int | None] = {}
    for op in loop.body.walk():
        if hot and not _hot(op, loop):
            continue
        if isinstance(op, (arith.MaxSIOp, arith.MinSIOp)) and op.result.type == INDEX:
            for varying, fixed in ((0, 1), (1, 0)):
                s = affine.scale(op.operands[varying])
                if s is not None and s > 0 and _invariant(affine, op.operands[fixed]):
                    conditions.append(_Condition(op.operands[varying], op.operands[fixed],
                                                 upper=isinstance(op, arith.MinSIOp)))
                    folded[op] = varying
                    affine.seen_through[op.result] = affine.seen_through.get(op.operands[varying],
                                                                             op.operands[varying])
                    break
        elif isinstance(op, arith.CmpiOp) and op.predicate.value.data in _MIRROR:
            predicate = op.predicate.value.data
            for varying, fixed, p in ((op.lhs, op.rhs, predicate), (op.rhs, op.lhs, _MIRROR[predicate])):
                s = affine.scale(varying)
                if s is not None and s > 0 and _invariant(affine, fixed):
                    conditions.append(_Condition(varying, fixed, upper=p in (_SLT, _SLE),
                                                 shift={_SLT: -1, _SGT: 1}.get(p, 0)))
                    folded[op] = None
                    break
    return conditions, folded, affine


class _WindowAffine(LoopAffine):
    """LoopAffine over a window loop: a value may also be affine in the variables of the loops
    inside (`windows`: variable -> its loop, whose range does not change along the loop), each
    taken at an extreme of its range when a bound is computed (`extremes`)."""

    def __init__(self, loop: scf.ForOp):
        super().__init__(loop)
        self.windows: dict[SSAValue, scf.ForOp] = {}
        self.extremes: dict[SSAValue, SSAValue] = {}
        self._terms: dict[SSAValue, dict[SSAValue, int] | None] = {}
        for inner in loop.body.walk():
            if isinstance(inner, scf.ForOp) and inner is not loop and (constant_index(inner.step) or 0) > 0 \
                    and self.terms(inner.lb) == {} and self.terms(inner.ub) == {}:
                self.windows[inner.body.block.args[0]] = inner

    def terms(self, value: SSAValue) -> dict[SSAValue, int] | None:
        """value as {the loop's or a window's variable: coefficient} plus values that do not change
        along the loop; None where it is not such a sum."""
        value = self.seen_through.get(value, value)
        if value is self.variable or value in self.windows:
            return {value: 1}
        if value not in self._terms:
            self._terms[value] = self._linear(value)
        return self._terms[value]

    def _linear(self, value: SSAValue) -> dict[SSAValue, int] | None:
        owner = value.owner
        if isinstance(owner, Block):
            return None if self.loop.is_ancestor(owner) else {}
        if not self.loop.is_ancestor(owner) or isinstance(owner, arith.ConstantOp):
            return {}
        if isinstance(owner, memref.DimOp):
            return {} if all(self.terms(o) == {} for o in owner.operands) else None
        if isinstance(owner, (arith.AddiOp, arith.SubiOp)):
            a, b = self.terms(owner.lhs), self.terms(owner.rhs)
            if a is None or b is None:
                return None
            sign = 1 if isinstance(owner, arith.AddiOp) else -1
            total = dict(a)
            for variable, c in b.items():
                total[variable] = total.get(variable, 0) + sign * c
            return {variable: c for variable, c in total.items() if c}
        if isinstance(owner, arith.MuliOp):
            for factor, other in ((owner.lhs, owner.rhs), (owner.rhs, owner.lhs)):
                scale, inner = constant_index(factor), self.terms(other)
                if scale is not None and inner is not None:
                    return {variable: c * scale for variable, c in inner.items() if c * scale}
        if isinstance(owner, arith.DivSIOp) and constant_index(owner.rhs) == 1:  # a stride-1 window's `// stride`
            return self.terms(owner.lhs)
        return None

    def scale(self, value: SSAValue) -> int | None:
        found = self.terms(value)
        return None if found is None else found.get(self.variable, 0)

    def invariant(self, value: SSAValue) -> bool:
        return self.terms(value) == {}

    def at_zero(self, value: SSAValue, at: IndexBuilder, built: dict[SSAValue, SSAValue]) -> SSAValue:
        value = self.seen_through.get(value, value)
        if value in self.extremes:
            return self.extremes[value]
        return super().at_zero(value, at, built)

    def at_extreme(self, value: SSAValue, largest: bool, at: IndexBuilder) -> SSAValue:
        """value with v = 0 and each window variable at the end of its range that makes it
        smallest (largest: largest), computed before the loop."""
        found = self.terms(value)
        assert found is not None
        built: dict[SSAValue, SSAValue] = {}
        self.extremes = {}
        for variable, c in found.items():
            if variable is not self.variable:
                inner = self.windows[variable]
                top = (c > 0) == largest
                end = at.add(self.at_zero(inner.ub, at, built), -1) if top else self.at_zero(inner.lb, at, built)
                self.extremes[variable] = end
        try:
            return self.at_zero(value, at, built)
        finally:
            self.extremes = {}


def _hot(op: Operation, loop: scf.ForOp) -> bool:
    """Whether `op` runs in `loop`'s fast code: not in a version marked cold (a pack's fallback,
    loop_utils.in_cold_version), nor in a copy loop (a pack's, partitioned as an innermost loop of
    its own where it clamps along its positions)."""
    at = op.parent_op()
    while at is not None and at is not loop:
        if COLD in at.attributes or loop_role(at) == LoopRole.COPY:
            return False
        at = at.parent_op()
    return True


def _invariant(affine: LoopAffine, value: SSAValue) -> bool:
    return affine.invariant(value) if isinstance(affine, _WindowAffine) else affine.scale(value) == 0


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
        value = affine.at_extreme(c.value, c.upper, at) if isinstance(affine, _WindowAffine) \
            else affine.at_zero(c.value, at, built)
        room = at.emit(arith.SubiOp(at.add(affine.at_zero(c.bound, at, built), c.shift), value))
        if c.upper:  # s*v + r <= U  <=>  v < ⌊(U - r) / s⌋ + 1
            hi = at.emit(arith.MinSIOp(hi, at.add(at.floordiv(room, s), 1)))
        else:  # s*v + r >= L  <=>  v >= ⌈(L - r) / s⌉
            lo = at.emit(arith.MaxSIOp(lo, at.ceildiv(room, s)))
    step = constant_index(loop.step) or 1
    if step > 1:  # the parts start at lb + a multiple of the step: lo up to one, hi down to one
        lo = at.emit(arith.AddiOp(loop.lb, at.emit(arith.MuliOp(
            at.ceildiv(at.emit(arith.SubiOp(lo, loop.lb)), step), at.const(step)))))
        hi = at.emit(arith.AddiOp(loop.lb, at.emit(arith.MuliOp(
            at.floordiv(at.emit(arith.SubiOp(hi, loop.lb)), step), at.const(step)))))
    lo = at.emit(arith.MinSIOp(lo, loop.ub))
    hi = at.emit(arith.MaxSIOp(lo, at.emit(arith.MinSIOp(hi, loop.ub))))
    return lo, hi


def _worth_it(loop: scf.ForOp, folded: dict[Operation, int | None]) -> bool:
    """Whether an innermost loop is partitioned: it has a clamp to fold, or it walks a sum's terms
    and a test decides a branch (the module's doc), over more than a few constant trips (a window's
    fixed taps: straight-line code in LLVM, the loop around them vectorized, as bilinear x2 backward's
    gather; partitioned, it ran 10% slower)."""
    if any(operand is not None for operand in folded.values()):
        return True
    if loop_role(loop) not in (LoopRole.REDUCE, LoopRole.ROW):
        return False
    bounds = [constant_index(v) for v in (loop.lb, loop.ub, loop.step)]
    if None not in bounds and len(range(*bounds)) <= SHORT_TRIPS:
        return False
    tests = [op.results[0] for op, operand in folded.items() if operand is None]
    while tests:  # through the conjunctions the tests are part of, to a branch's condition
        for use in tests.pop().uses:
            if isinstance(use.operation, scf.IfOp):
                return True
            if isinstance(use.operation, arith.AndIOp):
                tests.append(use.operation.result)
    return False


def _innermost(loop: scf.ForOp) -> bool:
    return not any(isinstance(inner, scf.ForOp) for inner in loop.body.walk() if inner is not loop)


def _window_loop(loop: scf.ForOp) -> bool:
    """A loop with loops inside whose tests or clamps read their variables (a window's taps)."""
    if _innermost(loop) or "tg.stage" in loop.attributes or (constant_index(loop.step) or 0) < 1 \
            or in_cold_version(loop):
        return False
    conditions, _, affine = _conditions(loop, window=True, hot=True)
    assert isinstance(affine, _WindowAffine)
    return any(set(affine.terms(c.value) or ()) - {affine.variable} for c in conditions)


def _partition(loop: scf.ForOp) -> bool:
    window = not _innermost(loop)
    if constant_index(loop.step) != 1 and not window:
        return False
    conditions, folded, affine = _conditions(loop, window)
    if not window and not _worth_it(loop, folded):
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
    """The loops partition-clamped-loops partitions: innermost loops with a clamp to fold or a sum's
    branched test (_worth_it), then window loops, inner ones first (its decision, which the cpu
    planner lists too; partitioning one leaves the others' decision as it was)."""
    return _window_loops(root) + _innermost_loops(root)


def _window_loops(root: Operation) -> list[scf.ForOp]:
    """Inner ones first: the outer ones copy them partitioned."""
    return [loop for loop in root.walk() if isinstance(loop, scf.ForOp) and _window_loop(loop)][::-1]


def _innermost_loops(root: Operation) -> list[scf.ForOp]:
    return [loop for loop in root.walk() if isinstance(loop, scf.ForOp) and _innermost(loop)
            and constant_index(loop.step) == 1 and not in_cold_version(loop)
            and _worth_it(loop, _conditions(loop)[1])]


@dataclass(frozen=True)
class PartitionClampedLoops(ModulePass):
    """Split innermost loops and window loops around the iterations where an index clamp or range test can
    bite, so the iterations in between run without them; with `directives`, the loops they name."""

    name = "partition-clamped-loops"
    directives: str | None = None
    """Partition(by=clamp) directives, printed, `;`-separated (passes/applying.py): the loops they name."""
    takes_text: ClassVar[str] = "Partition(by='clamp')"

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Partition) and directive.by == PartitionBy.CLAMP

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        candidates = [(_own(loop), loop) for loop in partitioned_loops(op)]
        chosen(self, candidates, "innermost or window loop with a clamp or range test")  # (refuses the unnamed)
        given = given_directives(self, self.takes)
        for loop in _window_loops(op):
            if in_force(given, _own(loop)) is not None:
                _partition(loop)
        for loop in _innermost_loops(op):  # then the innermost loops, found anew (the window loops' outer parts')
            if in_force(given, _own(loop)) is not None:
                _partition(loop)


def _own(loop: scf.ForOp) -> Partition:
    return Partition(stage=stage_number(enclosing_func(loop)), axis=loop_axis(loop))
