"""scan-reductions: a reduction whose range grows by one term per step of an output axis runs as a scan.

A stage `y[n, i] = Σ_{t < i + 1} x[n, t]` (a prefix sum) or `dx[n, i] = Σ_{t < D - i} dy[n, i + t]`
(a suffix sum, cumsum's backward) reduces O(n) terms for each of n elements: O(n^2). Its range in
the terms' own index u (u = t for the prefix, u = i + t for the suffix) is [0, i + 1), or [i, D): one
end fixed, the other moving by one per step of i. So walking i in the order the range grows, each
element is the one before it combined with one new term, an O(n) running accumulation.

The form, on the tg ops (before lower-tg-to-loops), for each tg.reduce at the top of a tg.compute's
body whose extent depends on one of the compute's indices i:
  - the extent is `i + a` or `a - i` (a independent of i);
  - the body reads i and the reduction variable r only through `r` (i unused), `i + r` or `i - r`;
  - the range in that index moves at one end: prefix-like (r with extent i + a; i - r with i + a)
    walks i up, suffix-like (r with a - i; i + r with a - i) walks i down.
The term a step adds is at r = extent - 1 (the body reads r alone) or r = 0 (it reads i ± r), and
only where the extent is positive (an empty range adds nothing). Every scan reduction of a stage
shares one axis and direction; a stage whose reductions do not have the form keeps its loops.

The stage becomes: parallel loops over its other axes (the rows; a one-trip loop if it has none),
inside them one loop over the scan axis (`#tg.loop<scan, axis = k>`, k the number of row loops:
the loops are numbered outer to inner as they now nest) in order, carrying each scan
reduction's running value: its first step reduces the whole range (the tg.reduce, as it was, for
lower-tg-to-loops), each later one combines one term. A float32 sum or product runs in float64
(as torch's CPU cumsum), so a long scan stays as accurate as the blocked sums it replaces; the
result is within SPEC's tolerance of the naive form, not bitwise equal to it, and deterministic:
each row is walked in one order by one core, whatever the core count.

With `directives` (Scan, printed, `;`-separated: passes/applying.py), the stages they name
(`scanned=False`: the stage keeps its O(n^2) loops). Stages are numbered as lower-tg-to-loops
numbers them (the op's tg.compute, tg.scatter_add and tg.check ops in order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import Float64Type, IndexType, ModuleOp, f64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect import tg
from tilegrad.dialect.tg import LoopRole
from tilegrad.dialect.values import BlockBuilder
from tilegrad.errors import ScheduleError
from tilegrad.passes.applying import chosen
from tilegrad.passes.common import constant_index, depends_on, functions, make_for
from tilegrad.schedule import Directive, Scan

STAGE_OPS = (tg.ComputeOp, tg.ScatterAddOp, tg.CheckOp)


@dataclass(frozen=True)
class ScanReduce:
    """One reduction of the form: its term a step adds is at r = extent - 1 (`at_end`) or r = 0."""

    reduce: tg.ReduceOp
    at_end: bool


@dataclass(frozen=True)
class ScanForm:
    """A stage that runs as a scan along `axis`, walked down if `reverse`. `recurrence`: it reads
    its own buffer at an element before the one it writes (dsl/hazards.py lets only that form
    through), so it must: its loads see the elements the steps before stored."""

    compute: tg.ComputeOp
    axis: int
    reverse: bool
    reduces: tuple[ScanReduce, ...]
    recurrence: bool = False


def _offset(index: SSAValue, i: SSAValue) -> int | None:
    """c for an index `i + c` (a constant c, maybe clamped into bounds), else None."""
    while isinstance(index.owner, (arith.MinSIOp, arith.MaxSIOp)):  # the clamp into [0, D - 1]
        index = index.owner.lhs
    owner = index.owner
    if isinstance(owner, (arith.AddiOp, arith.SubiOp)) and owner.lhs is i and constant_index(owner.rhs) is not None:
        c = constant_index(owner.rhs)
        return c if isinstance(owner, arith.AddiOp) else -c
    return None


def _recurrence(compute: tg.ComputeOp) -> tuple[int, bool] | None | bool:
    """(axis, reverse) where the stage reads its own buffer at elements before the one it writes along
    one axis (after it, walked down: `reverse`); None if it reads no other element of it; False if
    it reads one in any other way."""
    block = compute.body.block
    found: set[tuple[int, bool]] = set()
    for op in compute.body.walk():
        if not isinstance(op, memref.LoadOp) or op.memref is not compute.dest:
            continue
        moved = [(axis, _offset(index, i)) for axis, (index, i) in enumerate(zip(op.indices, block.args))
                 if index is not i]
        if not moved:
            continue
        if len(moved) != 1 or moved[0][1] in (None, 0):
            return False
        found.add((moved[0][0], moved[0][1] > 0))
    if len(found) > 1:
        return False
    return next(iter(found), None)


def _extent_slope(extent: SSAValue, i: SSAValue, block: Block) -> int | None:
    """+1 for `i + a`, -1 for `a - i` (a independent of i), else None."""
    owner = extent.owner
    if isinstance(owner, arith.AddiOp):
        a, b = owner.lhs, owner.rhs
        if (a is i and not depends_on(b, i, block)) or (b is i and not depends_on(a, i, block)):
            return 1
    if isinstance(owner, arith.SubiOp) and owner.rhs is i and not depends_on(owner.lhs, i, block):
        return -1
    return None


def _body_slope(reduce: tg.ReduceOp, i: SSAValue, block: Block) -> int | None:
    """How the body reads i and r: 0 through r alone, +1 through i + r, -1 through i - r; None otherwise
    (or where it reads a value of the stage computed from i)."""
    r = reduce.body.block.args[0]
    carriers: list[Operation] = []
    slope = 0
    for op in reduce.body.walk():
        for operand in op.operands:
            if operand is not i and operand is not r and not (
                    isinstance(operand.owner, Operation) and reduce.is_ancestor(operand.owner)) \
                    and not isinstance(operand.owner, Block) and depends_on(operand, i, block):
                return None  # a value computed from i outside the body: not read through i ± r
        if isinstance(op, arith.AddiOp) and {id(op.lhs), id(op.rhs)} == {id(i), id(r)}:
            carriers.append(op)
            slope = slope or 1
            if slope != 1:
                return None
        elif isinstance(op, arith.SubiOp) and op.lhs is i and op.rhs is r:
            carriers.append(op)
            slope = slope or -1
            if slope != -1:
                return None
    for op in reduce.body.walk():
        if op in carriers:
            continue
        if any(operand is i for operand in op.operands):
            return None
        if carriers and any(operand is r for operand in op.operands):
            return None
    return slope


def scan_form(compute: tg.ComputeOp) -> ScanForm | None:
    """The stage's scan form, or None (no reduction of the form, or one that breaks it)."""
    block = compute.body.block
    found: list[tuple[int, bool, ScanReduce]] = []
    for op in block.ops:
        if not isinstance(op, tg.ReduceOp):
            continue
        moving = [axis for axis, i in enumerate(block.args) if depends_on(op.extent, i, block)]
        if not moving:
            continue
        if len(moving) > 1:
            return None
        i = block.args[moving[0]]
        extent, body = _extent_slope(op.extent, i, block), _body_slope(op, i, block)
        if extent is None or body is None or extent == body:
            return None  # (i + r over i + a, i - r over a - i: both ends move)
        # in the terms' own index u (r, i + r or i - r) one end of the range is fixed and the other
        # moves by one per step of i: the range grows walking i up if the extent does
        reverse = extent < 0
        found.append((moving[0], reverse, ScanReduce(op, at_end=body == 0)))
    recurrence = _recurrence(compute)
    if recurrence is False:
        return None
    ways = {(axis, reverse) for axis, reverse, _ in found} | ({recurrence} if recurrence else set())
    if len(ways) != 1:
        return None
    axis, reverse = ways.pop()
    return ScanForm(compute, axis, reverse, tuple(s for _, _, s in found), recurrence is not None)


def scan_forms(root: Operation) -> list[tuple[Scan, ScanForm]]:
    """Each stage of the form, with the Scan directive naming it (stage: lower-tg-to-loops' number)."""
    found = []
    for fn in functions(root) if isinstance(root, ModuleOp) else [root]:
        stages = [o for o in fn.body.block.ops if isinstance(o, STAGE_OPS)]
        for number, stage in enumerate(stages):
            if isinstance(stage, tg.ComputeOp) and (form := scan_form(stage)) is not None:
                found.append((Scan(stage=number, axis=form.axis), form))
    return found


# ---- the rewrite ------------------------------------------------------------------------------
def _carried_type(reduce: tg.ReduceOp):
    """A float sum or product narrower than float64 runs in float64."""
    kind = reduce.init.type
    if reduce.combine.data in ("sum", "prod") and not isinstance(kind, (Float64Type, IndexType)):
        return f64
    return kind


def _widen(b: BlockBuilder, value: SSAValue, to) -> SSAValue:
    return value if value.type == to else b.add(arith.ExtFOp(value, to))


def _narrow(b: BlockBuilder, value: SSAValue, to) -> SSAValue:
    return value if value.type == to else b.add(arith.TruncFOp(value, to))


def _combine(b: BlockBuilder, combine: str, acc: SSAValue, term: SSAValue) -> SSAValue:
    index = isinstance(acc.type, IndexType)
    kinds = {"sum": (arith.AddiOp, arith.AddfOp), "prod": (arith.MuliOp, arith.MulfOp),
             "max": (arith.MaxSIOp, arith.MaximumfOp), "min": (arith.MinSIOp, arith.MinimumfOp)}
    return b.add(kinds[combine][0 if index else 1](acc, term))


def _clone_into(b: BlockBuilder, ops: Sequence[Operation], mapping: dict[SSAValue, SSAValue]) -> None:
    for op in ops:
        b.add(op.clone(value_mapper=mapping))


def _first_step(scan: ScanReduce, mapping: dict[SSAValue, SSAValue], carried) -> Region:
    """The whole range's reduction (the tg.reduce as it was), widened to the carried type."""
    block = Block()
    b = BlockBuilder(block)
    full = b.add(scan.reduce.clone(value_mapper=mapping))
    b.add(scf.YieldOp(_widen(b, full, carried)))
    return Region([block])


def _next_step(scan: ScanReduce, mapping: dict[SSAValue, SSAValue], acc: SSAValue) -> Region:
    """acc combined with the one term the step adds, where the range is not empty."""
    block = Block()
    b = BlockBuilder(block)
    reduce = scan.reduce
    extent = mapping.get(reduce.extent, reduce.extent)
    r = b.add(arith.SubiOp(extent, b.index(1))) if scan.at_end else b.index(0)
    inner = {**mapping, reduce.body.block.args[0]: r}
    body = list(reduce.body.block.ops)
    _clone_into(b, body[:-1], inner)
    term = inner.get(body[-1].operands[0], body[-1].operands[0])
    combined = _combine(b, reduce.combine.data, acc, _widen(b, term, acc.type))
    nonempty = b.add(arith.CmpiOp(extent, b.index(0), "sgt"))
    b.add(scf.YieldOp(b.add(arith.SelectOp(nonempty, combined, acc))))
    return Region([block])


def rewrite_scan(form: ScanForm) -> None:
    """Replace the stage by its rows' parallel loops around one in-order loop over the scan axis."""
    compute = form.compute
    parent = compute.parent_block()
    assert parent is not None
    outer = BlockBuilder(parent, compute)
    zero, one = outer.index(0), outer.index(1)
    extents = list(compute.extents)
    rows = [axis for axis in range(len(extents)) if axis != form.axis]
    ivs: dict[int, SSAValue] = {}
    nest: scf.ForOp | None = None
    body: Block | None = None
    for position, axis in enumerate(rows or [None]):  # (loops numbered outer to inner as they now nest)
        loop, inner = make_for(zero, extents[axis] if axis is not None else one, one, LoopRole.PARALLEL, position)
        if axis is not None:
            ivs[axis] = inner.args[0]
            inner.args[0].name_hint = compute.body.block.args[axis].name_hint
        if body is None:
            nest = loop
        else:
            body.add_ops([loop, scf.YieldOp()])
        body = inner
    assert nest is not None and body is not None
    parent.insert_op_before(nest, compute)
    carried = [_carried_type(s.reduce) for s in form.reduces]
    row = BlockBuilder(body)
    starts = [row.const(0, kind) for kind in carried]  # (never read: the first step reduces the whole range)
    length = extents[form.axis]
    scan_loop, step = make_for(zero, length, one, LoopRole.SCAN, len(rows), starts)
    row.add(scan_loop)
    row.add(scf.YieldOp())
    b = BlockBuilder(step)
    k, accs = step.args[0], list(step.args[1:])
    k.name_hint = "step"
    i = b.add(arith.SubiOp(b.add(arith.SubiOp(length, one)), k)) if form.reverse else k
    i.name_hint = compute.body.block.args[form.axis].name_hint  # (the step, walked up)
    first = b.add(arith.CmpiOp(k, zero, "eq"))
    ivs[form.axis] = i
    mapping: dict[SSAValue, SSAValue] = {arg: ivs[axis] for axis, arg in enumerate(compute.body.block.args)}
    by_reduce = {s.reduce: (n, s) for n, s in enumerate(form.reduces)}
    new_accs: list[SSAValue] = list(accs)
    ops = list(compute.body.block.ops)
    for op in ops[:-1]:
        if op not in by_reduce:
            b.add(op.clone(value_mapper=mapping))
            continue
        n, scan = by_reduce[op]
        choice = b.add(scf.IfOp(first, [carried[n]], _first_step(scan, mapping, carried[n]),
                                _next_step(scan, mapping, accs[n])))
        new_accs[n] = choice
        mapping[op.result] = _narrow(b, choice, op.result.type)
    value = ops[-1].operands[0]
    b.add(memref.StoreOp.get(mapping.get(value, value), compute.dest, [ivs[a] for a in range(len(extents))]))
    b.add(scf.YieldOp(*new_accs))
    compute.detach()
    compute.erase()


@dataclass(frozen=True)
class ScanReductions(ModulePass):
    """Run each stage whose reductions grow by one term per step of an output axis (prefix and suffix
    sums, max, min, products) as an in-order scan along that axis per row; with `directives`, the
    stages they name."""

    name = "scan-reductions"
    directives: str | None = None
    """Scan directives, printed, `;`-separated (passes/applying.py): the stages they name."""
    reductions: bool = True
    """False: only the stages that read their own earlier elements (they run only as scans); a
    reduction over a prefix or suffix keeps its loops (a scratchpad target stages those by runs,
    where a scan's rows would move element by element)."""
    takes_text: ClassVar[str] = "Scan"

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Scan)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        forms = [(own, form) for own, form in scan_forms(op) if self.reductions or form.recurrence]
        picked = chosen(self, forms, "reduction over a prefix or suffix, or stage reading its own earlier elements")
        for own, form in forms:
            if form.recurrence and not any(f is form for f, _ in picked):
                raise ScheduleError(f"{Scan(stage=own.stage, axis=own.axis, scanned=False)}: stage {own.stage} "
                                    f"reads the elements it wrote before along axis {own.axis}, so it runs "
                                    f"only as a scan")
        for form, _ in picked:
            rewrite_scan(form)


def scanned_stages(module: ModuleOp) -> tuple[Directive, ...]:
    """The cpu planner's Scan directives: every stage of the form."""
    return tuple(dict.fromkeys(directive for directive, _ in scan_forms(module)))


__all__ = ["ScanReductions", "rewrite_scan", "scan_form", "scan_forms", "scanned_stages"]
