"""pack-windowed-reductions: a contraction whose SUM runs over positions and whose one operand is read
through a window of (an output variable, a sum variable) packs that operand, masked, into a stack
panel per block of positions; each block adds one plain GEMM to the output (a conv's grad_weight).

A stage computes, per output (k, q) with q = (c, i, j) its other output variables (a perfect nest
of parallel loops inside the loop over k, the innermost one tiled),

    dw[k, c, i, j] = sum over n, oh, ow of where(mask, dy[n, k, oh, ow] * x[n, c, clamp(f(oh, i)), clamp(g(ow, j))], 0)

the windowed read x (an index of an output variable and a sum variable) and the mask not depending
on k, the other read dy depending on k and the sums only, its last index the innermost sum (and,
folded with it, the one before: dy's last two indices the two innermost sums, read through a view
dy_flat[..., oh * OW + ow]). The stage becomes

    if the panel holds LEAST_POSITIONS positions of C' R S columns (C' = C if it can; the views exact):
      for k, q of the core's: dw_flat[k, q] = 0
      for n:                                             (the sums not folded, in order)
        for oh0 step R: for ow0 step B:                  (a block: R rows of B positions, R > 1 only when B = OW)
          for c, i, j (q, no divisions): for r, s: panel[(r B + s) Q' + q] = where(mask, x[...], 0)
          for k: for q: dw_flat[k, q0 + q] += sum over p of dy_flat[n, k, (oh0 + r) OW + ow0 + s] * panel[p Q' + q]
    else: (the stage as it was)

with Q' the columns of the core's share (q0: its first; a core split over c packs only its own),
B = min(OW, P), R = max(1, P / OW) for P = panel / Q (the whole Q's, so the blocks, and the order
each dw element adds its blocks in, do not depend on the core count). Where LEAST_POSITIONS
positions of all Q columns do not fit (C = 512 3x3: 4608 columns), the share runs in blocks of C'
channels (as many as LEAST_POSITIONS positions of C' R S columns fit: a loop over c blocks around
the above, P = panel / (C' R S)), still independent of the core count; the stage as it was then runs
only where R S columns of 16 positions do not fit, and is cold (`tg.cold`: later passes leave it
as it is). Each block's sum is the plain
NN GEMM form (dy broadcast, a row of the panel swept along q): interchange-column-reductions,
jam-row-sweeps (HostModel.jam_rows k rows) and chunk-row-sweeps (16 q columns) make it the register tile. The results
equal the stage as written up to rounding order (blocks in order, each one flat sum). With
`directives` (Stage(tensor=x, at=<the loop over k's axis>, memory=panel)), the stages they name;
without, every one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
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
from tilegrad.passes.loop_utils import made_outside, mark_cold, slice_within, sum_nest, zero_constant
from tilegrad.schedule import Directive, Memory, Stage

PANEL_BYTES = 1 << 18
"""The panel at most (the cpu backend gives the host's: HostModel.panel_bytes)."""
LEAST_POSITIONS = 16
"""A stage whose panel would hold fewer positions (GEMM terms per block) than this runs as it was."""


@dataclass
class _Reduction:
    """A stage's windowed reduction: the loops it rewrites and its term's parts."""

    kloop: scf.ForOp  # the output loop the other read depends on (dy's k)
    levels: list[scf.ForOp]  # the other output loops, outer to inner (the innermost: its tile's column loop)
    tile: scf.ForOp  # the innermost level's tile
    sums: list[scf.ForOp]  # the sum nest, outermost first
    x: memref.LoadOp  # the windowed read
    dy: memref.LoadOp  # the other read
    cond: SSAValue | None  # the mask (None: no where)
    x_first: bool  # the product's operand order
    store: memref.StoreOp  # dw[k, c, i, j] = the sum
    folded: int  # the innermost sums dy's last indices are (1 or 2): the positions of a block

    def directive(self, fn: func.FuncOp) -> Stage:
        return Stage(stage=stage_number(fn), tensor=tensor_name(fn, self.x.memref), at=loop_axis(self.kloop),
                     memory=Memory.PANEL)


def _levels(col: scf.ForOp, k: SSAValue) -> tuple[scf.ForOp, list[scf.ForOp], scf.ForOp] | None:
    """The loop over k, the output loops inside it (outer to inner, ending at col) and col's tile: a
    perfect nest of parallel loops (beside index arithmetic), bounds made outside the loop over k."""
    tile = col.parent_op()
    if loop_role(col) != LoopRole.PARALLEL or col.iter_args or not isinstance(tile, scf.ForOp) \
            or loop_role(tile) != LoopRole.TILE or loop_axis(tile) != loop_axis(col) or constant_index(col.step) != 1:
        return None
    levels, loop = [col], tile
    while True:
        if any(not isinstance(o, (scf.ForOp, scf.YieldOp)) and not pure_arith(o) for o in loop.body.block.ops) \
                or len([o for o in loop.body.block.ops if isinstance(o, scf.ForOp)]) != 1 or loop.iter_args:
            return None
        parent = loop.parent_op()
        if not isinstance(parent, scf.ForOp) or loop_role(parent) != LoopRole.PARALLEL:
            return None
        if parent.body.block.args[0] is k:
            break
        if constant_index(parent.step) != 1:
            return None
        levels.insert(0, parent)
        loop = parent
    kloop = parent
    bounds = [kloop.lb, kloop.ub, kloop.step, tile.lb, tile.ub,
              *(v for level in levels[:-1] for v in (level.lb, level.ub))]
    if not all(made_outside(v, kloop) for v in bounds):
        return None
    if any(constant_index(level.lb) != 0 for level in levels[1:-1]) \
            or (len(levels) > 1 and constant_index(tile.lb) != 0):
        return None  # (the outermost level may be a core's share: its columns q0..q0 + Q')
    return kloop, levels, tile


def _reduction(fn: func.FuncOp, col: scf.ForOp) -> _Reduction | None:
    """The windowed reduction `col` computes, if it is one (see the module's doc)."""
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
    stores = [o for o in col.body.block.ops if isinstance(o, memref.StoreOp)]
    if len(stores) != 1 or stores[0].value is not sums[0].results[0] or not stores[0].indices:
        return None
    store = stores[0]
    k = store.indices[0]
    if not isinstance(k, BlockArgument):
        return None
    chain = _levels(col, k)
    if chain is None:
        return None
    kloop, levels, tile = chain
    outputs = [level.body.block.args[0] for level in levels]
    if list(store.indices[1:]) != outputs:
        return None
    variables = [s.body.block.args[0] for s in sums]
    windowed = [o for o in loads if any(depends_on(i, v) for i in o.indices for v in outputs)]
    if len(windowed) != 1:
        return None
    x = windowed[0]
    dy = loads[1] if loads[0] is x else loads[0]
    if not any(depends_on(i, o) and any(depends_on(i, v) for v in variables) for i in x.indices for o in outputs):
        return None  # no window: a plain contraction's
    reads = [*x.indices, *([cond] if cond is not None else [])]
    if any(depends_on(v, k) for v in reads) or not any(depends_on(i, k) for i in dy.indices):
        return None
    inputs = {a for a in fn.body.block.args if isinstance(a.type, MemRefType)} - written_memrefs(fn)
    if x.memref not in inputs or dy.memref not in inputs or store.memref in (x.memref, dy.memref) \
            or not isinstance(store.memref.type.layout, NoneAttr) or not isinstance(dy.memref.type.layout, NoneAttr):
        return None
    if any(o is not store and not isinstance(o, memref.DimOp) and store.memref in o.operands for o in fn.walk()):
        return None  # (the output written once, here)
    # everything the pack and the GEMM read: the loops' variables or values made outside the stage
    known = {k, *outputs, *variables}
    for op in slice_within([*x.indices, *dy.indices, *([cond] if cond is not None else [])], kloop):
        if not col.is_ancestor(op) or any(v not in known and not made_outside(v, kloop) and not (
                isinstance(v.owner, Operation) and col.is_ancestor(v.owner)) for v in op.operands):
            return None
    # dy's last indices: the innermost sum (and the one before, folded with it)
    if dy.indices[-1] is not variables[-1]:
        return None
    folded = 2 if len(sums) > 1 and len(dy.indices) > 2 and dy.indices[-2] is variables[-2] else 1
    lead = dy.indices[:len(dy.indices) - folded]
    if any(depends_on(i, v) for i in lead for v in variables[len(variables) - folded:]) \
            or any(depends_on(i, o) for i in dy.indices for o in outputs):
        return None
    return _Reduction(kloop, levels, tile, sums, x, dy, cond, loads[0] is x, store, folded)


def _view(fn: func.FuncOp, tensor: SSAValue, groups: list[list[int]], hint: str) -> SSAValue:
    """tensor viewed with its axes grouped (made at the function's start)."""
    shape = tensor.type.get_shape()
    sizes = [shape[g[0]] if len(g) == 1 else DYNAMIC_INDEX for g in groups]
    view = memref.CollapseShapeOp(
        operands=[tensor], result_types=[MemRefType(tensor.type.element_type, sizes)],
        properties={"reassociation": ArrayAttr([ArrayAttr([IntegerAttr(a, i64) for a in g]) for g in groups])})
    view.result.name_hint = f"{tensor_name(fn, tensor)}_{hint}"
    entry = fn.body.block
    entry.insert_op_before(view, entry.first_op)
    return view.result


def _pack(red: _Reduction, fn: func.FuncOp, panel_bytes: int) -> None:
    element = red.x.memref.type.element_type
    capacity = panel_bytes // (element.bitwidth // 8)
    kloop, levels, tile, sums, store = red.kloop, red.levels, red.tile, red.sums, red.store
    out = store.memref
    b = BlockBuilder(kloop.parent_block(), kloop)
    zero, one = b.index(0), b.index(1)
    # the columns q: the outermost level's share [lo, hi) times the inner levels' extents
    extents = [level.ub for level in levels[1:-1]] + ([tile.ub] if len(levels) > 1 else [])
    first_lo, first_hi = (levels[0].lb, levels[0].ub) if len(levels) > 1 else (tile.lb, tile.ub)
    inner = one
    for extent in extents:
        inner = b.add(arith.MuliOp(inner, extent))
    share = b.add(arith.MuliOp(b.add(arith.SubiOp(first_hi, first_lo)), inner))
    q0 = b.add(arith.MuliOp(first_lo, inner))
    channels = b.add(memref.DimOp(out, b.index(1)))
    whole = b.add(arith.MuliOp(channels, inner))
    # C': the outermost level's columns a block (all C, where LEAST_POSITIONS positions of them fit;
    # else as many as do: blocks of the whole C's, so the order of each dw element's terms does not
    # depend on the core count); P = panel / (C' x the inner levels')
    most = b.add(arith.MaxSIOp(one, b.add(arith.DivSIOp(b.index(capacity), b.add(arith.MaxSIOp(
        b.add(arith.MuliOp(inner, b.index(LEAST_POSITIONS))), one))))))
    fits = b.add(arith.CmpiOp(b.add(arith.DivSIOp(b.index(capacity), b.add(arith.MaxSIOp(whole, one)))),
                              b.index(LEAST_POSITIONS), "sge"))
    block_channels = b.add(arith.SelectOp(fits, channels, most))
    block_channels.name_hint = "block_channels"
    per = b.add(arith.DivSIOp(b.index(capacity), b.add(arith.MaxSIOp(
        b.add(arith.MuliOp(block_channels, inner)), one))))
    ok = b.add(arith.CmpiOp(per, b.index(LEAST_POSITIONS), "sge"))
    ok = b.add(arith.AndIOp(ok, b.add(arith.CmpiOp(first_hi, b.add(memref.DimOp(out, b.index(1))), "sle"))))
    for axis, extent in enumerate(extents, start=2):  # dw_flat[k, q] is dw[k, c, i, j]
        ok = b.add(arith.AndIOp(ok, b.add(arith.CmpiOp(b.add(memref.DimOp(out, b.index(axis))), extent, "eq"))))
    last = sums[-1].ub
    rank = len(red.dy.indices)
    if red.folded == 2:  # dy_flat[..., a * OW + b] is dy[..., a, b]
        ok = b.add(arith.AndIOp(ok, b.add(arith.CmpiOp(b.add(memref.DimOp(red.dy.memref, b.index(rank - 1))),
                                                       last, "eq"))))
    ok.name_hint = "window_fits"
    width = b.add(arith.MinSIOp(last, per))  # B: positions of the innermost sum per block
    rows = b.add(arith.MaxSIOp(one, b.add(arith.DivSIOp(per, b.add(arith.MaxSIOp(last, one)))))) \
        if red.folded == 2 else one
    buffer = memref.AllocaOp.get(element, shape=[capacity])
    fn.body.block.insert_op_before(buffer, fn.body.block.first_op)
    flat_out = _view(fn, out, [[0], list(range(1, len(store.indices)))], "flat")
    dy_read = red.dy.memref if red.folded == 1 else \
        _view(fn, red.dy.memref, [*([a] for a in range(rank - 2)), [rank - 2, rank - 1]], "flat")
    # the two versions: packed, and as it was
    then, other = Region([Block()]), Region([Block()])
    parent = kloop.parent_block()
    parent.insert_op_before(scf.IfOp(ok, [], then, other), kloop)
    kloop.detach()
    other.block.add_ops([kloop, scf.YieldOp()])
    mark_cold(kloop)  # (it runs only where the panel does not fit: later passes leave it as it is)
    tb = BlockBuilder(then.block)
    fzero = tb.add(arith.ConstantOp(FloatAttr(0.0, element)))
    # the core's outputs from zero
    kz, kz_body = make_for(kloop.lb, kloop.ub, kloop.step, LoopRole.PARALLEL, loop_axis(kloop))
    tb.add(kz)
    qz, qz_body = make_for(zero, share, one, LoopRole.PARALLEL, loop_axis(tile))
    kz_body.add_ops([qz, scf.YieldOp()])
    zb = BlockBuilder(qz_body)
    zb.add(memref.StoreOp.get(fzero, flat_out, [kz_body.args[0], zb.add(arith.AddiOp(q0, qz_body.args[0]))]))
    qz_body.add_op(scf.YieldOp())
    # the blocks of the outermost level's columns (one, where all of them fit): [lo, hi) of the share
    parts, root = make_for(first_lo, first_hi, block_channels, LoopRole.TILE, loop_axis(levels[0]))
    tb.add(parts)
    cb = BlockBuilder(root)
    first_lo = root.args[0]
    first_hi = cb.add(arith.MinSIOp(cb.add(arith.AddiOp(first_lo, block_channels)), first_hi))
    share = cb.add(arith.MuliOp(cb.add(arith.SubiOp(first_hi, first_lo)), inner))
    q0 = cb.add(arith.MuliOp(first_lo, inner))
    # (the panel a matrix of Q' columns: its rows a sum's terms, each swept along q)
    shape = [cb.add(arith.DivSIOp(cb.index(capacity), cb.add(arith.MaxSIOp(share, one)))), share]
    view = memref.ExpandShapeOp(
        operands=[buffer.memref, shape], result_types=[MemRefType(element, [DYNAMIC_INDEX, DYNAMIC_INDEX])],
        properties={"reassociation": ArrayAttr([ArrayAttr([IntegerAttr(0, i64), IntegerAttr(1, i64)])]),
                    "static_output_shape": DenseArrayBase.from_list(i64, [DYNAMIC_INDEX, DYNAMIC_INDEX])})
    cb.add(view)
    view.result.name_hint = "window_panel"
    panel = view.result
    # the sums not folded: loops in order; then the block loops
    variables = [s.body.block.args[0] for s in sums]
    mapping: dict[SSAValue, SSAValue] = {}
    block = root
    for s in sums[:len(sums) - red.folded]:
        loop, body = make_for(zero, s.ub, one, LoopRole.TILE, loop_axis(tile))
        block.add_op(loop)
        if block is not root:
            block.add_op(scf.YieldOp())
        mapping[s.body.block.args[0]] = body.args[0]
        block = body
    starts = []
    for s, step in ([(sums[-2], rows)] if red.folded == 2 else []) + [(sums[-1], width)]:
        loop, body = make_for(zero, s.ub, step, LoopRole.TILE, loop_axis(tile))
        block.add_op(loop)
        if block is not root:
            block.add_op(scf.YieldOp())
        bb = BlockBuilder(body)
        starts.append((body.args[0], bb.add(arith.SubiOp(bb.add(arith.MinSIOp(
            bb.add(arith.AddiOp(body.args[0], step)), s.ub)), body.args[0]))))
        block = body
    bb = BlockBuilder(block)
    (row0, nrows), (col0, span) = starts if red.folded == 2 else ((zero, one), starts[0])
    count = bb.add(arith.MuliOp(nrows, span))
    # the pack: q over the levels as nested loops (from 0), r and s over the block's positions
    copies, body = [], block
    for level, (lo, hi) in zip(levels, [(first_lo, first_hi)] + [(zero, e) for e in extents]):
        loop, inner_body = make_for(lo, hi, one, LoopRole.COPY, 0)
        body.add_op(loop)
        copies.append(inner_body)
        body = inner_body
    qb = BlockBuilder(body)
    q = qb.add(arith.SubiOp(copies[0].args[0], first_lo))
    for copy, extent in zip(copies[1:], extents):
        q = qb.add(arith.AddiOp(qb.add(arith.MuliOp(q, extent)), copy.args[0]))
    over_r, r_body = make_for(zero, nrows, one, LoopRole.COPY, 0)
    qb.add(over_r)
    rb = BlockBuilder(r_body)
    over_s, s_body = make_for(zero, span, one, LoopRole.COPY, loop_axis(tile))
    rb.add(over_s)
    r_body.add_op(scf.YieldOp())
    for copy in copies:
        copy.add_op(scf.YieldOp())
    values = dict(mapping)
    values.update({level.body.block.args[0]: copy.args[0] for level, copy in zip(levels, copies)})
    vb = BlockBuilder(s_body)
    values[variables[-1]] = vb.add(arith.AddiOp(col0, s_body.args[0]))
    if red.folded == 2:
        values[variables[-2]] = vb.add(arith.AddiOp(row0, r_body.args[0]))
    wanted = [red.x.results[0], *([red.cond] if red.cond is not None else [])]
    for op in slice_within(wanted, red.tile):
        s_body.add_op(op.clone(value_mapper=values))
    value = values[red.x.results[0]]
    if red.cond is not None:
        value = vb.add(arith.SelectOp(values[red.cond], value, fzero))
    p = vb.add(arith.AddiOp(vb.add(arith.MuliOp(r_body.args[0], span)), s_body.args[0]))
    vb.add(memref.StoreOp.get(value, panel, [p, q]))
    s_body.add_op(scf.YieldOp())
    # the GEMM: for k: for q: dw_flat[k, q0 + q] += sum over p of dy[.., p] * panel[p Q' + q]
    gk, gk_body = make_for(kloop.lb, kloop.ub, kloop.step, LoopRole.PARALLEL, loop_axis(kloop))
    bb.add(gk)
    if block is not root:
        block.add_op(scf.YieldOp())
    gq, gq_body = make_for(zero, share, one, LoopRole.PARALLEL, loop_axis(tile))
    gk_body.add_ops([gq, scf.YieldOp()])
    axis = 1 + max(loop_axis(o) for o in fn.walk() if loop_role(o) == LoopRole.REDUCE)
    flat_sum, f_body = make_for(zero, count, one, LoopRole.REDUCE, axis, [fzero])
    gb = BlockBuilder(gq_body)
    gb.add(flat_sum)
    fb = BlockBuilder(f_body)
    p = f_body.args[0]
    values = dict(mapping)
    values[kloop.body.block.args[0]] = gk_body.args[0]
    if red.folded == 2:
        lead = red.dy.indices[:rank - 2]
        position = fb.add(arith.AddiOp(fb.add(arith.AddiOp(fb.add(arith.MuliOp(row0, last)), col0)), p))
    else:
        lead = red.dy.indices[:rank - 1]
        position = fb.add(arith.AddiOp(col0, p))
        values[variables[-1]] = position
    for op in slice_within(list(lead), red.tile):
        f_body.add_op(op.clone(value_mapper=values))
    indices = [values.get(i, i) for i in lead]
    read = fb.add(memref.LoadOp.get(dy_read, [*indices, position]))
    packed = fb.add(memref.LoadOp.get(panel, [p, gq_body.args[0]]))
    product = fb.add(arith.MulfOp(packed, read) if red.x_first else arith.MulfOp(read, packed))
    fastmath = sums[-1].body.block.last_op.operands[0].owner.fastmath
    f_body.add_op(scf.YieldOp(fb.add(arith.AddfOp(f_body.args[1], product, fastmath))))
    at = [gk_body.args[0], gb.add(arith.AddiOp(q0, gq_body.args[0]))]
    total = gb.add(arith.AddfOp(gb.add(memref.LoadOp.get(flat_out, at)), flat_sum.results[0], fastmath))
    gb.add(memref.StoreOp.get(total, flat_out, at))
    gq_body.add_op(scf.YieldOp())
    root.add_op(scf.YieldOp())
    then.block.add_op(scf.YieldOp())


@dataclass(frozen=True)
class PackWindowedReductions(ModulePass):
    """Pack a reduction's windowed operand (its sum over positions), masked, into a stack panel of
    `panel_bytes` per block of positions, and add each block's GEMM to the output (see the module's
    doc). With `directives` (Stage(memory=panel), `;`-separated: passes/applying.py), the stages
    they name."""

    name = "pack-windowed-reductions"
    panel_bytes: int = PANEL_BYTES
    directives: str | None = None
    takes_text: ClassVar[str] = "Stage(memory='panel') of a reduction's windowed operand"

    def __post_init__(self):
        check_counts(self, "panel_bytes")

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Stage) and directive.memory == Memory.PANEL

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        candidates = [(red.directive(fn), (fn, red)) for fn in functions(op)
                      for red in reductions(fn, self.panel_bytes)]
        for (fn, red), _ in chosen(self, candidates, "reduction's windowed operand"):
            _pack(red, fn, self.panel_bytes)


def reductions(fn: func.FuncOp, panel_bytes: int = PANEL_BYTES) -> list[_Reduction]:
    """The windowed reductions pack-windowed-reductions packs in a function (none where the panel
    holds fewer than LEAST_POSITIONS elements: the cpu planner lists them)."""
    if panel_bytes // 8 < LEAST_POSITIONS:
        return []
    found = []
    for col in [o for o in fn.walk() if isinstance(o, scf.ForOp)]:
        red = _reduction(fn, col)
        if red is not None:
            found.append(red)
    return found
