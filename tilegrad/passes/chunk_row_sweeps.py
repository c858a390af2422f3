"""chunk-row-sweeps: a sweep that accumulates stack rows runs column chunk by column chunk, so each
chunk's accumulators stay in registers for the whole sweep.

After interchange-column-reductions (and jam-row-sweeps), a sum is a sweep over its terms r with a
row loop inside, every iteration loading and storing the accumulators it adds to:

    for r:                               for h0 in [start, split) step CHUNK:
      for h in [start, end):       ->      for r:
        acc_k[h - start] += t_k(r, h)        for h in [h0, h0 + CHUNK): acc_k[h - start] += t_k(r, h)
                                         for r: for h in [split, end): ...      (the columns left over)

Inside a chunk the accumulators' addresses do not change with r, so LLVM keeps them in registers
(CHUNK columns of every jammed row: 5 rows x 2 vectors), and the loads per term drop to the data
itself: the register tile of a GEMM kernel. (LLVM's LICM does so only in a loop of at most so many
memory accesses, counted before it vectorizes: codegen/jit.py raises that cap, which 4 rows x 32
columns passed.) Each accumulator still adds its terms in r order:
bitwise the same sums. Only sweeps whose row loop writes nothing but stack rows, each at its own
column, and reads nothing a sweep writes are chunked, and only where several rows share the sweep
(jam-row-sweeps made it): with one row, every chunk walks the swept data (w) again for no register
reuse (the fused linear CE's G @ W: 11 -> 36 ms chunked). A shared operand that walks down a column
(g[r, v..v+7] over r, in G.T @ X) is walked again by every chunk too, but its rows' elements are
side by side and each feeds CHUNK columns of every jammed row: at 8 rows, G.T @ X at 128x256x2000
went from 2.3-3.2 ms to 0.65-1.4 ms (`python benchmarks/dot_products.py`). A sweep with no such
shared operand (batch norm's dβ and dγ of x seen as [N, C]: every element feeds its own column's
sums) is left whole: chunked, it walked 64 bytes of each 4 KiB row per pass, a page per load
(8192 x 1024: 9.5 of 14 ms). For targets without UB staging (cpu).

The chunk is sized for `rows` stack rows (the jammed rows of one sum): a sweep that accumulates
more (several sums over the same terms jammed together, attention's dk and dv beside each other)
takes proportionally fewer columns, at least `lanes`, so its accumulators still fit the registers
the chunk was sized for (`columns` x `rows` of them). With 8 rows of 16 columns on AVX2 the
accumulators spilled: attention's dk and dv at B=16 L=512 D=64 359 -> 97 ms at 8 columns.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import LoopRole
from tilegrad.dialect.values import BlockBuilder
from tilegrad.errors import ArgumentError, ScheduleError
from tilegrad.passes.applying import given_directives, refuse_unnamed
from tilegrad.passes.common import (
    IN_ORDER,
    REDUCTION_ROLES,
    check_counts,
    depends_on,
    enclosing_func,
    functions,
    loop_axis,
    loop_role,
    make_for,
    mark_loop,
    pure_arith,
    stage_number,
    whole_steps,
)
from tilegrad.passes.loop_utils import in_cold_version, row_of_sweep, shares_an_operand
from tilegrad.schedule import Directive, Split, Tail

CHUNK = 16
"""Columns per chunk (the cpu backend gives the host's: targets/host.py HostModel.chunk_columns)."""
LANES = 8
"""Columns per loop inside a chunk: a float32 vector of AVX2. LLVM unrolls a loop this short
whole and keeps its accumulators in registers across the sweep; a 16-column loop it left in
memory (G @ W: 36% of numpy's matmul instead of 90%)."""
ROWS = 5
"""Stack rows a chunk of `columns` is sized for (jam-row-sweeps' rows: the cpu backend gives the
host's HostModel.jam_rows)."""


def _nest_row(sweep: Operation) -> scf.ForOp | None:
    """The row loop of a sweep (row_of_sweep), or of a nest of sweeps (an interchanged sum over
    several variables: each level's body one loop of the next beside index arithmetic), whose
    columns do not depend on the levels' variables; else None."""
    row = row_of_sweep(sweep)
    if row is not None or not isinstance(sweep, scf.ForOp) or loop_role(sweep) not in REDUCTION_ROLES \
            or sweep.iter_args:
        return row
    ops = [o for o in sweep.body.block.ops if not isinstance(o, scf.YieldOp)]
    loops = [o for o in ops if isinstance(o, scf.ForOp)]
    if len(loops) != 1 or any(o is not loops[0] and not pure_arith(o) for o in ops):
        return None
    row = _nest_row(loops[0])
    if row is None or any(depends_on(v, sweep.body.block.args[0]) for v in row.operands[:3]):
        return None
    return row


def _chunked_row(sweep: Operation) -> scf.ForOp | None:
    """The row loop of a sweep (or sweep nest) worth running chunk by chunk: several stack rows
    (jammed rows) share an operand that does not walk the columns, else None."""
    row = _nest_row(sweep)
    if row is None:
        return None
    written = {o.memref for o in row.body.walk() if isinstance(o, memref.StoreOp)}
    return row if len(written) >= 2 and shares_an_operand(row) else None


def chunk_columns(row: scf.ForOp, columns: int, rows: int, lanes: int) -> int:
    """Columns per chunk of the sweep whose row loop is `row`: `columns` for up to `rows` stack
    rows, else as many whole `lanes` as keep the accumulators to columns x rows (at least lanes)."""
    written = len({o.memref for o in row.body.walk() if isinstance(o, memref.StoreOp)})
    if written <= rows:
        return columns
    return max(lanes, columns * rows // written // lanes * lanes)


def chunk_factors(fn: Operation, columns: int, rows: int, lanes: int) -> list[tuple[scf.ForOp, scf.ForOp, int]]:
    """(sweep, its row loop, columns per chunk) of each sweep chunk-row-sweeps chunks in `fn`. A
    directive names the row loop by its stage and axis only, so the sweeps of one axis (a jammed
    group's and the rows left over) take one factor: the smallest any of them needs."""
    found = chunked_sweeps(fn)
    factor: dict[int, int] = {}
    for _, row in found:
        factor[loop_axis(row)] = min(factor.get(loop_axis(row), columns), chunk_columns(row, columns, rows, lanes))
    return [(sweep, row, factor[loop_axis(row)]) for sweep, row in found]


def chunked_sweeps(fn: Operation) -> list[tuple[scf.ForOp, scf.ForOp]]:
    """(sweep, its row loop) of each sweep chunk-row-sweeps chunks in `fn`: its decision, which the
    cpu planner lists too (no sweep holds another, so chunking one leaves the others' as it was)."""
    found: list[tuple[scf.ForOp, scf.ForOp]] = []
    for sweep in fn.walk():  # a nest's outermost level (its inner levels sweep the same row loop)
        if not any(outer.is_ancestor(sweep) for outer, _ in found) and not in_cold_version(sweep) \
                and (row := _chunked_row(sweep)) is not None:
            found.append((sweep, row))
    return found


def _chunk(sweep: scf.ForOp, row: scf.ForOp, columns: int, lanes: int, tail: Tail) -> None:
    index = IndexType()
    block = sweep.parent_block()
    start, end = row.lb, row.ub
    size, split = whole_steps(start, end, columns, sweep)
    chunk_body = Block(arg_types=[index])
    inner_sweep = _sweep_copy(sweep, row, chunk_body.args[0], columns, lanes, {})
    chunk_body.add_ops([inner_sweep, scf.YieldOp()])
    chunked = scf.ForOp(start, split, size, [], Region([chunk_body]))
    chunked.attributes.update(row.attributes)
    mark_loop(chunked, LoopRole.TILE, loop_axis(row))
    block.insert_op_before(chunked, sweep)
    row.operands = (split, *row.operands[1:])  # the columns left over, in the original sweep
    if tail == Tail.GUARD:
        _guarded_tail(sweep, row, start, split, end, columns, lanes)


def _guarded_tail(sweep: scf.ForOp, row: scf.ForOp, start: SSAValue, split: SSAValue, end: SSAValue,
                  columns: int, lanes: int) -> None:
    """The columns left over ([split, end), fewer than a chunk) as one more chunk ending at `end`,
    where there are some and a whole chunk precedes them; else the sweep as it was, over them. The
    chunk sums into stack rows of its own (its columns copied from the stack rows first); only
    its columns from `split` on are copied back after it (the ones before it are done already),
    so each column's sum starts where it did and adds its terms in the same order."""
    block = sweep.parent_block()
    entry = enclosing_func(sweep).body.block
    left = arith.CmpiOp(split, end, "slt")
    whole = arith.CmpiOp(start, split, "slt")
    both = arith.AndIOp(left, whole)
    block.insert_ops_before([left, whole, both], sweep)
    b = BlockBuilder(Block())
    h0 = b.add(arith.SubiOp(end, b.index(columns)))
    stack = _stack_rows(row)
    written = {o.memref for o in row.body.walk() if isinstance(o, memref.StoreOp)}
    own: dict[SSAValue, SSAValue] = {}
    for rows in stack:  # (a row as long as the stack row, read where it is: the chunks' code)
        temp = rows.owner.clone()
        temp.results[0].name_hint = f"{rows.name_hint}_tail" if rows.name_hint else None
        entry.insert_op_before(temp, entry.first_op)
        own[rows] = temp.results[0]
    offset = b.add(arith.SubiOp(h0, start))  # the chunk's first column in the stack rows

    def copy(lo: SSAValue, into_own: bool) -> None:
        loop, body = make_for(lo, b.add(arith.SubiOp(end, start)), b.index(1), LoopRole.COPY, loop_axis(row))
        cb = BlockBuilder(body)
        at = body.args[0]
        for rows in stack:
            if into_own:
                cb.add(memref.StoreOp.get(cb.add(memref.LoadOp.get(rows, [at])), own[rows], [at]))
            elif rows in written:
                cb.add(memref.StoreOp.get(cb.add(memref.LoadOp.get(own[rows], [at])), rows, [at]))
        body.add_op(scf.YieldOp())
        b.add(loop)

    copy(offset, True)
    b.block.add_op(_sweep_copy(sweep, row, h0, columns, lanes, dict(own)))
    copy(b.add(arith.SubiOp(split, start)), False)
    b.block.add_op(scf.YieldOp())
    anchor = sweep.next_op  # (a loop is followed by its block's terminator at least)
    sweep.detach()
    block.insert_op_before(scf.IfOp(both, [], Region([b.block]), Region([Block([sweep, scf.YieldOp()])])), anchor)


def _stack_rows(row: scf.ForOp) -> list[SSAValue]:
    """The stack rows the row loop reads or writes, in the order it first does."""
    return list({o.memref: None for o in row.body.walk() if isinstance(o, memref.LoadOp | memref.StoreOp)
                 and isinstance(o.memref.owner, memref.AllocaOp)})


def chunk_tail(row: scf.ForOp) -> Tail:
    """How chunk-row-sweeps runs the columns its chunks leave over: as one more chunk summing into
    rows of its own (guard) where its stack rows are rows (one axis), else in the sweep as it was
    (peel)."""
    return Tail.GUARD if all(r.type.get_num_dims() == 1 for r in _stack_rows(row)) else Tail.PEEL


def _sweep_copy(sweep: scf.ForOp, row: scf.ForOp, h0: SSAValue, columns: int, lanes: int,
                mapping: dict[SSAValue, SSAValue]) -> scf.ForOp:
    """The sweep (a nest's level: its inner level copied the same way) over the chunk at h0."""
    index = IndexType()
    sweep_body = Block(arg_types=[index])
    mapping[sweep.body.block.args[0]] = sweep_body.args[0]
    for op in sweep.body.block.ops:
        if isinstance(op, scf.ForOp) and op is not row and op.is_ancestor(row):
            sweep_body.add_op(_sweep_copy(op, row, h0, columns, lanes, mapping))
        elif op is row:
            for piece in range(0, columns, lanes):  # a loop per vector: one register per row each
                inner = Block(arg_types=[index])
                mapping[row.body.block.args[0]] = inner.args[0]
                for inner_op in row.body.block.ops:
                    clone = inner_op.clone(value_mapper=mapping)
                    if isinstance(clone, arith.AddfOp):
                        clone.fastmath = IN_ORDER
                    inner.add_op(clone)
                    mapping.update(zip(inner_op.results, clone.results))
                lo_c = arith.ConstantOp.from_int_and_width(piece, index)
                hi_c = arith.ConstantOp.from_int_and_width(piece + lanes, index)
                lo, hi = arith.AddiOp(h0, lo_c.result), arith.AddiOp(h0, hi_c.result)
                sweep_body.add_ops([lo_c, hi_c, lo, hi])
                piece_loop = scf.ForOp(lo.result, hi.result, row.step, [], Region([inner]))
                piece_loop.attributes.update(row.attributes)
                sweep_body.add_op(piece_loop)
        elif not isinstance(op, scf.YieldOp):
            clone = op.clone(value_mapper=mapping)
            sweep_body.add_op(clone)
            mapping.update(zip(op.results, clone.results))
    sweep_body.add_op(scf.YieldOp())
    inner_sweep = scf.ForOp(*(mapping.get(v, v) for v in (sweep.lb, sweep.ub, sweep.step)), [], Region([sweep_body]))
    inner_sweep.attributes.update(sweep.attributes)
    return inner_sweep


@dataclass(frozen=True)
class ChunkRowSweeps(ModulePass):
    """Run row-accumulating sweeps chunk by chunk of `columns` columns (accumulators in registers;
    fewer where a sweep accumulates more than `rows` stack rows: chunk_columns); with `directives`
    (Split, printed, `;`-separated: passes/applying.py), the sweeps whose row loop they name, by
    chunks of their factor (1: not chunked), the columns left over as their tail says: guard (the
    planner's: one more chunk, masked) or peel (the sweep as it was, over them)."""

    name = "chunk-row-sweeps"
    columns: int = CHUNK
    lanes: int = LANES
    rows: int = ROWS
    directives: str | None = None
    takes_text: ClassVar[str] = "Split(tail='guard') or Split(tail='peel')"

    def __post_init__(self):
        check_counts(self, "columns", "lanes", "rows")
        if self.columns % self.lanes:
            raise ArgumentError(f"chunk-row-sweeps: columns={self.columns} must be a multiple of lanes={self.lanes} "
                                f"(a chunk runs as loops of lanes columns)")

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Split) and directive.tail in (Tail.GUARD, Tail.PEEL)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        candidates = [(Split(stage=stage_number(fn), axis=loop_axis(row), factor=factor, tail=chunk_tail(row)),
                       (sweep, row))
                      for fn in functions(op) for sweep, row, factor in chunk_factors(fn, self.columns, self.rows,
                                                                                      self.lanes)]
        # a directive names a row loop by stage and axis, whatever its tail (the planner's guard,
        # the user's peel: the last given wins)
        untailed = [(replace(own, tail=Tail.GUARD), thing) for own, thing in candidates]
        given = given_directives(self, self.takes)
        for directive in given or ():
            if not any(replace(directive, tail=Tail.GUARD).names(own) for own, _ in untailed):
                refuse_unnamed(self, (directive,), [own for own, _ in candidates], "row loop of a sweep of jammed rows")
        for own, (sweep, row) in untailed:
            named = [d for d in given or (own,) if replace(d, tail=Tail.GUARD).names(own)]
            directive = named[-1] if named else None
            if directive is None or directive.off:
                continue
            if directive.factor % self.lanes:
                raise ScheduleError(f"{directive}: the factor must be a multiple of {self.name}'s lanes={self.lanes} "
                                    f"(a chunk runs as loops of lanes columns)")
            if directive.tail == Tail.GUARD and chunk_tail(row) != Tail.GUARD:
                raise ScheduleError(f"{directive}: the sweep's stack rows are not rows of one axis: its columns left "
                                    f"over run in the sweep as it was (tail='peel')")
            _chunk(sweep, row, directive.factor, self.lanes, directive.tail)
