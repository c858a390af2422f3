"""lower-tg-to-loops: every tg stage becomes a loop nest over memrefs (scf, arith, memref).

A stage's body is already one fused scalar expression per element (the DSL inlines elementwise
chains), so each stage is one nest and no full-size temporary is created. Scatter bodies are split:
the indices are computed and range-checked first, and only an in-range point evaluates its value
and accumulates (so an out-of-range index never reads or writes out of bounds).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i1, i32
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from tilegrad.dialect import tg
from tilegrad.dialect.values import BlockBuilder, to_compute, to_storage
from tilegrad.passes.common import make_for, status_arg


def _nest(extents, role: str, rewriter: PatternRewriter, anchor: Operation) -> tuple[list[SSAValue], Block | None, Operation | None]:
    """Loops 0..extent for each extent, inserted before `anchor`; returns ivs and innermost body."""
    if not extents:
        return [], None, None
    zero = arith.ConstantOp(IntegerAttr.from_index_int_value(0))
    one = arith.ConstantOp(IntegerAttr.from_index_int_value(1))
    rewriter.insert_op([zero, one], InsertPoint.before(anchor))
    ivs: list[SSAValue] = []
    outer: Operation | None = None
    body: Block | None = None
    for axis, extent in enumerate(extents):
        loop, inner = make_for(zero.result, extent, one.result, role, axis)
        if body is None:
            outer = loop
        else:
            body.add_ops([loop, scf.YieldOp()])
        ivs.append(inner.args[0])
        body = inner
    rewriter.insert_op(outer, InsertPoint.before(anchor))
    return ivs, body, outer


def _inline_body(op: Operation, ivs: list[SSAValue], body: Block | None, rewriter: PatternRewriter) -> tg.YieldOp:
    block = op.regions[0].block
    yield_op = block.last_op
    assert isinstance(yield_op, tg.YieldOp)
    point = InsertPoint.at_end(body) if body is not None else InsertPoint.before(op)
    rewriter.inline_block(block, point, ivs)
    return yield_op


def _finish(body: Block | None) -> None:
    if body is not None:
        body.add_op(scf.YieldOp())


def _report(code: int, status: SSAValue) -> Region:
    """A region that records error `code` in the kernel's status word."""
    block = Block()
    b = BlockBuilder(block)
    value = b.const(code, i32)
    b.add(memref.StoreOp.get(value, status, [b.index(0)]))
    b.add(scf.YieldOp())
    return Region([block])


class LowerCompute(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tg.ComputeOp, rewriter: PatternRewriter) -> None:
        ivs, body, _ = _nest(list(op.extents), "parallel", rewriter, op)
        yield_op = _inline_body(op, ivs, body, rewriter)
        store = memref.StoreOp.get(yield_op.arguments[0], op.dest, ivs)
        rewriter.replace(yield_op, store)
        _finish(body)
        rewriter.erase(op)


class LowerCheck(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tg.CheckOp, rewriter: PatternRewriter) -> None:
        status = status_arg(op)
        ivs, body, _ = _nest(list(op.extents), "check", rewriter, op)
        yield_op = _inline_body(op, ivs, body, rewriter)
        ok = yield_op.arguments[0]
        true = arith.ConstantOp(IntegerAttr(1, i1))
        failed = arith.XOrIOp(ok, true)
        report = scf.IfOp(failed, [], _report(op.code.value.data, status))
        rewriter.replace(yield_op, [true, failed, report])
        _finish(body)
        rewriter.erase(op)


def _index_slice(yield_op: tg.YieldOp, count: int) -> set[Operation]:
    """Ops (in the yield's block) that the first `count` yielded values depend on."""
    block = yield_op.parent_block()
    needed: set[Operation] = set()
    work = [v for v in yield_op.arguments[:count]]
    while work:
        value = work.pop()
        owner = value.owner
        if isinstance(owner, Operation) and owner.parent_block() is block and owner not in needed:
            needed.add(owner)
            work.extend(owner.operands)
            for region in owner.regions:
                for inner in region.walk():
                    work.extend(v for v in inner.operands)
    return needed


class LowerScatterAdd(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tg.ScatterAddOp, rewriter: PatternRewriter) -> None:
        status = status_arg(op)
        dest = op.dest
        rank = len(dest.type.get_shape())
        ivs, body, _ = _nest(list(op.extents), "scatter", rewriter, op)
        block = op.body.block
        yield_op = block.last_op
        assert isinstance(yield_op, tg.YieldOp)
        indices = list(yield_op.arguments[:rank])
        value, when = yield_op.arguments[rank], yield_op.arguments[rank + 1]
        index_ops = _index_slice(yield_op, rank)
        value_ops = [o for o in block.ops if o not in index_ops and o is not yield_op]

        # indices first, then the range check; the value is computed only for in-range points
        in_range_block = Block()
        for o in value_ops:
            o.detach()
            in_range_block.add_op(o)
        b = BlockBuilder(in_range_block)
        accumulate = Block()
        a = BlockBuilder(accumulate)
        old = to_compute(a, a.add(memref.LoadOp.get(dest, indices)))
        summed = a.add((arith.AddiOp if _is_index(old) else arith.AddfOp)(old, value))
        a.add(memref.StoreOp.get(to_storage(a, summed, dest.type.element_type), dest, indices))
        a.add(scf.YieldOp())
        b.add(scf.IfOp(when, [], Region([accumulate])))
        b.add(scf.YieldOp())

        checked = [i for i in indices if not isinstance(i, BlockArgument)]
        rewriter.inline_block(block, InsertPoint.at_end(body) if body else InsertPoint.before(op), ivs)
        rewriter.erase(yield_op)
        where = BlockBuilder(body) if body is not None else BlockBuilder(op.parent_block(), op)
        ok = where.const(1, i1)
        for axis, index in enumerate(indices):
            if index not in checked:
                continue
            extent = where.add(memref.DimOp(dest, where.index(axis)))
            low = where.add(arith.CmpiOp(index, where.index(0), "sge"))
            high = where.add(arith.CmpiOp(index, extent, "slt"))
            ok = where.add(arith.AndIOp(ok, where.add(arith.AndIOp(low, high))))
        where.add(scf.IfOp(ok, [], Region([in_range_block]), _report(op.code.value.data, status)))
        _finish(body)
        rewriter.erase(op)


def _is_index(value: SSAValue) -> bool:
    from xdsl.dialects.builtin import IndexType

    return isinstance(value.type, IndexType)


class LowerReduce(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tg.ReduceOp, rewriter: PatternRewriter) -> None:
        zero = arith.ConstantOp(IntegerAttr.from_index_int_value(0))
        one = arith.ConstantOp(IntegerAttr.from_index_int_value(1))
        loop, body = make_for(zero.result, op.extent, one.result, "reduce", 0, [op.init])
        yield_op = op.body.block.last_op
        rewriter.inline_block(op.body.block, InsertPoint.at_end(body), [body.args[0]])
        value, acc = yield_op.arguments[0], body.args[1]
        index = _is_index(acc)
        if op.combine.data == "sum":
            combined = (arith.AddiOp if index else arith.AddfOp)(acc, value)
        else:
            combined = (arith.MaxSIOp if index else arith.MaximumfOp)(acc, value)
        rewriter.replace(yield_op, [combined, scf.YieldOp(combined)])
        rewriter.replace(op, [zero, one, loop], [loop.results[0]])


@dataclass(frozen=True)
class LowerTgToLoops(ModulePass):
    """Lower tg.compute / tg.scatter_add / tg.check / tg.reduce to scf loop nests."""

    name = "lower-tg-to-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([LowerCompute(), LowerCheck(), LowerScatterAdd(), LowerReduce()]),
            apply_recursively=True,
        ).rewrite_module(op)
