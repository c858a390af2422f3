"""interchange-column-reductions: a sum that walks a column accumulates a row of results instead.

    for j:                                  for jt step T:
      s = Σ_r term(r, j)   (B[r, j])    ->     row[0:T] = init
      out[j] = f(s)                            for r: for j in tile: row[j - jt] += term(r, j)
                                               for j in tile: out[j] = f(row[j - jt])

A reduction inside the innermost parallel loop whose terms read `B[..., r, ..., j]` (the reduction
variable in an outer position, the parallel variable last) strides through memory once per term:
the two products of a matmul's backward (`G @ W`, `G.T @ X`), a layer norm's dγ, softmax over
channels. Interchanged, each term is a contiguous row the vectorizer streams, and the T partial sums
stay in a stack row (L1); sums over the same range share one sweep of the data. Each sum still
adds its terms in the same order, one after another, so results are bitwise those of the plain
loop; a blocked long sum (float64 partials per 1024 terms) keeps its blocks the same way. For
targets without UB staging (cpu), after tiling. The cpu planner lists each interchange as
`Reorder(stage, order=('rK', column axis))` (the sums' loops, by their reduction axis, outside the
column loop); a Reorder in the loops' own order leaves the sums walking the column.

A sum over several variables (a convolution's over channels and taps: lower-tg-to-loops nests one
loop per variable, each level summing the next from zero) interchanges as a nest of its loops
around the row loop, every term added to the row in the nest's order (the inner levels' partial
sums are not formed: one rounding per term, as the sums' reassoc flag allows). Its read along the
column may be a window's (the column plus a tap, clamped: partition-clamped-loops unclamps the row
loop's middle). By itself only a window's sum (every level a tap, its variable in a range test:
a depthwise convolution's grad_input sums over the taps alone), each tap one contiguous
multiply-add over the row once partition-clamped-loops takes the row's edges apart (depthwise
conv2d backward's dx at 8x128x56x56: 24 -> 7 ms); a nest with a level outside the window (a batch, a
channel: a contraction) only on a Reorder that names it (planned_interchanges).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import Float32Type, Float64Type, FloatAttr, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import LoopRole
from tilegrad.dialect.values import BlockBuilder
from tilegrad.passes.applying import reordered
from tilegrad.passes.common import (
    SHORT_TRIPS,
    blocked_shape,
    check_counts,
    constant_index,
    depends_within,
    feeding_ops,
    functions,
    loop_axis,
    loop_role,
    make_for,
    pure_arith,
    same_range,
    stage_number,
    sum_loop,
    walks_columns,
)
from tilegrad.schedule import Directive, Reorder

ROW = 512
"""Sums a row accumulates at once: 2 KiB of float32 (4 KiB float64), L1-resident; longer contiguous
segments of each data row than 256 (layer norm's dγ, dβ at 4096x1024: 1.7 -> 1.3 ms)."""


def _candidates(p: scf.ForOp) -> list[Operation]:
    """The float sums directly in innermost parallel loop `p`, if every one walks a column and
    none reads another's result (else none)."""
    body = [o for o in p.body.block.ops if not isinstance(o, scf.YieldOp)]
    if any(isinstance(o, scf.ForOp) and loop_role(o) != LoopRole.REDUCE for o in body):
        return []
    sums = [o for o in body if loop_role(o) == LoopRole.REDUCE]
    column = p.body.block.args[0]
    results = {r for o in sums for r in o.results}
    for reduce in sums:
        nest = _sum_nest(reduce)
        if nest is None:
            return []
        loop = nest[0]
        walks = (len(nest) == 1 and walks_columns(loop, column)) or \
            ((len(nest) > 1 or _window_sum(nest)) and _nest_walks_columns(nest, column))
        if not walks or _mostly_invariant(nest[-1], nest):
            return []
        if isinstance(reduce, scf.IfOp) and not blocked_shape(reduce):
            return []
        bounds = [v for level in nest for v in (level.lb, level.ub, level.step)] + \
            ([reduce.cond] if isinstance(reduce, scf.IfOp) else [])
        if any(depends_within(v, column, p) for v in bounds):
            return []
        if any(depends_within(v, r, p) for o in reduce.walk() for v in o.operands for r in results):
            return []
    return sums


def _sum_nest(reduce: Operation) -> list[scf.ForOp] | None:
    """A float sum's loops, outer to inner: [its plain loop] (sum_loop), or for a sum over several
    variables as lower-tg-to-loops nests it (a convolution's over channels and taps), each level's
    loop: a level's body adds one sum of the next level, started at zero, to its accumulator, beside
    index arithmetic. None for anything else."""
    loop = sum_loop(reduce)
    if loop is not None:
        return [loop]
    if not isinstance(reduce, scf.ForOp) or len(reduce.iter_args) != 1 or \
            not isinstance(reduce.iter_args[0].type, (Float32Type, Float64Type)):
        return None
    body = list(reduce.body.block.ops)
    combined = body[-1].operands[0].owner if body[-1].operands else None
    if not isinstance(combined, arith.AddfOp) or combined.lhs is not reduce.body.block.args[1]:
        return None
    inner = combined.rhs.owner
    if not isinstance(inner, scf.ForOp) or inner.parent_block() is not reduce.body.block or \
            len(inner.iter_args) != 1 or not _zero(inner.iter_args[0]):
        return None
    if any(o not in (inner, combined, body[-1]) and not pure_arith(o) for o in body):
        return None
    rest = _sum_nest(inner)
    return None if rest is None else [reduce, *rest]


def _zero(value: SSAValue) -> bool:
    owner = value.owner
    return isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr) and owner.value.value.data == 0


def _nest_walks_columns(nest: list[scf.ForOp], column: SSAValue) -> bool:
    """Whether a term of a sum nest reads a tensor along the column (its last index the column plus
    a value the column does not change, a window's tap) at an element the sums choose."""
    innermost = nest[-1]
    variables = [level.body.block.args[0] for level in nest]
    for o in innermost.body.walk():
        if isinstance(o, memref.LoadOp) and o.indices and _along(o.indices[-1], column, nest[0]) and \
                any(depends_within(i, v, nest[0]) for i in o.indices for v in variables):
            return True
    return False


def _along(index: SSAValue, column: SSAValue, within: Operation) -> bool:
    """index is the column plus or minus values the column does not change (maybe clamped to
    bounds it does not change: partition-clamped-loops unclamps the row loop's middle)."""
    if index is column:
        return True
    owner = index.owner
    if isinstance(owner, (arith.AddiOp, arith.MaxSIOp, arith.MinSIOp)):
        return any(_along(a, column, within) and not depends_within(b, column, within)
                   for a, b in ((owner.lhs, owner.rhs), (owner.rhs, owner.lhs)))
    if isinstance(owner, arith.SubiOp):
        return _along(owner.lhs, column, within) and not depends_within(owner.rhs, column, within)
    if isinstance(owner, arith.DivSIOp) and constant_index(owner.rhs) == 1:  # a stride-1 window's `// stride`
        return _along(owner.lhs, column, within)
    return False


def _mostly_invariant(loop: scf.ForOp, nest: list[scf.ForOp] | None = None) -> bool:
    """Whether most of a term's work does not change along the sum (a sampler's corner weights,
    computed from the grid point alone): the column form computes it once per result (LLVM hoists
    it), a row accumulation would compute it again for every term. (A nest's terms: along any of
    its variables.)"""
    varying = set(loop.body.block.args) | {level.body.block.args[0] for level in nest or ()}
    moving = 0
    ops = [o for o in loop.body.walk() if o is not loop and not isinstance(o, (scf.YieldOp, arith.ConstantOp))]
    for o in ops:  # in walk order a value is defined before it is used
        if any(v in varying for v in o.operands):
            varying.update(o.results)
            moving += 1
    return len(ops) - moving > moving


class _Rewrite:
    """Interchange the sums `sums` inside innermost parallel loop `p`: one tile loop, a row (and for
    a blocked sum a float64 row) per sum."""

    def __init__(self, p: scf.ForOp, sums: list[Operation], entry: Block, row: int = ROW):
        self.p, self.sums, self.entry, self.row = p, sums, entry, row
        self.column = p.body.block.args[0]

    def _alloca(self, entry: Block, element) -> SSAValue:
        op = memref.AllocaOp.get(element, shape=[self.row])
        entry.insert_op_before(op, entry.first_op)
        return op.memref

    def apply(self) -> None:
        p = self.p
        parent = p.parent_block()
        b = BlockBuilder(parent, p)
        size = b.index(self.row)
        tile, tile_body = make_for(p.lb, p.ub, size, LoopRole.TILE, loop_axis(p))
        parent.insert_op_before(tile, p)
        tb = BlockBuilder(tile_body)
        self.start = tile_body.args[0]
        self.end = tb.add(arith.MinSIOp(tb.add(arith.AddiOp(self.start, size)), p.ub))
        self.one = tb.index(1)
        rows = {reduce: self._alloca(self.entry, reduce.results[0].type) for reduce in self.sums}
        for group in _groups(self.sums):  # sums over the same range share one sweep of the data
            sweep = [(reduce, rows[reduce]) for reduce in group]
            if isinstance(group[0], scf.IfOp):
                self.blocked(tile_body, [(r, row, self._alloca(self.entry, Float64Type())) for r, row in sweep])
            else:
                self.plain(tile_body, sweep)
        # the parallel loop itself now walks the tile, reading each sum from its row
        p.detach()
        p.operands = [self.start, self.end, p.step]
        for reduce in self.sums:
            rb = BlockBuilder(p.body.block, reduce)
            loaded = rb.add(memref.LoadOp.get(rows[reduce], [rb.add(arith.SubiOp(self.column, self.start))]))
            reduce.results[0].replace_all_uses_with(loaded)
            reduce.detach()
            reduce.erase()
        tile_body.add_ops([p, scf.YieldOp()])

    def each(self, into: Block, build) -> None:
        """for j in the tile: build(builder, j, j - start), at the end of `into`."""
        loop, body = make_for(self.start, self.end, self.one, LoopRole.ROW, 0)
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

    def terms(self, into: Block, sweep: list[tuple[scf.ForOp, SSAValue]], mapping: dict) -> None:
        """for r in the loops' range: for j in the tile: row[j] = row[j] + term(r, j), per loop."""
        first = sweep[0][0]
        lb, ub, step = (self.outside(v, into, mapping) for v in (first.lb, first.ub, first.step))
        outer, outer_body = make_for(lb, ub, step, loop_role(first), loop_axis(first))
        into.add_op(outer)

        def accumulate(b: BlockBuilder, j: SSAValue, at: SSAValue) -> None:
            for loop, row in sweep:
                r, acc_arg = loop.body.block.args
                values = {self.column: j, r: outer_body.args[0]}
                values[acc_arg] = b.add(memref.LoadOp.get(row, [at]))
                self._clone_needed(loop, b, values)
                combined = loop.body.block.last_op.operands[0]
                b.add(memref.StoreOp.get(values[combined], row, [at]))

        self.each(outer_body, accumulate)
        outer_body.add_op(scf.YieldOp())

    def nest_terms(self, into: Block, nest: list[scf.ForOp], row: SSAValue, mapping: dict) -> None:
        """A sum nest's loops, in their order, around one loop over the tile: row[j] += term, every
        term of the nest added to the row in the nest's order (the partial sums of the inner levels
        are not formed: one rounding per term, as the sums' reassoc flag allows)."""
        body = into
        for level in nest:
            lb, ub, step = (self.outside(v, body, mapping) for v in (level.lb, level.ub, level.step))
            loop, inner = make_for(lb, ub, step, loop_role(level), loop_axis(level))
            body.add_op(loop)
            mapping[level.body.block.args[0]] = inner.args[0]
            if body is not into:
                body.add_op(scf.YieldOp())
            body = inner
        innermost = nest[-1]

        def accumulate(b: BlockBuilder, j: SSAValue, at: SSAValue) -> None:
            values = {**mapping, self.column: j}
            values[innermost.body.block.args[1]] = b.add(memref.LoadOp.get(row, [at]))
            ops = list(innermost.body.block.ops)[:-1]
            inside = {r for o in innermost.body.walk() for r in o.results}
            for o in innermost.body.walk():
                for v in o.operands:
                    if v not in inside and v not in values and not (isinstance(v.owner, Block) and
                                                                    innermost.is_ancestor(v.owner.parent_op())):
                        self.outside(v, b.block, values)
            for op in ops:
                clone = op.clone(value_mapper=values)
                b.add(clone)
                values.update(zip(op.results, clone.results))
            b.add(memref.StoreOp.get(values[innermost.body.block.last_op.operands[0]], row, [at]))

        self.each(body, accumulate)
        body.add_op(scf.YieldOp())

    def _clone_needed(self, loop: scf.ForOp, b: BlockBuilder, values: dict) -> None:
        """Clone into b the ops of p's body the loop's terms read, then the loop's body."""
        read = [v for op in loop.body.walk() for v in op.operands]
        for op in [*feeding_ops(read, self.p.body.block), *list(loop.body.block.ops)[:-1]]:
            clone = op.clone(value_mapper=values)
            b.add(clone)
            values.update(zip(op.results, clone.results))

    def plain(self, into: Block, sweep: list[tuple[Operation, SSAValue]]) -> None:
        """The rows start at each sum's initial value, then one sweep accumulates them all."""
        mapping: dict = {}
        nest = _sum_nest(sweep[0][0])
        if nest is not None and len(nest) > 1:  # (a nest sums alone: _groups)
            self.fill(into, [(self.outside(nest[0].iter_args[0], into, mapping), sweep[0][1])])
            self.nest_terms(into, nest, sweep[0][1], mapping)
            return
        loops = [(sum_loop(reduce), row) for reduce, row in sweep]
        self.fill(into, [(self.outside(loop.iter_args[0], into, mapping), row) for loop, row in loops])
        self.terms(into, loops, mapping)

    def fill(self, into: Block, values: list[tuple[SSAValue, SSAValue]]) -> None:
        """for j in the tile: row[j] = value, for each (value, row)."""

        def start(b: BlockBuilder, j: SSAValue, at: SSAValue) -> None:
            for value, row in values:
                b.add(memref.StoreOp.get(value, row, [at]))

        self.each(into, start)

    def blocked(self, into: Block, sweep: list[tuple[scf.IfOp, SSAValue, SSAValue]]) -> None:
        """The blocked arm, interchanged: per block of terms a float row of partials, added into a
        float64 row; the plain arm as `plain`. The sums land in their rows either way."""
        choice = sweep[0][0]
        mapping: dict = {}
        cond = self.outside(choice.cond, into, mapping)
        long_arm, short_arm = Block(), Block()
        self.plain(short_arm, [(reduce, row) for reduce, row, _ in sweep])
        short_arm.add_op(scf.YieldOp())
        wide_zero = BlockBuilder(long_arm).const(0.0, Float64Type())
        self.fill(long_arm, [(wide_zero, wide) for _, _, wide in sweep])
        blocks = next(o for o in choice.true_region.block.ops if isinstance(o, scf.ForOp))
        part = next(o for o in blocks.body.block.ops if isinstance(o, scf.ForOp))
        lb, ub, step = (self.outside(v, long_arm, mapping) for v in (blocks.lb, blocks.ub, blocks.step))
        over, over_body = make_for(lb, ub, step, LoopRole.REDUCE, loop_axis(blocks))
        long_arm.add_op(over)
        inner = {blocks.body.block.args[0]: over_body.args[0]}
        for op in blocks.body.block.ops:  # the block's bounds (t, min(t + B, extent))
            if op is part or isinstance(op, scf.YieldOp) or _depends_on_part(op, part):
                continue
            clone = op.clone(value_mapper={**mapping, **inner})
            over_body.add_op(clone)
            inner.update(zip(op.results, clone.results))
        block_mapping = {**mapping, **inner}
        parts = []
        for reduce, row, _ in sweep:
            blocks_of = next(o for o in reduce.true_region.block.ops if isinstance(o, scf.ForOp))
            part_of = next(o for o in blocks_of.body.block.ops if isinstance(o, scf.ForOp))
            block_mapping[blocks_of.body.block.args[0]] = over_body.args[0]
            parts.append((part_of, row))
        parts = [(_retarget(part_of, block_mapping, part), row) for part_of, row in parts]
        self.fill(over_body, [(self.outside(part_of.iter_args[0], over_body, mapping), row) for part_of, row in parts])
        self.terms(over_body, parts, block_mapping)

        def widen(b: BlockBuilder, j: SSAValue, at: SSAValue) -> None:
            for _, row, wide in sweep:
                value = b.add(memref.LoadOp.get(row, [at]))
                if not isinstance(value.type, Float64Type):
                    value = b.add(arith.ExtFOp(value, Float64Type()))
                total = b.add(arith.AddfOp(b.add(memref.LoadOp.get(wide, [at])), value))
                b.add(memref.StoreOp.get(total, wide, [at]))

        self.each(over_body, widen)
        over_body.add_op(scf.YieldOp())

        def narrow(b: BlockBuilder, j: SSAValue, at: SSAValue) -> None:
            for _, row, wide in sweep:
                value = b.add(memref.LoadOp.get(wide, [at]))
                if value.type != row.type.element_type:
                    value = b.add(arith.TruncFOp(value, row.type.element_type))
                b.add(memref.StoreOp.get(value, row, [at]))

        self.each(long_arm, narrow)
        long_arm.add_op(scf.YieldOp())
        into.add_op(scf.IfOp(cond, [], Region([long_arm]), Region([short_arm])))


def _groups(sums: list[Operation]) -> list[list[Operation]]:
    """Sums of one form over the same range, in order (each sweep then reads the data once)."""
    groups: list[list[Operation]] = []
    for reduce in sums:
        for group in groups:
            if type(group[0]) is type(reduce) and sum_loop(group[0]) is not None and sum_loop(reduce) is not None \
                    and same_range(sum_loop(group[0]), sum_loop(reduce)):
                group.append(reduce)
                break
        else:
            groups.append([reduce])
    return groups


def _depends_on_part(op: Operation, part: scf.ForOp) -> bool:
    return any(v.owner is part or (isinstance(v.owner, Operation) and _depends_on_part(v.owner, part))
               for v in op.operands if isinstance(v.owner, Operation) and v.owner.parent_block() is op.parent_block())


def _retarget(part: scf.ForOp, mapping: dict, first: scf.ForOp) -> scf.ForOp:
    """The reduce_part loop with its bounds read through `mapping` (the shared block's t and stop:
    `first`'s, which every sum of the sweep shares by construction)."""
    part.operands = [mapping.get(v, v) for v in first.operands[:3]] + [mapping.get(v, v) for v in part.operands[3:]]
    return part


def interchanged(fn: func.FuncOp) -> list[tuple[scf.ForOp, list[Operation]]]:
    """The innermost parallel loops interchange-column-reductions interchanges in `fn`, each with
    its sums: its decision, which the cpu planner lists too."""
    found = []
    for p in [o for o in fn.walk() if isinstance(o, scf.ForOp) and loop_role(o) == LoopRole.PARALLEL]:
        if any(isinstance(o, scf.ForOp) and loop_role(o) == LoopRole.PARALLEL for o in p.body.walk() if o is not p):
            continue  # not innermost
        if not isinstance(p.parent_op(), scf.ForOp):
            continue  # the stage's own outer loop: cores split it
        sums = _candidates(p)
        if sums:
            found.append((p, sums))
    return found


Interchange = tuple[func.FuncOp, scf.ForOp, list[Operation]]
"""A function, its column loop and the sums interchanged in it."""


def nested(sums: list[Operation]) -> bool:
    """Whether any of the sums is a nest (a sum over several variables: _sum_nest) that is not a
    window's sum (_window_sum): left as it is unless a Reorder names it."""
    return any(len(nest := _sum_nest(s) or []) > 1 and not _window_sum(nest) for s in sums)


def _window_sum(nest: list[scf.ForOp]) -> bool:
    """Whether every level of a sum nest is a window's tap: its variable in a range test (a
    padding's), so the sum has a window's few terms; a level no test reads (a batch, a channel)
    makes it a contraction. Not a window of a few constant taps at every level (divisive
    normalization's): unroll-short-reductions makes it straight-line code, and the column loop
    around it vectorizes as it is."""
    def trips(level: scf.ForOp) -> int | None:
        bounds = [constant_index(v) for v in (level.lb, level.ub, level.step)]
        return None if None in bounds else len(range(*bounds))

    if all((t := trips(level)) is not None and t <= SHORT_TRIPS for level in nest):
        return False
    tests = [o for o in nest[0].walk() if isinstance(o, arith.CmpiOp)]
    return all(any(depends_within(v, level.body.block.args[0], nest[0]) for t in tests for v in t.operands)
               for level in nest)


def planned_interchanges(module: Operation) -> tuple[Reorder, ...]:
    """What the pass does by itself, as the cpu planner lists it: each interchange's Reorder, but a
    sum nest's in the order its loops have (left as it is: its row form pays only as the register
    tile of a GEMM, which the row passes do not make of a nest yet), so that a user's Reorder with
    the sums outside interchanges it."""
    return tuple(dict.fromkeys(Reorder(stage=own.stage, order=present) if nested(thing[2]) else own
                               for own, present, thing in interchanges(module)))


def interchanges(module: Operation) -> list[tuple[Reorder, tuple[int | str, ...], Interchange]]:
    """Each interchange as (its Reorder: the sums' loops, 'rK', outside the column loop; the order
    the loops have now; (function, column loop, sums))."""
    found = []
    for fn in functions(module):
        for p, sums in interchanged(fn):
            rows = tuple(dict.fromkeys(f"r{loop_axis(_sum_nest(s)[0])}" for s in sums))
            found.append((Reorder(stage=stage_number(fn), order=(*rows, loop_axis(p))), (loop_axis(p), *rows),
                          (fn, p, sums)))
    return found


@dataclass(frozen=True)
class InterchangeColumnReductions(ModulePass):
    """Turn column-walking sums into row accumulations (targets without UB staging); with
    `directives` (Reorder, printed, `;`-separated: passes/applying.py), the column loops they name
    (the column loop's axis and its sums' 'rK'): the sums outside interchanges them, the column loop
    outside leaves them as they are."""

    name = "interchange-column-reductions"
    row: int = ROW
    """Sums a stack row accumulates at once."""
    directives: str | None = None
    takes_text: ClassVar[str] = "Reorder"

    def __post_init__(self):
        check_counts(self, "row")

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Reorder)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        found = interchanges(op)
        if self.directives is None:  # by itself: sum nests stay as they are (planned_interchanges)
            found = [f for f in found if not nested(f[2][2])]
        for fn, p, sums in reordered(self, found, "column loop of column-walking sums"):
            _Rewrite(p, sums, fn.body.block, self.row).apply()
