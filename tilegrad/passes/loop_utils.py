"""Loop transformations more than one pass uses: unroll-and-jam of a loop (`jam`, with the index of
each copy and the clamped form of a loop that may repeat its last iteration), and the tests of a row
sweep's shape (`row_of_sweep`, `shares_an_operand`, `sweeps_shared_data`).

They came from jam-row-sweeps and chunk-row-sweeps, which unroll-reuse-loops, jam-sweep-terms and
pack-reused-panels reused; here, below every pass, no pass module imports another (tests/test_layers.py).
Also the parts of a windowed contraction (`sum_nest`, `slice_within`: pack-windowed-reductions'),
and the mark of a cold version (`mark_cold`, `in_cold_version`).
"""

from __future__ import annotations

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, UnitAttr
from xdsl.ir import Block, Operation, Region, SSAValue

from tilegrad.dialect.tg import LoopRole
from tilegrad.passes.common import (
    REDUCTION_ROLES,
    arg_info,
    constant_index,
    depends_on,
    loop_role,
    pure_arith,
    read_memrefs,
    viewed,
    whole_steps,
    written_memrefs,
)
from tilegrad.passes.loop_affine import LoopAffine


def _stack_rows(loop: scf.ForOp) -> list[SSAValue]:
    """The stack rows (allocas) the loop's body uses: each copy gets its own."""
    rows = {o.memref: None for o in loop.body.walk() if isinstance(o, memref.LoadOp | memref.StoreOp)
            if isinstance(o.memref.owner, memref.AllocaOp)}
    return list(rows)  # in the order the body first uses them: the printed IR is the same every time


def sweeps_shared_data(loop: scf.ForOp) -> bool:
    """Whether an interchanged row loop inside reads data the row does not choose (w[v, h]) beside
    data it does (g[i, v]): the reuse that jamming turns into fewer loads. The shared data is what
    the row sweeps (read at the sweep's column h) where it reads any: a batch loop's rows
    (col[b, v, h] w[k, v]) share only w[k, v], one scalar per term, and sweep data of their own."""
    iv = loop.body.block.args[0]
    for row in (o for o in loop.body.walk() if isinstance(o, scf.ForOp) and loop_role(o) == LoopRole.ROW):
        loads = [o for o in row.body.walk() if isinstance(o, memref.LoadOp)
                 and not isinstance(o.memref.owner, memref.AllocaOp)]
        column = row.body.block.args[0]
        swept = [load for load in loads if any(depends_on(i, column) for i in load.indices)]
        own = [any(depends_on(i, iv) for i in load.indices) for load in loads]
        shared = [not any(depends_on(i, iv) for i in load.indices) for load in swept or loads]
        if any(own) and any(shared):
            return True
    return False


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


def jam(loop: scf.ForOp, entry: Block, rows_per_step: int, clamped: bool = False) -> None:
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


def repeatable(loop: scf.ForOp, private_rows: bool = False) -> bool:
    """Whether running an iteration again changes nothing: each stores only at an index that is
    the loop variable plus what the loop does not change (its own elements), no stack row, and
    the loop reads nothing it writes (so a repeat computes and stores the same values), nor writes
    an output that may be an input `in place`. `private_rows`: stack rows are allowed, each copy
    of a jam having its own (jam), each iteration writing them before it reads them (the sums of a
    row, zeroed first), as a jam assumes of them anyway."""

    def tensors(found: set[SSAValue]) -> set[SSAValue]:
        return {m for m in found if not (private_rows and isinstance(m.owner, memref.AllocaOp))}

    written = tensors(written_memrefs(loop))
    if written & tensors(read_memrefs(loop)) or written & _may_be_inputs(loop):
        return False
    affine = LoopAffine(loop)
    for store in (o for o in loop.walk() if isinstance(o, memref.StoreOp)):
        if isinstance(viewed(store.memref).owner, memref.AllocaOp):
            if private_rows:
                continue
            return False
        if not any(affine.scale(index) == 1 for index in store.indices):
            return False
    return True


def _may_be_inputs(op: Operation) -> set[SSAValue]:
    """The outputs of op's function that a caller may pass as one of its inputs (`tg.in_place`)."""
    fn = op.parent_op()
    while fn is not None and not isinstance(fn, func.FuncOp):
        fn = fn.parent_op()
    if fn is None:
        return set()
    return {arg for index, arg in enumerate(fn.body.block.args) if "tg.in_place" in arg_info(fn, index)}


def may_be_inputs(op: Operation) -> set[SSAValue]:
    """The outputs of op's function a caller may pass as one of its inputs (`tg.in_place`)."""
    return _may_be_inputs(op)


def _column_of(index: SSAValue, column: SSAValue) -> bool:
    """The index is the column itself or the column minus a value fixed in the sweep."""
    if index is column:
        return True
    owner = index.owner
    return isinstance(owner, arith.SubiOp) and owner.lhs is column and not depends_on(owner.rhs, column)


def row_of_sweep(sweep: Operation) -> scf.ForOp | None:
    """The one row loop of a sweep whose columns are independent, else None: the row loop writes
    only stack rows, each at its own column, and reads no stack row at another column, so the
    sweep may run column by column (chunks) or several terms per column (jam-sweep-terms)."""
    if not isinstance(sweep, scf.ForOp) or loop_role(sweep) not in REDUCTION_ROLES or sweep.iter_args:
        return None
    ops = [o for o in sweep.body.block.ops if not isinstance(o, scf.YieldOp)]
    rows = [o for o in ops if isinstance(o, scf.ForOp)]
    if len(rows) != 1 or loop_role(rows[0]) != LoopRole.ROW or rows[0].iter_args:
        return None
    row = rows[0]
    if any(o is not row and not pure_arith(o) for o in ops):
        return None
    if any(depends_on(v, sweep.body.block.args[0]) for v in row.operands[:3]):
        return None
    column = row.body.block.args[0]
    for op in row.body.walk():
        if op is row or isinstance(op, scf.YieldOp):
            continue
        if isinstance(op, memref.StoreOp):
            if not isinstance(op.memref.owner, memref.AllocaOp) or not all(_column_of(i, column) for i in op.indices):
                return None
        elif isinstance(op, memref.LoadOp):
            if isinstance(op.memref.owner, memref.AllocaOp) and not all(_column_of(i, column) for i in op.indices):
                return None
        elif not pure_arith(op):
            return None
    return row


def shares_an_operand(row: scf.ForOp) -> bool:
    """Whether a sweep's row loop loads a value every column shares (g[i, v] of a GEMM)."""
    column = row.body.block.args[0]
    return any(isinstance(o, memref.LoadOp) and not any(depends_on(i, column) for i in o.indices)
               for o in row.body.walk())


COLD = "tg.cold"
"""The attribute on the root of a version that runs only where the fast one cannot (a pack's
fallback: the panel does not fit, or the views are not exact): the passes that multiply code for
speed leave the loops inside it as they are (docs/tiling.md, Cold versions)."""


def mark_cold(op: Operation) -> None:
    """Mark `op` (the root loop of a version that runs only where the fast one cannot) cold."""
    op.attributes[COLD] = UnitAttr()


def in_cold_version(op: Operation) -> bool:
    """Whether `op` is, or is inside, a version marked cold (`mark_cold`)."""
    at: Operation | None = op
    while at is not None:
        if COLD in at.attributes:
            return True
        at = at.parent_op()
    return False


# The parts of a windowed contraction (pack-windowed-reductions; pack-windowed-operands has its own copies)


def made_outside(value: SSAValue, loop: Operation) -> bool:
    """A value made outside `loop` (visible before it)."""
    owner = value.owner
    op = owner.parent_op() if isinstance(owner, Block) else owner
    return op is not None and not loop.is_ancestor(op)


def zero_constant(value: SSAValue) -> bool:
    op = value.owner
    return isinstance(op, arith.ConstantOp) and isinstance(op.value, FloatAttr) and op.value.value.data == 0.0


def sum_nest(col: scf.ForOp) -> tuple[list[scf.ForOp], SSAValue] | None:
    """The perfect nest of sums from 0 by 1 (bounds made outside the stage's loops, each level adding
    its inner sum to an accumulator from 0) whose result col stores, and the innermost term."""
    loops = [o for o in col.body.block.ops if isinstance(o, scf.ForOp)]
    if len(loops) != 1:
        return None
    sums, loop = [], loops[0]
    while True:
        if loop_role(loop) != LoopRole.REDUCE or len(loop.iter_args) != 1 or constant_index(loop.lb) != 0 \
                or constant_index(loop.step) != 1 or not made_outside(loop.ub, col) \
                or not zero_constant(loop.iter_args[0]):
            return None
        sums.append(loop)
        body = loop.body.block
        added = body.last_op.operands[0] if isinstance(body.last_op, scf.YieldOp) else None
        if not isinstance(getattr(added, "owner", None), arith.AddfOp) or body.args[1] not in added.owner.operands:
            return None
        other = [v for v in added.owner.operands if v is not body.args[1]]
        inner = [o for o in body.ops if isinstance(o, scf.ForOp)]
        if not other:
            return None
        if not inner:
            return sums, other[0]
        if len(inner) != 1 or other[0] is not inner[0].results[0]:
            return None
        loop = inner[0]


def slice_within(values: list[SSAValue], within: Operation) -> list[Operation]:
    """The ops inside `within` that compute `values`, in program order."""
    found: set[Operation] = set()
    stack = list(values)
    while stack:
        op = stack.pop().owner
        if not isinstance(op, Operation) or not within.is_ancestor(op) or op in found:
            continue
        found.add(op)
        stack.extend(op.operands)
    return [o for o in within.walk() if o in found]
