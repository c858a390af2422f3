"""split-window-phases: a sum whose terms a test `(a*v + b*t + c) % s == 0` switches off (v an output
loop's variable, t a sum variable, a, b, c, s constants, b prime to s: a strided conv's grad_input,
dx[h] = sum over i of where((h + p - i) % s == 0, dy[(h + p - i) / s] w[i], 0)) runs its loops inside
the stage's outermost one once per phase of v modulo s, each phase's sum over the one residue class
of t modulo s the test keeps:

    for n: for v: y[v] = sum over t of where(... & (a v + b t + c) % s == 0, f(v, t, (a v + b t + c) / s), 0)
 -> for n:
      for ph in [0, s):    (r: a ph + b r + c = 0 mod s, r in [0, s); m = (a ph + b r + c) / s: made here)
        for q: y[s q + ph] = sum over u in [0, ⌈(T - r)/s⌉) of where(... & true, f(s q + ph, s u + r, a q + b u + m), 0)

The other classes' terms are all zeros (the test fails): they are not summed. The division is exact
and affine in q and u (plus m, made once per phase), the test true: each phase's sum is a plain
window (a quarter of a 2-D conv's terms at stride 2), which pack-windowed-operands packs, with its
weight's taps of that class (w[s u + r]) copied to its panel in the phase loop. One nest runs every
phase (r, m and the bounds: a few integer ops per phase), so the IR and the compile stay one
stage's. The same terms summed in another order: results equal up to rounding. The loop of v is a
loop of the stage inside its outermost one (its bounds made before the stage) or the positions of a
tile of it (the tile then walks q). Only a contraction is split (the kept term a product of two
reads, one through the window, the other depending on t and not on v): where the terms are not
summed as a GEMM, split-stride-phases' groups of phases serve better (pooling's windows).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import LoopRole
from tilegrad.passes.applying import chosen
from tilegrad.passes.common import (
    constant_index,
    depends_on,
    functions,
    loop_axis,
    loop_role,
    stage_number,
)
from tilegrad.passes.loop_affine import IndexBuilder, linear_form
from tilegrad.passes.loop_utils import made_outside, zero_constant
from tilegrad.schedule import Directive, Partition, PartitionBy

MAX_STRIDE = 4
_SIGNED_OR_EQUAL = (0, 1, 2, 3, 4, 5)  # arith.cmpi's eq, ne, slt, sle, sgt, sge


@dataclass
class _Phases:
    """A test `(a v + b t + c) % s == 0` a stage's sum is split by."""

    root: scf.ForOp  # the stage's outermost loop (the phase loop runs inside it)
    vloop: scf.ForOp  # v's loop
    tile: scf.ForOp | None  # the tile vloop walks the positions of (None: vloop's bounds are the stage's)
    tloop: scf.ForOp  # t's loop (from 0 by 1)
    a: int
    b: int
    c: int
    s: int
    ops: list[Operation]  # the divisions and remainders of a v + b t + c by s

    def directive(self, fn: func.FuncOp) -> Partition:
        return Partition(stage=stage_number(fn), axis=loop_axis(self.vloop), by=PartitionBy.PHASE)


def _variable_loop(value: SSAValue) -> scf.ForOp | None:
    owner = value.owner
    if isinstance(owner, Block) and isinstance(owner.parent_op(), scf.ForOp) and value is owner.args[0]:
        return owner.parent_op()
    return None


def _tested(select: arith.SelectOp, rem: arith.RemSIOp) -> bool:
    """The select's condition is an `andi` tree with the leaf `rem == 0`."""
    stack = [select.cond]
    while stack:
        op = stack.pop().owner
        if isinstance(op, arith.AndIOp):
            stack.extend(op.operands)
        elif isinstance(op, arith.CmpiOp) and op.predicate.value.data == 0 and rem.result in op.operands \
                and any(constant_index(o) == 0 for o in op.operands):
            return True
    return False


def _term(tloop: scf.ForOp) -> arith.SelectOp | None:
    """The term a perfect nest of sums from tloop down adds: a select whose else is 0."""
    loop = tloop
    while True:
        if len(loop.iter_args) != 1 or any(isinstance(o, memref.StoreOp) for o in loop.body.walk()):
            return None
        last = loop.body.block.last_op
        added = last.operands[0].owner if isinstance(last, scf.YieldOp) and last.operands else None
        if not isinstance(added, arith.AddfOp) or loop.body.block.args[1] not in added.operands:
            return None
        other = [v for v in added.operands if v is not loop.body.block.args[1]][0]
        if isinstance(other.owner, scf.ForOp) and other.owner.parent_block() is loop.body.block:
            loop = other.owner
            continue
        if isinstance(other.owner, arith.SelectOp) and zero_constant(other.owner.operands[2]):
            return other.owner
        return None


def _contraction(select: arith.SelectOp, v: SSAValue, t: SSAValue) -> bool:
    """The kept term: a product of two reads, one depending on v and t, the other on t and not v."""
    product = select.operands[1].owner
    if not isinstance(product, arith.MulfOp) or not all(isinstance(o.owner, memref.LoadOp) for o in product.operands):
        return False
    reads = [o.owner for o in product.operands]
    window = [r for r in reads if any(depends_on(i, v) for i in r.indices)]
    taps = [r for r in reads if r not in window and any(depends_on(i, t) for i in r.indices)]
    return len(window) == 1 and len(taps) == 1


def _phases(root: scf.ForOp) -> list[_Phases]:
    """The tests of a stage a phase split folds (see the module's doc), one per v's loop."""
    found: dict[scf.ForOp, _Phases] = {}
    for rem in [o for o in root.walk() if isinstance(o, arith.RemSIOp)]:
        s = constant_index(rem.rhs)
        form = linear_form(rem.lhs, root) if s is not None and 2 <= s <= MAX_STRIDE else None
        if form is None:
            continue
        loops = {_variable_loop(term): coefficient for term, coefficient in form[0]}
        if len(loops) != 2 or None in loops:
            continue
        reduce = [loop for loop in loops if loop_role(loop) == LoopRole.REDUCE]
        parallel = [loop for loop in loops if loop_role(loop) == LoopRole.PARALLEL]
        if len(reduce) != 1 or len(parallel) != 1:
            continue
        tloop, vloop = reduce[0], parallel[0]
        a, b, c = loops[vloop], loops[tloop], form[1]
        if gcd(b, s) != 1 or vloop in found or not vloop.is_ancestor(tloop) or vloop.iter_args \
                or constant_index(vloop.step) != 1 or constant_index(tloop.lb) != 0 \
                or constant_index(tloop.step) != 1 or not made_outside(tloop.ub, root):
            continue
        tile = vloop.parent_op()
        if made_outside(vloop.lb, root) and made_outside(vloop.ub, root):
            tile = None
        elif not (isinstance(tile, scf.ForOp) and loop_role(tile) == LoopRole.TILE
                  and vloop.lb is tile.body.block.args[0] and made_outside(tile.lb, root)
                  and made_outside(tile.ub, root)):
            continue
        if (tile or vloop) is root:
            continue  # (the phase loop runs inside the stage's outermost loop)
        select = _term(tloop)
        if select is None or not _tested(select, rem) \
                or not _contraction(select, vloop.body.block.args[0], tloop.body.block.args[0]):
            continue
        ops = [o for o in tloop.walk() if isinstance(o, (arith.DivSIOp, arith.RemSIOp))
               and constant_index(o.rhs) == s and linear_form(o.lhs, root) == form]
        found[vloop] = _Phases(root, vloop, tile, tloop, a, b, c, s, ops)
    return list(found.values())


def window_phases(module: Operation) -> list[tuple[Partition, _Phases]]:
    """What split-window-phases splits, each named by its directive (the cpu planner lists them)."""
    return [(p.directive(fn), p) for fn in functions(module) for root in fn.body.block.ops
            if isinstance(root, scf.ForOp) for p in _phases(root)]


def _inverse(b: int, s: int) -> int:
    return next(x for x in range(1, s) if b * x % s == 1) if s > 1 else 0


def _split(p: _Phases) -> None:
    """The stage's loops inside its outermost one run once per phase of v (see the module's doc)."""
    s, root = p.s, p.root
    # for ph in [0, s): the root's body, its phase's bounds and offsets made first
    body = root.body.block
    moved = [o for o in body.ops if not isinstance(o, scf.YieldOp)]
    zero, count, one = (arith.ConstantOp(IntegerAttr(n, root.lb.type)) for n in (0, s, 1))
    inside = Block(arg_types=[root.lb.type])
    phases = scf.ForOp(zero.result, count.result, one.result, [], Region([inside]))  # (no role: no axis's loop)
    for op in moved:
        op.detach()
    inside.add_ops([*moved, scf.YieldOp()])
    body.insert_ops_before([zero, count, one, phases], body.last_op)
    ph = inside.args[0]
    ph.name_hint = "phase"
    at = IndexBuilder(inside.first_op)

    def times(value: SSAValue, n: int) -> SSAValue:
        return value if n == 1 else at.emit(arith.MuliOp(value, at.const(n)))

    # r: a ph + b r + c = 0 (mod s), r in [0, s): r = (α ph + β) mod s (α, β made non-negative)
    inverse = _inverse(p.b % s, s)
    alpha, beta = -inverse * p.a % s, -inverse * p.c % s
    r = at.emit(arith.RemSIOp(at.add(times(ph, alpha), beta), at.const(s)))
    r.name_hint = "residue"
    # m = (a ph + b r + c) / s, exact
    top = at.add(at.emit(arith.AddiOp(times(ph, p.a), times(r, p.b))), p.c)
    m = at.emit(arith.DivSIOp(top, at.const(s)))
    m.name_hint = "quotient"
    # v = s q + ph over q in [⌈(lb - ph)/s⌉, ⌈(ub - ph)/s⌉); t = s u + r over u in [0, ⌈(T - r)/s⌉)
    ranged = p.tile or p.vloop
    qlb, qub = (at.ceildiv(at.emit(arith.SubiOp(bound, ph)), s) for bound in (ranged.lb, ranged.ub))
    ucount = at.ceildiv(at.emit(arith.SubiOp(p.tloop.ub, r)), s)
    vloop, tloop = p.vloop, p.tloop
    if p.tile is not None:  # (the tile walks q: the positions' bound in it too)
        old = ranged.ub
        old.replace_uses_with_if(qub, lambda use: ranged.is_ancestor(use.operation)
                                 and use.operation is not ranged and not vloop.is_ancestor(use.operation))
    ranged.operands = [qlb, qub, *ranged.operands[2:]]
    tloop.operands = [tloop.lb, ucount, *tloop.operands[2:]]
    variables = []
    for loop, offset in ((vloop, ph), (tloop, r)):
        block = loop.body.block
        stride = arith.ConstantOp(IntegerAttr(s, loop.lb.type))
        scaled = arith.MuliOp(block.args[0], stride)
        value = arith.AddiOp(scaled, offset)
        block.args[0].replace_uses_with_if(value.result, lambda use: use.operation is not scaled)
        block.insert_ops_before([stride, scaled, value], block.first_op)
        variables.append(block.args[0])
    q, u = variables
    for op in p.ops:  # exact: a q + b u + m; the remainder 0
        if isinstance(op, arith.RemSIOp):
            zero = arith.ConstantOp(IntegerAttr(0, q.type))
            op.parent_block().insert_op_before(zero, op)
            for use in list(op.result.uses):
                user = use.operation
                if isinstance(user, arith.CmpiOp) and user.predicate.value.data == 0 \
                        and any(constant_index(o) == 0 for o in user.operands):
                    true = arith.ConstantOp(IntegerAttr(1, IntegerType(1)))
                    user.parent_block().insert_op_before(true, user)
                    user.result.replace_all_uses_with(true.result)
                    user.detach()
                    user.erase()
            op.result.replace_all_uses_with(zero.result)
        else:
            made: list[Operation] = []
            for value, n in ((q, p.a), (u, p.b)):
                if n != 1:
                    made += [arith.ConstantOp(IntegerAttr(n, q.type))]
                    made += [arith.MuliOp(value, made[-1].result)]
            aq, bu = (made[1].results[0] if p.a != 1 else q), (made[-1].results[0] if p.b != 1 else u)
            both = arith.AddiOp(aq, bu)
            total = arith.AddiOp(both, m)
            top = op.lhs
            if isinstance(top.owner, Operation):  # (made right after the dividend: its tests read it)
                top.owner.parent_block().insert_ops_after([*made, both, total], top.owner)
            else:
                op.parent_block().insert_ops_before([*made, both, total], op)
            op.result.replace_all_uses_with(total.result)
            # the dividend is s times the quotient: its sign tests are the quotient's (the window's
            # `v >= 0` beside its clamp max(v, 0), which branch-guarded-reads then drops)
            for use in list(top.uses):
                user = use.operation
                if isinstance(user, arith.CmpiOp) and user.predicate.value.data in _SIGNED_OR_EQUAL \
                        and constant_index(user.operands[1 - use.index]) == 0:
                    user.operands[use.index] = total.result
        op.detach()
        op.erase()


@dataclass(frozen=True)
class SplitWindowPhases(ModulePass):
    """Run a stage's loops inside its outermost one once per phase of an output loop whose sum's
    terms a `% s == 0` test switches off (a loop over the phases), each phase's sum over the one
    residue class of its variable the test keeps (see the module's doc); with `directives`
    (Partition(by='phase')), the loops they name."""

    name = "split-window-phases"
    directives: str | None = None
    """Partition(by='phase') directives, printed, `;`-separated (passes/applying.py): the loops they name."""
    takes_text: ClassVar[str] = "Partition(by='phase')"

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Partition) and directive.by == PartitionBy.PHASE

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        wanted = {directive for _, directive in chosen(self, window_phases(op), "test of a sum's residue")}
        while True:  # (one loop at a time: a split's rewrites leave the other loops' tests as they were)
            todo = [p for own, p in window_phases(op) if any(w.names(own) and w.partitioned for w in wanted)]
            if not todo:
                return
            _split(todo[0])
