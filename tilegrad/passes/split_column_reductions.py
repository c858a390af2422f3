"""split-column-reductions: column sums beside a row stage over the same rows are summed by chunks
of rows, so that one sweep of the data serves both.

    for n: row(n)                            for k < K:                       (split over cores)
    for d: s = Σ_n term(n, d)        ->        for n in chunk k: row(n)
           out[d] = f(s)                     for k < K:
                                               for n in chunk k: for d: part[k, d] += term(n, d)
                                             for d: out[d] = f(Σ_k part[k, d])   (chunk order)

A layer norm's dγ and dβ sum over the rows that its dx stage walks: apart, each stage reads x and
dy from memory; split like this, the two chunk nests have the same loops and fuse-sibling-loops
runs them as one, so every row is read once while it is in cache. The partial rows `part` are a
workspace argument (`column_partials<i>`, K x the output's shape); the first row of a chunk
overwrites its partial row (the loaded value is not used), so the workspace needs no fill.

Chunks: K equal chunks, K a multiple of the cores (each core gets as many). A long float32 sum
is blocked (float32 sums of B = 1024 terms added in float64): then K is also at least the number
of blocks, so a partial adds at most B float32 terms, and the combine adds the partials in
float64 in chunk order, as the blocks were (when the chunks are the blocks, e.g. 4096 rows on 2
or 4 cores, bitwise the untiled sum). A short sum gets one chunk per core. The terms are added in
another order than untiled (within float tolerance), the same for the same core count. For
targets without UB staging (cpu), before tile-for-target, which splits the chunks over cores.

Each split is the choice `RFactor(stage=S, axis=a, chunks=num_blocks)`: S is the column stage's
number as the pass finds it (the split puts the partial sums' stage before it, so S is the
combine stage's number once fuse-sibling-loops has run the partial sums with the row stage), a
the axis of its sums. With `directives` (RFactor, printed, `;`-separated: passes/applying.py) the
pass splits the column stages they name, each by its `chunks` in place of `num_blocks`
(`chunks=1`: left as it is).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    Float64Type,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StridedLayoutAttr,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import LoopRole
from tilegrad.dialect.values import BlockBuilder
from tilegrad.passes.applying import chosen
from tilegrad.passes.common import (
    add_function_arg,
    arg_info,
    arg_roles,
    args_by_role,
    blocked_shape,
    constant_index,
    depends_on,
    feeding_ops,
    functions,
    loop_axis,
    loop_role,
    make_for,
    mark_loop,
    number_stages,
    perfect_chain,
    same_value,
    stage_nests,
    sum_loop,
    viewed,
    walks_columns,
    written_memrefs,
)
from tilegrad.schedule import Directive, RFactor


@dataclass
class ColumnSums:
    """The sums of a column stage `column` over the rows the row stage `row` walks."""

    row: scf.ForOp
    column: scf.ForOp
    chain: list[scf.ForOp]
    sums: list[Operation]
    block: int | None
    """B of the blocked form (every sum blocked alike), None for plain sums."""


def _size_form(fn: func.FuncOp, value: SSAValue) -> object | None:
    """A loop extent as a size form (an integer, or ["dim", input, axis]), for the workspace shape."""
    constant = constant_index(value)
    if constant is not None:
        return constant
    owner = value.owner
    if isinstance(owner, memref.DimOp) and owner.source in fn.body.block.args:
        info = arg_info(fn, list(fn.body.block.args).index(owner.source))
        axis = constant_index(owner.index)
        if info.get("tg.role") == "input" and axis is not None:
            return ["dim", info["tg.name"], axis]
    return None


def _needed(loop: scf.ForOp, body: Block) -> list[Operation] | None:
    """The ops of `body` (around the sum `loop`) the loop's terms and initial value read, in order;
    None if one of them has regions or writes memory."""
    needed = feeding_ops([v for o in loop.walk() for v in o.operands] + [loop.iter_args[0]], body)
    if any(o.regions or isinstance(o, memref.StoreOp) for o in needed):
        return None
    return needed


def find_column_sums(fn: func.FuncOp, row: scf.ForOp, column: scf.ForOp) -> ColumnSums | None:
    roles = arg_roles(fn)
    written = written_memrefs(fn)
    if loop_role(row) != LoopRole.PARALLEL or loop_role(column) != LoopRole.PARALLEL:
        return None
    if constant_index(row.lb) != 0 or constant_index(row.step) != 1 or _size_form(fn, row.ub) is None:
        return None
    chain = perfect_chain(column)
    if any(constant_index(loop.lb) != 0 or constant_index(loop.step) != 1 or _size_form(fn, loop.ub) is None
           for loop in chain):
        return None
    inner = chain[-1].body.block
    body = [o for o in inner.ops if not isinstance(o, scf.YieldOp)]
    if any(isinstance(o, scf.ForOp) and loop_role(o) != LoopRole.REDUCE for o in body):
        return None
    sums = [o for o in body if loop_role(o) == LoopRole.REDUCE]
    results = {r for s in sums for r in s.results}
    blocks = set()
    for s in sums:
        loop = sum_loop(s)
        if loop is None or (isinstance(s, scf.IfOp) and not blocked_shape(s)):
            return None
        if constant_index(loop.lb) != 0 or constant_index(loop.step) != 1 or not same_value(row.ub, loop.ub):
            return None
        needed = _needed(loop, inner)
        if not walks_columns(loop, chain[-1].body.block.args[0]) or needed is None:
            return None
        if _contraction(loop, [c.body.block.args[0] for c in chain]):
            return None  # a GEMM's sum: planned on its own (register tile, panels), not in the row sweep
        for op in [*needed, *loop.walk()]:
            if isinstance(op, memref.LoadOp) and (roles.get(op.memref) != "input" or viewed(op.memref) in written):
                return None  # a term reads only inputs no stage writes (the row stage's order is free)
            if any(v in results for v in op.operands):
                return None
        blocks.add(_block_size(s))
    if not sums or len(blocks) != 1:
        return None
    return ColumnSums(row, column, chain, sums, blocks.pop())


def _contraction(loop: scf.ForOp, columns: list[SSAValue]) -> bool:
    """Whether a term of the sum reads an operand at the sum's variable and some of the column
    variables but not all: one element serves a whole line of the outputs (dw = dy.T @ x: dy[n, o]
    for every i). Such a sum does O(outputs) work per element read, not one term: a contraction
    the register tile and panels make compute-bound, which a chunked sweep beside the rows loses
    (the linear layer's backward at 1000^3 on znver4: 146 ms split, 49 ms apart)."""
    variable = loop.body.block.args[0]
    for load in (o for o in loop.walk() if isinstance(o, memref.LoadOp)):
        if not any(depends_on(i, variable) for i in load.indices):
            continue
        used = [c for c in columns if any(depends_on(i, c) for i in load.indices)]
        if used and len(used) < len(columns):
            return True
    return False


def _block_size(s: Operation) -> int | None:
    if not isinstance(s, scf.IfOp):
        return None
    blocks = next(o for o in s.true_region.block.ops if isinstance(o, scf.ForOp))
    return constant_index(blocks.step)


class _Split:
    def __init__(self, fn: func.FuncOp, found: ColumnSums, num_blocks: int):
        self.fn, self.found, self.num_blocks = fn, found, num_blocks
        self.entry = fn.body.block

    def apply(self) -> None:
        found = self.found
        b = BlockBuilder(self.entry, found.row)
        rows = found.row.ub
        self.zero, self.one = b.index(0), b.index(1)
        cores = b.index(self.num_blocks)

        def ceil_div(a: SSAValue, d: SSAValue) -> SSAValue:
            return b.add(arith.DivUIOp(b.add(arith.AddiOp(a, b.add(arith.SubiOp(d, self.one)))), d))

        # K chunks, a multiple of the cores (balanced) and, for a blocked sum, at least one per
        # block (no partial adds more float32 terms than a block did); equal chunks of L rows
        chunks = cores
        if found.block is not None:
            chunks = b.add(arith.MaxSIOp(cores, ceil_div(rows, b.index(found.block))))
            chunks = b.add(arith.MuliOp(ceil_div(chunks, cores), cores))
        self.rows = rows
        self.length = b.add(arith.MaxSIOp(ceil_div(rows, chunks), self.one))
        self.chunks = ceil_div(rows, self.length)  # (fewer than K when rows are few)
        self.partials = [self._workspace(s) for s in found.sums]
        self.chunk_rows()
        self.partial_sums()
        for s, partial in zip(found.sums, self.partials):
            self.combine(s, partial)

    def _workspace(self, s: Operation) -> SSAValue:
        """part: [chunks, *column extents] of the sum's type; its shape as size forms."""
        found, fn = self.found, self.fn
        rows = self.num_blocks
        if found.block is not None:
            blocks = ["floordiv", ["add", _size_form(fn, found.row.ub), found.block - 1], found.block]
            rows = ["mul", ["floordiv", ["add", ["max", self.num_blocks, blocks], self.num_blocks - 1],
                            self.num_blocks], self.num_blocks]
        extents = [_size_form(fn, loop.ub) for loop in found.chain]
        shape = [rows if isinstance(rows, int) else DYNAMIC_INDEX] + [e if isinstance(e, int) else DYNAMIC_INDEX
                                                                    for e in extents]
        strides = [None] * (len(shape) - 1) + [1]
        type_ = MemRefType(s.results[0].type, shape, StridedLayoutAttr(strides, 0))
        name = f"column_partials{len(args_by_role(fn, 'workspace'))}"
        return add_function_arg(fn, type_, name, "workspace", shape=json.dumps([rows, *extents]))

    def chunk_loop(self, before: Operation) -> tuple[scf.ForOp, Block, SSAValue, SSAValue, SSAValue]:
        """for k < chunks (the stage's loop, split over cores), with chunk k's rows [lo, hi)."""
        loop, body = make_for(self.zero, self.chunks, self.one, LoopRole.PARALLEL, 0)
        self.entry.insert_op_before(loop, before)
        b = BlockBuilder(body)
        lo = b.add(arith.MuliOp(body.args[0], self.length))
        hi = b.add(arith.MinSIOp(b.add(arith.AddiOp(lo, self.length)), self.rows))
        return loop, body, body.args[0], lo, hi

    def chunk_rows(self) -> None:
        """The row stage walks the chunks' rows: for k: for n in chunk k: row(n)."""
        row = self.found.row
        loop, body, _, lo, hi = self.chunk_loop(row)
        loop.attributes["tg.stage"] = row.attributes.pop("tg.stage")
        row.detach()
        row.operands = [lo, hi, row.step]
        for op in row.walk():
            if isinstance(op, scf.ForOp) and loop_role(op) == LoopRole.PARALLEL:
                mark_loop(op, LoopRole.PARALLEL, loop_axis(op) + 1)
        body.add_ops([row, scf.YieldOp()])

    def partial_sums(self) -> None:
        """for k: for n in chunk k: for d: part[k, d] = (n == lo ? init : part[k, d]) + term(n, d)."""
        found = self.found
        loop, body, k, lo, hi = self.chunk_loop(found.column)
        loop.attributes["tg.stage"] = IntegerAttr(0, i64)
        rows, rows_body = make_for(lo, hi, self.one, LoopRole.PARALLEL, 1)
        body.add_ops([rows, scf.YieldOp()])
        n, into, columns = rows_body.args[0], rows_body, []
        for axis, column in enumerate(found.chain):
            inner, inner_body = make_for(column.lb, column.ub, column.step, LoopRole.PARALLEL, axis + 2)
            into.add_ops([inner, scf.YieldOp()])
            columns.append(inner_body.args[0])
            into = inner_body
        b = BlockBuilder(into)
        first = b.add(arith.CmpiOp(n, lo, "eq"))
        values = {c.body.block.args[0]: new for c, new in zip(found.chain, columns)}
        source = found.chain[-1].body.block
        for s, partial in zip(found.sums, self.partials):
            term = sum_loop(s)
            r, acc = term.body.block.args
            for op in _needed(term, source):
                clone = op.clone(value_mapper=values)
                b.add(clone)
                values.update(zip(op.results, clone.results))
            loaded = b.add(memref.LoadOp.get(partial, [k, *columns]))
            values[r] = n
            init = values.get(term.iter_args[0], term.iter_args[0])
            values[acc] = b.add(arith.SelectOp(first, init, loaded))
            for op in list(term.body.block.ops)[:-1]:
                clone = op.clone(value_mapper=values)
                b.add(clone)
                values.update(zip(op.results, clone.results))
            b.add(memref.StoreOp.get(values[term.body.block.last_op.operands[0]], partial, [k, *columns]))
        b.add(scf.YieldOp())

    def combine(self, s: Operation, partial: SSAValue) -> None:
        """The sum becomes the sum of its chunks' partials, in chunk order (a blocked sum's in
        float64, as its blocks were added)."""
        columns = [c.body.block.args[0] for c in self.found.chain]
        term = sum_loop(s)

        def over_chunks(b: BlockBuilder, init: SSAValue, wide: bool) -> SSAValue:
            loop, body = make_for(self.zero, self.chunks, self.one, LoopRole.REDUCE, 0, [init])
            inner = BlockBuilder(body)
            value = inner.add(memref.LoadOp.get(partial, [body.args[0], *columns]))
            if wide:
                value = inner.add(arith.ExtFOp(value, Float64Type()))
            inner.add(scf.YieldOp(inner.add(arith.AddfOp(body.args[1], value))))
            return b.add(loop)

        b = BlockBuilder(s.parent_block(), s)
        if isinstance(s, scf.IfOp):
            long_arm, short_arm = Block(), Block()
            long_b = BlockBuilder(long_arm)
            total = over_chunks(long_b, long_b.const(0.0, Float64Type()), True)
            if total.type != s.results[0].type:
                total = long_b.add(arith.TruncFOp(total, s.results[0].type))
            long_b.add(scf.YieldOp(total))
            short_b = BlockBuilder(short_arm)
            short_b.add(scf.YieldOp(over_chunks(short_b, term.iter_args[0], False)))
            total = b.add(scf.IfOp(s.cond, [s.results[0].type], Region([long_arm]), Region([short_arm])))
        else:
            total = over_chunks(b, term.iter_args[0], False)
        s.results[0].replace_all_uses_with(total)
        s.detach()
        s.erase()


def column_splits(fn: func.FuncOp) -> list[ColumnSums]:
    """The column stages split-column-reductions splits in `fn`, in stage order: its decision, which
    the cpu planner lists too (each split inserts one stage, its partial sums, before its column stage)."""
    nests = stage_nests(fn.body.block)
    found = [f for row, column in zip(nests, nests[1:]) if (f := find_column_sums(fn, row, column))]
    used: set[scf.ForOp] = set()
    chosen = []
    for f in found:
        if f.row not in used and f.column not in used:  # a stage takes part in one split at most
            used.update((f.row, f.column))
            chosen.append(f)
    return chosen


def rfactors(fn: func.FuncOp, chunks: int) -> list[tuple[RFactor, ColumnSums]]:
    """Each split of column_splits(fn) by the directive that names it (one per axis of its sums),
    with `chunks`: what the pass does to `fn` by itself, and what the cpu planner lists."""
    nests = stage_nests(fn.body.block)
    found: list[tuple[RFactor, ColumnSums]] = []
    for split in column_splits(fn):
        stage = nests.index(split.column)  # (the combine stage's number in the plan)
        for axis in dict.fromkeys(loop_axis(sum_loop(s)) for s in split.sums):
            found.append((RFactor(stage=stage, axis=axis, chunks=chunks), split))
    return found


@dataclass(frozen=True)
class SplitColumnReductions(ModulePass):
    """Sum columns by chunks of the rows a preceding row stage walks, on `num_blocks` cores; with
    `directives` (RFactor, printed, `;`-separated: passes/applying.py), the column stages they name,
    each by its chunks (`chunks=1`: not split)."""

    name = "split-column-reductions"
    num_blocks: int = 2
    directives: str | None = None
    takes_text: ClassVar[str] = "RFactor"

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, RFactor)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.num_blocks < 2 and self.directives is None:
            return
        candidates = [(directive, (fn, split)) for fn in functions(op)
                      for directive, split in rfactors(fn, self.num_blocks)]
        done: list[ColumnSums] = []  # (a split's sums over several axes: split once, by the first named)
        for (fn, split), directive in chosen(self, candidates, "column stage beside a row stage"):
            if directive.chunks > 1 and not any(split is d for d in done):
                _Split(fn, split, directive.chunks).apply()
                done.append(split)
        for fn in functions(op):
            number_stages(stage_nests(fn.body.block))
