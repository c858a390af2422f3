"""pack-reused-panels: the columns of a matrix that every row group sweeps are copied once into a
contiguous stack panel, which all the row groups then read (a GEMM's packed panel; the cpu's UB).

After jam-row-sweeps and chunk-row-sweeps, each group of rows of `G @ W` sweeps all of W, a chunk
of columns at a time. The column tile loop moves outside the row groups, a strip of whole chunks
wide, and each strip's columns are copied into the panel first:

    for i step ROWS:                   for t step tw:         (tw: whole chunks whose panel fits)
      for t step T:               ->     panel, packed = tg.panel W[t, width] in buffer
        ... W[v, h] ...                  if packed: panel[v, c] = W[v, t + c]   (v < V, c < width)
                                         for i step ROWS:
                                           ... panel[v, h - t] ...   (h in [t, t + width))

A chunk's sweep reads 8 or 16 columns of each of W's rows, H·4 bytes apart: where H = 256 it
crosses a page every four rows (the prefetchers stop there) and its lines fall in a sixteenth of
the cache's sets, so every row group read W again from L3, each line twice (once per chunk half).
The panel's rows are `width` apart: the sweeps read it in order from L2, every group the same
strip (G @ W at 128x256x2000 on znver1: 3.3 -> 2.45 ms, 58% -> 80% of numpy's matmul). The strips
are as wide as `panel_bytes` allows; where not even one chunk's panel fits (V rows of a chunk
are more than panel_bytes), or a strip is whole rows already, `tg.panel` is W itself and nothing
is copied. Each sum adds the same terms in the same order: bitwise the same results. For
targets without UB staging (cpu), after chunk-row-sweeps.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect import tg
from tilegrad.dialect.tg import LoopRole
from tilegrad.dialect.values import BlockBuilder
from tilegrad.passes.chunk_row_sweeps import CHUNK
from tilegrad.passes.common import (
    arg_info,
    constant_index,
    depends_on,
    functions,
    loop_axis,
    loop_role,
    make_for,
    tensors_by_stage,
)
from tilegrad.passes.jam_row_sweeps import sweeps_shared_data
from tilegrad.passes.tiling_plan import PANEL_BYTES


def _column_var(index: SSAValue) -> bool:
    """The variable of a row loop (the columns an interchanged sum accumulates)."""
    return isinstance(index, BlockArgument) and isinstance(index.owner.parent_op(), scf.ForOp) \
        and loop_role(index.owner.parent_op()) == LoopRole.ROW


def _inputs(fn: func.FuncOp) -> set[SSAValue]:
    return {a for i, a in enumerate(fn.body.block.args) if arg_info(fn, i).get("tg.role") == "input"
            and isinstance(a.type, MemRefType) and a.type.get_num_dims() == 2}


def _reused_loads(rows: scf.ForOp, tile: scf.ForOp, inputs: set[SSAValue]) -> dict[SSAValue, list[memref.LoadOp]]:
    """Per input matrix, its loads in `tile` at [r, h]: h a row loop's column, neither index
    depending on the row group (every group reads the same elements again)."""
    group = rows.body.block.args[0]
    reused: dict[SSAValue, list[memref.LoadOp]] = {}
    for load in (o for o in tile.walk() if isinstance(o, memref.LoadOp)):
        if load.memref not in inputs or not _column_var(load.indices[1]):
            continue
        if not any(depends_on(index, group) for index in load.indices):
            reused.setdefault(load.memref, []).append(load)
    return reused


def _candidate(rows: Operation) -> tuple[scf.ForOp, dict] | None:
    """(the tile loop, the reused loads) of a stage's row-group loop that several rows share, else None."""
    if not isinstance(rows, scf.ForOp) or loop_role(rows) != LoopRole.PARALLEL or rows.iter_args:
        return None
    fn = rows.parent_op()
    if not isinstance(fn, func.FuncOp) or (constant_index(rows.step) or 1) < 2 or not sweeps_shared_data(rows):
        return None
    inner = [o for o in rows.body.block.ops if isinstance(o, scf.ForOp)]
    if len(inner) != 1 or loop_role(inner[0]) != LoopRole.TILE:
        return None
    tile = inner[0]
    if any(rows.is_ancestor(v.owner) for v in (tile.lb, tile.ub) if isinstance(v.owner, Operation)):
        return None
    inside = [u.operation for u in tile.step.uses if tile.is_ancestor(u.operation) and u.operation is not tile]
    if not all(isinstance(o, arith.AddiOp) and tile.body.block.args[0] in o.operands for o in inside):
        return None  # the tile's step means more inside it than where its tile ends
    reused = _reused_loads(rows, tile, _inputs(fn))
    return (tile, reused) if reused else None


def _pack(rows: scf.ForOp, tile: scf.ForOp, matrix: SSAValue, loads: list[memref.LoadOp], entry, budget: int,
          columns: int) -> None:
    element = matrix.type.element_type
    buffer = memref.AllocaOp.get(element, shape=[max(budget // (element.bitwidth // 8), 1)])
    entry.insert_op_before(buffer, entry.first_op)
    b = BlockBuilder(rows.parent_block(), rows)
    zero, one = b.index(0), b.index(1)
    extent = b.add(memref.DimOp(matrix, zero))
    per_row = b.add(arith.DivUIOp(b.index(buffer.memref.type.get_shape()[0]), b.add(arith.MaxSIOp(extent, one))))
    chunk = b.index(columns)
    fit = b.add(arith.MuliOp(b.add(arith.DivUIOp(per_row, chunk)), chunk))
    span = b.add(arith.MaxSIOp(b.add(arith.SubiOp(tile.ub, tile.lb)), one))
    step = b.add(arith.SelectOp(b.add(arith.CmpiOp(fit, zero, "sgt")), fit, span))
    step.name_hint = "panel_columns"
    strip, body = make_for(tile.lb, tile.ub, step, LoopRole.TILE, loop_axis(tile))
    rows.parent_block().insert_op_before(strip, rows)
    sb = BlockBuilder(body)
    start = body.args[0]
    end = sb.add(arith.MinSIOp(sb.add(arith.AddiOp(start, step)), tile.ub))
    width = sb.add(arith.SubiOp(end, start))
    panel_op = tg.PanelOp(matrix, start, width, buffer.memref)
    sb.add(panel_op)
    panel_op.panel.name_hint = "panel"
    copy_in = BlockBuilder(body)
    over_rows, row_body = make_for(zero, extent, one, LoopRole.COPY, 0)
    over_columns, column_body = make_for(zero, width, one, LoopRole.COPY, loop_axis(tile))
    cb = BlockBuilder(column_body)
    c = column_body.args[0]
    value = cb.add(memref.LoadOp.get(matrix, [row_body.args[0], cb.add(arith.AddiOp(start, c))]))
    cb.add(memref.StoreOp.get(value, panel_op.panel, [row_body.args[0], c]))
    column_body.add_op(scf.YieldOp())
    row_body.add_ops([over_columns, scf.YieldOp()])
    then = Region([Block()])
    then.block.add_ops([over_rows, scf.YieldOp()])
    copy_in.add(scf.IfOp(panel_op.packed, [], then))
    rows.detach()
    body.add_ops([rows, scf.YieldOp()])
    # the tile loop's body runs in the row loop, on the strip: the strip loop is the tile loop now
    tile.step.replace_uses_with_if(step, lambda use: tile.is_ancestor(use.operation) and use.operation is not tile)
    tile.body.block.args[0].replace_all_uses_with(start)
    for op in [o for o in tile.body.block.ops if not isinstance(o, scf.YieldOp)]:
        op.detach()
        rows.body.block.insert_op_before(op, tile)
    tile.detach()
    tile.erase()
    for load in loads:
        lb = BlockBuilder(load.parent_block(), load)
        row, column = load.indices
        at = lb.add(arith.SubiOp(column, start))
        moved = memref.LoadOp.get(panel_op.panel, [row, at])
        lb.add(moved)
        load.results[0].replace_all_uses_with(moved.results[0])
        load.detach()
        load.erase()


@dataclass(frozen=True)
class PackReusedPanels(ModulePass):
    """Copy the columns every row group sweeps into a stack panel of at most `panel_bytes`, strip
    by strip of whole `columns`-wide chunks, read by all the groups."""

    name = "pack-reused-panels"
    panel_bytes: int = PANEL_BYTES
    columns: int = CHUNK

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            for rows in [o for o in fn.body.block.ops if isinstance(o, scf.ForOp)]:
                found = _candidate(rows)
                if found is None:
                    continue
                tile, reused = found
                matrix = max(reused, key=lambda m: len(reused[m]))  # one panel: the most read
                _pack(rows, tile, matrix, reused[matrix], fn.body.block, self.panel_bytes, self.columns)



def packed_panels(module: Operation) -> dict[str, list[int]]:
    """Input name -> the stages that read it through packed panels (what `tilegrad plan` shows)."""
    return tensors_by_stage(module, lambda op: op.source if isinstance(op, tg.PanelOp) else None)
