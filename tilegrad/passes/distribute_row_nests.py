"""distribute-row-nests: a row loop whose body is several loop nests, one a contraction, runs each
nest over a tile of rows in a loop of its own, so each gets the register tile its own form takes.

A stage that computes a row's temporaries and then contracts them (attention backward's stage 0:
per row r, dp[r, :] = do[r] @ v.T, delta[r] = sum(p[r] dp[r]), ds[r, :] = p[r] (dp[r] - delta[r]),
dq[r, :] = ds[r] @ k) is one row loop with four nests in it. Its rows can be jammed neither as a whole
(jam-row-sweeps: a nest carries a sum per row) nor nest by nest: every nest ran one row (two, the dot
products' unroll-reuse-loops) at a time, dq's sweep outside any register tile. Here the row loop is
split into tiles of rows, and inside a tile each nest runs over the tile's rows in a loop of its own
(loop distribution, at tile granularity):

    for i:                      for t step T:
      nest_1(i)          ->       for i in [t, min(t + T, end)): nest_1(i)
      ...                         ...
      nest_n(i)                   for i in [t, min(t + T, end)): nest_n(i)

so the contraction's rows are jammed (jam-row-sweeps, chunk-row-sweeps) and the dot products' rows
paired (unroll-reuse-loops) as in a stage of their own, while the tile's temporaries (T rows of each)
stay in the core's cache from the nest that writes them to the ones that read them. T is
`factor` rows, or (factor 0, the planner's) as many rows, a multiple of `granule` (the row tiles of
the passes after), as keep the tile's stored rows within `budget` bytes, computed at run time from
the written tensors' extents (at least `granule` rows).

Only where it changes no result: every tensor the body writes is indexed by the row (the loop's
variable itself, at the same position in every access of that tensor), so the rows touch disjoint
elements of whatever is written and any order that keeps each row's nests in order computes the same
values (bitwise); nothing written may be an input in place; each nest's values reach the others only
through memory. Only worth it where one nest is a contraction: a column loop around a sum that
reads a tensor every row shares at the column and the sum's variable (w[m, d] of x[r] @ w), the data
a register tile of rows reuses. For targets without UB staging (cpu), after tile-for-target and
before interchange-column-reductions. Each row loop it distributes is `Distribute(stage=S, axis=A)`
(`factor=N`: tiles of N rows; `distributed=False`: one loop as it was).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import LoopRole
from tilegrad.dialect.values import BlockBuilder, element_bytes
from tilegrad.passes.applying import chosen
from tilegrad.passes.common import (
    REDUCTION_ROLES,
    check_counts,
    constant_index,
    depends_on,
    erase_unused,
    functions,
    loop_axis,
    loop_role,
    mark_loop,
    pure_arith,
    stage_number,
    written_memrefs,
)
from tilegrad.passes.loop_utils import may_be_inputs
from tilegrad.schedule import Directive, Distribute

BUDGET = 256 * 1024
"""Bytes of stored rows a tile keeps (the cpu backend gives half the core's cache, as reorder-for-reuse)."""
GRANULE = 10
"""Rows a tile is a multiple of (the cpu backend gives lcm(HostModel.jam_rows, reuse_jam_rows))."""


def _segments(row: scf.ForOp) -> list[list[Operation]] | None:
    """The row body's ops as nests: each a top-level loop with the ops after it that use what it
    computes (a sum's store), in order; free index arithmetic (copied into every nest that uses it)
    left out. None where an op belongs to no nest or a value crosses from one nest to another."""
    owner: dict[Operation, int] = {}
    segments: list[list[Operation]] = []
    block = row.body.block
    for op in block.ops:
        if isinstance(op, scf.YieldOp):
            continue
        if isinstance(op, scf.ForOp):
            segments.append([op])
            owner[op] = len(segments) - 1
            continue
        made = {owner[v.owner] for v in op.operands if isinstance(v.owner, Operation) and v.owner in owner}
        if pure_arith(op) and not made:
            continue  # free: copied where used
        if not segments or made - {len(segments) - 1}:
            return None
        segments[-1].append(op)
        owner[op] = len(segments) - 1
    for index, segment in enumerate(segments):
        for op in segment:
            for inner in op.walk():
                for value in inner.operands:
                    made = value.owner
                    if isinstance(made, Operation) and made.parent_block() is block and made in owner \
                            and owner[made] != index:
                        return None
    return segments if len(segments) >= 2 and all(isinstance(s[0], scf.ForOp) for s in segments) else None


def _row_position(accesses: list[Operation], row: SSAValue) -> bool:
    """Whether every access indexes the tensor by the row itself, at one position."""
    positions = {tuple(i for i, index in enumerate(a.indices) if index is row) for a in accesses}
    return len(positions) == 1 and bool(next(iter(positions)))


def _rows_apart(row: scf.ForOp) -> bool:
    """Whether the rows touch disjoint elements of everything the body writes (each a function's
    argument, never an input in place) and no stack buffer."""
    fn = row.parent_op()
    while fn is not None and not isinstance(fn, func.FuncOp):
        fn = fn.parent_op()
    if fn is None:
        return False
    accesses = [o for o in row.body.walk() if isinstance(o, memref.LoadOp | memref.StoreOp)]
    args = set(fn.body.block.args)
    if any(o.memref not in args for o in accesses) or any(isinstance(o, memref.AllocaOp) for o in row.body.walk()):
        return False
    written = written_memrefs(row)
    if written & may_be_inputs(row):
        return False
    variable = row.body.block.args[0]
    return all(_row_position([a for a in accesses if a.memref is m], variable) for m in written)


def _contraction(nest: scf.ForOp, row: SSAValue, written: set[SSAValue]) -> bool:
    """Whether the nest holds a column loop around a sum reading a tensor every row shares at the
    column and the sum's variable (the operand a register tile of rows reuses); the column loop may
    be inside its cache tiles."""
    for col in nest.walk():
        if not isinstance(col, scf.ForOp) or loop_role(col) != LoopRole.PARALLEL:
            continue
        column = col.body.block.args[0]
        for red in col.walk():
            if not isinstance(red, scf.ForOp) or loop_role(red) not in REDUCTION_ROLES:
                continue
            term = red.body.block.args[0]
            if any(isinstance(load, memref.LoadOp) and load.memref not in written
                   and not any(depends_on(i, row) for i in load.indices)
                   and any(depends_on(i, column) for i in load.indices)
                   and any(depends_on(i, term) for i in load.indices) for load in red.body.walk()):
                return True
    return False


def distributable(row: Operation) -> list[list[Operation]] | None:
    """The nests of a row loop distribute-row-nests distributes, else None."""
    if not isinstance(row, scf.ForOp) or loop_role(row) != LoopRole.PARALLEL or row.iter_args \
            or constant_index(row.step) != 1:
        return None
    segments = _segments(row)
    if segments is None or not _rows_apart(row):
        return None
    written = written_memrefs(row)
    variable = row.body.block.args[0]
    if not any(_contraction(s[0], variable, written) for s in segments):
        return None
    return segments


def distributed_rows(module: ModuleOp) -> list[tuple[Distribute, tuple[scf.ForOp, list[list[Operation]]]]]:
    """The row loops distribute-row-nests distributes, each by its own directive (tiles sized at run
    time: factor 0), with its nests: its decision, which the cpu planner lists. The outermost such
    loop of a nest (one inside it is distributed with it)."""
    found: list[tuple[Distribute, tuple[scf.ForOp, list[list[Operation]]]]] = []
    for fn in functions(module):
        for op in fn.walk():
            if any(row.is_ancestor(op) for _, (row, _) in found):
                continue
            segments = distributable(op)
            if segments is not None:
                found.append((Distribute(stage=stage_number(fn), axis=loop_axis(op)), (op, segments)))
    return found


def _row_bytes(b: BlockBuilder, row: scf.ForOp) -> SSAValue:
    """Bytes of the elements one row stores: for each tensor the body writes, its element bytes times
    its extents after the row's position in its indices, as index arithmetic before the row loop."""
    total = b.index(0)
    variable = row.body.block.args[0]
    stores: dict[SSAValue, memref.StoreOp] = {}
    for op in row.body.walk():
        if isinstance(op, memref.StoreOp):
            stores.setdefault(op.memref, op)
    for tensor, store in stores.items():  # (each tensor's first store, in program order)
        position = next(i for i, index in enumerate(store.indices) if index is variable)
        size = b.index(element_bytes(tensor.type.element_type))
        for dim in range(position + 1, tensor.type.get_num_dims()):
            size = b.add(arith.MuliOp(size, b.add(memref.DimOp(tensor, b.index(dim)))))
        total = b.add(arith.AddiOp(total, size))
    return total


def _distribute(row: scf.ForOp, segments: list[list[Operation]], factor: int, budget: int, granule: int) -> None:
    block = row.parent_block()
    b = BlockBuilder(Block())
    if factor:
        rows = b.index(factor)
    else:
        stored = b.add(arith.MaxSIOp(_row_bytes(b, row), b.index(1)))
        fit = b.add(arith.DivUIOp(b.index(budget), stored))
        whole = b.add(arith.MuliOp(b.add(arith.DivUIOp(fit, b.index(granule))), b.index(granule)))
        rows = b.add(arith.MaxSIOp(whole, b.index(granule)))
    ops = list(b.block.ops)
    for op in ops:
        op.detach()
    block.insert_ops_before(ops, row)
    tile_body = Block(arg_types=[row.lb.type])
    tb = BlockBuilder(tile_body)
    start = tile_body.args[0]
    end = tb.add(arith.MinSIOp(tb.add(arith.AddiOp(start, rows)), row.ub))
    free = [o for o in row.body.block.ops if not isinstance(o, scf.YieldOp)
            and not any(o in segment for segment in segments)]
    for segment in segments:
        body = Block(arg_types=[row.lb.type])
        mapping: dict[SSAValue, SSAValue] = {row.body.block.args[0]: body.args[0]}
        copies = []
        for op in free:
            clone = op.clone(value_mapper=mapping)
            body.add_op(clone)
            mapping.update(zip(op.results, clone.results))
            copies.append(clone)
        for op in segment:
            clone = op.clone(value_mapper=mapping)
            body.add_op(clone)
            mapping.update(zip(op.results, clone.results))
        body.add_op(scf.YieldOp())
        erase_unused(copies)
        nest = scf.ForOp(start, end, row.step, [], Region([body]))
        nest.attributes.update({k: v for k, v in row.attributes.items() if k != "tg.stage"})
        tile_body.add_op(nest)
    tile_body.add_op(scf.YieldOp())
    tile = scf.ForOp(row.lb, row.ub, rows, [], Region([tile_body]))
    tile.attributes.update(row.attributes)
    mark_loop(tile, LoopRole.TILE, loop_axis(row))
    block.insert_op_before(tile, row)
    row.detach()
    row.erase()


@dataclass(frozen=True)
class DistributeRowNests(ModulePass):
    """Run each nest of a row loop of several (one a contraction) over a tile of rows in a loop of its
    own; with `directives` (Distribute, printed, `;`-separated: passes/applying.py), the row loops
    they name, by tiles of `factor` rows (0: sized for `budget` bytes at run time; `distributed=False`:
    left as they are)."""

    name = "distribute-row-nests"
    budget: int = BUDGET
    granule: int = GRANULE
    directives: str | None = None
    takes_text: ClassVar[str] = "Distribute"

    def __post_init__(self):
        check_counts(self, "budget", "granule")

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Distribute)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for (row, segments), directive in chosen(self, distributed_rows(op), "row loop of several nests"):
            _distribute(row, segments, directive.factor, self.budget, self.granule)


def granule(jam_rows: int, reuse_rows: int) -> int:
    """Rows a tile is a multiple of: both register tiles' rows (jam-row-sweeps', unroll-reuse-loops')."""
    return math.lcm(max(1, jam_rows), max(1, reuse_rows))
