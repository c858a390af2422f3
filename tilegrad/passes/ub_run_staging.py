"""UB staging of the GM accesses a tile does not cover (tile-for-target, scratchpad targets).

Tile staging (`ub_staging.py`) covers accesses whose innermost index walks a tile of the stage's
parallel axis. What is left reads or writes GM inside reductions, windows and gathers:

- a **run**: a load whose last index walks a loop around it monotonically, by at most s per
  iteration (its slope): the loop's variable, or that plus or minus values the loop does not
  change, times a constant, divided by a positive constant, clamped by such values (a window's
  `x[.., o + k - p]`, at a stride `dy[.., (w + p - j) / s]` or dilation `x[.., oh * 2 + j * d]`, a
  variable-extent reduction's `x[n, i + t]`, a flipped kernel's `w[.., 2 - k]`), of a tensor the
  stage does not write, its other indices unchanged by the loop, and none of its indices changed by
  the loops between (a per-row value `rstd[n]` read inside the loops over a row's columns walks the
  loop over rows). That loop is strip-mined by (R - 1) // s + 1 for runs of R elements; before each
  strip the run the strip reads (the span between the index at the strip's first and last
  iteration: a monotone index stays inside it, and it is at most R long) is copied GM->UB and the
  loads read it. A slope of more than one (MAX_SLOPE at most) moves the elements between too.
  A tensor the stage writes moves as runs too (of slope one) where the elements are the core's own
  (the loop walks the split axis of a stage split by its rows, or the indices name the variable of
  such a loop around it: bmm's `da[z, m, k]` along k under the core's batches z; attention's
  `dp[b, r, m]` under a fused split f with b = f / L, r = f % L) and every access of the tensor in
  the stage is in one of them (or a column walk's run), in loops none of which holds another (a
  per-row sum `gx[n]` stored, then read by the row's columns; attention's dp stored along m, then
  read along m by two sums): copied in before the strip (unless each iteration stores its element
  unconditionally), out after it.
  The loop still visits the same elements in the same order: results are bitwise unchanged.
- an **element**: any other access (a per-row scalar, a data-indexed gather, a scatter's
  read-modify-write) moves through a one-element UB slot: a load is `copy gm->slot; load slot`, a
  store is `store slot; copy slot->gm`, in the same block as the access, so it runs under the same
  conditions and in the same order as before. A load that the loops around it (through loops only,
  not the stage's own) do not change, and that store nothing into its tensor, moves once before
  them, under a test that they run (attention's `delta[b, r]`, read by every term of dq's sum).

After both, a tiled kernel on a scratchpad target has no direct GM load or store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from tilegrad.dialect import tg
from tilegrad.dialect.tg import LoopRole
from tilegrad.dialect.values import INDEX, BlockBuilder
from tilegrad.passes.common import constant_index, loop_axis, loop_role, make_for, viewed, written_memrefs
from tilegrad.passes.tiling_plan import UBBuffer
from tilegrad.passes.ub_staging import defined_outside


@dataclass
class Run:
    """Accesses of one GM tensor at the same indices whose last index walks `loop` at unit slope
    (loads; stores too where the loop walks rows the core owns)."""

    mem: SSAValue
    loop: scf.ForOp
    fixed: tuple[SSAValue, ...]
    last: SSAValue
    """The last index: the loop's variable, or a unit-slope monotone function of it."""
    accesses: list[Operation] = field(default_factory=list)
    buffer: UBBuffer | None = None
    length: int = 0
    """The elements of the run buffer: a strip of its loop reads at most that many."""
    slope: int = 1
    """The most its last index moves per iteration (a window at a stride reads every s-th element):
    a strip of its loop is (length - 1) // slope + 1 iterations."""

    @property
    def nested(self) -> bool:
        """Some access sits in loops inside the run's loop (a per-row value): read once per row,
        not once per term, so a short run already makes its copies few."""
        return any(a.parent_op() is not self.loop for a in self.accesses)

    @property
    def copies(self) -> str:
        """"in", "out" or "in+out": out where it stores; in where it loads, or where some element of
        a strip might not be stored (a store not made by every iteration of the loop itself)."""
        stores = [a for a in self.accesses if isinstance(a, memref.StoreOp)]
        if not stores:
            return "in"
        loads = len(stores) < len(self.accesses) or any(a.parent_op() is not self.loop for a in stores)
        return "in+out" if loads else "out"


@dataclass
class Leftovers:
    """What tile staging left in one stage: runs, and accesses that move one element at a time."""

    runs: list[Run] = field(default_factory=list)
    elements: list[Operation] = field(default_factory=list)
    slots: dict[str, UBBuffer] = field(default_factory=dict)
    """One single-element slot per element type ("f32" -> its buffer)."""
    rows: list[ShortRow] = field(default_factory=list)

    @property
    def buffers(self) -> list[UBBuffer]:
        return ([r.buffer for r in self.runs if r.buffer is not None] + [r.buffer for r in self.rows if r.buffer]
                + list(self.slots.values()))


def find_leftovers(nest: Operation, gm: set[SSAValue], covered: set[Operation],
                   points: set[scf.ForOp], owned: Callable[[scf.ForOp], bool],
                   walked: dict[Operation, scf.ForOp] | None = None) -> Leftovers:
    """Classify the GM accesses of a stage that no tile group covers into runs and elements.
    `owned(loop)`: the loop walks rows of the split axis that only this core walks. `walked`: the
    runs of column walks (covered), each to its point loop: its strips copy in before that loop."""
    walked = walked or {}
    written = written_memrefs(nest)
    runs: dict[tuple, Run] = {}
    left = Leftovers()
    touching: dict[SSAValue, list[Operation]] = {}  # every GM access of each tensor, covered ones too
    for op in nest.walk():
        if isinstance(op, (memref.LoadOp, memref.StoreOp)) and op.memref in gm:
            touching.setdefault(viewed(op.memref), []).append(op)
    for op in nest.walk():
        if not isinstance(op, (memref.LoadOp, memref.StoreOp)) or op.memref not in gm or op in covered:
            continue
        loop = _run_loop(op, points)
        if loop is not None and (isinstance(op, memref.LoadOp) or _owns(loop, tuple(op.indices)[:-1], owned)):
            fixed, last = tuple(op.indices)[:-1], op.indices[-1]
            key = (op.memref, loop, fixed, last)
            run = runs.get(key) or runs.setdefault(key, Run(op.memref, loop, fixed, last))
            run.accesses.append(op)
            run.slope = _slope(last, loop.body.block.args[0], loop)
        else:
            left.elements.append(op)
    # a tensor the stage writes moves by runs only if every access of it is in one, each along
    # rows the core owns, in loops none of which holds another (a run's strip copies in before its
    # loop and out after it: a second run of the tensor inside that loop would see stale GM)
    of_tensor: dict[SSAValue, list[tuple]] = {}
    for key, run in runs.items():
        of_tensor.setdefault(viewed(run.mem), []).append(key)
    for mem, keys in of_tensor.items():
        if mem not in written:
            continue
        mine = [runs[k] for k in keys]
        walks = [a for a in touching[mem] if a in walked]
        loops = [r.loop for r in mine] + list({walked[a]: None for a in walks})
        if (not all(_owns(r.loop, r.fixed, owned) for r in mine) or any(isinstance(a, memref.StoreOp) for a in walks)
                or len(touching[mem]) != sum(len(r.accesses) for r in mine) + len(walks)
                or any(a.is_ancestor(b) for a in loops for b in loops if a is not b)
                or len(set(loops)) != len(loops)):
            for k in keys:
                left.elements += runs.pop(k).accesses
    left.runs = list(runs.values())
    left.rows = find_short_rows(left.elements)
    in_rows = {a for r in left.rows for a in r.accesses}
    left.elements = [a for a in left.elements if a not in in_rows]
    return left


def _owns(loop: scf.ForOp, fixed: tuple[SSAValue, ...], owned: Callable[[scf.ForOp], bool]) -> bool:
    """Whether the elements a run along `loop` at other indices `fixed` touches are the core's own:
    the loop walks the rows of the split, or one of the indices is the variable of a loop around it
    that does (bmm's da[z, m, k] along k, under the core's batches z)."""
    if owned(loop):
        return True
    outer = loop.parent_op()
    while outer is not None:
        if isinstance(outer, scf.ForOp) and owned(outer) and _identified(outer.body.block.args[0], set(fixed)):
            return True
        outer = outer.parent_op()
    return False


def _identified(value: SSAValue, known: set[SSAValue]) -> bool:
    """Whether `value` follows from the values `known`: one of them, or both v / c and v % c of a
    value v that does (a fused split's rows: attention's b = f / L and r = f % L give f)."""
    known = set(known)
    while value not in known:
        quotients = {(o.lhs, o.rhs) for k in known if isinstance(o := k.owner, (arith.DivUIOp, arith.DivSIOp))}
        remainders = {(o.lhs, o.rhs) for k in known if isinstance(o := k.owner, (arith.RemUIOp, arith.RemSIOp))}
        more = {lhs for lhs, _ in quotients & remainders} - known
        if not more:
            return False
        known |= more
    return True


def _run_loop(access: Operation, points: set[scf.ForOp]) -> scf.ForOp | None:
    """The loop whose run the access reads or writes: the innermost loop around it that changes one
    of its indices, through loops only (a branch between would copy what the access might not
    touch), if its last index walks that loop at unit slope and the other indices do not change."""
    indices = list(access.indices)
    loop = access.parent_op()
    while isinstance(loop, scf.ForOp) and indices and all(defined_outside(v, loop) for v in indices):
        loop = loop.parent_op()
    if (not isinstance(loop, scf.ForOp) or not indices or loop in points
            or loop_role(loop) in (LoopRole.TILE, LoopRole.COPY, LoopRole.RUN) or constant_index(loop.step) != 1):
        return None
    iv = loop.body.block.args[0]
    slope = _slope(indices[-1], iv, loop)
    if slope is None or (slope > 1 and isinstance(access, memref.StoreOp)):  # a store's run has no gaps
        return None
    if slope <= MAX_SLOPE and all(_invariant(v, iv, loop) for v in indices[:-1]):
        return loop
    return None


MAX_SLOPE = 4
"""The steepest run staged: a strip moves up to this many elements per one it reads (a 3x3 window at
stride 2 reads x at every other column; its other taps read the ones between)."""

_PURE = (arith.ConstantOp, arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.MinSIOp, arith.MaxSIOp,
         arith.DivUIOp, arith.DivSIOp, arith.RemUIOp, arith.RemSIOp)


def _inside(value: SSAValue, loop: scf.ForOp) -> Operation | None:
    """The op in the loop's own body that defines `value`, None if it is defined outside the loop."""
    owner = value.owner
    return owner if isinstance(owner, Operation) and owner.parent_op() is loop else None


def _invariant(value: SSAValue, iv: SSAValue, loop: scf.ForOp) -> bool:
    """Defined outside the loop, or by index arithmetic in its body of such values."""
    if defined_outside(value, loop):
        return True
    op = _inside(value, loop)
    return isinstance(op, _PURE) and all(_invariant(v, iv, loop) for v in op.operands)


def _slope(value: SSAValue, iv: SSAValue, loop: scf.ForOp) -> int | None:
    """The most `value` moves between consecutive iv, if it is monotone in iv: iv, plus or minus
    loop-invariant values, times a constant (a window's `oh * 2 + i`: 2), divided by a positive
    constant (a window's position at a stride, `(w + p - j) / s`: a monotone index divided by c moves
    at most ceil(slope / c)), clamped (min, max) by loop-invariant values. None if not monotone."""
    if value is iv:
        return 1
    op = _inside(value, loop)
    if isinstance(op, arith.DivSIOp) and (constant_index(op.rhs) or 0) > 0:
        inner = _slope(op.lhs, iv, loop)
        return None if inner is None else -(-inner // constant_index(op.rhs))
    if isinstance(op, arith.MuliOp):
        for a, b in (op.operands, reversed(op.operands)):
            inner, factor = _slope(a, iv, loop), constant_index(b)
            if inner is not None and factor:
                return inner * abs(factor)
        return None
    if not isinstance(op, (arith.AddiOp, arith.SubiOp, arith.MinSIOp, arith.MaxSIOp)):
        return None
    a, b = op.operands  # one side walks, the other does not change (inv - iv walks backwards)
    if _invariant(b, iv, loop):
        return _slope(a, iv, loop)
    if _invariant(a, iv, loop):
        return _slope(b, iv, loop)
    return None


def _clone_at(values: list[SSAValue], loop: scf.ForOp, b: BlockBuilder, mapping: dict[SSAValue, SSAValue]) -> list:
    """The values as `b` computes them: the ops of the loop's body they come from are cloned there,
    with `mapping` (the loop variable -> a value at the builder) applied."""

    def value(v: SSAValue) -> SSAValue:
        if v in mapping:
            return mapping[v]
        op = _inside(v, loop)
        if op is None:
            return v
        clone = op.clone(value_mapper={o: value(o) for o in op.operands})
        b.add(clone)
        mapping[v] = clone.results[0]
        return mapping[v]

    return [value(v) for v in values]


def stage_runs(runs: list[Run], buffers: dict[int, SSAValue]) -> list[tg.CopyOp]:
    """Strip-mine each run loop by its runs' length and copy every run of it into its UB buffer.
    The copies built."""
    by_loop: dict[scf.ForOp, list[Run]] = {}
    built: list[tg.CopyOp] = []
    for run in runs:
        by_loop.setdefault(run.loop, []).append(run)
    for loop, loop_runs in by_loop.items():
        parent = loop.parent_block()
        size = arith.ConstantOp(IntegerAttr(min((r.length - 1) // r.slope + 1 for r in loop_runs), INDEX))
        parent.insert_op_before(size, loop)
        axis = loop_axis(loop)
        strip, body = make_for(loop.lb, loop.ub, size.result, LoopRole.RUN, axis, list(loop.iter_args))
        parent.insert_op_before(strip, loop)
        if "tg.stage" in loop.attributes:  # the stage's outer loop: the strip is the stage now
            strip.attributes["tg.stage"] = loop.attributes.pop("tg.stage")
        for old, new in zip(loop.results, strip.results):
            old.replace_all_uses_with(new)
        start = body.args[0]
        b = BlockBuilder(body)
        end = b.add(arith.MinSIOp(b.add(arith.AddiOp(start, size.result)), loop.ub))
        count = b.add(arith.SubiOp(end, start))
        zero = b.index(0)
        iv = loop.body.block.args[0]
        firsts: dict[int, SSAValue] = {}
        outs: list[tg.CopyOp] = []
        for run in loop_runs:
            ub = buffers[id(run)]
            fixed = _clone_at(list(run.fixed), loop, b, {})
            if run.last is iv:  # the plain run: [start, end)
                first, length = start, count
            else:  # the span between the index at the strip's first and last iteration
                at_start = _clone_at([run.last], loop, b, {iv: start})[0]
                at_end = _clone_at([run.last], loop, b, {iv: b.add(arith.SubiOp(end, b.index(1)))})[0]
                first = b.add(arith.MinSIOp(at_start, at_end))
                length = b.add(arith.AddiOp(b.add(arith.SubiOp(b.add(arith.MaxSIOp(at_start, at_end)), first)),
                                            b.index(1)))
            firsts[id(run)] = first
            if "in" in run.copies:
                copy = tg.CopyOp("gm_to_ub", run.mem, [*fixed, first], ub, [zero], length)
                b.add(copy)
                built.append(copy)
            if "out" in run.copies:  # after the strip's iterations: built below, once the loop is in
                outs.append(tg.CopyOp("ub_to_gm", ub, [zero], run.mem, [*fixed, first], length))
        loop.detach()
        loop.operands = [start, end, loop.step, *body.args[1:]]
        body.add_op(loop)
        for copy in outs:
            b.add(copy)
            built.append(copy)
        b.add(scf.YieldOp(*loop.results))
        for run in loop_runs:
            ub = buffers[id(run)]
            for access in run.accesses:
                a = BlockBuilder(access.parent_block(), access)
                local = a.add(arith.SubiOp(access.indices[-1], firsts[id(run)]))
                if isinstance(access, memref.LoadOp):
                    new = memref.LoadOp.get(ub, [local])
                    access.parent_block().insert_op_before(new, access)
                    access.res.replace_all_uses_with(new.res)
                else:
                    access.parent_block().insert_op_before(memref.StoreOp.get(access.value, ub, [local]), access)
                access.detach()
                access.erase()
    return built


def stage_elements(elements: list[Operation], slots: dict[str, SSAValue]) -> list[tg.CopyOp]:
    """Move each access through the one-element slot of its element type. The copies built."""
    built: list[tg.CopyOp] = []
    for access in elements:
        slot = slots[str(access.memref.type.element_type)]
        b = BlockBuilder(access.parent_block(), access)
        zero = b.index(0)
        one = b.index(1)
        indices = list(access.indices)
        hoisted = _hoisted_out_of(access) if isinstance(access, memref.LoadOp) else []
        if hoisted:  # once before the loops, if they run at all (else it might read past the tensor)
            b = BlockBuilder(hoisted[-1].parent_block(), hoisted[-1])
            zero = b.index(0)
            one = b.index(1)
            runs = None
            for loop in hoisted:
                nonempty = b.add(arith.CmpiOp(loop.lb, loop.ub, "slt"))
                runs = nonempty if runs is None else b.add(arith.AndIOp(runs, nonempty))
            then = Block()
            b.add(scf.IfOp(runs, [], Region([then])))
            indices = [_recompute(v, hoisted[-1], BlockBuilder(then)) for v in indices]
            copy = tg.CopyOp("gm_to_ub", access.memref, indices, slot, [zero], one)
            then.add_ops([copy, scf.YieldOp()])
            new = b.add(memref.LoadOp.get(slot, [zero]))
            access.res.replace_all_uses_with(new)
        elif isinstance(access, memref.LoadOp):
            copy = tg.CopyOp("gm_to_ub", access.memref, indices, slot, [zero], one)
            b.add(copy)
            new = memref.LoadOp.get(slot, [zero])
            access.parent_block().insert_op_before(new, access)
            access.res.replace_all_uses_with(new.res)
        else:
            b.add(memref.StoreOp.get(access.value, slot, [zero]))
            after = access.next_op
            copy = tg.CopyOp("ub_to_gm", slot, [zero], access.memref, indices, one)
            BlockBuilder(access.parent_block(), after).add(copy)
        built.append(copy)
        access.detach()
        access.erase()
    return built


def _hoisted_out_of(load: memref.LoadOp) -> list[scf.ForOp]:
    """The loops (innermost first) an element load moves out of: those around it, through loops
    only, that change none of its indices, store nothing into its tensor, and have bounds set
    outside the outermost (so a test before it says whether they run at all); never the stage's
    own loop. An element a reduction reads for every term (attention's delta[b, r]) moves once."""
    mem = viewed(load.memref)
    chain: list[scf.ForOp] = []
    loop = load.parent_op()
    while isinstance(loop, scf.ForOp) and "tg.stage" not in loop.attributes:
        if not all(_computed_outside(v, loop) for v in load.indices) or _stores_into(loop, mem):
            break
        chain.append(loop)
        loop = loop.parent_op()
    while chain and not all(defined_outside(v, chain[-1]) for c in chain for v in (c.lb, c.ub)):
        chain.pop()
    return chain


def _computed_outside(value: SSAValue, loop: scf.ForOp) -> bool:
    """Defined outside the loop, or index arithmetic of such values (recomputed where it moves)."""
    if defined_outside(value, loop):
        return True
    op = value.owner
    return isinstance(op, _PURE) and all(_computed_outside(v, loop) for v in op.operands)


def _recompute(value: SSAValue, loop: scf.ForOp, b: BlockBuilder) -> SSAValue:
    """`value` (see _computed_outside) computed at `b`, before the loop."""
    if defined_outside(value, loop):
        return value
    op = value.owner
    clone = op.clone(value_mapper={v: _recompute(v, loop, b) for v in op.operands})
    b.add(clone)
    return clone.results[0]


def _stores_into(loop: scf.ForOp, mem: SSAValue) -> bool:
    for op in loop.walk():
        if isinstance(op, memref.StoreOp) and viewed(op.memref) is mem:
            return True
        if isinstance(op, tg.CopyOp) and op.direction.data == "ub_to_gm" and viewed(op.dst) is mem:
            return True
    return False


# ---- column walks: a reduction over rows inside the tile of columns it reduces ------------------------------------

@dataclass
class ColumnWalk:
    """A tile's point loop `point` whose body reduces over rows (`reduce`, bounds the tile does not
    change) reading GM at [.., row, .., column]: a column walk per point. It is staged by blocks:
    the reduction is strip-mined by `rows`, and per strip each walked tensor's block (rows x the
    tile's columns) is copied GM->UB once, then every point of the tile adds the strip's terms to
    its partial sum, kept in UB between strips. Every point still adds the same terms in the same
    order: results are bitwise unchanged.

    A sum that may be long has two forms (lower-tg-to-loops: `choice` picks, outside the point loop's
    changes, the `blocked` form for more than REDUCE_BLOCK rows, else the plain `reduce`): blocks of
    rows (`part`, REDUCE_PART) summed in the element type and added up in float64. Staged, both
    forms walk strips of rows; the blocked one keeps each point's float64 total in UB too, and
    each point still adds its block sums in the same order."""

    point: scf.ForOp
    reduce: scf.ForOp
    blocks: dict[tuple, list[memref.LoadOp]] = field(default_factory=dict)
    """(tensor, row position, other indices) -> its column-walk loads."""
    runs: dict[tuple, list[memref.LoadOp]] = field(default_factory=dict)
    """(tensor, other indices) -> loads whose last index is the row (a per-row value)."""
    columns: dict[tuple, list[memref.LoadOp]] = field(default_factory=dict)
    """(tensor, row position, other indices) -> loads of one element per row the tile's points share,
    down a column (attention's p[b, l, m] under a tile of d): a strip's column is copied once per
    tile, an element per row, not once per point."""
    panels: dict[tuple, scf.ForOp] = field(default_factory=dict)
    """column key -> the loop around the tile its column index walks (linear's dw[o, i] reads
    dy[n, o] under the core's loop over o): the column moves in panels, rows x PANEL columns of that
    loop, one run per row, copied once per PANEL iterations of it; each strip fills its column from
    the panel. Only while the rows fit the panel (a test at run time): else as columns."""
    rows: int = 0
    buffers: dict[tuple, UBBuffer] = field(default_factory=dict)
    """block / run key -> its buffer; ("partial", k) -> the partial sums of the reduction's result k;
    ("total", 0) -> the blocked form's float64 totals."""
    choice: scf.IfOp | None = None
    blocked: scf.ForOp | None = None
    part: scf.ForOp | None = None

    @property
    def accesses(self) -> list[memref.LoadOp]:
        return [a for loads in (*self.blocks.values(), *self.runs.values(), *self.columns.values()) for a in loads]

    @property
    def sums(self) -> dict[tuple, Attribute]:
        """The UB buffers of per-point sums, with their element types."""
        found = {("partial", k): v.type for k, v in enumerate(self.reduce.iter_args)}
        if self.blocked is not None:
            found[("total", 0)] = self.blocked.iter_args[0].type
        return found


def find_column_walks(point: scf.ForOp, gm: set[SSAValue], written: set[SSAValue]) -> list[ColumnWalk]:
    """The column walks in a point loop's body it can stage by blocks, one per sum (layer norm's
    dgamma and dbeta under one tile of columns are two): a reduction loop of unit step over bounds
    the point loop does not change (or its two forms, plain and blocked), whose body is
    straight-line code (no loops, branches or stores) computing from values it can recompute
    (index and constant arithmetic of the point's body), and reads at least one tensor the stage
    does not write at [.., row, .., column]. Each walk's strips go before the point loop, and the
    point loop reads each sum's partials where the sum was: the sums stay independent."""
    sums = [o for o in point.body.block.ops if isinstance(o, (scf.ForOp, scf.IfOp)) and loop_role(o) == LoopRole.REDUCE]
    walks = [_column_walk(point, s, gm, written) for s in sums]
    return [w for w in walks if w is not None]


def _column_walk(point: scf.ForOp, sum_op: scf.ForOp | scf.IfOp, gm: set[SSAValue],
                 written: set[SSAValue]) -> ColumnWalk | None:
    if isinstance(sum_op, scf.IfOp):
        forms = _two_forms(sum_op, point)
        if forms is None:
            return None
        blocked, part, plain = forms
        walk = ColumnWalk(point, plain, choice=sum_op, blocked=blocked, part=part)
        loops = [plain, part]
    else:
        walk = ColumnWalk(point, sum_op)
        loops = [sum_op]
    if not all(_point_invariant(v, point) for v in (walk.reduce.lb, walk.reduce.ub)):
        return None
    for reduce in loops:
        if constant_index(reduce.step) != 1 or not _walk_terms(walk, reduce, gm, written):
            return None
        if not all(defined_outside(v, point) or _recomputable(v, point) for v in reduce.iter_args):
            return None
    return walk if walk.blocks else None


def panel_loop(walk: ColumnWalk, key: tuple) -> scf.ForOp | None:
    """The loop around the walk's point loop whose variable is the column's last index, if the
    column can move in panels along it: a loop of unit step, the column's other indices and the
    sum's rows set outside it."""
    mem, row_position, fixed = key
    indices = dict(fixed)
    last = indices.get(len(fixed))
    if last is None or row_position == len(fixed):
        return None
    loop = walk.point.parent_op()
    while isinstance(loop, scf.ForOp | scf.IfOp):
        if isinstance(loop, scf.ForOp) and loop.body.block.args[0] is last:
            inside = [v for k, v in indices.items() if k != len(fixed)] + [walk.reduce.lb, walk.reduce.ub]
            if constant_index(loop.step) == 1 and all(defined_outside(v, loop) for v in inside):
                return loop
            return None
        loop = loop.parent_op()
    return None


def stage_panels(walk: ColumnWalk, buffers: dict[tuple, SSAValue]) -> tuple[dict, list[tg.CopyOp]]:
    """Per panel loop L: at the top of its body, for the first iteration of each PANEL of them, copy
    rows x width of each column's tensor (one run per row), if the rows fit the panel buffer. The
    values a strip needs to fill its column from the panel, and the copies built."""
    built: list[tg.CopyOp] = []
    found = {}
    for key, loop in walk.panels.items():
        mem, row_position, fixed = key
        panel = buffers[("panel", key)]
        capacity, width = panel.type.get_shape()
        block = loop.body.block
        b = BlockBuilder(block, block.first_op)
        iv, lb, ub = block.args[0], loop.lb, loop.ub
        step = b.index(width)
        first = b.add(arith.AddiOp(lb, b.add(arith.MuliOp(b.add(arith.DivUIOp(b.add(arith.SubiOp(iv, lb)), step)),
                                                          step))))
        rows = b.add(arith.SubiOp(walk.reduce.ub, walk.reduce.lb))
        fits = b.add(arith.CmpiOp(rows, b.index(capacity), "sle"))
        starts = b.add(arith.CmpiOp(iv, first, "eq"))
        then = Block()
        b.add(scf.IfOp(b.add(arith.AndIOp(fits, starts)), [], Region([then])))
        tb = BlockBuilder(then)
        length = tb.add(arith.SubiOp(tb.add(arith.MinSIOp(tb.add(arith.AddiOp(iv, step)), ub)), iv))
        copy_rows, body = make_for(walk.reduce.lb, walk.reduce.ub, tb.index(1), LoopRole.COPY, loop_axis(walk.reduce))
        tb.add(copy_rows)
        cb = BlockBuilder(body)
        row = body.args[0]
        gm_idx = dict(fixed) | {row_position: row, len(fixed): iv}
        copy = tg.CopyOp("gm_to_ub", mem, [gm_idx[k] for k in range(len(gm_idx))], panel,
                         [cb.add(arith.SubiOp(row, walk.reduce.lb)), cb.index(0)], length)
        cb.add(copy)
        cb.add(scf.YieldOp())
        then.add_op(scf.YieldOp())
        built.append(copy)
        found[key] = (fits, b.add(arith.SubiOp(iv, first)))
    return found, built


def _walk_terms(walk: ColumnWalk, reduce: scf.ForOp, gm: set[SSAValue], written: set[SSAValue]) -> bool:
    """Whether the reduction's body is one a column walk stages; its loads go to `walk`."""
    point = walk.point
    p, r = point.body.block.args[0], reduce.body.block.args[0]
    for op in reduce.body.block.ops:
        if op.regions or isinstance(op, (memref.StoreOp, tg.CopyOp)):
            return False
        for v in op.operands:
            if not (defined_outside(v, point) or v is p or reduce.is_ancestor(_owner(v)) or _recomputable(v, point)):
                return False
        if not isinstance(op, memref.LoadOp) or op.memref not in gm:
            continue
        indices = list(op.indices)
        fixed = tuple((k, v) for k, v in enumerate(indices) if v is not r and v is not p)
        if not all(defined_outside(v, point) for _, v in fixed) or indices.count(r) > 1 or indices.count(p) > 1:
            return False
        if indices[-1] is p and r in indices and viewed(op.memref) not in written:
            walk.blocks.setdefault((op.memref, indices.index(r), fixed), []).append(op)
        elif indices[-1] is r and p not in indices:
            walk.runs.setdefault((op.memref, fixed), []).append(op)
        elif r in indices and p not in indices and viewed(op.memref) not in written:
            walk.columns.setdefault((op.memref, indices.index(r), fixed), []).append(op)
        elif r not in indices and p not in indices:
            continue  # the same element for every point and row (attention's delta[b, r]): left to the leftovers
        else:  # a GM read of its own (x[p, r]: a row per point) would need the point loop it leaves
            return False
    return True


_ARITH = (*_PURE, arith.ExtFOp, arith.TruncFOp, arith.AddfOp, arith.CmpiOp)
"""What the two forms of a long sum compute around their loops: bounds, the float64 total."""


def _two_forms(choice: scf.IfOp, point: scf.ForOp) -> tuple[scf.ForOp, scf.ForOp, scf.ForOp] | None:
    """(blocked, part, plain) of a sum lowered in two forms, if it has the shape lower-tg-to-loops
    gives it: `if long {total = 0; for t step B {part = sum of block t; total += f64(part)}; narrow
    total} else {plain sum}`, with `long` and the loops' bounds unchanged by the point loop."""
    then, other = choice.true_region.blocks, choice.false_region.blocks
    if len(choice.results) != 1 or len(then) != 1 or len(other) != 1 or not _point_invariant(choice.cond, point):
        return None
    then_loops = [o for o in then[0].ops if isinstance(o, scf.ForOp)]
    plains = [o for o in other[0].ops if isinstance(o, scf.ForOp)]
    if len(then_loops) != 1 or len(plains) != 1 or len(list(other[0].ops)) != 2:
        return None
    blocked, plain = then_loops[0], plains[0]
    if other[0].last_op.operands[0] is not plain.results[0] or len(plain.iter_args) != 1:
        return None
    parts = [o for o in blocked.body.block.ops if isinstance(o, scf.ForOp)]
    if (len(parts) != 1 or loop_role(parts[0]) != LoopRole.REDUCE_PART or len(blocked.iter_args) != 1
            or len(parts[0].iter_args) != 1 or not all(_point_invariant(v, point) for v in blocked.operands[:3])):
        return None
    part = parts[0]
    # around the loops only arithmetic, of values the staging has where it clones it (stage_column_walk)
    known = {blocked.body.block.args[0], blocked.body.block.args[1], part.results[0], blocked.results[0]}
    for block, loop in ((then[0], blocked), (blocked.body.block, part)):
        for op in block.ops:
            if op is loop or isinstance(op, scf.YieldOp):
                continue
            if op.regions or not isinstance(op, _ARITH):
                return None
            if not all(v in known or defined_outside(v, point) or _recomputable(v, point) for v in op.operands):
                return None
            known.update(op.results)
    if not all(v in known for v in (part.lb, part.ub, blocked.iter_args[0])):
        return None
    return blocked, part, plain


def _point_invariant(value: SSAValue, point: scf.ForOp) -> bool:
    """Defined outside the point loop, or index arithmetic (or a test) in its body of such values."""
    if defined_outside(value, point):
        return True
    op = value.owner
    return (isinstance(op, (*_PURE, arith.CmpiOp)) and op.parent_op() is point
            and all(_point_invariant(v, point) for v in op.operands))


def _owner(value: SSAValue) -> Operation:
    owner = value.owner
    return owner if isinstance(owner, Operation) else owner.parent_op()


def _recomputable(value: SSAValue, point: scf.ForOp) -> bool:
    """Index or constant arithmetic in the point loop's own body of its variable and outer values."""
    op = value.owner
    if not isinstance(op, Operation) or op.parent_op() is not point:
        return value is point.body.block.args[0] or defined_outside(value, point)
    return isinstance(op, (*_PURE, arith.ConstantOp)) and all(_recomputable(v, point) for v in op.operands)


def stage_column_walk(walk: ColumnWalk, tile_start: SSAValue, tile_end: SSAValue,
                      buffers: dict[tuple, SSAValue]) -> list[tg.CopyOp]:
    """Stage one column walk by blocks (see ColumnWalk), in the tile loop body around its point
    loop, which the tile loop has already strip-mined to [tile_start, tile_end). The copies built."""
    point, reduce = walk.point, walk.reduce
    p = point.body.block.args[0]
    axis, block = loop_axis(point), point.parent_block()
    rows_lb = reduce.lb  # the panels' first row (the staging below moves the reduction's bounds)
    panels, built = stage_panels(walk, buffers)
    b = BlockBuilder(block, point)

    def points(builder: BlockBuilder) -> tuple[BlockBuilder, SSAValue, SSAValue]:
        """A loop over the tile's points; a builder of its body, its variable and offset in the tile."""
        loop, body = make_for(tile_start, tile_end, builder.index(1), LoopRole.PARALLEL, axis)
        builder.add(loop)
        body.add_op(scf.YieldOp())
        inner = BlockBuilder(body, body.last_op)
        return inner, body.args[0], inner.add(arith.SubiOp(body.args[0], tile_start))

    def replay(ops: list[Operation], builder: BlockBuilder, mapping: dict[SSAValue, SSAValue],
               piv: SSAValue) -> None:
        """Clone straight-line arithmetic at `builder`, its operands through `mapping` (values of the
        point loop's body recomputed there for the point `piv`)."""
        for op in ops:
            operands = {v: mapping[v] if v in mapping else _clone_at([v], point, builder, {p: piv})[0]
                        for v in op.operands}
            clone = op.clone(value_mapper=operands)
            builder.add(clone)
            mapping.update(zip(op.results, clone.results))

    def walk_strips(reduce: scf.ForOp, builder: BlockBuilder, lb: SSAValue, ub: SSAValue) -> None:
        """Strips of rows of [lb, ub): copy the strip's blocks and runs, then every point adds the
        strip's terms of `reduce` to its partial sums."""
        r = reduce.body.block.args[0]
        rows = builder.index(walk.rows)
        strip, strip_body = make_for(lb, ub, rows, LoopRole.RUN, loop_axis(reduce))
        builder.add(strip)
        sb = BlockBuilder(strip_body)
        start = strip_body.args[0]
        end = sb.add(arith.MinSIOp(sb.add(arith.AddiOp(start, rows)), ub))
        zero, one = sb.index(0), sb.index(1)
        width = sb.add(arith.SubiOp(tile_end, tile_start))
        for key in walk.blocks:
            mem, row_position, fixed = key
            copy_rows, copy_body = make_for(start, end, one, LoopRole.COPY, loop_axis(reduce))
            sb.add(copy_rows)
            cb = BlockBuilder(copy_body)
            row = copy_body.args[0]
            gm_idx = dict(fixed) | {row_position: row, len(fixed) + 1: tile_start}
            copy = tg.CopyOp("gm_to_ub", mem, [gm_idx[k] for k in range(len(gm_idx))], buffers[key],
                             [cb.add(arith.SubiOp(row, start)), zero], width)
            cb.add(copy)
            cb.add(scf.YieldOp())
            built.append(copy)
        for key in walk.runs:
            mem, fixed = key
            copy = tg.CopyOp("gm_to_ub", mem, [v for _, v in fixed] + [start], buffers[key], [zero],
                             sb.add(arith.SubiOp(end, start)))
            sb.add(copy)
            built.append(copy)
        for key in walk.columns:  # strided in GM: one element per row
            mem, row_position, fixed = key
            target = sb
            if key in panels:  # from the panel if the rows fit it, else from GM
                fits, column = panels[key]
                from_panel, from_gm = Block(), Block()
                sb.add(scf.IfOp(fits, [], Region([from_panel]), Region([from_gm])))
                fill, fill_body = make_for(start, end, one, LoopRole.PARALLEL, loop_axis(reduce))
                from_panel.add_ops([fill, scf.YieldOp()])
                fb = BlockBuilder(fill_body)
                row = fill_body.args[0]
                value = fb.add(memref.LoadOp.get(buffers[("panel", key)],
                                                 [fb.add(arith.SubiOp(row, rows_lb)), column]))
                fb.add(memref.StoreOp.get(value, buffers[key], [fb.add(arith.SubiOp(row, start))]))
                fb.add(scf.YieldOp())
                from_gm.add_op(scf.YieldOp())
                target = BlockBuilder(from_gm, from_gm.last_op)
            copy_rows, copy_body = make_for(start, end, one, LoopRole.COPY, loop_axis(reduce))
            target.add(copy_rows)
            cb = BlockBuilder(copy_body)
            row = copy_body.args[0]
            gm_idx = dict(fixed) | {row_position: row}
            copy = tg.CopyOp("gm_to_ub", mem, [gm_idx[k] for k in range(len(gm_idx))], buffers[key],
                             [cb.add(arith.SubiOp(row, start))], one)
            cb.add(copy)
            cb.add(scf.YieldOp())
            built.append(copy)
        pb, piv, plocal = points(sb)
        strip_body.add_op(scf.YieldOp())
        sums = [pb.add(memref.LoadOp.get(partial, [plocal])) for partial in partials]
        # the reduction itself moves into the strip, over its rows, for each point
        mapping: dict[SSAValue, SSAValue] = {p: piv}
        for op in reduce.body.block.ops:
            for k, v in enumerate(op.operands):
                if not defined_outside(v, point) and not reduce.is_ancestor(_owner(v)) and v is not p:
                    op.operands[k] = _clone_at([v], point, pb, mapping)[0]
                elif v is p:
                    op.operands[k] = piv
        reduce.detach()
        reduce.operands = [start, end, reduce.step, *sums]
        pb.add(reduce)
        for k, partial in enumerate(partials):
            pb.add(memref.StoreOp.get(reduce.results[k], partial, [plocal]))
        for load in [a for a in walk.accesses if reduce.is_ancestor(a)]:
            a = BlockBuilder(load.parent_block(), load)
            row_local = a.add(arith.SubiOp(r, start))
            key = next(k for k, loads in (*walk.blocks.items(), *walk.runs.items(), *walk.columns.items())
                       if load in loads)
            index = [row_local, a.add(arith.SubiOp(piv, tile_start))] if key in walk.blocks else [row_local]
            new = memref.LoadOp.get(buffers[key], index)
            load.parent_block().insert_op_before(new, load)
            load.res.replace_all_uses_with(new.res)
            load.detach()
            load.erase()

    def plain(reduce: scf.ForOp, builder: BlockBuilder) -> None:
        """The sum over all its rows: the partial sums start at its initial values."""
        ib, iv, local = points(builder)
        for partial, init in zip(partials, _clone_at(list(reduce.iter_args), point, ib, {p: iv})):
            ib.add(memref.StoreOp.get(init, partial, [local]))
        lb, ub = _clone_at([reduce.lb, reduce.ub], point, builder, {})
        walk_strips(reduce, builder, lb, ub)

    partials = [buffers[key] for key in walk.sums if key[0] == "partial"]
    result = walk.choice or reduce
    # the point loop's body reads the finished sums where the reduction was (before the reduction's
    # results get uses of their own in the strips)
    at = BlockBuilder(point.body.block, result)
    local = at.add(arith.SubiOp(p, tile_start))
    for value, partial in zip(result.results, partials):
        value.replace_all_uses_with(at.add(memref.LoadOp.get(partial, [local])))
    if walk.choice is None:
        plain(reduce, b)
    else:
        blocked, part, choice = walk.blocked, walk.part, walk.choice
        cond = _clone_at([choice.cond], point, b, {})[0]
        then, other = Block(), Block()
        b.add(scf.IfOp(cond, [], Region([then]), Region([other])))
        other.add_op(scf.YieldOp())
        plain(reduce, BlockBuilder(other, other.last_op))
        # the blocked form: per point a float64 total; per block of rows its part sums, as plain
        then.add_op(scf.YieldOp())
        tb = BlockBuilder(then, then.last_op)
        total = buffers[("total", 0)]
        long_ops = list(choice.true_region.block.ops)
        before = long_ops[:long_ops.index(blocked)]
        after = [o for o in long_ops[long_ops.index(blocked) + 1:] if not isinstance(o, scf.YieldOp)]
        ib, iv, local = points(tb)
        mapping: dict[SSAValue, SSAValue] = {}
        replay(before, ib, mapping, iv)
        init = mapping.get(blocked.iter_args[0]) or _clone_at([blocked.iter_args[0]], point, ib, {p: iv})[0]
        ib.add(memref.StoreOp.get(init, total, [local]))
        lb, ub, step = _clone_at(list(blocked.operands[:3]), point, tb, {})
        outer, outer_body = make_for(lb, ub, step, LoopRole.RUN, loop_axis(blocked))
        tb.add(outer)
        outer_body.add_op(scf.YieldOp())
        ob = BlockBuilder(outer_body, outer_body.last_op)
        inner_ops = list(blocked.body.block.ops)
        mapping = {blocked.body.block.args[0]: outer_body.args[0]}
        replay(inner_ops[:inner_ops.index(part)], ob, mapping, outer_body.args[0])  # the block's bounds
        pb, piv, plocal = points(ob)
        for partial, init in zip(partials, _clone_at(list(part.iter_args), point, pb, {p: piv})):
            pb.add(memref.StoreOp.get(init, partial, [plocal]))
        walk_strips(part, ob, mapping[part.lb], mapping[part.ub])
        # every point adds its block's sum to its total, as the blocked loop did
        pb, piv, plocal = points(ob)
        adds = {blocked.body.block.args[1]: pb.add(memref.LoadOp.get(total, [plocal])),
                part.results[0]: pb.add(memref.LoadOp.get(partials[0], [plocal]))}
        replay([o for o in inner_ops[inner_ops.index(part) + 1:] if not isinstance(o, scf.YieldOp)], pb, adds, piv)
        pb.add(memref.StoreOp.get(adds[blocked.body.block.last_op.operands[0]], total, [plocal]))
        # and its result is the total narrowed, as after the blocked loop
        pb, piv, plocal = points(tb)
        ends = {blocked.results[0]: pb.add(memref.LoadOp.get(total, [plocal]))}
        replay(after, pb, ends, piv)
        pb.add(memref.StoreOp.get(ends[choice.true_region.block.last_op.operands[0]], partials[0], [plocal]))
    if walk.choice is not None:
        walk.choice.detach()
        walk.choice.erase(safe_erase=False)
    return built


# ---- short rows: a few neighbouring elements one block reads or writes at constant last indices -----------------

@dataclass
class ShortRow:
    """Element accesses of one tensor in one block, all loads or all stores, at the same leading
    indices and constant last indices that cover [first, first + length) (an unrolled or jammed
    innermost axis: `dw[k, c, i, 0]`, `dw[k, c, i, 1]`, `dw[k, c, i, 2]`), with no other access of
    the tensor between them. The row moves in one copy: in before the first load, out after the
    last store (every element of it stored, so nothing else is overwritten)."""

    accesses: list[Operation]
    first: int
    length: int
    buffer: UBBuffer | None = None


def find_short_rows(elements: list[Operation]) -> list[ShortRow]:
    groups: dict[tuple, list[Operation]] = {}
    for access in elements:
        last = constant_index(access.indices[-1]) if access.indices else None
        if last is not None:
            key = (access.memref, access.parent_block(), tuple(access.indices)[:-1], type(access))
            groups.setdefault(key, []).append(access)
    rows = []
    for (mem, block, _, kind), accesses in groups.items():
        lasts = sorted({constant_index(a.indices[-1]) for a in accesses})  # an element read (or stored) twice is one
        if len(lasts) < 2 or lasts != list(range(lasts[0], lasts[0] + len(lasts))):
            continue
        ops = list(block.ops)
        span = ops[min(ops.index(a) for a in accesses):max(ops.index(a) for a in accesses) + 1]
        others = [o for op in span for o in op.walk() if o not in accesses
                  and isinstance(o, (memref.LoadOp, memref.StoreOp)) and viewed(o.memref) is viewed(mem)]
        if not others:
            rows.append(ShortRow(sorted(accesses, key=ops.index), lasts[0], len(lasts)))
    return rows


def stage_short_rows(rows: list[ShortRow], buffers: dict[int, SSAValue]) -> list[tg.CopyOp]:
    built: list[tg.CopyOp] = []
    for row in rows:
        ub, first, last = buffers[id(row)], row.accesses[0], row.accesses[-1]
        loads = isinstance(first, memref.LoadOp)
        b = BlockBuilder(first.parent_block(), first if loads else last.next_op)
        zero = b.index(0)
        gm_idx = [*first.indices[:-1], b.index(row.first)]
        if loads:
            copy = tg.CopyOp("gm_to_ub", first.memref, gm_idx, ub, [zero], b.index(row.length))
        else:
            copy = tg.CopyOp("ub_to_gm", ub, [zero], first.memref, gm_idx, b.index(row.length))
        # placed before the accesses are replaced: a replacement goes right before its access too,
        # so a copy added after them would sit between the first load and its replacement
        b.add(copy)
        for access in row.accesses:
            a = BlockBuilder(access.parent_block(), access)
            local = [a.index(constant_index(access.indices[-1]) - row.first)]
            if loads:
                new = memref.LoadOp.get(ub, local)
                access.parent_block().insert_op_before(new, access)
                access.res.replace_all_uses_with(new.res)
            else:
                access.parent_block().insert_op_before(memref.StoreOp.get(access.value, ub, local), access)
        built.append(copy)
        for access in row.accesses:
            access.detach()
            access.erase()
    return built
