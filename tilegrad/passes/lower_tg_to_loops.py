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
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp, UnitAttr, f64, i1, i64
from xdsl.dialects.utils.fast_math import FastMathFlag
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
from tilegrad.dialect.tg import LoopRole
from tilegrad.dialect.values import BlockBuilder, to_compute, to_storage
from tilegrad.index_math import REDUCE_BLOCK
from tilegrad.passes.common import constant_index, inside_reduction, make_for, mark_loop, number_stages, status_arg


def _nest(extents, role: LoopRole, rewriter: PatternRewriter,
          anchor: Operation) -> tuple[list[SSAValue], Block, Operation]:
    """Loops 0..extent for each extent, inserted before `anchor`; returns ivs and innermost body."""
    zero = arith.ConstantOp(IntegerAttr.from_index_int_value(0))
    one = arith.ConstantOp(IntegerAttr.from_index_int_value(1))
    rewriter.insert([zero, one], InsertPoint.before(anchor))
    if not extents:  # a single point: one trip, so every stage is one loop nest the tiler can split
        loop, inner = make_for(zero.result, one.result, one.result, role, 0)
        rewriter.insert(loop, InsertPoint.before(anchor))
        return [], inner, loop
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
    rewriter.insert(outer, InsertPoint.before(anchor))
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
    value = b.const(code, i64)
    b.add(memref.StoreOp.get(value, status, [b.index(0)]))
    b.add(scf.YieldOp())
    return Region([block])


class LowerCompute(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tg.ComputeOp, rewriter: PatternRewriter) -> None:
        ivs, body, _ = _nest(list(op.extents), LoopRole.PARALLEL, rewriter, op)
        yield_op = _inline_body(op, ivs, body, rewriter)
        store = memref.StoreOp.get(yield_op.arguments[0], op.dest, ivs)
        rewriter.replace(yield_op, store)
        _finish(body)
        rewriter.erase(op)


class LowerCheck(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tg.CheckOp, rewriter: PatternRewriter) -> None:
        status = status_arg(op)
        ivs, body, _ = _nest(list(op.extents), LoopRole.CHECK, rewriter, op)
        yield_op = _inline_body(op, ivs, body, rewriter)
        ok = yield_op.arguments[0]
        true = arith.ConstantOp(IntegerAttr(1, i1))
        failed = arith.XOrIOp(ok, true)
        report = scf.IfOp(failed, [], _report(op.code.value.data, status))
        rewriter.replace(yield_op, [true, failed, report])
        _finish(body)
        rewriter.erase(op)


class LowerScatterAdd(RewritePattern):
    """for r_0..r_k: idx = ...; if in_range(idx) { for r_k+1..: value; if when: dest[idx] += value }
    else report. k is the deepest axis the checked indices depend on, so the range check (and the
    tiler's owner guard) sit outside the inner loops, and a whole row is staged at once."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tg.ScatterAddOp, rewriter: PatternRewriter) -> None:
        status = status_arg(op)
        dest = op.dest
        rank = len(dest.type.get_shape())
        block = op.body.block
        yield_op = block.last_op
        assert isinstance(yield_op, tg.YieldOp)
        indices = list(yield_op.arguments[:rank])
        value, when = yield_op.arguments[rank], yield_op.arguments[rank + 1]
        checked = [i for i in indices if not (isinstance(i, BlockArgument) and i.block is block)]
        depth = _axis_depths(block)
        split = max((depth[i] for i in checked), default=-1)
        index_ops = [o for o in _slice(checked, block) if all(depth[r] <= split for r in o.results)]

        extents = list(op.extents)
        outer_ivs, outer_body, _ = _nest(extents[: split + 1], LoopRole.SCATTER, rewriter, op)
        for o in index_ops:
            o.detach()
            outer_body.add_op(o)
        b = BlockBuilder(outer_body)
        ok = b.const(1, i1)
        for axis, index in enumerate(indices):
            if index not in checked:
                continue
            extent = b.add(memref.DimOp(dest, b.index(axis)))
            low = b.add(arith.CmpiOp(index, b.index(0), "sge"))
            high = b.add(arith.CmpiOp(index, extent, "slt"))
            ok = b.add(arith.AndIOp(ok, b.add(arith.AndIOp(low, high))))

        in_range = Block()
        inner_ivs, inner_body = [], in_range
        zero, one = BlockBuilder(in_range).index(0), BlockBuilder(in_range).index(1)
        for axis in range(split + 1, len(extents)):
            loop, body = make_for(zero, extents[axis], one, LoopRole.SCATTER, axis)
            inner_body.add_op(loop)
            if inner_body is not in_range:
                inner_body.add_op(scf.YieldOp())
            inner_ivs.append(body.args[0])
            inner_body = body
        for o in [o for o in block.ops if o is not yield_op]:
            o.detach()
            inner_body.add_op(o)
        a = BlockBuilder(inner_body)
        accumulate = Block()
        acc = BlockBuilder(accumulate)
        old = to_compute(acc, acc.add(memref.LoadOp.get(dest, indices)))
        if value.type != old.type:  # e.g. a float64 value into a float32 accumulator
            value = to_storage(acc, value, old.type)
        summed = acc.add((arith.AddiOp if _is_index(old) else arith.AddfOp)(old, value))
        store = memref.StoreOp.get(to_storage(acc, summed, dest.type.element_type), dest, indices)
        store.attributes["tg.scatter_store"] = UnitAttr()
        acc.add(store)
        acc.add(scf.YieldOp())
        a.add(scf.IfOp(when, [], Region([accumulate])))
        a.add(scf.YieldOp())
        if inner_body is not in_range:
            in_range.add_op(scf.YieldOp())
        code = op.code.value.data  # 0: out-of-range points are skipped, not reported
        guard = scf.IfOp(ok, [], Region([in_range]), _report(code, status) if code else None)
        guard.attributes["tg.in_range"] = UnitAttr()
        b.add(guard)
        ivs = outer_ivs + inner_ivs
        for arg, iv in zip(block.args, ivs):
            arg.replace_all_uses_with(iv)
        _finish(outer_body)
        rewriter.erase(yield_op)
        rewriter.erase(op)


def _axis_depths(block: Block) -> dict[SSAValue, int]:
    """For each value of the body: the deepest domain axis it depends on (-1: none)."""
    depth: dict[SSAValue, int] = {arg: axis for axis, arg in enumerate(block.args)}
    for o in block.ops:
        deps = [depth.get(v, -1) for v in o.operands]
        for region in o.regions:
            for inner in region.walk():
                deps += [depth.get(v, -1) for v in inner.operands]
        for r in o.results:
            depth[r] = max(deps, default=-1)
    return depth


def _slice(values, block: Block) -> list[Operation]:
    """Ops of `block` the values depend on, in block order."""
    needed: set[Operation] = set()
    work = list(values)
    while work:
        value = work.pop()
        owner = value.owner
        if isinstance(owner, Operation) and owner.parent_block() is block and owner not in needed:
            needed.add(owner)
            work.extend(owner.operands)
    return [o for o in block.ops if o in needed]


def _is_index(value: SSAValue) -> bool:
    from xdsl.dialects.builtin import IndexType

    return isinstance(value.type, IndexType)


REASSOC = arith.FastMathFlagsAttr([FastMathFlag.REASSOC])
PRODUCT_SUM = arith.FastMathFlagsAttr([FastMathFlag.REASSOC, FastMathFlag.ALLOW_CONTRACT])
"""A sum whose term is a product accumulates with fused multiply-adds, as BLAS does: one rounding
per term instead of two, and half the instructions of a dot product."""


# A float sum runs in blocks of REDUCE_BLOCK terms (vectorized, reassociated) whose partials are
# combined in float64: a long reduction stays accurate (a 4M-term float32 softmax row within 1e-7
# relative; 2**31 ones sum exactly; even an unvectorized block errs by at most ~1024 ulp/2) for one
# float64 add per block. Only the outermost level of a nest (a sum over a box) is blocked, and only
# when its extent exceeds one block at run time (else a plain loop, with no per-instance cost). A
# sum marked `short` (at most one block at the shapes the kernel is specialized for) is the plain
# loop alone: the blocked form would never run, and it doubled what LLVM compiled (the fused
# linear CE's cold compile 2.04 -> 1.33 s at its tiny size). One marked `long` chooses by a
# constant.


class LowerReduce(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tg.ReduceOp, rewriter: PatternRewriter) -> None:
        zero = arith.ConstantOp(IntegerAttr.from_index_int_value(0))
        one = arith.ConstantOp(IntegerAttr.from_index_int_value(1))
        extent = constant_index(op.extent)
        may_be_long = (extent is None or extent > REDUCE_BLOCK) and op.short is None
        # an inner level of a nest stays plain: each level accumulates only its own extent, so
        # blocking the outermost level bounds the error
        if op.combine.data != "sum" or _is_index(op.init) or not may_be_long or inside_reduction(op):
            loop = self.plain(op, op.body, zero.result, one.result, rewriter)
            rewriter.replace(op, [zero, one, loop], [loop.results[0]])
            return
        # a sum that may be long: blocked when it is, a plain loop (no per-instance cost) when not.
        # Known long, the choice is the constant true: the passes after still see both forms (they
        # read a sum's pattern from its plain loop) and LLVM drops the plain one before its work.
        block = arith.ConstantOp(IntegerAttr.from_index_int_value(REDUCE_BLOCK))
        long = (arith.ConstantOp(IntegerAttr(1, i1)) if op.long is not None
                else arith.CmpiOp(op.extent, block.result, "sgt"))
        copy = op.body.clone()
        blocked = Block()
        result = self.blocked(op, copy, zero.result, one.result, block.result, blocked, rewriter)
        blocked.add_op(scf.YieldOp(result))
        short = Block()
        loop = self.plain(op, op.body, zero.result, one.result, rewriter)
        short.add_ops([loop, scf.YieldOp(loop.results[0])])
        choice = scf.IfOp(long.result, [op.init.type], Region([blocked]), Region([short]))
        mark_loop(choice, LoopRole.REDUCE, 0)  # one reduction, in two forms
        rewriter.replace(op, [zero, one, block, long, choice], [choice.results[0]])

    @staticmethod
    def term(op: tg.ReduceOp, body: Region, into: Block, index: SSAValue, acc: SSAValue,
             rewriter: PatternRewriter) -> None:
        """One term of the reduction's body, combined into `acc` and yielded, at the end of `into`."""
        source = body.block
        yield_op = source.last_op
        rewriter.inline_block(source, InsertPoint.at_end(into), [index])
        value = yield_op.arguments[0]
        if op.combine.data == "sum":  # reassociable: the vectorizer may keep several partial sums
            product = isinstance(value.owner, arith.MulfOp)
            if product:
                value.owner.fastmath = arith.FastMathFlagsAttr([FastMathFlag.ALLOW_CONTRACT])
            flags = PRODUCT_SUM if product else REASSOC
            combined = arith.AddiOp(acc, value) if _is_index(acc) else arith.AddfOp(acc, value, flags)
        elif op.combine.data == "max":
            combined = (arith.MaxSIOp if _is_index(acc) else arith.MaximumfOp)(acc, value)
        elif op.combine.data == "prod":
            combined = (arith.MuliOp if _is_index(acc) else arith.MulfOp)(acc, value)
        else:
            combined = (arith.MinSIOp if _is_index(acc) else arith.MinimumfOp)(acc, value)
        rewriter.replace(yield_op, [combined, scf.YieldOp(combined)])

    def plain(self, op: tg.ReduceOp, body: Region, zero, one, rewriter: PatternRewriter) -> scf.ForOp:
        loop, loop_body = make_for(zero, op.extent, one, LoopRole.REDUCE, 0, [op.init])
        self.term(op, body, loop_body, loop_body.args[0], loop_body.args[1], rewriter)
        return loop

    def blocked(self, op: tg.ReduceOp, body: Region, zero, one, block, into: Block,
                rewriter: PatternRewriter) -> SSAValue:
        """for t in [0, extent) step B: part = Σ_{k in [t, min(t+B, extent))} term; acc += f64(part)."""
        float_type = op.init.type
        wide_zero = arith.ConstantOp(FloatAttr(0.0, f64))
        outer, outer_body = make_for(zero, op.extent, block, LoopRole.REDUCE, 0, [wide_zero.result])
        t, acc = outer_body.args
        end = arith.AddiOp(t, block)
        stop = arith.MinSIOp(end, op.extent)
        outer_body.add_ops([end, stop])
        inner, inner_body = make_for(t, stop.result, one, LoopRole.REDUCE_PART, 0, [op.init])
        self.term(op, body, inner_body, inner_body.args[0], inner_body.args[1], rewriter)
        part = inner.results[0]
        ops = [inner]
        if float_type != f64:
            ops.append(arith.ExtFOp(part, f64))
            part = ops[-1].result
        total = arith.AddfOp(acc, part)
        outer_body.add_ops([*ops, total, scf.YieldOp(total)])
        into.add_ops([wide_zero, outer])
        if float_type == f64:
            return outer.results[0]
        narrow = arith.TruncFOp(outer.results[0], float_type)
        into.add_op(narrow)
        return narrow.result


@dataclass(frozen=True)
class LowerTgToLoops(ModulePass):
    """Lower tg.compute / tg.scatter_add / tg.check / tg.reduce to scf loop nests."""

    name = "lower-tg-to-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([LowerCompute(), LowerCheck(), LowerScatterAdd(), LowerReduce()]),
            apply_recursively=True,
        ).rewrite_module(op)
        for fn in op.ops:
            number_stages([o for o in fn.body.block.ops if isinstance(o, scf.ForOp)])
