"""Index values affine in a loop's variable, and the index arithmetic to compute bounds from them
before the loop: what partition-clamped-loops, split-stride-phases and separate-strided-load-groups
read and build."""

from __future__ import annotations

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import FixedBitwidthType, IndexType, IntegerAttr, IntegerType
from xdsl.ir import Block, Operation, SSAValue

from tilegrad.index_math import truncated_div
from tilegrad.passes.common import constant_index

INDEX = IndexType()


Linear = tuple[frozenset, int]
"""An index as ({(term, coefficient)}, constant): the sum of the terms times their coefficients,
plus the constant."""


def linear_form(value: SSAValue, loop: scf.ForOp, depth: int = 0) -> Linear | None:
    """value as a sum of the loop variable and values defined outside the loop, each times a
    constant, plus a constant; None where it is not such a sum."""
    constant = constant_index(value)
    if constant is not None:
        return frozenset(), constant
    owner = value.owner
    if isinstance(owner, Block) and owner is not loop.body.block or isinstance(owner, Operation) and \
            not loop.is_ancestor(owner) or value is loop.body.block.args[0]:
        return frozenset({(value, 1)}), 0
    if depth > 16 or not isinstance(owner, (arith.AddiOp, arith.SubiOp, arith.MuliOp)):
        return None
    if isinstance(owner, arith.MuliOp):
        for factor, other in ((owner.lhs, owner.rhs), (owner.rhs, owner.lhs)):
            scale, inner = constant_index(factor), linear_form(other, loop, depth + 1)
            if scale is not None and inner is not None:
                return frozenset((t, c * scale) for t, c in inner[0] if c * scale), inner[1] * scale
        return None
    a, b = linear_form(owner.lhs, loop, depth + 1), linear_form(owner.rhs, loop, depth + 1)
    if a is None or b is None:
        return None
    sign = 1 if isinstance(owner, arith.AddiOp) else -1
    terms = dict(a[0])
    for term, coefficient in b[0]:
        terms[term] = terms.get(term, 0) + sign * coefficient
    return frozenset((t, c) for t, c in terms.items() if c), a[1] + sign * b[1]


class LoopAffine:
    """Which values of a loop body are s*v + r in the loop variable v (s a constant, r computed from
    values defined outside the loop). `seen_through` maps a value to the one it equals in the part
    of the loop being built (a clamp that cannot bite there is its operand)."""

    def __init__(self, loop: scf.ForOp):
        self.loop = loop
        self.variable = loop.body.block.args[0]
        self.seen_through: dict[SSAValue, SSAValue] = {}
        self._scales: dict[SSAValue, int | None] = {}

    def scale(self, value: SSAValue) -> int | None:
        """s if value = s*v + r, 0 if it does not depend on v, None if not affine (a load, a
        division, a carried value ...)."""
        value = self.seen_through.get(value, value)
        if value is self.variable:
            return 1
        if value not in self._scales:
            self._scales[value] = self._scale(value)
        return self._scales[value]

    def _scale(self, value: SSAValue) -> int | None:
        owner = value.owner
        if isinstance(owner, Block):  # v itself is handled above; another argument inside varies
            return None if self.loop.is_ancestor(owner) else 0
        if not self.loop.is_ancestor(owner):
            return 0
        if isinstance(owner, arith.ConstantOp):
            return 0
        if isinstance(owner, memref.DimOp):
            return 0 if all(self.scale(o) == 0 for o in owner.operands) else None
        if isinstance(owner, (arith.AddiOp, arith.SubiOp)):
            a, b = self.scale(owner.lhs), self.scale(owner.rhs)
            if a is None or b is None:
                return None
            return a + b if isinstance(owner, arith.AddiOp) else a - b
        if isinstance(owner, arith.MuliOp):
            a, b = self.scale(owner.lhs), self.scale(owner.rhs)
            if a == 0 and b == 0:
                return 0
            ca, cb = constant_index(owner.lhs), constant_index(owner.rhs)
            if ca is not None and b is not None:
                return ca * b
            if cb is not None and a is not None:
                return cb * a
        if isinstance(owner, arith.DivSIOp) and constant_index(owner.rhs) == 1:  # a stride-1 window's `// stride`
            return self.scale(owner.lhs)
        return None

    def at_zero(self, value: SSAValue, at: IndexBuilder, built: dict[SSAValue, SSAValue]) -> SSAValue:
        """The value with v = 0 (r of s*v + r, or an invariant as it is), computed where `at`
        builds (before the loop) by copies of the ops inside the loop it is computed with."""
        value = self.seen_through.get(value, value)
        if value is self.variable:
            return at.const(0)
        owner = value.owner
        if not isinstance(owner, Operation) or not self.loop.is_ancestor(owner):
            return value
        if value not in built:
            copy = owner.clone()
            copy.operands = [self.at_zero(o, at, built) for o in owner.operands]
            copy.results[0].name_hint = None
            built[value] = at.emit(copy)
        return built[value]


def interleaved_store_bytes(loop: scf.ForOp) -> int:
    """The element size of an innermost loop's stores whose innermost index walks the loop by a
    constant stride above 1 (split-stride-phases' groups of interleaved phases); 0 if it has none."""
    if any(op.regions for op in loop.body.block.ops):
        return 0
    affine = LoopAffine(loop)
    for op in loop.body.block.ops:
        if isinstance(op, memref.StoreOp) and op.indices and (affine.scale(op.indices[-1]) or 0) > 1:
            element = op.memref.type.element_type
            return element.size if isinstance(element, FixedBitwidthType) else 0
    return 0


_FOLDS = {arith.AddiOp: lambda a, b: a + b, arith.SubiOp: lambda a, b: a - b, arith.MuliOp: lambda a, b: a * b,
          arith.MaxSIOp: max, arith.MinSIOp: min,
          arith.DivSIOp: lambda a, b: truncated_div(a, b) if b else None}
PREDICATES = {0: lambda a, b: a == b, 1: lambda a, b: a != b, 2: lambda a, b: a < b, 3: lambda a, b: a <= b,
               4: lambda a, b: a > b, 5: lambda a, b: a >= b}
"""arith.cmpi's signed predicates (and eq, ne) on Python ints."""


def _folded(op: Operation, at: IndexBuilder) -> SSAValue | None:
    """The value of index arithmetic on constants (a select on a constant: the operand it picks)."""
    if isinstance(op, arith.SelectOp):
        condition = op.cond.owner
        if isinstance(condition, arith.ConstantOp) and isinstance(condition.value, IntegerAttr):
            return op.lhs if condition.value.value.data else op.rhs
        return None
    constants = [constant_index(o) for o in op.operands]
    if None in constants or len(constants) != 2:
        return None
    if type(op) in _FOLDS and op.results[0].type == INDEX:
        value = _FOLDS[type(op)](*constants)
        return None if value is None else at.const(value)
    if isinstance(op, arith.CmpiOp) and op.predicate.value.data in PREDICATES:
        return at.flag(PREDICATES[op.predicate.value.data](*constants))
    return None


class IndexBuilder:
    """Index arithmetic inserted before an op (a loop), constants shared."""

    def __init__(self, before: Operation):
        self.before = before
        self._constants: dict[int, SSAValue] = {}
        self._flags: dict[bool, SSAValue] = {}

    def emit(self, op: Operation) -> SSAValue:
        """op's result, inserted before the loop; an op of constants is not inserted but folded
        (window offsets are mostly constants, and later passes read bounds as constants)."""
        folded = _folded(op, self)
        if folded is not None:
            return folded
        self.before.parent_block().insert_op_before(op, self.before)
        return op.results[0]

    def const(self, n: int) -> SSAValue:
        if n not in self._constants:
            self._constants[n] = self.emit(arith.ConstantOp(IntegerAttr(n, INDEX)))
        return self._constants[n]

    def flag(self, value: bool) -> SSAValue:
        if value not in self._flags:
            self._flags[value] = self.emit(arith.ConstantOp(IntegerAttr(int(value), IntegerType(1))))
        return self._flags[value]

    def add(self, a: SSAValue, n: int) -> SSAValue:
        return a if n == 0 else self.emit(arith.AddiOp(a, self.const(n)))

    def floordiv(self, a: SSAValue, s: int) -> SSAValue:
        """⌊a / s⌋ for a constant s > 0 (divsi truncates toward zero: negative a is moved down
        first)."""
        if s == 1:
            return a
        negative = self.emit(arith.CmpiOp(a, self.const(0), "slt"))
        adjusted = self.emit(arith.SelectOp(negative, self.add(a, 1 - s), a))
        return self.emit(arith.DivSIOp(adjusted, self.const(s)))

    def ceildiv(self, a: SSAValue, s: int) -> SSAValue:
        return self.floordiv(self.add(a, s - 1), s)


def copy_of_loop(loop: scf.ForOp, value_mapper: dict[SSAValue, SSAValue] | None = None) -> scf.ForOp:
    """A copy of the loop to run beside it over another range (not a stage of its own)."""
    copy = loop.clone(value_mapper=value_mapper)
    copy.attributes.pop("tg.stage", None)
    return copy
