"""interchange-column-reductions: a sum that walks a column accumulates a row of results instead.

    for j:                                  for jt step T:
      s = Σ_r term(r, j)   (B[r, j])    ->     row[0:T] = init
      out[j] = f(s)                            for r: for j in tile: row[j - jt] += term(r, j)
                                               for j in tile: out[j] = f(row[j - jt])

A reduction inside the innermost parallel loop whose terms read `B[..., r, ..., j]` (the reduction
variable in an outer position, the parallel variable last) strides through memory once per term:
the two products of a matmul's backward (`G @ W`, `G.T @ X`), a layer norm's dγ, softmax over
channels. Interchanged, each term is a contiguous row the vectorizer streams, and the T partial sums
stay in a stack row (L1). Each sum still adds its terms in the same order, one after another, so
results are bitwise those of the plain loop; a blocked long sum (float64 partials per 1024 terms)
keeps its blocks the same way. For targets without UB staging (cpu), after tiling.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import Float32Type, Float64Type, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect.values import BlockBuilder
from tilegrad.passes.common import loop_role, make_for

ROW = 256
"""Sums a row accumulates at once: 1 KiB of float32 (2 KiB float64), L1-resident with its partner."""


def _depends_on(value: SSAValue, root: SSAValue, within: Operation) -> bool:
    """Whether `value` is computed from `root` by ops inside `within`."""
    work, seen = [value], set()
    while work:
        v = work.pop()
        if v is root:
            return True
        owner = v.owner
        if not isinstance(owner, Operation) or owner in seen or not within.is_ancestor(owner):
            continue
        seen.add(owner)
        work.extend(owner.operands)
    return False


def _sum_loop(op: Operation) -> scf.ForOp | None:
    """The plain loop of a float sum (`op` itself, or the plain arm of a blocked/plain choice)."""
    loop = op
    if isinstance(op, scf.IfOp):
        arm = [o for o in op.false_region.block.ops if isinstance(o, scf.ForOp)]
        loop = arm[0] if len(arm) == 1 else None
    if not isinstance(loop, scf.ForOp) or len(loop.iter_args) != 1:
        return None
    if not isinstance(loop.iter_args[0].type, (Float32Type, Float64Type)):
        return None
    combined = loop.body.block.last_op.operands[0].owner
    if not isinstance(combined, arith.AddfOp) or combined.lhs is not loop.body.block.args[1]:
        return None
    if any(isinstance(o, (memref.StoreOp, scf.ForOp)) for o in loop.body.walk() if o is not loop):
        return None
    return loop


def _walks_columns(loop: scf.ForOp, column: SSAValue) -> bool:
    r = loop.body.block.args[0]
    return any(isinstance(o, memref.LoadOp) and o.indices and o.indices[-1] is column
               and any(_depends_on(i, r, loop) for i in o.indices[:-1]) for o in loop.body.walk())


def _candidate(p: scf.ForOp) -> Operation | None:
    """The one column-walking float sum directly in innermost parallel loop `p`, if there is one."""
    body = [o for o in p.body.block.ops if not isinstance(o, scf.YieldOp)]
    if any(isinstance(o, scf.ForOp) and loop_role(o) != "reduce" for o in body):
        return None
    sums = [o for o in body if loop_role(o) == "reduce"]
    if len(sums) != 1:
        return None
    loop = _sum_loop(sums[0])
    if loop is None or not _walks_columns(loop, p.body.block.args[0]):
        return None
    if isinstance(sums[0], scf.IfOp) and not _blocked_shape(sums[0]):
        return None
    column = p.body.block.args[0]
    bounds = [loop.lb, loop.ub, loop.step] + ([sums[0].cond] if isinstance(sums[0], scf.IfOp) else [])
    if any(_depends_on(v, column, p) for v in bounds):
        return None
    return sums[0]


def _blocked_shape(choice: scf.IfOp) -> bool:
    """lower-tg-to-loops' blocked arm: a loop over blocks holding one inner 'reduce_part' loop."""
    outer = [o for o in choice.true_region.block.ops if isinstance(o, scf.ForOp)]
    if len(outer) != 1 or len(outer[0].iter_args) != 1:
        return False
    parts = [o for o in outer[0].body.block.ops if isinstance(o, scf.ForOp)]
    return len(parts) == 1 and loop_role(parts[0]) == "reduce_part" and _sum_loop(parts[0]) is not None


class _Rewrite:
    """Interchange one sum `reduce` inside innermost parallel loop `p`."""

    def __init__(self, p: scf.ForOp, reduce: Operation, entry: Block):
        self.p, self.reduce = p, reduce
        self.column = p.body.block.args[0]
        result_type = reduce.results[0].type
        self.row = self._alloca(entry, result_type)
        self.wide = self._alloca(entry, Float64Type()) if isinstance(reduce, scf.IfOp) else None

    @staticmethod
    def _alloca(entry: Block, element) -> SSAValue:
        op = memref.AllocaOp.get(element, shape=[ROW])
        entry.insert_op_before(op, entry.first_op)
        return op.memref

    def apply(self) -> None:
        p = self.p
        parent = p.parent_block()
        b = BlockBuilder(parent, p)
        size = b.index(ROW)
        tile, tile_body = make_for(p.lb, p.ub, size, "tile", p.attributes["tg.axis"].value.data)
        parent.insert_op_before(tile, p)
        tb = BlockBuilder(tile_body)
        self.start = tile_body.args[0]
        self.end = tb.add(arith.MinSIOp(tb.add(arith.AddiOp(self.start, size)), p.ub))
        self.one = tb.index(1)
        self.tb = tb
        if isinstance(self.reduce, scf.IfOp):
            self.blocked(tile_body)
        else:
            self.plain(tile_body, self.reduce, self.row)
        # the parallel loop itself now walks the tile, reading each sum from the row
        p.detach()
        p.operands = [self.start, self.end, p.step]
        rb = BlockBuilder(p.body.block, self.reduce)
        loaded = rb.add(memref.LoadOp.get(self.row, [rb.add(arith.SubiOp(self.column, self.start))]))
        self.reduce.results[0].replace_all_uses_with(loaded)
        self.reduce.detach()
        self.reduce.erase()
        tile_body.add_ops([p, scf.YieldOp()])

    def each(self, into: Block, build) -> None:
        """for j in the tile: build(builder, j, j - start), at the end of `into`."""
        loop, body = make_for(self.start, self.end, self.one, "row", 0)
        into.add_op(loop)
        b = BlockBuilder(body)
        build(b, body.args[0], b.add(arith.SubiOp(body.args[0], self.start)))
        body.add_op(scf.YieldOp())

    def outside(self, value: SSAValue, into: Block, mapping: dict) -> SSAValue:
        """`value` usable in `into` (inside the tile loop): a value of p's body that does not
        depend on the column is cloned there with the ops it needs."""
        if value in mapping:
            return mapping[value]
        owner = value.owner
        if not isinstance(owner, Operation) or not self.p.is_ancestor(owner):
            return value
        for operand in owner.operands:
            self.outside(operand, into, mapping)
        clone = owner.clone(value_mapper=mapping)
        into.add_op(clone)
        for old, new in zip(owner.results, clone.results):
            mapping[old] = new
        return mapping[value]

    def terms(self, into: Block, loop: scf.ForOp, row: SSAValue, mapping: dict) -> None:
        """for r in loop's range: for j in the tile: row[j] = row[j] + term(r, j)."""
        lb, ub, step = (self.outside(v, into, mapping) for v in (loop.lb, loop.ub, loop.step))
        outer, outer_body = make_for(lb, ub, step, loop_role(loop), loop.attributes["tg.axis"].value.data)
        into.add_op(outer)
        r, acc_arg = loop.body.block.args

        def accumulate(b: BlockBuilder, j: SSAValue, at: SSAValue) -> None:
            values = {self.column: j, r: outer_body.args[0]}
            values[acc_arg] = b.add(memref.LoadOp.get(row, [at]))
            self._clone_needed(loop, b, values)
            combined = loop.body.block.last_op.operands[0]
            b.add(memref.StoreOp.get(values[combined], row, [at]))

        self.each(outer_body, accumulate)
        outer_body.add_op(scf.YieldOp())

    def _clone_needed(self, loop: scf.ForOp, b: BlockBuilder, values: dict) -> None:
        """Clone into b the ops of p's body the loop's terms read, then the loop's body."""
        needed: list[Operation] = []
        for op in loop.body.walk():
            for operand in op.operands:
                owner = operand.owner
                if isinstance(owner, Operation) and owner.parent_block() is self.p.body.block:
                    self._collect(owner, needed)
        for op in [o for o in self.p.body.block.ops if o in needed]:
            clone = op.clone(value_mapper=values)
            b.add(clone)
            values.update(zip(op.results, clone.results))
        for op in list(loop.body.block.ops)[:-1]:
            clone = op.clone(value_mapper=values)
            b.add(clone)
            values.update(zip(op.results, clone.results))

    def _collect(self, op: Operation, needed: list[Operation]) -> None:
        if op in needed or op.parent_block() is not self.p.body.block:
            return
        needed.append(op)
        for operand in op.operands:
            if isinstance(operand.owner, Operation):
                self._collect(operand.owner, needed)

    def plain(self, into: Block, loop: scf.ForOp | scf.IfOp, row: SSAValue) -> None:
        loop = _sum_loop(loop)
        mapping: dict = {}
        init = self.outside(loop.iter_args[0], into, mapping)
        self.each(into, lambda b, j, at: b.add(memref.StoreOp.get(init, row, [at])))
        self.terms(into, loop, row, mapping)

    def blocked(self, into: Block) -> None:
        """The blocked arm, interchanged: per block of terms a float row of partials, added into a
        float64 row; the plain arm as `plain`. The sums land in `row` either way."""
        choice = self.reduce
        mapping: dict = {}
        cond = self.outside(choice.cond, into, mapping)
        long_arm, short_arm = Block(), Block()
        self.plain(short_arm, choice, self.row)
        short_arm.add_op(scf.YieldOp())
        blocks = next(o for o in choice.true_region.block.ops if isinstance(o, scf.ForOp))
        part = next(o for o in blocks.body.block.ops if isinstance(o, scf.ForOp))
        wide_zero = BlockBuilder(long_arm).const(0.0, Float64Type())
        self.each(long_arm, lambda b, j, at: b.add(memref.StoreOp.get(wide_zero, self.wide, [at])))
        lb, ub, step = (self.outside(v, long_arm, mapping) for v in (blocks.lb, blocks.ub, blocks.step))
        over, over_body = make_for(lb, ub, step, "reduce", blocks.attributes["tg.axis"].value.data)
        long_arm.add_op(over)
        inner = {blocks.body.block.args[0]: over_body.args[0]}
        for op in blocks.body.block.ops:  # the block's bounds (t, min(t + B, extent))
            if op is part or isinstance(op, scf.YieldOp) or _depends_on_part(op, part):
                continue
            clone = op.clone(value_mapper={**mapping, **inner})
            over_body.add_op(clone)
            inner.update(zip(op.results, clone.results))
        init = self.outside(part.iter_args[0], over_body, mapping)
        self.each(over_body, lambda b, j, at: b.add(memref.StoreOp.get(init, self.row, [at])))
        block_mapping = {**mapping, **inner}
        self.terms(over_body, _retarget(part, block_mapping), self.row, block_mapping)

        def widen(b: BlockBuilder, j: SSAValue, at: SSAValue) -> None:
            value = b.add(memref.LoadOp.get(self.row, [at]))
            if not isinstance(value.type, Float64Type):
                value = b.add(arith.ExtFOp(value, Float64Type()))
            total = b.add(arith.AddfOp(b.add(memref.LoadOp.get(self.wide, [at])), value))
            b.add(memref.StoreOp.get(total, self.wide, [at]))

        self.each(over_body, widen)
        over_body.add_op(scf.YieldOp())

        def narrow(b: BlockBuilder, j: SSAValue, at: SSAValue) -> None:
            value = b.add(memref.LoadOp.get(self.wide, [at]))
            if value.type != self.row.type.element_type:
                value = b.add(arith.TruncFOp(value, self.row.type.element_type))
            b.add(memref.StoreOp.get(value, self.row, [at]))

        self.each(long_arm, narrow)
        long_arm.add_op(scf.YieldOp())
        into.add_op(scf.IfOp(cond, [], Region([long_arm]), Region([short_arm])))


def _depends_on_part(op: Operation, part: scf.ForOp) -> bool:
    return any(v.owner is part or (isinstance(v.owner, Operation) and _depends_on_part(v.owner, part))
               for v in op.operands if isinstance(v.owner, Operation) and v.owner.parent_block() is op.parent_block())


def _retarget(part: scf.ForOp, mapping: dict) -> scf.ForOp:
    """The reduce_part loop with its bounds read through `mapping` (the block's own t and stop)."""
    part.operands = [mapping.get(v, v) for v in part.operands]
    return part


def interchange_function(fn: func.FuncOp) -> None:
    entry = fn.body.block
    for p in [o for o in fn.walk() if isinstance(o, scf.ForOp) and loop_role(o) == "parallel"]:
        if any(isinstance(o, scf.ForOp) and loop_role(o) == "parallel" for o in p.body.walk() if o is not p):
            continue  # not innermost
        if not isinstance(p.parent_op(), scf.ForOp):
            continue  # the stage's own outer loop: cores split it
        reduce = _candidate(p)
        if reduce is not None:
            _Rewrite(p, reduce, entry).apply()


@dataclass(frozen=True)
class InterchangeColumnReductions(ModulePass):
    """Turn column-walking sums into row accumulations (targets without UB staging)."""

    name = "interchange-column-reductions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.ops:
            if isinstance(fn, func.FuncOp):
                interchange_function(fn)
