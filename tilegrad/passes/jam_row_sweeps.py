"""jam-row-sweeps: rows whose column sums sweep the same data run ROWS at a time, in one sweep.

After interchange-column-reductions, a row i of `g @ w` (or of `g.T @ x`) sums its terms into a
stack row: for v: for h in tile: acc[h] += g[i, v] * w[v, h]. Every row re-reads all of w. Unrolled
by ROWS on i and jammed, each w[v, h] loaded once feeds ROWS accumulator rows (the register tile of
a GEMM kernel, on the row side: unroll-reuse-loops' twin for the column form):

    for i step ROWS:                            acc_k: a stack row per copy
      for v: for h in tile:
        acc_0[h] += g[i, v] w[v, h];  ...;  acc_3[h] += g[i+3, v] w[v, h]

The copies of the body are zipped: a loop or `scf.if` whose bounds (or condition) are the same in
every copy becomes one, with the copies' bodies zipped inside it; index arithmetic that does not
depend on the row is computed once; every other op runs once per copy, in the body's order. Each
copy has its own stack rows and writes its own output row, so every sum adds the same terms in the
same order as before: results are bitwise unchanged. Rows left over run in the original loop.
For targets without UB staging (cpu), after interchange-column-reductions.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import LoopRole
from tilegrad.passes.common import (
    check_counts,
    constant_index,
    depends_on,
    functions,
    loop_role,
    pure_arith,
    read_memrefs,
    viewed,
    whole_steps,
    written_memrefs,
)
from tilegrad.passes.loop_affine import LoopAffine

ROWS = 4
"""Rows per sweep: with chunk-row-sweeps' columns (16 with AVX2), 4 rows x 2 vectors of
accumulators, the register tile of a GEMM kernel that broadcasts one g per two FMAs (8 rows of
one vector broadcast one per FMA: 77-79% of numpy's matmul for G @ W and G.T @ X on znver1,
against 90%; 6 rows, 52-56%)."""


def _stack_rows(loop: scf.ForOp) -> list[SSAValue]:
    """The stack rows (allocas) the loop's body uses: each copy gets its own."""
    rows = {o.memref: None for o in loop.body.walk() if isinstance(o, memref.LoadOp | memref.StoreOp)
            if isinstance(o.memref.owner, memref.AllocaOp)}
    return list(rows)  # in the order the body first uses them: the printed IR is the same every time


def sweeps_shared_data(loop: scf.ForOp) -> bool:
    """Whether an interchanged row loop inside reads data the row does not choose (w[v, h]) beside
    data it does (g[i, v]): the reuse that jamming turns into fewer loads."""
    iv = loop.body.block.args[0]
    for row in (o for o in loop.body.walk() if isinstance(o, scf.ForOp) and loop_role(o) == LoopRole.ROW):
        loads = [o for o in row.body.walk() if isinstance(o, memref.LoadOp)
                 and not isinstance(o.memref.owner, memref.AllocaOp)]
        varying = [any(depends_on(i, iv) for i in load.indices) for load in loads]
        if any(varying) and not all(varying):
            return True
    return False


def _candidate(loop: Operation) -> bool:
    if not isinstance(loop, scf.ForOp) or loop_role(loop) != LoopRole.PARALLEL or "tg.stage" not in loop.attributes:
        return False
    if constant_index(loop.step) != 1 or loop.iter_args:
        return False
    inner = [o for o in loop.body.walk() if o is not loop]
    if not any(isinstance(o, scf.ForOp) and loop_role(o) == LoopRole.ROW for o in inner):
        return False  # no interchanged sums
    if any(isinstance(o, scf.ForOp) and o.iter_args for o in inner):
        return False  # a carried value per copy: not zipped here
    return sweeps_shared_data(loop)


def jammed_rows(fn: Operation) -> list[scf.ForOp]:
    """The row loops jam-row-sweeps jams in `fn`: its decision, which the cpu planner lists too."""
    return [o for o in fn.walk() if _candidate(o)]


class _Zip:
    def __init__(self, mappings: list[dict[SSAValue, SSAValue]]):
        self.mappings = mappings

    def same(self, values) -> bool:
        return all(len({id(m.get(v, v)) for m in self.mappings}) == 1 for v in values)

    def ops(self, ops: list[Operation], into: Block) -> None:
        for op in ops:
            if isinstance(op, scf.YieldOp):
                continue
            if isinstance(op, scf.ForOp) and not op.iter_args and self.same(op.operands):
                self.loop(op, into)
            elif isinstance(op, scf.IfOp) and not op.results and self.same([op.cond]):
                self.branch(op, into)
            elif pure_arith(op) and self.same(op.operands):  # one instance serves every copy
                clone = op.clone(value_mapper=dict(self.mappings[0]))
                into.add_op(clone)
                for mapping in self.mappings:
                    mapping.update(zip(op.results, clone.results))
            else:
                for mapping in self.mappings:
                    clone = op.clone(value_mapper=mapping)
                    into.add_op(clone)
                    mapping.update(zip(op.results, clone.results))

    def loop(self, op: scf.ForOp, into: Block) -> None:
        body = Block(arg_types=[IndexType()])
        for mapping in self.mappings:
            mapping[op.body.block.args[0]] = body.args[0]
        self.ops(list(op.body.block.ops), body)
        body.add_op(scf.YieldOp())
        first = self.mappings[0]
        zipped = scf.ForOp(*(first.get(v, v) for v in op.operands[:3]), [], Region([body]))
        zipped.attributes.update(op.attributes)
        into.add_op(zipped)

    def branch(self, op: scf.IfOp, into: Block) -> None:
        arms = []
        for region in (op.true_region, op.false_region):
            arm = Block()
            if region.blocks:
                self.ops(list(region.block.ops), arm)
            arm.add_op(scf.YieldOp())
            arms.append(Region([arm]))
        into.add_op(scf.IfOp(self.mappings[0].get(op.cond, op.cond), [], arms[0], arms[1]))


def jam(loop: scf.ForOp, entry: Block, rows_per_step: int = ROWS, clamped: bool = False) -> None:
    """for i in [lb, ub): body(i) -> for i in [lb, lb + ⌊n/R⌋R) step R: zip(body(i) .. body(i+R-1)),
    then the original loop from there on. `clamped` (a body that may run again, see
    `repeatable`): for i in [lb, ub) step R: zip(body(i), body(min(i + 1, ub - 1)) ..), no rest."""
    index = IndexType()
    block = loop.parent_block()
    factor, split = whole_steps(loop.lb, loop.ub, rows_per_step, loop)
    last = last_iteration(loop) if clamped else None
    body = Block(arg_types=[index])
    i = body.args[0]
    mappings = []
    rows = _stack_rows(loop)
    for copy in range(rows_per_step):
        at = copy_index(body, i, copy, last)
        mapping: dict[SSAValue, SSAValue] = {loop.body.block.args[0]: at}
        for row in rows if copy else ():
            private = row.owner.clone()
            entry.insert_op_before(private, entry.first_op)
            mapping[row] = private.results[0]
        mappings.append(mapping)
    _Zip(mappings).ops(list(loop.body.block.ops), body)
    body.add_op(scf.YieldOp())
    main = scf.ForOp(loop.lb, loop.ub if clamped else split, factor, [], Region([body]))
    main.attributes.update({k: v for k, v in loop.attributes.items() if k != "tg.stage" or clamped})
    block.insert_op_before(main, loop)
    if clamped:
        loop.detach()
        loop.erase()
    else:
        loop.operands = (split, *loop.operands[1:])


def copy_index(body: Block, variable: SSAValue, copy: int, last: SSAValue | None) -> SSAValue:
    """The variable of an unrolled step's `copy`-th iteration, made at the end of `body`:
    variable + copy, or min(variable + copy, last) where copies past the end repeat the last."""
    if not copy:
        return variable
    offset = arith.ConstantOp(IntegerAttr(copy, IndexType()))
    at = arith.AddiOp(variable, offset)
    body.add_ops([offset, at])
    if last is None:
        return at.result
    clamped = arith.MinSIOp(at.result, last)
    body.add_op(clamped)
    return clamped.result


def last_iteration(loop: scf.ForOp) -> SSAValue:
    """ub - 1, before the loop: the last iteration, where clamped copies past the end repeat it."""
    one = arith.ConstantOp(IntegerAttr(1, IndexType()))
    last = arith.SubiOp(loop.ub, one)
    loop.parent_block().insert_ops_before([one, last], loop)
    return last.result


def repeatable(loop: scf.ForOp) -> bool:
    """Whether running an iteration again changes nothing: each stores only at an index that is
    the loop variable plus what the loop does not change (its own elements), no stack row, and
    the loop reads nothing it writes (so a repeat computes and stores the same values)."""

    if written_memrefs(loop) & read_memrefs(loop):
        return False
    affine = LoopAffine(loop)
    for store in (o for o in loop.walk() if isinstance(o, memref.StoreOp)):
        if isinstance(viewed(store.memref).owner, memref.AllocaOp):
            return False
        if not any(affine.scale(index) == 1 for index in store.indices):
            return False
    return True


@dataclass(frozen=True)
class JamRowSweeps(ModulePass):
    """Run `rows` (ROWS) rows of interchanged column sums in one sweep of the data they share."""

    name = "jam-row-sweeps"
    rows: int = ROWS

    def __post_init__(self):
        check_counts(self, "rows")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            for loop in jammed_rows(fn):
                jam(loop, fn.body.block, self.rows)
