"""pack-windowed-operands: a contraction whose one operand is read through a window (a conv's input)
packs that operand, masked, into a stack panel once per block of output positions; the sum becomes
one flat GEMM sum over the panel (im2col by blocks).

A stage computes, per output position b of a tile (and outer positions n, a, k),

    y[n, k, a, b] = sum over c, i, j of where(mask, x[n, c, clamp(f(a, i)), clamp(g(b, j))] * w[k, c, i, j], 0)

the windowed read x (indices affine in an output variable and a sum variable, of either sign,
clamped, under a `where` whose else is 0) not depending on the loop k that the other read w depends
on, and w's indices the sum variables and k's, each once. With k's first and the sums' in order,
w[k, q] (q = (c, i, j) flattened) is a view of w; in any other order (a conv's grad_input, dx[n, c,
h, w] = sum over k, i, j of dy[n, k, h + p - i, w + p - j] weight[k, c, i, j]: the output's channel
between the sums) w is copied once per call, before the stage, to a second stack panel of
`panel_bytes` as w_panel[k Q + q] (the packed version's test: it fits too). A weight index may be a
constant times a sum variable plus values made outside the sums (split-window-phases' taps s t + r
of one residue class, r made in its phase loop): w is then copied before the outermost loop those
values are made outside of (once per phase), still outside the loop over k.
The loop over k moves inside the tile of positions, so one pack serves every k:

    for n, a:                               for n, a:
      for k:                                  for t step W:                 (W: the panel's columns)
        for t step T:                 ->        if Q <= rows:               (Q: the sums' extents' product)
          for b in [t, t + T):                    for c, i, j:  (q = (c R + i) S + j: no divisions)
            y = sum c, i, j (...)                   for p in [0, width): panel[q, p] = where(mask(b = t + p), x[...], 0)
                                                  for k: for p: y[.., t + p] = sum over q of panel[q, p] * w_flat[k, q]
                                                else: (as it was, per tile of W)

The panel is a static stack buffer of `panel_bytes` (rows = panel_bytes / W elements). Where Q rows
do not fit (a conv of many channels: K = 512 3x3, Q = 4608), the sum runs in blocks of whole rows
of its first variable (Qb = kb R S: kb as many as the panel's rows hold, and, for a weight packed
per block, as the weight panel's C x Qb hold too), each block packed and its GEMM added into the
output (the first block stores): where the stage stores the sum itself, once; otherwise all Q rows
must fit, one block. The weight panel is copied once per call where C x Q fit, else each block
copies its own rows, the blocks then a loop around the stage's loops inside its outermost (once per
block and core's share). The blocks depend on the shapes only, never on the core count. The stage
as it was runs only where a block cannot fit (R S rows more than the panel's, or C R S weights more
than its panel): that version is cold (`tg.cold`: later passes leave it as it is). The packed
version walks its tile in blocks of W
positions (one block, unless a later pass resizes the tile: reorder-for-reuse widens it), and its
flat sum is a reduction of its own (axis: one past the stage's), so a directive names it apart from
the nest the other version keeps. Every sum adds the same terms (in another order,
one flat sum): results equal up to rounding. Then interchange-column-reductions, jam-row-sweeps and
chunk-row-sweeps make the flat sum a register-tiled GEMM over the panel. With `directives`
(Stage(tensor=x, at=<the tile's axis>, memory=panel)), the stages they name; without, every one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    FloatAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    i1,
    i64,
)
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import LoopRole
from tilegrad.dialect.values import BlockBuilder
from tilegrad.passes.applying import chosen
from tilegrad.passes.common import (
    check_counts,
    constant_index,
    depends_on,
    functions,
    loop_axis,
    loop_role,
    make_for,
    pure_arith,
    stage_number,
    tensor_name,
    written_memrefs,
)
from tilegrad.passes.loop_affine import Linear, linear_form
from tilegrad.passes.loop_utils import made_outside, mark_cold, slice_within, sum_nest, zero_constant
from tilegrad.schedule import Directive, Memory, Stage

PANEL_BYTES = 1 << 18
"""The panel at most (the cpu backend gives the host's: HostModel.panel_bytes)."""
COLUMNS = 64
"""Output positions per panel (the cpu backend gives the host's chunk columns x jam rows)."""
LEAST_COLUMNS = 16
"""A stage whose panel would hold fewer columns than this is left as it is."""


@dataclass
class _Window:
    """A stage's windowed contraction: the loops it moves and rewrites, and its term's parts."""

    kloop: scf.ForOp  # the loop w depends on and x does not (output channels)
    tile: scf.ForOp  # the tile of output positions
    col: scf.ForOp  # the positions of a tile
    sums: list[scf.ForOp]  # the sum nest, outermost first
    x: memref.LoadOp  # the windowed read
    w: memref.LoadOp  # the read w[k, q]
    cond: SSAValue | None  # the mask (None: reads clamped, no where)
    x_first: bool  # the product's operand order
    transposed: bool = False  # w's indices not (k, then the sums in order): w is packed too

    def directive(self, fn: func.FuncOp) -> Stage:
        return Stage(stage=stage_number(fn), tensor=tensor_name(fn, self.x.memref), at=loop_axis(self.tile),
                     memory=Memory.PANEL)


def _window(fn: func.FuncOp, col: scf.ForOp) -> _Window | None:
    """The windowed contraction `col` computes, if it is one (see the module's doc)."""
    tile = col.parent_op()
    if loop_role(col) != LoopRole.PARALLEL or col.iter_args or not isinstance(tile, scf.ForOp) \
            or loop_role(tile) != LoopRole.TILE or loop_axis(tile) != loop_axis(col):
        return None
    nest = sum_nest(col)
    if nest is None:
        return None
    sums, term = nest
    cond = None
    if isinstance(term.owner, arith.SelectOp):
        if not zero_constant(term.owner.operands[2]):
            return None
        cond, term = term.owner.operands[0], term.owner.operands[1]
    if not isinstance(term.owner, arith.MulfOp):
        return None
    loads = [v.owner for v in term.owner.operands]
    if not all(isinstance(o, memref.LoadOp) for o in loads):
        return None
    column = col.body.block.args[0]
    windowed = [o for o in loads if any(depends_on(i, column) for i in o.indices)]
    if len(windowed) != 1:
        return None
    x = windowed[0]
    w = loads[1] if loads[0] is x else loads[0]
    variables = [s.body.block.args[0] for s in sums]
    if not any(depends_on(i, column) and any(depends_on(i, v) for v in variables) for i in x.indices):
        return None  # no window (an index of a position and a sum variable): a GEMM's, pack-reused-panels'
    inputs = {a for a in fn.body.block.args if isinstance(a.type, MemRefType)} - written_memrefs(fn)
    if w.memref not in inputs or x.memref not in inputs or not isinstance(w.memref.type.layout, NoneAttr):
        return None
    indices = list(w.indices)
    taps = [_tap(i, variables, sums[0]) for i in indices]
    lead = [i for i, tap in zip(indices, taps) if tap is None]
    if len(indices) != len(variables) + 1 or len(lead) != 1 or not isinstance(lead[0], BlockArgument) \
            or any(sum(tap is not None and tap[0] == n for tap in taps) != 1 for n in range(len(variables))):
        return None  # w's indices: each sum variable once (or a constant times it plus a constant) and k's
    transposed = indices != [lead[0], *variables]  # (then w is copied once to a panel w[k, q])
    kloop = lead[0].owner.parent_op()
    if not isinstance(kloop, scf.ForOp) or loop_role(kloop) != LoopRole.PARALLEL or kloop.iter_args \
            or not kloop.is_ancestor(tile) or "tg.stage" in kloop.attributes:
        return None
    k = kloop.body.block.args[0]
    if any(depends_on(v, k) for v in (*x.indices, *([cond] if cond is not None else []))):
        return None
    if any(not col.is_ancestor(use.operation) for use in k.uses):
        return None  # k chooses more than the stage's term and store
    between = tile
    while between is not kloop:  # the loops k moves across: parallel, bounds made outside k's
        between = between.parent_op()
        if between is not kloop and (not isinstance(between, scf.ForOp) or between.iter_args):
            return None
    if not all(made_outside(v, kloop) for v in (kloop.lb, kloop.ub, kloop.step)):
        return None
    window = _Window(kloop, tile, col, sums, x, w, cond, loads[0] is x, transposed)
    if transposed and not _pack_point(window).is_ancestor(kloop):
        return None  # (w is copied before the loops over k, with the sums' extents and the taps' offsets)
    return window


def _tap(index: SSAValue, variables: list[SSAValue], nest: scf.ForOp) -> tuple[int, int, Linear] | None:
    """An index of w as (which sum variable, its constant coefficient, the rest: values made outside
    the sums times constants, plus a constant): w[s t + r], the taps of one residue class
    split-window-phases leaves, r its phase's (None: not such an index)."""
    form = linear_form(index, nest)
    if form is None:
        return None
    found = [(n, c) for term, c in form[0] for n, v in enumerate(variables) if v is term]
    rest = frozenset((term, c) for term, c in form[0] if not any(term is v for v in variables))
    if len(found) != 1 or any(not made_outside(term, nest) for term, _ in rest):
        return None
    return found[0][0], found[0][1], (rest, form[1])


def _offsets(window: _Window) -> list[SSAValue]:
    """The values w's taps add (a phase's residue: made before the stage, or in its phase loop)."""
    variables = [s.body.block.args[0] for s in window.sums]
    taps = [_tap(i, variables, window.sums[0]) for i in window.w.indices]
    return [term for tap in taps if tap is not None for term, _ in tap[2][0]]


def _pack_point(window: _Window) -> Operation:
    """The outermost loop around the stage's term that the weight's copy can run before: the stage's
    own outermost loop, or (a phase's taps: split-window-phases) the loop inside its phase loops."""
    op: Operation = window.col
    needed = [*(s.ub for s in window.sums), *_offsets(window)]
    while op.parent_op() is not None and not isinstance(op.parent_op(), func.FuncOp) \
            and all(made_outside(v, op.parent_op()) for v in needed):
        op = op.parent_op()
    return op


def _flatten(fn: func.FuncOp, weight: SSAValue, lead: int) -> SSAValue:
    """weight viewed as [its leading axes..., the rest as one] (made at the function's start)."""
    shape = weight.type.get_shape()
    groups = [[a] for a in range(lead)] + [list(range(lead, len(shape)))]
    view = memref.CollapseShapeOp(
        operands=[weight], result_types=[MemRefType(weight.type.element_type, [*shape[:lead], DYNAMIC_INDEX])],
        properties={"reassociation": ArrayAttr([ArrayAttr([IntegerAttr(a, i64) for a in g]) for g in groups])})
    view.result.name_hint = f"{tensor_name(fn, weight)}_flat"
    entry = fn.body.block
    entry.insert_op_before(view, entry.first_op)
    return view.result


def _stack_view(fn: func.FuncOp, element, shape: list[int], name: str) -> SSAValue:
    """A static stack buffer of `shape` made at the function's start, seen through a view (an
    alloca read directly is a stack row, of which every jammed copy of a loop gets its own; a panel
    is one, shared)."""
    buffer = memref.AllocaOp.get(element, shape=[1, *shape])
    groups = [[0, 1], *([a] for a in range(2, len(shape) + 1))]
    view = memref.CollapseShapeOp(
        operands=[buffer.memref], result_types=[MemRefType(element, shape)],
        properties={"reassociation": ArrayAttr([ArrayAttr([IntegerAttr(a, i64) for a in g]) for g in groups])})
    view.result.name_hint = name
    fn.body.block.insert_op_before(view, fn.body.block.first_op)
    fn.body.block.insert_op_before(buffer, view)
    return view.result


def _pack_weight(window: _Window, fn: func.FuncOp, panel_bytes: int) \
        -> tuple[SSAValue, SSAValue, SSAValue, Operation]:
    """w (indexed by k and the sums in another order than w[k, c, i, j]: a conv's grad_input reads
    weight[k, c, i, j] with k a sum, c the output's) copied once, before the stage, to a stack panel
    of `panel_bytes` as w_panel[a Q + q] (a: k's index, q the sums' flat index, as the window
    panel's rows), where its rows x Q elements fit (`whole`; where they do not, each block of the
    sums copies its own rows, `_copy_weight`): the panel, whole, w's rows and the pack point."""
    w = window.w
    element = w.memref.type.element_type
    capacity = panel_bytes // (element.bitwidth // 8)
    root = _pack_point(window)
    b = BlockBuilder(root.parent_block(), root)
    rows = b.add(memref.DimOp(w.memref, b.index(_weight_axis(window))))
    extents = [s.ub for s in window.sums]
    count = extents[0]
    for extent in extents[1:]:
        count = b.add(arith.MuliOp(count, extent))
    whole = b.add(arith.CmpiOp(b.add(arith.MuliOp(rows, count)), b.index(capacity), "sle"))
    whole.name_hint = "weight_fits"
    panel = _stack_view(fn, element, [capacity], "weight_panel")
    then = Region([Block()])
    b.add(scf.IfOp(whole, [], then))
    _copy_weight(window, then.block, panel, rows, extents, b.index(0))
    then.block.add_op(scf.YieldOp())
    return panel, whole, rows, root


def _weight_axis(window: _Window) -> int:
    variables = [s.body.block.args[0] for s in window.sums]
    return next(a for a, i in enumerate(window.w.indices) if _tap(i, variables, window.sums[0]) is None)


def _copy_weight(window: _Window, block: Block, panel: SSAValue, rows: SSAValue, extents: list[SSAValue],
                 origin: SSAValue) -> None:
    """Copy loops at the end of `block`: panel[a Q' + q] = w at k's index a and the sums' (the first
    from `origin`) for q over `extents` (Q' their product: the first sum's extent a block's)."""
    w = window.w
    variables = [s.body.block.args[0] for s in window.sums]
    indices = list(w.indices)
    axis = _weight_axis(window)
    b = BlockBuilder(block)
    zero, one = b.index(0), b.index(1)
    loop, body = make_for(zero, rows, one, LoopRole.COPY, 0)
    b.add(loop)
    where, flat = [body], body.args[0]
    for extent in extents:
        inner, inner_body = make_for(zero, extent, one, LoopRole.COPY, 0)
        where[-1].add_op(inner)
        where.append(inner_body)
        ib = BlockBuilder(inner_body)
        flat = ib.add(arith.AddiOp(ib.add(arith.MuliOp(flat, extent)), inner_body.args[0]))
    last = BlockBuilder(where[-1])
    at = [c.args[0] for c in where[1:]]
    if constant_index(origin) != 0:
        at[0] = last.add(arith.AddiOp(origin, at[0]))
    read = []
    for a, index in enumerate(indices):
        tap = _tap(index, variables, window.sums[0]) if a != axis else None
        if tap is None:
            read.append(body.args[0])
            continue
        n, coefficient, (rest, offset) = tap
        value = at[n] if coefficient == 1 else last.add(arith.MuliOp(at[n], last.index(coefficient)))
        for term, times in sorted(rest, key=lambda tc: str(tc[0].name_hint)):
            value = last.add(arith.AddiOp(value, term if times == 1 else last.add(
                arith.MuliOp(term, last.index(times)))))
        read.append(value if offset == 0 else last.add(arith.AddiOp(value, last.index(offset))))
    value = last.add(memref.LoadOp.get(w.memref, read))
    last.add(memref.StoreOp.get(value, panel, [flat]))
    for inner_block in reversed(where):
        inner_block.add_op(scf.YieldOp())


def _blockable(window: _Window) -> memref.StoreOp | None:
    """The store of the sum, where the sum may run in blocks of the first sum added into the output
    (col stores the sum itself, once, and nothing else reads it): None where not."""
    stores = [o for o in window.col.body.block.ops if isinstance(o, memref.StoreOp)]
    total = window.sums[0].results[0]
    if len(stores) != 1 or stores[0].value is not total or len(list(total.uses)) != 1:
        return None
    return stores[0]


def _pack(window: _Window, fn: func.FuncOp, panel_bytes: int, columns: int) -> None:
    element = window.x.memref.type.element_type
    capacity = panel_bytes // (element.bitwidth // 8)
    rows = panel_bytes // (columns * (element.bitwidth // 8))
    kloop, tile, col, sums = window.kloop, window.tile, window.col, window.sums
    store = _blockable(window)
    # the panel's columns: the tile of positions W wide
    b = BlockBuilder(tile.parent_block(), tile)
    width = b.index(columns)
    tile.step.replace_uses_with_if(width, lambda use: tile.is_ancestor(use.operation) and use.operation is not tile)
    tile.operands = [tile.lb, tile.ub, width]
    # k moves inside the tile: the loops between run where it ran, a loop over k around col
    for op in [o for o in kloop.body.block.ops if not isinstance(o, scf.YieldOp)]:
        op.detach()
        kloop.parent_block().insert_op_before(op, kloop)
    inner, inner_body = make_for(kloop.lb, kloop.ub, kloop.step, LoopRole.PARALLEL, loop_axis(kloop))
    kloop.body.block.args[0].replace_all_uses_with(inner_body.args[0])
    kloop.detach()
    kloop.erase()
    tile_block = col.parent_block()
    tile_block.insert_op_before(inner, col)
    col.detach()
    inner_body.add_ops([col, scf.YieldOp()])
    # the version: a block of the first sum (all of it, where the sum cannot run in blocks) fits, and
    # w's trailing extents are the sums' (w_flat[k, q] is w[k, c, i, j]); a weight packed per block
    # is packed where its blocks run: around the stage's loops inside the pack point (the stage's own
    # outermost, the core's share), so each block's w is copied once per iteration of that loop
    if window.transposed:
        flat, whole, wrows, root = _pack_weight(window, fn, panel_bytes)
        wrapped = [o for o in root.body.block.ops if not isinstance(o, scf.YieldOp)] \
            if "tg.stage" in root.attributes else [root]
        tb = BlockBuilder(wrapped[0].parent_block(), wrapped[0])
    else:
        tb = BlockBuilder(tile.parent_block(), tile)
    extents = [s.ub for s in sums]
    rest = tb.index(1)
    for extent in extents[1:]:
        rest = tb.add(arith.MuliOp(rest, extent))
    count = tb.add(arith.MuliOp(extents[0], rest)) if len(extents) > 1 else extents[0]
    block_rows = rest if store is not None else count  # (the rows of a block at least)
    if window.transposed:  # w packed as w_panel[k Q + q] before the stage, where it fits (else per block)
        ok = tb.add(arith.AndIOp(tb.add(arith.CmpiOp(block_rows, tb.index(rows), "sle")), tb.add(arith.OrIOp(
            whole, tb.add(arith.CmpiOp(tb.add(arith.MuliOp(wrows, block_rows)), tb.index(capacity), "sle"))))))
        # (the first sum's indices a block: as many as the panel's rows hold, and w's rows of them)
        most = tb.add(arith.DivSIOp(tb.index(rows), rest))
        per = tb.add(arith.SelectOp(whole, most, tb.add(arith.MinSIOp(most, tb.add(arith.DivSIOp(
            tb.index(capacity), tb.add(arith.MaxSIOp(tb.add(arith.MuliOp(wrows, rest)), tb.index(1)))))))))
    else:
        ok = tb.add(arith.CmpiOp(block_rows, tb.index(rows), "sle"))
        wshape = len(window.w.indices)
        for axis, extent in zip(range(wshape - len(sums) + 1, wshape), extents[1:]):
            same = tb.add(arith.CmpiOp(tb.add(memref.DimOp(window.w.memref, tb.index(axis))),
                                       extent, "eq"))
            ok = tb.add(arith.AndIOp(ok, same))
        first = tb.add(arith.CmpiOp(extents[0], tb.add(memref.DimOp(
            window.w.memref, tb.index(wshape - len(sums)))), "sle"))
        ok = tb.add(arith.AndIOp(ok, first))
        per = tb.add(arith.DivSIOp(tb.index(rows), rest))
    ok.name_hint = "window_fits"
    per = tb.add(arith.MaxSIOp(per, tb.index(1)))
    per.name_hint = "block_sums"
    zero, one = tb.index(0), tb.index(1)
    panel = _stack_view(fn, element, [rows, columns], "window_panel")
    if not window.transposed:
        flat = _flatten(fn, window.w.memref, 1)

    def blocks_of_sums(sb: BlockBuilder, s0: SSAValue) -> tuple:
        """A block's extents, rows and first-block test, and where w's rows start (made by sb)."""
        nb = sb.add(arith.MinSIOp(per, sb.add(arith.SubiOp(extents[0], s0))))
        cnt = sb.add(arith.MuliOp(nb, rest)) if len(extents) > 1 else nb
        first_block = sb.add(arith.CmpiOp(s0, zero, "eq")) if store is not None else None
        if window.transposed:  # (w's rows of the block, where the whole w does not fit: row a at a cnt)
            copy = Region([Block()])
            sb.add(scf.IfOp(sb.add(arith.AndIOp(ok, sb.add(arith.XOrIOp(
                whole, sb.add(arith.ConstantOp(IntegerAttr(1, i1))))))), [], copy))
            _copy_weight(window, copy.block, flat, wrows, [nb, *extents[1:]], s0)
            copy.block.add_op(scf.YieldOp())
            lead = sb.add(arith.SelectOp(whole, count, cnt))
            offset = sb.add(arith.SelectOp(whole, sb.add(arith.MuliOp(s0, rest)), zero))
        else:
            lead, offset = None, sb.add(arith.MuliOp(s0, rest))
        return [nb, *extents[1:]], cnt, first_block, lead, offset

    if window.transposed:  # the blocks of the sum around the stage's loops (one, where all rows fit or not ok)
        top = tb.add(arith.MaxSIOp(extents[0], one))
        parts, part_body = make_for(zero, top, tb.add(arith.SelectOp(ok, per, top)), LoopRole.TILE, loop_axis(col))
        wrapped[0].parent_block().insert_op_before(parts, wrapped[0])
        s0 = part_body.args[0]
        for op in wrapped:
            op.detach()
            part_body.add_op(op)
        part_body.add_op(scf.YieldOp())
        local, cnt, first_block, lead, offset = blocks_of_sums(BlockBuilder(part_body, wrapped[0]), s0)
    # the two versions of the loop over k: packed, and as it was (cold: it runs only where the
    # panel cannot hold a block, and later passes leave it as it is)
    original = inner.clone()
    then, other = Region([Block()]), Region([Block()])
    tile_block.insert_op_before(scf.IfOp(ok, [], then, other), inner)
    inner.detach()
    other.block.add_ops([original, scf.YieldOp()])
    mark_cold(original)
    # blocks of at most W positions of the tile (one, unless a later pass widens the tile's step)
    tb = BlockBuilder(then.block)
    # (the panel's width a value of its own: a pass that resizes the tile replaces the tile's step)
    panel_width = tb.index(columns)
    blocks, block_body = make_for(col.lb, col.ub, panel_width, LoopRole.TILE, loop_axis(col))
    tb.add(blocks)
    pb = BlockBuilder(block_body)
    start = block_body.args[0]
    end = pb.add(arith.MinSIOp(pb.add(arith.AddiOp(start, panel_width)), col.ub))
    span = pb.add(arith.SubiOp(end, start))
    if window.transposed:
        part_body = block_body
    else:  # blocks of the first sum (one, where the panel holds all of it): s0 .. s0 + nb
        parts, part_body = make_for(zero, extents[0], per, LoopRole.TILE, loop_axis(col))
        pb.add(parts)
        block_body.add_op(scf.YieldOp())
        s0 = part_body.args[0]
        local, cnt, first_block, lead, offset = blocks_of_sums(BlockBuilder(part_body), s0)
    # the pack: q over the block's sums as nested loops, p over the block's positions
    copies, block = [], part_body
    for extent in local:
        loop, body = make_for(zero, extent, one, LoopRole.COPY, 0)
        block.add_op(loop)
        copies.append(body)
        block = body
    qb = BlockBuilder(block)
    q = copies[0].args[0]
    for body, extent in zip(copies[1:], local[1:]):
        q = qb.add(arith.AddiOp(qb.add(arith.MuliOp(q, extent)), body.args[0]))
    over, p_body = make_for(zero, span, one, LoopRole.COPY, loop_axis(col))
    qb.add(over)
    for body in copies:
        body.add_op(scf.YieldOp())
    mapping: dict[SSAValue, SSAValue] = {s.body.block.args[0]: c.args[0] for s, c in zip(sums, copies)}
    vb = BlockBuilder(p_body)
    if store is not None:
        mapping[sums[0].body.block.args[0]] = vb.add(arith.AddiOp(s0, copies[0].args[0]))
    mapping[col.body.block.args[0]] = vb.add(arith.AddiOp(start, p_body.args[0]))
    wanted = [window.x.results[0], *([window.cond] if window.cond is not None else [])]
    for op in slice_within(wanted, col):
        p_body.add_op(op.clone(value_mapper=mapping))
    value = mapping[window.x.results[0]]
    if window.cond is not None:
        value = vb.add(arith.SelectOp(mapping[window.cond], value, vb.add(arith.ConstantOp(FloatAttr(0.0, element)))))
    vb.add(memref.StoreOp.get(value, panel, [q, p_body.args[0]]))
    p_body.add_op(scf.YieldOp())
    part_body.add_ops([inner, scf.YieldOp()])
    then.block.add_op(scf.YieldOp())
    # the positions from 0 (the panel's column: b = start + p), the flat sum panel[q, p] * w_flat[k, q]
    column = col.body.block.args[0]
    position = arith.AddiOp(start, column)
    column.replace_uses_with_if(position.result, lambda use: use.operation is not position)
    col.body.block.insert_op_before(position, col.body.block.first_op)
    col.operands = [zero, span, col.step]
    outer = sums[0]
    cb = BlockBuilder(col.body.block, outer)
    # (a reduction of its own: its directives name it apart from the nest the other version keeps)
    axis = 1 + max(loop_axis(o) for o in fn.walk() if loop_role(o) == LoopRole.REDUCE)
    flat_sum, body = make_for(zero, cnt, one, LoopRole.REDUCE, axis, [outer.iter_args[0]])
    fb = BlockBuilder(body)
    read = fb.add(memref.LoadOp.get(panel, [body.args[0], column]))
    if window.transposed:  # (the row's start, k Q' + the block's first row, made once per k)
        ib = BlockBuilder(inner_body, inner_body.first_op)
        row_start = ib.add(arith.AddiOp(ib.add(arith.MuliOp(inner_body.args[0], lead)), offset))
        weight = fb.add(memref.LoadOp.get(flat, [fb.add(arith.AddiOp(row_start, body.args[0]))]))
    else:
        weight = fb.add(memref.LoadOp.get(flat, [inner_body.args[0], fb.add(arith.AddiOp(offset, body.args[0]))]))
    product = fb.add(arith.MulfOp(read, weight) if window.x_first else arith.MulfOp(weight, read))
    fastmath = sums[-1].body.block.last_op.operands[0].owner.fastmath
    total = fb.add(arith.AddfOp(body.args[1], product, fastmath))
    body.add_op(scf.YieldOp(total))
    cb.add(flat_sum)
    outer.results[0].replace_all_uses_with(flat_sum.results[0])
    outer.detach()
    outer.erase()
    if store is not None:  # the blocks after the first add into the output
        wb = BlockBuilder(col.body.block, store)
        earlier = wb.add(memref.LoadOp.get(store.memref, list(store.indices)))
        added = wb.add(arith.AddfOp(earlier, flat_sum.results[0], fastmath))
        store.operands = [wb.add(arith.SelectOp(first_block, flat_sum.results[0], added)), *store.operands[1:]]
    _erase_dead(col.body.block)


def _erase_dead(block: Block) -> None:
    """Pure ops whose results nothing uses (what computed the nest's indices)."""
    changed = True
    while changed:
        changed = False
        for op in reversed(list(block.ops)):
            if pure_arith(op) and all(not r.uses for r in op.results):
                op.detach()
                op.erase()
                changed = True


@dataclass(frozen=True)
class PackWindowedOperands(ModulePass):
    """Pack a contraction's windowed operand, masked, into a stack panel of `panel_bytes` per block
    of `columns` output positions, and sum the panel as one flat GEMM sum (see the module's doc).
    With `directives` (Stage(memory=panel), `;`-separated: passes/applying.py), the stages they name."""

    name = "pack-windowed-operands"
    panel_bytes: int = PANEL_BYTES
    columns: int = COLUMNS
    directives: str | None = None
    takes_text: ClassVar[str] = "Stage(memory='panel') of a windowed operand"

    def __post_init__(self):
        check_counts(self, "panel_bytes", "columns")

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Stage) and directive.memory == Memory.PANEL

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        candidates = [(window.directive(fn), (fn, window)) for fn in functions(op)
                      for window in windows(fn, self.panel_bytes, self.columns)]
        for (fn, window), _ in chosen(self, candidates, "windowed operand"):
            _pack(window, fn, self.panel_bytes, self.columns)


def windows(fn: func.FuncOp, panel_bytes: int = PANEL_BYTES, columns: int = COLUMNS) -> list[_Window]:
    """The windowed contractions pack-windowed-operands packs in a function (none where a panel of
    LEAST_COLUMNS columns would hold fewer rows than one: the cpu planner lists them)."""
    found = []
    for col in [o for o in fn.walk() if isinstance(o, scf.ForOp)]:
        window = _window(fn, col)
        if window is None:
            continue
        bytes_ = window.x.memref.type.element_type.bitwidth // 8
        if columns >= LEAST_COLUMNS and panel_bytes // (columns * bytes_) >= 1:
            found.append(window)
    return found
