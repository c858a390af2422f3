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
is copied.

The group's own operand gets a panel of its own where its rows are columns of a matrix (g[k, v + c]
for the 8 rows v..v+7 of G.T @ X): each group first copies those columns, K x 8, into a panel of at
most panel_bytes / 8 (it stays in L1), which every chunk of the group then reads in order instead
of one element from each of K rows 4·V bytes apart (G.T @ X 2.7 -> 2.4 ms). Each sum adds the same
terms in the same order: bitwise the same results. For targets without UB staging (cpu), after
chunk-row-sweeps.

A half matrix (bfloat16, float16) whose every value read is widened to float32 (SPEC: half types
compute in float32) is packed widened (Stage dtype='float32'): the copy converts each element once
and the sweeps read float32, no conversion in the register tile. Such a panel lives in a float32
workspace, where it always fits (there is no float32 view of the matrix to fall back on): the strips
in a part per block of `<tensor>_panel32` (panel_bytes, or one chunk's rows where that is more), the
groups' own columns packed once per call in `<tensor>_panels32` (the tensor's size), and the rows the
groups broadcast (g[v + c, k] in G @ W: four integer ops each, which spilled the register tile) widened
once per call, each where the matrix has it, in `<tensor>_rows32` (bf16 G @ W at 1000^3 on znver3:
132 -> 65 ms, float32's 69). Same values, same order: bitwise the kernel that widens at every load.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import DYNAMIC_INDEX, BFloat16Type, Float16Type, MemRefType, ModuleOp, f32, f64
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect import tg
from tilegrad.dialect.tg import LoopRole
from tilegrad.dialect.values import BlockBuilder
from tilegrad.errors import ScheduleError
from tilegrad.passes.applying import chosen
from tilegrad.passes.common import (
    add_function_arg,
    arg_info,
    check_counts,
    constant_index,
    depends_on,
    functions,
    is_part,
    loop_axis,
    loop_role,
    make_for,
    stage_number,
    tensor_name,
    tensors_by_stage,
    written_memrefs,
)
from tilegrad.passes.loop_affine import linear_form
from tilegrad.passes.loop_utils import in_cold_version, sweeps_shared_data
from tilegrad.schedule import Directive, Memory, Stage

PANEL_BYTES = 1 << 18
"""A panel at most (half of a 512 KiB L2; the cpu backend gives the host's: HostModel.panel_bytes)."""
COLUMNS = 16
"""chunk-row-sweeps' chunk (its `columns`): the cpu backend gives both passes the host's."""
GROUPS = 1
"""Row groups whose own columns are packed at once at most (Stage `groups`; the cpu backend gives
the host's HostModel.panel_groups)."""
ALIAS_BYTES = 4096
"""Rows a multiple of this long fall in the same cache sets (HostModel.alias_bytes)."""
ONCE = 0
"""1: a row group's own panel that every column strip reads again is packed once per call into a
workspace (Stage `hoist`; the cpu backend gives the host's HostModel.panel_once); 0: once per strip."""


def _column_var(index: SSAValue) -> bool:
    """The variable of a row loop (the columns an interchanged sum accumulates)."""
    return isinstance(index, BlockArgument) and isinstance(index.owner.parent_op(), scf.ForOp) \
        and loop_role(index.owner.parent_op()) == LoopRole.ROW


def _inputs(fn: func.FuncOp) -> set[SSAValue]:
    """The arrays of two or more axes the function reads and never writes (its inputs, temporaries
    an earlier stage made): matrices, or matrices at fixed leading indices (a batch's)."""
    return {a for a in fn.body.block.args if isinstance(a.type, MemRefType) and a.type.get_num_dims() >= 2} \
        - written_memrefs(fn)


Matrix = tuple[SSAValue, tuple[SSAValue, ...]]
"""An input and its leading indices (none for a matrix): the matrix its last two axes make there."""


def _fixed_outside(indices, rows: scf.ForOp) -> bool:
    """Leading indices the row groups do not change: values made before their loop."""
    return all(not isinstance(v.owner, Operation) or not rows.is_ancestor(v.owner) for v in indices) \
        and not any(isinstance(v.owner, Block) and rows.is_ancestor(v.owner.parent_op()) for v in indices)


def _reused_loads(rows: scf.ForOp, tile: scf.ForOp, inputs: set[SSAValue]) -> dict[Matrix, list[memref.LoadOp]]:
    """Per input matrix (at leading indices fixed outside the row groups), its loads in `tile` at
    [..., r, h]: h a row loop's column, no index depending on the row group (every group reads
    the same elements again)."""
    group = rows.body.block.args[0]
    reused: dict[Matrix, list[memref.LoadOp]] = {}
    for load in (o for o in tile.walk() if isinstance(o, memref.LoadOp)):
        if load.memref not in inputs or not _column_var(load.indices[-1]):
            continue
        lead = tuple(load.indices[:-2])
        if not any(depends_on(index, group) for index in load.indices) and _fixed_outside(lead, rows):
            reused.setdefault((load.memref, lead), []).append(load)
    return reused


def _group_loads(rows: scf.ForOp, inputs: set[SSAValue]) -> dict[Matrix, list[tuple[memref.LoadOp, int]]]:
    """Per input matrix (at leading indices fixed outside the row groups), its loads at
    [..., r, i + c] in the sweeps: i the row group's first row, c one of the group's rows, r not
    chosen by the group (g[k, v + c] in G.T @ X: a column per row)."""
    group, size = rows.body.block.args[0], constant_index(rows.step)
    found: dict[Matrix, list[tuple[memref.LoadOp, int]]] = {}
    for load in (o for o in rows.walk() if isinstance(o, memref.LoadOp) and o.memref in inputs):
        index = load.indices[-1]
        if _clamp(load, rows) is not None:  # min(i + c, last): a copy past the end repeats the last row
            index = index.owner.lhs
        form = linear_form(index, rows)  # i + c: the group's c-th row
        lead = tuple(load.indices[:-2])
        if form is not None and form[0] == {(group, 1)} and 0 <= form[1] < size \
                and not depends_on(load.indices[-2], group) and _fixed_outside(lead, rows):
            found.setdefault((load.memref, lead), []).append((load, form[1]))
    return found


def _row_loads(rows: scf.ForOp, inputs: set[SSAValue]) -> dict[Matrix, list[tuple[memref.LoadOp, int]]]:
    """Per half input matrix (at leading indices fixed outside the row groups), its loads at
    [..., i + c, r] in the sweeps, each value only widened to float32: i the row group's first row,
    c one of the group's rows, r not chosen by the group (g[v + c, k] in G @ W: the value each
    group row broadcasts), or at min(i + c, last) (jam-row-sweeps' clamped last group: the rows are
    read where they are, so the clamp reads the widened row it would have)."""
    group, size = rows.body.block.args[0], constant_index(rows.step)
    found: dict[Matrix, list[tuple[memref.LoadOp, int]]] = {}
    for load in (o for o in rows.walk() if isinstance(o, memref.LoadOp) and o.memref in inputs):
        row = load.indices[-2]
        if isinstance(row.owner, arith.MinSIOp) and _fixed_outside([row.owner.rhs], rows):
            row = row.owner.lhs
        form = linear_form(row, rows)
        lead = tuple(load.indices[:-2])
        if form is not None and form[0] == {(group, 1)} and 0 <= form[1] < size and _widens([load]) \
                and not depends_on(load.indices[-1], group) and _fixed_outside(lead, rows):
            found.setdefault((load.memref, lead), []).append((load, form[1]))
    return found


def _clamp(load: memref.LoadOp, rows: scf.ForOp) -> SSAValue | None:
    """`last` where the load reads the group's row as min(i + c, last), `last` fixed outside the
    groups (jam-row-sweeps' tail clamp: the copies past the end of the last group repeat the last
    row), else None."""
    owner = load.indices[-1].owner
    if isinstance(owner, arith.MinSIOp) and not depends_on(owner.rhs, rows.body.block.args[0]) \
            and _fixed_outside([owner.rhs], rows):
        return owner.rhs
    return None


def _group_clamp(rows: scf.ForOp, loads: list[tuple[memref.LoadOp, int]]) -> SSAValue | None:
    """The `last` row of a group's clamped reads (_clamp), if any of them is: the last group's
    panel then holds only its rows up to it."""
    return next((last for load, _ in loads if (last := _clamp(load, rows)) is not None), None)


def _group_width(b: BlockBuilder, group: SSAValue, width: SSAValue, last: SSAValue | None) -> SSAValue:
    """A group's columns in its panel: `width`, or up to the clamped `last` (min(width, last + 1 - i))."""
    if last is None:
        return width
    return b.add(arith.MinSIOp(width, b.add(arith.SubiOp(b.add(arith.AddiOp(last, b.index(1))), group))))


def _group_column(b: BlockBuilder, load: memref.LoadOp, rows: scf.ForOp, start: SSAValue, c: int) -> SSAValue:
    """The panel column (from `start`) of the load's row c of the group: c + i - start, or for a
    clamped read min(i + c, last) - start (the last row the panel holds)."""
    if _clamp(load, rows) is not None:
        return b.add(arith.SubiOp(load.indices[-1], start))
    group = rows.body.block.args[0]
    if start is group:
        return b.index(c)
    return b.add(arith.AddiOp(b.add(arith.SubiOp(group, start)), b.index(c)))


def _row_groups(rows: Operation) -> bool:
    """A loop over groups of rows (jam-row-sweeps') whose sweeps share data: the stage's own, or one
    inside loops over what the groups do not share (a batch)."""
    return isinstance(rows, scf.ForOp) and loop_role(rows) == LoopRole.PARALLEL and not rows.iter_args \
        and (constant_index(rows.step) or 1) >= 2 and not in_cold_version(rows) and sweeps_shared_data(rows)


def _column_tile(rows: scf.ForOp) -> scf.ForOp | None:
    """The row groups' one loop over tiles of columns, if it can move outside them."""
    inner = [o for o in rows.body.block.ops if isinstance(o, scf.ForOp)]
    if len(inner) != 1 or loop_role(inner[0]) != LoopRole.TILE:
        return None
    tile = inner[0]
    if any(rows.is_ancestor(v.owner) for v in (tile.lb, tile.ub) if isinstance(v.owner, Operation)):
        return None
    inside = [u.operation for u in tile.step.uses if tile.is_ancestor(u.operation) and u.operation is not tile]
    if not all(isinstance(o, arith.AddiOp) and tile.body.block.args[0] in o.operands for o in inside):
        return None  # the tile's step means more inside it than where its tile ends
    return tile


def _widens(loads: list[memref.LoadOp]) -> bool:
    """Whether a panel read by these loads can hold their half (bfloat16, float16) elements widened
    to float32: every value they load is only widened to float32 (a half type's terms, SPEC's
    float32 arithmetic)."""
    return bool(loads) and all(
        isinstance(load.memref.type.element_type, (BFloat16Type, Float16Type))
        and all(isinstance(u.operation, arith.ExtFOp) and u.operation.result.type == f32 for u in load.res.uses)
        for load in loads)


def _copied(b: BlockBuilder, value: SSAValue, panel: SSAValue) -> SSAValue:
    """A source element as the panel holds it: widened where the panel is float32 and it is not."""
    if panel.type.element_type != value.type:
        return b.add(arith.ExtFOp(value, panel.type.element_type))
    return value


def _panel(b: BlockBuilder, matrix: Matrix, start: SSAValue, width: SSAValue, buffer: SSAValue,
           axis: int, offset: SSAValue | None = None) -> SSAValue:
    """tg.panel of matrix[..., :, start:start + width] in `buffer` (a workspace: at `offset`), and the
    copy into it where it packs (each element widened where the buffer is float32 and the matrix half)."""
    source, lead = matrix
    panel_op = b.add(tg.PanelOp(source, start, width, buffer, lead, offset)).owner
    panel_op.panel.name_hint = "panel"
    zero, one = b.index(0), b.index(1)
    row_axis = b.index(len(lead)) if lead else zero
    _copy_in(b, panel_op, (zero, b.add(memref.DimOp(source, row_axis)), 0), (start, width, axis), zero, one)
    return panel_op.panel


def _copy_in(b: BlockBuilder, made: tg.PanelOp, rows: tuple[SSAValue, SSAValue, int],
             columns: tuple[SSAValue | None, SSAValue, int], zero: SSAValue, one: SSAValue) -> None:
    """Where the panel packs: panel[r, c] = source[..., r, start + c] (widened where the panel is
    float32) for r in rows (lb, ub, the loop's axis), c < the columns' width (start None: 0)."""
    source, lead = made.source, list(made.at)
    over_rows, row_body = make_for(rows[0], rows[1], one, LoopRole.COPY, rows[2])
    over_columns, column_body = make_for(zero, columns[1], one, LoopRole.COPY, columns[2])
    cb = BlockBuilder(column_body)
    r, c = row_body.args[0], column_body.args[0]
    column = c if columns[0] is None else cb.add(arith.AddiOp(columns[0], c))
    value = cb.add(memref.LoadOp.get(source, [*lead, r, column]))
    cb.add(memref.StoreOp.get(_copied(cb, value, made.panel), made.panel, [r, c]))
    column_body.add_op(scf.YieldOp())
    row_body.add_ops([over_columns, scf.YieldOp()])
    then = Region([Block()])
    then.block.add_ops([over_rows, scf.YieldOp()])
    b.add(scf.IfOp(made.packed, [], then))


def _buffer(entry: Block, element, budget: int) -> SSAValue:
    buffer = memref.AllocaOp.get(element, shape=[max(budget // (element.bitwidth // 8), 1)])
    entry.insert_op_before(buffer, entry.first_op)
    return buffer.memref


def _read_from(panel: SSAValue, load: memref.LoadOp, column: SSAValue) -> None:
    """The load reads panel[its row, column] instead (column: made before the load); from a widened
    panel, its value is the float32 its widenings made (they go)."""
    moved = memref.LoadOp.get(panel, [load.indices[-2], column])
    load.parent_block().insert_op_before(moved, load)
    if panel.type.element_type != load.res.type:
        for widen in [u.operation for u in load.res.uses]:
            widen.result.replace_all_uses_with(moved.res)
            widen.detach()
            widen.erase()
    load.results[0].replace_all_uses_with(moved.results[0])
    load.detach()
    load.erase()


def _per_row(b: BlockBuilder, matrix: Matrix, elements: int) -> tuple[SSAValue, SSAValue, SSAValue]:
    """0, 1, and a panel's `elements` per row of the matrix (how many of its columns fit)."""
    source, lead = matrix
    zero, one = b.index(0), b.index(1)
    extent = b.add(memref.DimOp(source, b.index(len(lead)) if lead else zero))
    return zero, one, b.add(arith.DivUIOp(b.index(elements), b.add(arith.MaxSIOp(extent, one))))


def _strips_around(rows: scf.ForOp, lb: SSAValue, ub: SSAValue, step: SSAValue, axis: int, matrix: Matrix,
                   buffer: SSAValue, panel_axis: int, offset: SSAValue | None = None) -> tuple[SSAValue, SSAValue,
                                                                                              SSAValue]:
    """A loop over [lb, ub) by `step` around the row groups, each iteration first packing its
    columns [start, end) of the matrix: (start, end, the panel)."""
    strip, body = make_for(lb, ub, step, LoopRole.TILE, axis)
    rows.parent_block().insert_op_before(strip, rows)
    sb = BlockBuilder(body)
    start = body.args[0]
    end = sb.add(arith.MinSIOp(sb.add(arith.AddiOp(start, step)), ub))
    panel = _panel(sb, matrix, start, sb.add(arith.SubiOp(end, start)), buffer, panel_axis, offset)
    rows.detach()
    body.add_ops([rows, scf.YieldOp()])
    return start, end, panel


def _chunk_width(tile: scf.ForOp, columns: int) -> int:
    """Columns a strip of `tile` is a whole number of: the chunks chunk-row-sweeps made in it (tile
    loops by a constant step over a row loop's columns: the least common multiple of their steps,
    which a directive may have set apart from the pass's `columns`), else `columns`. A strip of
    whole chunks leaves no columns to the sweep of the columns left over but the matrix's last few
    (1000^3 g @ w by chunks of 24 in strips of 64: 16 of every 64 columns accumulated in memory,
    2.4x slower)."""
    steps = {constant_index(o.step) for o in tile.body.walk()
             if isinstance(o, scf.ForOp) and loop_role(o) == LoopRole.TILE
             and any(isinstance(r, scf.ForOp) and loop_role(r) == LoopRole.ROW and loop_axis(r) == loop_axis(o)
                     for r in o.body.walk())}
    steps.discard(None)
    return math.lcm(*steps) if steps else columns


def _strip_workspace(b: BlockBuilder, fn: func.FuncOp, matrix: Matrix, elements: int, chunk: int,
                     blocks: int) -> tuple[SSAValue, SSAValue]:
    """The float32 workspace of a half matrix's strips (`<tensor>_panel32`) and where this block's
    part starts: a part per block (the cores pack their strips at once), each `elements` or one
    chunk of the matrix's rows, whichever is more."""
    source, lead = matrix
    rows = ["dim", tensor_name(fn, source), len(lead)]
    part = ["max", elements, ["mul", rows, chunk]]
    workspace = _workspace(fn, source, "panel32", f32, ["mul", blocks, part])
    ids = [a for i, a in enumerate(fn.body.block.args) if arg_info(fn, i).get("tg.role") == "block_id"]
    if not ids:
        return workspace, b.index(0)
    extent = b.add(memref.DimOp(source, b.index(len(lead))))
    size = b.add(arith.MaxSIOp(b.index(elements), b.add(arith.MuliOp(extent, b.index(chunk)))))
    return workspace, b.add(arith.MuliOp(ids[0], size))


def _pack_strips(rows: scf.ForOp, tile: scf.ForOp, matrix: Matrix, loads: list[memref.LoadOp], fn: func.FuncOp,
                 budget: int, columns: int, widen: bool, blocks: int) -> None:
    """The column tile loop moves outside the row groups, a strip of whole chunks that fits the
    panel wide; each strip is copied into the panel before the groups read it. `widen`: the panel
    holds the half matrix in float32, in this block's part of a workspace (_strip_workspace: a
    strip as wide as `budget` allows, else one chunk wide; always packed)."""
    b = BlockBuilder(rows.parent_block(), rows)
    width = _chunk_width(tile, columns)
    if widen:
        buffer, offset = _strip_workspace(b, fn, matrix, budget // 4, width, blocks)
        elements = max(budget // 4, 1)
    else:
        buffer, offset = _buffer(fn.body.block, matrix[0].type.element_type, budget), None
        elements = buffer.type.get_shape()[0]
    zero, one, per_row = _per_row(b, matrix, elements)
    chunk = b.index(width)
    fit = b.add(arith.MuliOp(b.add(arith.DivUIOp(per_row, chunk)), chunk))
    span = chunk if widen else b.add(arith.MaxSIOp(b.add(arith.SubiOp(tile.ub, tile.lb)), one))
    step = b.add(arith.SelectOp(b.add(arith.CmpiOp(fit, zero, "sgt")), fit, span))
    step.name_hint = "panel_columns"
    start, _, panel = _strips_around(rows, tile.lb, tile.ub, step, loop_axis(tile), matrix, buffer, loop_axis(tile),
                                     offset)
    # the tile loop's body runs in the row loop, on the strip: the strip loop is the tile loop now
    tile.step.replace_uses_with_if(step, lambda use: tile.is_ancestor(use.operation) and use.operation is not tile)
    tile.body.block.args[0].replace_all_uses_with(start)
    for op in [o for o in tile.body.block.ops if not isinstance(o, scf.YieldOp)]:
        op.detach()
        rows.body.block.insert_op_before(op, tile)
    tile.detach()
    tile.erase()
    for load in loads:
        _read_from(panel, load, BlockBuilder(load.parent_block(), load).add(arith.SubiOp(load.indices[-1], start)))


def _pack_group_columns(rows: scf.ForOp, matrix: Matrix, loads: list[tuple[memref.LoadOp, int]], entry: Block,
                        budget: int) -> None:
    """Each row group first copies the group's columns of the matrix (one per row) into a panel,
    which every chunk of the group then reads in order."""
    buffer = _buffer(entry, matrix[0].type.element_type, budget)
    b = BlockBuilder(rows.body.block, rows.body.block.first_op)
    group = rows.body.block.args[0]
    panel = _panel(b, matrix, group, _group_width(b, group, rows.step, _group_clamp(rows, loads)), buffer, 1)
    for load, c in loads:
        _read_from(panel, load, _group_column(BlockBuilder(load.parent_block(), load), load, rows, group, c))


def _workspace(fn: func.FuncOp, source: SSAValue, kind: str = "panels", element=None, size=None) -> SSAValue:
    """The workspace of `source`'s panels (`<tensor>_<kind>`: as many elements as the tensor, or the
    size form `size`, of `element` (the tensor's type where None), allocated by the call), an
    argument of every stage of the module (the stages take the same arguments); the one already
    there when another stage packs the same tensor (stages run one after another)."""
    name = f"{tensor_name(fn, source)}_{kind}"
    found = [a for i, a in enumerate(fn.body.block.args) if arg_info(fn, i).get("tg.name") == name]
    if found:
        return found[0]
    if size is None:
        size = ["dim", tensor_name(fn, source), 0]
        for axis in range(1, source.type.get_num_dims()):
            size = ["mul", size, ["dim", tensor_name(fn, source), axis]]
    type_ = MemRefType(element or source.type.element_type, [DYNAMIC_INDEX])
    module = fn.parent_op()
    mine = None
    for stage in [f for f in functions(module) if not is_part(f)] if module is not None else [fn]:
        added = add_function_arg(stage, type_, name, "workspace", shape=json.dumps([size]))
        mine = added if stage is fn else mine
    return mine


def _hoistable(fn: func.FuncOp, matrix: Matrix, widen: bool = False) -> bool:
    """A group panel can be packed once per call where its matrix is an input the call is given
    (the workspace's size is the input's) of float32 or float64, or a half type widened (`widen`)."""
    source = matrix[0]
    return source in fn.body.block.args and arg_info(fn, fn.body.block.args.index(source)).get("tg.role") == "input" \
        and (source.type.element_type in (f32, f64) or widen)


def _block_span(b: BlockBuilder, rows: scf.ForOp, matrix: Matrix, elements: int, groups: int,
                alias_bytes: int) -> SSAValue:
    """Columns of a block of row groups: up to `groups` groups where the matrix's rows are a
    multiple of `alias_bytes` long, one elsewhere; as many as `elements` hold of the matrix's rows."""
    source, lead = matrix
    element = source.type.element_type
    zero, one, per_row = _per_row(b, matrix, elements)
    fit = b.add(arith.DivUIOp(per_row, rows.step))  # groups whose columns fit
    row_bytes = b.add(arith.MuliOp(b.add(memref.DimOp(source, b.index(len(lead) + 1))), b.index(element.bitwidth // 8)))
    aliases = b.add(arith.CmpiOp(b.add(arith.RemUIOp(row_bytes, b.index(alias_bytes))), zero, "eq"))
    most = b.add(arith.SelectOp(aliases, b.index(groups), one))
    span = b.add(arith.MuliOp(b.add(arith.MaxSIOp(b.add(arith.MinSIOp(fit, most)), one)), rows.step))
    span.name_hint = "panel_columns"
    return span


def _pack_group_blocks(rows: scf.ForOp, matrix: Matrix, loads: list[tuple[memref.LoadOp, int]], entry: Block,
                       budget: int, groups: int, alias_bytes: int) -> None:
    """Where the matrix's rows are a multiple of `alias_bytes` long (each row's run falls in the same
    cache sets: a group's short reads evict one another), the row groups run in blocks of up to
    `groups` consecutive groups (as many as fit the panel: the matrix's rows x the block's columns);
    each block first copies its columns, every source row one run of them, into a panel the block's
    groups then read (group i at column i - start). Elsewhere a block is one group (its panel
    contiguous, as _pack_group_columns')."""
    element = matrix[0].type.element_type
    buffer = _buffer(entry, element, budget)
    b = BlockBuilder(rows.parent_block(), rows)
    span = _block_span(b, rows, matrix, buffer.type.get_shape()[0], groups, alias_bytes)
    start, end, panel = _strips_around(rows, rows.lb, rows.ub, span, loop_axis(rows), matrix, buffer, 1)
    rows.operands = [start, end, rows.step]
    for load, c in loads:
        _read_from(panel, load, _group_column(BlockBuilder(load.parent_block(), load), load, rows, start, c))


def _place(b: BlockBuilder, matrix: Matrix) -> tuple[list[SSAValue], SSAValue]:
    """The matrix's axes' extents and the element of its tensor where it starts (the tensor's
    elements before its leading indices): a matrix's place in a workspace of the tensor's size."""
    source, lead = matrix
    axes = [b.add(memref.DimOp(source, b.index(a))) for a in range(len(lead) + 2)]
    base = b.index(0)
    for index, extent in zip(lead, axes):
        base = b.add(arith.AddiOp(b.add(arith.MuliOp(base, extent)), index))
    return axes, b.add(arith.MuliOp(base, b.add(arith.MuliOp(axes[-2], axes[-1])))) if lead else base


def _outside(rows: scf.ForOp, values: list[SSAValue]) -> Operation:
    """The outermost loop around `rows` (or rows itself) none of `values` is made in."""
    place: Operation = rows
    while isinstance(place.parent_op(), scf.ForOp) and not any(
            place.parent_op().is_ancestor(v.owner if isinstance(v.owner, Operation) else v.owner.parent_op())
            for v in values):
        place = place.parent_op()
    return place


def _pack_group_rows(rows: scf.ForOp, matrix: Matrix, loads: list[tuple[memref.LoadOp, int]],
                     fn: func.FuncOp) -> None:
    """The rows the row groups read of a half matrix, one value per group row broadcast over a chunk
    (g[v + c, k] in G @ W), widened to float32 once per call into a workspace of the matrix's size
    (`<tensor>_rows32`, each row where the matrix has it), before the outermost loop around the
    groups that does not choose which rows; the groups read the float32 rows there."""
    source, lead = matrix
    size, last = constant_index(rows.step), max(c for _, c in loads)
    place = _outside(rows, [rows.lb, rows.ub, *lead])
    b = BlockBuilder(place.parent_block(), place)
    axes, base = _place(b, matrix)
    made = b.add(tg.PanelOp(source, b.index(0), axes[-1], _workspace(fn, source, "rows32", f32), lead, base)).owner
    made.panel.name_hint = "rows"
    # rows lb .. (the last group's first row) + last: exactly the groups' (none where there are none)
    groups = b.add(arith.DivSIOp(b.add(arith.AddiOp(b.add(arith.SubiOp(rows.ub, rows.lb)), b.index(size - 1))),
                                 b.index(size)))
    end = b.add(arith.AddiOp(rows.lb, b.add(arith.AddiOp(b.add(arith.MuliOp(groups, b.index(size))),
                                                            b.index(last + 1 - size)))))
    end = b.add(arith.MinSIOp(b.add(arith.MaxSIOp(end, rows.lb)), axes[-2]))
    _copy_in(b, made, (rows.lb, end, loop_axis(rows)), (None, axes[-1], 1), b.index(0), b.index(1))
    for load, _ in loads:
        _read_from(made.panel, load, load.indices[-1])


@dataclass
class _Once:
    """The group panels of a matrix in a workspace: group i's columns (a panel of the matrix's
    rows x the group's width, rows `width` apart) from element base + i x rows (base: the matrix's
    own place, at `at` indices b the tensor's elements before b), so every group's panel is
    contiguous, and consecutive groups' consecutive."""

    matrix: Matrix
    workspace: SSAValue
    base: SSAValue
    rows: SSAValue
    width: SSAValue
    last: SSAValue | None = None
    """The last row of clamped groups (_clamp): the last group's panel holds its rows up to it."""

    def panel(self, b: BlockBuilder, group: SSAValue, width: SSAValue | None = None) -> tg.PanelOp:
        source, lead = self.matrix
        offset = b.add(arith.AddiOp(self.base, b.add(arith.MuliOp(group, self.rows))))
        width = width or _group_width(b, group, self.width, self.last)
        made = b.add(tg.PanelOp(source, group, width, self.workspace, lead, offset)).owner
        made.panel.name_hint = "panel"
        return made

    def copy(self, b: BlockBuilder, lo: SSAValue, hi: SSAValue, axis: int) -> None:
        """The panels of the groups from column lo to hi, source row by source row (each row's
        columns one run: the blocks of _pack_group_blocks)."""
        source, lead = self.matrix
        zero, one = b.index(0), b.index(1)
        over_rows, row_body = make_for(zero, self.rows, one, LoopRole.COPY, 0)
        over_groups, group_body = make_for(lo, hi, self.width, LoopRole.COPY, axis)
        gb = BlockBuilder(group_body)
        group, r = group_body.args[0], row_body.args[0]
        width = _group_width(gb, group, self.width, self.last)
        made = self.panel(gb, group, width)
        over_columns, column_body = make_for(zero, width, one, LoopRole.COPY, 1)
        cb = BlockBuilder(column_body)
        c = column_body.args[0]
        value = cb.add(memref.LoadOp.get(source, [*lead, r, cb.add(arith.AddiOp(group, c))]))
        cb.add(memref.StoreOp.get(_copied(cb, value, made.panel), made.panel, [r, c]))
        column_body.add_op(scf.YieldOp())
        then = Region([Block()])
        then.block.add_ops([over_columns, scf.YieldOp()])
        gb.add(scf.IfOp(made.packed, [], then))
        group_body.add_op(scf.YieldOp())
        row_body.add_ops([over_groups, scf.YieldOp()])
        b.add(over_rows)


def _pack_group_columns_once(rows: scf.ForOp, strips: scf.ForOp, matrix: Matrix,
                             loads: list[tuple[memref.LoadOp, int]], fn: func.FuncOp, budget: int, groups: int,
                             alias_bytes: int, widen: bool) -> None:
    """Each row group's own columns in a panel of their own in a workspace (_Once), packed once
    before the loop over column strips where it runs two strips or more (`packed_once`), else in
    the strip; packed as _pack_group_blocks packs its blocks (one run of each source row per block
    of up to `groups` groups), read back as _pack_group_columns' panels are: every strip reads the
    same panels, each in order. `widen`: the workspace holds the half matrix in float32
    (`<tensor>_panels32`)."""
    source, lead = matrix
    b = BlockBuilder(strips.parent_block(), strips)
    elements = max(budget // ((32 if widen else source.type.element_type.bitwidth) // 8), 1)
    span = _block_span(b, rows, matrix, elements, groups, alias_bytes)
    axes = [b.add(memref.DimOp(source, b.index(a))) for a in range(len(lead) + 2)]
    base = b.index(0)
    for index, extent in zip(lead, axes):
        base = b.add(arith.AddiOp(b.add(arith.MuliOp(base, extent)), index))
    base = b.add(arith.MuliOp(base, b.add(arith.MuliOp(axes[-2], axes[-1]))))
    workspace = _workspace(fn, source, "panels32", f32) if widen else _workspace(fn, source)
    once = _Once(matrix, workspace, base, axes[-2], rows.step, _group_clamp(rows, loads))
    packed_once = b.add(arith.CmpiOp(b.add(arith.AddiOp(strips.lb, strips.step)), strips.ub, "slt"))
    packed_once.name_hint = "packed_once"  # two strips or more
    axis = loop_axis(rows)
    for blocks_at, when in ((b, packed_once), (None, None)):
        blocks, body = make_for(rows.lb, rows.ub, span, LoopRole.COPY if when is not None else LoopRole.TILE, axis)
        bb = BlockBuilder(body)
        start = body.args[0]
        end = bb.add(arith.MinSIOp(bb.add(arith.AddiOp(start, span)), rows.ub))
        if when is not None:  # before the strips: every block, where there are two strips or more
            once.copy(bb, start, end, axis)
            body.add_op(scf.YieldOp())
            then = Region([Block()])
            then.block.add_ops([blocks, scf.YieldOp()])
            blocks_at.add(scf.IfOp(when, [], then))
            continue
        then = Region([Block()])  # in the strip, where there is one
        once.copy(BlockBuilder(then.block), start, end, axis)
        then.block.add_op(scf.YieldOp())
        true = bb.add(arith.ConstantOp.from_int_and_width(1, 1))
        bb.add(scf.IfOp(bb.add(arith.XOrIOp(packed_once, true)), [], then))
        rows.parent_block().insert_op_before(blocks, rows)
        rows.detach()
        body.add_ops([rows, scf.YieldOp()])
        rows.operands = [start, end, rows.step]
    rb = BlockBuilder(rows.body.block, rows.body.block.first_op)
    group = rows.body.block.args[0]
    panel = once.panel(rb, group).panel
    for load, c in loads:
        _read_from(panel, load, _group_column(BlockBuilder(load.parent_block(), load), load, rows, group, c))


@dataclass(frozen=True)
class PackReusedPanels(ModulePass):
    """Copy the columns every row group sweeps into a stack panel of at most `panel_bytes`, strip
    by strip of whole `columns`-wide chunks, read by all the groups; and each group's own columns
    into a panel of at most panel_bytes / 8, read by all its chunks (with `once`, where every column
    strip reads them again: packed once per call into a workspace, each group's panel contiguous). With `directives`
    (Stage(memory=panel), printed, `;`-separated: passes/applying.py), the inputs they name, by stage."""

    name = "pack-reused-panels"
    panel_bytes: int = PANEL_BYTES
    columns: int = COLUMNS
    groups: int = GROUPS
    alias_bytes: int = ALIAS_BYTES
    once: int = ONCE
    blocks: int = 1
    """The blocks that run at once (the cores): each packs a half matrix's widened strips into a part
    of their workspace of its own."""
    directives: str | None = None
    takes_text: ClassVar[str] = "Stage(memory='panel')"

    def __post_init__(self):
        check_counts(self, "panel_bytes", "columns", "groups", "alias_bytes", "blocks")
        check_counts(self, "once", least=0)

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Stage) and directive.memory == Memory.PANEL

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        candidates = []
        for fn in functions(op):
            for panel in panel_decisions(fn):  # (decided before any is packed)
                for own, kind in panel.directives(fn, self.groups, self.once):
                    candidates.append((own, (fn, panel, kind)))
        for (fn, panel, kind), directive in chosen(self, candidates, "input every row group sweeps"):
            widen = bool(directive.dtype)
            if widen and not panel.widens(kind):
                raise ScheduleError(f"{directive}: dtype='float32' widens a bfloat16 or float16 tensor's panel whose "
                                    f"every element read is widened to float32 (here: {directive.tensor}'s are not), "
                                    f"for a row groups' own panel where it is packed once per call (hoist)")
            if kind == "rows":
                if widen:  # (dtype '': the rows read as they are, each value widened where it is read)
                    _pack_group_rows(panel.rows, *panel.broadcast, fn)
            elif kind == "strip":
                matrix, loads = panel.strip
                _pack_strips(panel.rows, panel.tile, matrix, loads, fn, self.panel_bytes, self.columns, widen,
                             self.blocks)
            elif directive.hoist is not None:
                matrix, loads = panel.group
                strips = panel.rows.parent_op()
                if not (isinstance(strips, scf.ForOp) and loop_role(strips) == LoopRole.TILE
                        and loop_axis(strips) == directive.hoist and _hoistable(fn, matrix, widen)):
                    raise ScheduleError(f"{directive}: hoist names the loop over column strips the row groups' panels "
                                        f"of {directive.tensor} are packed in, an input's of float32 or float64, or "
                                        f"of a half type widened (dtype='float32') (here: none of axis "
                                        f"{directive.hoist}; the column strips' panel Stage(at=...) makes that loop)")
                _pack_group_columns_once(panel.rows, strips, matrix, loads, fn, self.panel_bytes,
                                         max(directive.groups, 1), self.alias_bytes, widen)
            elif widen:
                raise ScheduleError(f"{directive}: dtype='float32' widens a row groups' own panel only where it is "
                                    f"packed once per call (hoist=...: a float32 workspace of the tensor's size; the "
                                    f"stack panels per group stay the tensor's type)")
            elif directive.groups > 1:
                matrix, loads = panel.group
                _pack_group_blocks(panel.rows, matrix, loads, fn.body.block, self.panel_bytes, directive.groups,
                                   self.alias_bytes)
            else:
                matrix, loads = panel.group
                _pack_group_columns(panel.rows, matrix, loads, fn.body.block, self.panel_bytes // 8)


@dataclass
class PanelDecision:
    """What pack-reused-panels does to one loop over row groups: the matrix every group sweeps,
    packed strip by strip at the column tile loop (`strip`), and the group's own matrix, packed
    per group (`group`); each with the loads that then read the panel."""

    rows: scf.ForOp
    tile: scf.ForOp | None
    strip: tuple[Matrix, list[memref.LoadOp]] | None
    group: tuple[Matrix, list[tuple[memref.LoadOp, int]]] | None
    broadcast: tuple[Matrix, list[tuple[memref.LoadOp, int]]] | None = None
    """The half matrix whose rows the groups broadcast, widened once per call (`rows` kind)."""

    def widens(self, kind: str) -> bool:
        """Whether the panel of `kind` ("strip", "group") can hold its half matrix widened to float32."""
        if kind == "strip":
            return self.strip is not None and _widens(self.strip[1])
        if kind == "rows":
            return self.broadcast is not None
        return self.group is not None and _widens([load for load, _ in self.group[1]])

    def directives(self, fn: func.FuncOp, groups: int, once: int) -> list[tuple[Stage, str]]:
        """Its Stage(memory=panel) directives with the pass's options, each with its kind ("strip",
        "group"): the group panels `groups` at a time, and, with `once`, packed once per call out of
        the column strips' loop (`hoist`: its axis) where the strips' panel is packed too."""
        found = []
        stage = stage_number(fn)
        if self.strip is not None:
            found.append((Stage(stage=stage, tensor=tensor_name(fn, self.strip[0][0]), at=loop_axis(self.tile),
                                memory=Memory.PANEL, dtype="float32" if self.widens("strip") else ""), "strip"))
        if self.group is not None:
            widen = self.widens("group")
            hoist = loop_axis(self.tile) if once and self.strip is not None and _hoistable(fn, self.group[0], widen) \
                else None
            found.append((Stage(stage=stage, tensor=tensor_name(fn, self.group[0][0]), at=loop_axis(self.rows),
                                memory=Memory.PANEL, groups=groups if groups > 1 else 0, hoist=hoist,
                                dtype="float32" if widen and hoist is not None else ""), "group"))
        if self.broadcast is not None:
            found.append((Stage(stage=stage, tensor=tensor_name(fn, self.broadcast[0][0]), at=loop_axis(self.rows),
                                memory=Memory.PANEL, dtype="float32"), "rows"))
        return found


def panel_decisions(fn: func.FuncOp) -> list[PanelDecision]:
    """The panels pack-reused-panels makes in a function, decided before anything is rewritten (the
    cpu backend lists them in the plan as Stage(memory=panel) directives)."""
    inputs = _inputs(fn)
    decisions = []
    for rows in [o for o in fn.walk() if _row_groups(o)]:
        tile = _column_tile(rows)
        reused = _reused_loads(rows, tile, inputs) if tile is not None else {}
        strip = group = None
        if reused:
            matrix = max(reused, key=lambda m: len(reused[m]))  # one panel: the most read
            strip = matrix, reused[matrix]
        own = _group_loads(rows, inputs)
        if own:
            matrix = max(own, key=lambda m: len(own[m]))
            group = matrix, own[matrix]
        broadcast = None  # (in a GEMM: each group row's values broadcast over every chunk of the strips)
        taken = {found[0][0] for found in (strip, group) if found is not None}
        by_rows = {m: found for m, found in _row_loads(rows, inputs).items() if m[0] not in taken} if strip else {}
        if by_rows:
            matrix = max(by_rows, key=lambda m: len(by_rows[m]))
            broadcast = matrix, by_rows[matrix]
        if strip or group or broadcast:
            decisions.append(PanelDecision(rows, tile, strip, group, broadcast))
    return decisions


def packed_panels(module: Operation) -> dict[str, list[int]]:
    """Input name -> the stages that read it through packed panels (what `tilegrad plan` shows)."""
    return tensors_by_stage(module, lambda op: op.source if isinstance(op, tg.PanelOp) else None)
