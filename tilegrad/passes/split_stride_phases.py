"""split-stride-phases: a parallel loop whose body divides `v + c` by a constant s (a strided window
read from the input side: the windows covering input element v start at (v + pad) / stride) runs
s iterations at a time, one per phase of v modulo s, so that each phase's quotient is the new
loop's variable plus a constant and its remainder a constant.

    for v in [lb, ub): body(v, (v + c) / s, (v + c) % s)
 -> for v in [lb, a):  body(...)                                  (up to a multiple of s)
    for q in [a/s, b/s): body(s*q + p, q + ⌊(p + c)/s⌋, (p + c) mod s)   for p = 0 .. s-1
    for v in [b, ub):  body(...)                                  (the rest)

The main loop reads the windows' values at consecutive q (not through a division LLVM cannot
vectorize) and writes s interleaved elements per iteration, which LLVM vectorizes as one group.
`divsi` truncates toward zero, so the main loop starts where every divided value is >= 0; before
that, and for the iterations that do not fill a group of s, the original loop runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import LoopRole
from tilegrad.passes.applying import chosen
from tilegrad.passes.common import constant_index, copy_iteration, enclosing_func, loop_axis, loop_role, stage_number
from tilegrad.passes.loop_affine import INDEX, IndexBuilder, LoopAffine, copy_of_loop
from tilegrad.passes.loop_utils import in_cold_version
from tilegrad.schedule import Directive, Partition, PartitionBy

MAX_STRIDE = 4


def _divisions(loop: scf.ForOp, affine: LoopAffine) -> list[Operation]:
    return [o for o in loop.body.walk() if isinstance(o, (arith.DivSIOp, arith.RemSIOp))
            and affine.scale(o.lhs) == 1 and (constant_index(o.rhs) or 0) > 1]


def _stride(loop: Operation) -> int | None:
    """The one small stride a parallel loop's body divides its variable by: the loop is split in
    its phases (None: it is not)."""
    if not isinstance(loop, scf.ForOp) or constant_index(loop.step) != 1 or loop_role(loop) != LoopRole.PARALLEL \
            or loop.results:
        return None
    if any(isinstance(o, scf.ForOp) and loop_role(o) == LoopRole.PARALLEL for o in loop.body.walk()):
        return None
    strides = {constant_index(o.rhs) for o in _divisions(loop, LoopAffine(loop))}
    if len(strides) != 1 or next(iter(strides)) > MAX_STRIDE:
        return None
    return strides.pop()


def phase_split_loops(root: Operation) -> list[scf.ForOp]:
    """The loops split-stride-phases splits: its decision, which the cpu planner lists too (a split
    loop holds no other parallel loop, so splitting one leaves the others' decision as it was)."""
    return [o for o in root.walk() if not in_cold_version(o) and _stride(o) is not None]


def _split(loop: scf.ForOp) -> bool:
    s = _stride(loop)
    if s is None:
        return False
    affine = LoopAffine(loop)
    divisions = _divisions(loop, affine)
    at = IndexBuilder(loop)
    built: dict[SSAValue, SSAValue] = {}
    offsets = {o: affine.at_zero(o.lhs, at, built) for o in divisions}
    start = loop.lb
    for c in offsets.values():  # v + c >= 0 from here on
        start = at.emit(arith.MaxSIOp(start, at.emit(arith.SubiOp(at.const(0), c))))
    a = at.emit(arith.MinSIOp(at.emit(arith.MuliOp(at.ceildiv(start, s), at.const(s))), loop.ub))
    b = at.emit(arith.MaxSIOp(a, at.emit(arith.MuliOp(at.floordiv(loop.ub, s), at.const(s)))))
    # per phase p and division: ⌊(p + c)/s⌋ (added to q) or (p + c) mod s, computed once
    phase_values: list[dict[Operation, SSAValue]] = []
    for p in range(s):
        values = {}
        for o, c in offsets.items():
            shifted = at.add(c, p)
            whole = at.floordiv(shifted, s)
            values[o] = whole if isinstance(o, arith.DivSIOp) else at.emit(
                arith.SubiOp(shifted, at.emit(arith.MuliOp(whole, at.const(s)))))
        phase_values.append(values)

    body = Block(arg_types=[INDEX])
    q = body.args[0]
    stride = arith.ConstantOp.from_int_and_width(s, INDEX)
    base = arith.MuliOp(q, stride)
    body.add_ops([stride, base])
    for p, values in enumerate(phase_values):
        offset = arith.ConstantOp.from_int_and_width(p, INDEX)
        v = arith.AddiOp(base, offset)
        body.add_ops([offset, v])
        mapping = copy_iteration(loop, body, v.result)
        for o, value in values.items():
            copy = mapping[o.results[0]].owner
            assert isinstance(copy, Operation)
            if isinstance(o, arith.DivSIOp):
                quotient = arith.AddiOp(q, value)
                copy.parent_block().insert_op_before(quotient, copy)
                value = quotient.result
            copy.results[0].replace_all_uses_with(value)
            copy.detach()
            copy.erase()
    body.add_op(scf.YieldOp())
    main = scf.ForOp(at.emit(arith.DivSIOp(a, at.const(s))), at.emit(arith.DivSIOp(b, at.const(s))),
                     at.const(1), [], Region([body]))
    main.attributes.update(loop.attributes)
    main.attributes.pop("tg.stage", None)
    rest = copy_of_loop(loop)
    loop.parent_block().insert_ops_after([main, rest], loop)
    loop.operands = (loop.lb, a, *loop.operands[2:])
    rest.operands = (b, *rest.operands[1:])
    return True


@dataclass(frozen=True)
class SplitStridePhases(ModulePass):
    """Run parallel loops whose body divides their variable by a small constant one group of
    phases at a time, so quotients are affine and remainders constant; with `directives`, the loops
    they name."""

    name = "split-stride-phases"
    directives: str | None = None
    """Partition(by=residue) directives, printed, `;`-separated (passes/applying.py): the loops they name."""
    takes_text: ClassVar[str] = "Partition(by='residue')"

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Partition) and directive.by == PartitionBy.RESIDUE

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        candidates = [(Partition(stage=stage_number(enclosing_func(loop)), axis=loop_axis(loop),
                                 by=PartitionBy.RESIDUE), loop) for loop in phase_split_loops(op)]
        for loop, _ in chosen(self, candidates, "loop dividing its variable by a small stride"):
            _split(loop)
