"""tabulate-axis-expressions: a value that depends on some of its nest's loops only is computed once
per value of those loops, into a small table, and read where it was computed.

    for h:                                   for h:
      for w in tile:                           for c in chunks of the tile (K):
        for a < 4:                               for w in c, b < 4: T[b, w - c] = f(w, b)
          for b < 4:                    ->       for w in c:
            s += f(w, b) * g(h, a) * dy[..]        for a < 4:
                                                     for b < 4:
                                                       s += T[b, w - c] * g(h, a) * dy[..]

A gather written as a user writes it (an upsample's bilinear weights) computes each tap's weight
from the output's position in the innermost loops, again for every row, channel and batch, though
it depends on the column and the tap alone. Each such value (a pure float expression with at least
`min_ops` ops besides index arithmetic, whose loop variables are a strict subset of its nest's) is
computed into a stack table over the loops it depends on, before the outermost loop that can host it:
every loop it depends on inside that one has a constant extent, or is the vector loop (the innermost
parallel one), which is strip-mined by the chunk the table holds (`elements` at most, a host-model
value), its chunk loop moved outside the parallel loops between (never outside the stage's own loop,
which the cores split). The table's last axis is the vector loop's (unit stride), so the vector loop
reads it as it reads its own data; the body left is the gather's loads and multiplies.
Tests (i1) are not tabulated: a mask read from a table hides its bounds test from the passes that
turn it into ranges or branches (branch-guarded-reads, partition-clamped-loops, split-stride-phases),
and measured slower (docs/perf-notes.md "Tables"). In a loop that gets tables, a conjunction of
tests (`&`) is regrouped by the loops each test depends on (the tests of the same loops together,
those of fewer loops first), so a mask `inside(y, x)` splits into its row part, which LLVM hoists
out of the column loop, and its column part. The table is written before it is read in the same
thread, and `&` is exact in any order, so the results are bitwise those of the code without tables.

Each vector loop with tables is `Table(stage, axis, elements)` (the vector loop's axis); with
`directives` (passes/applying.py) the pass tabulates in the loops they name, `elements=0` none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerAttr, IntegerType, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import LoopRole
from tilegrad.dialect.values import INDEX
from tilegrad.passes.applying import chosen
from tilegrad.passes.common import (
    constant_index,
    erase_unused,
    functions,
    loop_axis,
    loop_role,
    make_for,
    pure_arith,
    stage_number,
)
from tilegrad.passes.loop_utils import in_cold_version
from tilegrad.schedule import Directive, Table

I1 = IntegerType(1)
CHEAP = (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.ConstantOp, arith.IndexCastOp)
"""Index arithmetic an address computes anyway: not counted in an expression's cost."""


def _pure(op: Operation) -> bool:
    return len(op.results) == 1 and not op.regions and (
        (pure_arith(op) and not isinstance(op, memref.DimOp)) or op.name.startswith("math."))


def _vector_loops(fn: func.FuncOp) -> list[scf.ForOp]:
    """The innermost parallel loops (no parallel or tile loop inside)."""
    return [o for o in fn.walk() if isinstance(o, scf.ForOp) and loop_role(o) == LoopRole.PARALLEL
            and not in_cold_version(o)
            and not any(isinstance(i, scf.ForOp) and loop_role(i) in (LoopRole.PARALLEL, LoopRole.TILE)
                        for i in o.body.walk())]


def _chain(op: Operation) -> list[scf.ForOp] | None:
    """The loops around `op`, outer to inner, up to its function; None if a branch is between."""
    found = []
    parent = op.parent_op()
    while not isinstance(parent, func.FuncOp):
        if not isinstance(parent, scf.ForOp):
            return None
        found.append(parent)
        parent = parent.parent_op()
    return found[::-1]


def _inside(loop: Operation, value: SSAValue) -> bool:
    owner = value.owner
    op = owner.parent_op() if isinstance(owner, Block) else owner
    return op is not None and (op is loop or loop.is_ancestor(op))


class _Vars:
    """The loops each value of a nest depends on (None: on a load, an accumulator, a branch)."""

    def __init__(self, outer: scf.ForOp) -> None:
        self.outer = outer
        self.memo: dict[SSAValue, frozenset[scf.ForOp] | None] = {}

    def of(self, value: SSAValue) -> frozenset[scf.ForOp] | None:
        if value in self.memo:
            return self.memo[value]
        if not _inside(self.outer, value):
            found: frozenset | None = frozenset()
        elif isinstance(value, BlockArgument):
            loop = value.owner.parent_op()
            found = frozenset([loop]) if isinstance(loop, scf.ForOp) and value.index == 0 else None
        elif not _pure(value.owner):
            found = None
        else:
            found = frozenset()
            for operand in value.owner.operands:
                inner = self.of(operand)
                if inner is None:
                    found = None
                    break
                found |= inner
        self.memo[value] = found
        return found


def _available(value: SSAValue, before: scf.ForOp) -> bool:
    """Whether `value` can be computed before `before` (defined outside it, or pure from such)."""
    if not _inside(before, value):
        return True
    return isinstance(value, SSAValue) and not isinstance(value, BlockArgument) and _pure(value.owner) \
        and all(_available(o, before) for o in value.owner.operands)


def _cost(value: SSAValue, within: scf.ForOp, seen: set[Operation]) -> int:
    owner = value.owner
    if isinstance(owner, Block) or owner in seen or not _inside(within, value):
        return 0
    seen.add(owner)
    own = 0 if isinstance(owner, CHEAP) else 1
    return own + sum(_cost(o, within, seen) for o in owner.operands)


def _extent(loop: scf.ForOp) -> int | None:
    bounds = [constant_index(v) for v in (loop.lb, loop.ub, loop.step)]
    return None if None in bounds or bounds[2] != 1 else max(bounds[1] - bounds[0], 0)


@dataclass
class _Plan:
    root: Operation
    at: scf.ForOp
    """The loop the table is filled before."""
    loops: list[scf.ForOp]
    """The loops it depends on at or inside `at`, outer to inner, the vector loop last."""
    vector: scf.ForOp


def _plan(root: Operation, vector: scf.ForOp, variables: _Vars, elements: int) -> _Plan | None:
    """Where and over which loops `root` would be tabulated, if it can be and saves work."""
    value = root.results[0]
    chain = _chain(root)
    depends = variables.of(value)
    if chain is None or not depends or vector not in chain:
        return None
    at = None
    for loop in reversed(chain):
        if "tg.stage" in loop.attributes:
            break  # (the stage's loop, which the cores split, stays outermost)
        tabulated = [o for o in chain if o in depends and (o is loop or loop.is_ancestor(o))]
        if loop in depends and loop is not vector and _extent(loop) is None:
            break
        if loop in depends and constant_index(loop.step) != 1:
            break
        if not all(_available(v, loop) for o in tabulated for v in (o.lb, o.ub)):
            break
        fixed = 1
        for o in tabulated:
            fixed *= _extent(o) if o is not vector else 1
        if fixed > elements or (vector in tabulated and elements // fixed < 8):
            break
        if vector in tabulated and loop is not vector and _strips(vector, fixed, elements) \
                and (loop_role(loop) != LoopRole.PARALLEL or loop.results):
            break  # (the strip's chunk loop goes around it: only parallel loops exchange freely)
        at = loop
    if at is None:
        return None
    inner = [o for o in chain if o is at or at.is_ancestor(o)]
    if all(o in depends for o in inner):
        return None
    loops = [o for o in inner if o in depends and o is not vector] + [o for o in inner if o is vector and o in depends]
    return _Plan(root, at, loops, vector) if loops else None  # (none: invariant in its loops, LLVM hoists it)


def _strips(vector: scf.ForOp, fixed: int, elements: int) -> bool:
    """Whether a table over the vector loop and loops of `fixed` elements needs it strip-mined."""
    extent = _extent(vector)
    return extent is None or extent * fixed > elements


def _regroup_conjunctions(vector: scf.ForOp, variables: _Vars) -> None:
    """Each tree of `&` on i1 whose inner nodes have no other use: its tests joined by the loops they
    depend on (those of fewer loops first), so the tests of the same loops are one value."""
    for op in list(vector.body.walk()):
        if not isinstance(op, arith.AndIOp) or op.result.type != I1 or op.parent is None:
            continue
        if any(isinstance(u.operation, arith.AndIOp) and u.operation.parent_block() is op.parent_block()
               for u in op.result.uses):
            continue  # (not a tree's root)
        leaves: list[SSAValue] = []
        inner: list[Operation] = []

        def collect(value: SSAValue) -> None:
            owner = value.owner
            if isinstance(owner, arith.AndIOp) and owner.parent_block() is op.parent_block() \
                    and (owner is op or len(list(value.uses)) == 1):
                inner.append(owner)
                collect(owner.lhs)
                collect(owner.rhs)
            else:
                leaves.append(value)

        collect(op.result)
        keyed = [(variables.of(v), i, v) for i, v in enumerate(leaves)]
        if len(leaves) < 3 or any(k is None for k, _, _ in keyed):
            continue
        groups: dict[frozenset, list[SSAValue]] = {}
        for key, _, v in sorted(keyed, key=lambda t: (len(t[0]), t[1])):
            groups.setdefault(key, []).append(v)
        if len(groups) < 2 or all(len(g) == 1 for g in groups.values()):
            continue
        total = None
        for group in groups.values():
            part = None
            for v in group:
                part = v if part is None else _before(op, arith.AndIOp(part, v)).result
            total = part if total is None else _before(op, arith.AndIOp(total, part)).result
        op.result.replace_all_uses_with(total)
        erase_unused(sorted(inner, key=lambda o: o.parent_block().get_operation_index(o)))


def _before(at: Operation, op: Operation) -> Operation:
    at.parent_block().insert_op_before(op, at)
    return op


def _constant(value: int, at: Operation) -> SSAValue:
    return _before(at, arith.ConstantOp(IntegerAttr(value, INDEX))).result


def _clone_into(value: SSAValue, outside: scf.ForOp, at: Operation, mapping: dict[SSAValue, SSAValue]) -> SSAValue:
    """`value` computed before `at`: its ops inside `outside` cloned (the loop variables by `mapping`)."""
    if value in mapping:
        return mapping[value]
    if not _inside(outside, value):
        return value
    owner = value.owner
    assert isinstance(owner, Operation), "a loop variable the table does not walk"
    for operand in owner.operands:
        _clone_into(operand, outside, at, mapping)
    copy = _before(at, owner.clone(value_mapper=mapping))
    for old, new in zip(owner.results, copy.results):
        mapping[old] = new
    return mapping[value]


def _strip(at: scf.ForOp, vector: scf.ForOp, chunk: int) -> None:
    """The vector loop's range walked `chunk` at a time by a tile loop around `at` (the loops between
    are parallel: their order is free)."""
    mapping: dict[SSAValue, SSAValue] = {}
    lb = _clone_into(vector.lb, at, at, mapping)
    ub = _clone_into(vector.ub, at, at, mapping)
    size = _constant(chunk, at)
    loop, body = make_for(lb, ub, size, LoopRole.TILE, loop_axis(vector))
    at.parent_block().insert_op_before(loop, at)
    at.detach()
    end = arith.MinSIOp(arith.AddiOp(body.args[0], size).result, ub)
    body.add_ops([end.lhs.owner, end, at, scf.YieldOp()])
    bounds = [v.owner for v in (vector.lb, vector.ub) if isinstance(v.owner, Operation) and _inside(at, v)]
    vector.operands = [body.args[0], end.result, *vector.operands[2:]]
    for op in bounds:  # (the bounds the vector loop had, where nothing else uses them)
        erase_unused(_slice(op, at))


def _index(lbs: list[SSAValue], ivs: list[SSAValue], extents: list[int], at: Operation) -> SSAValue:
    """Σ (iv - lb) · stride, the last loop's stride 1."""
    total = None
    stride = 1
    for lb, iv, extent in reversed(list(zip(lbs, ivs, extents))):
        term = _before(at, arith.SubiOp(iv, lb)).result
        if stride != 1:
            term = _before(at, arith.MuliOp(term, _constant(stride, at))).result
        total = term if total is None else _before(at, arith.AddiOp(total, term)).result
        stride *= extent
    return total


def _tabulate(plan: _Plan, chunk: int, entry: Block) -> None:
    value = plan.root.results[0]
    element = value.type
    extents = [chunk if o is plan.vector and _extent(o) is None else _extent(o) for o in plan.loops]
    size = 1
    for e in extents:
        size *= e
    table = memref.AllocaOp.get(element, shape=[size])
    entry.insert_op_before(table, entry.first_op)
    # the fill: the loops it depends on, the expression cloned inside
    mapping: dict[SSAValue, SSAValue] = {}
    bounds = [(_clone_into(o.lb, plan.at, plan.at, mapping), _clone_into(o.ub, plan.at, plan.at, mapping))
              for o in plan.loops]
    one = _constant(1, plan.at)
    at: Operation = plan.at
    ivs = []
    for (lb, ub), original in zip(bounds, plan.loops):
        loop = scf.ForOp(lb, ub, one, [], Block(arg_types=[INDEX]))
        at.parent_block().insert_op_before(loop, at)
        loop.body.block.add_op(scf.YieldOp())
        at = loop.body.block.last_op
        ivs.append(loop.body.block.args[0])
        mapping[original.body.block.args[0]] = ivs[-1]
    result = _clone_into(value, plan.at, at, mapping)
    _before(at, memref.StoreOp.get(result, table.memref, [_index([lb for lb, _ in bounds], ivs, extents, at)]))
    # the read
    read = plan.root
    index = _index([o.lb for o in plan.loops], [o.body.block.args[0] for o in plan.loops], extents, read)
    loaded = _before(read, memref.LoadOp.get(table.memref, [index])).res
    value.replace_all_uses_with(loaded)
    erase_unused(_slice(read, plan.at))


def _slice(root: Operation, within: scf.ForOp) -> list[Operation]:
    """`root` and the pure ops inside `within` it is computed from, in an order where each op comes
    after those it uses (erase_unused erases in reverse)."""
    found: list[Operation] = []
    seen: set[Operation] = set()

    def visit(op: Operation) -> None:
        if op in seen:
            return
        seen.add(op)
        for operand in op.operands:
            owner = operand.owner
            if isinstance(owner, Operation) and _pure(owner) and _inside(within, operand):
                visit(owner)
        found.append(op)

    visit(root)
    return found


def _roots(vector: scf.ForOp, variables: _Vars, elements: int, min_ops: int) -> list[_Plan]:
    """The largest expressions of the vector loop's body worth a table (a user of each is not)."""
    plans: dict[Operation, _Plan | None] = {}
    for op in vector.body.walk():
        if _pure(op):
            plans[op] = _plan(op, vector, variables, elements)
    found = []
    for op, plan in plans.items():
        value = op.results[0]
        if plan is not None and isinstance(value.type, Float32Type | Float64Type) \
                and any(plans.get(u.operation) is None for u in value.uses) and _cost(value, plan.at, set()) >= min_ops:
            found.append(plan)
    return found


def tables(module: Operation, elements: int, min_ops: int) -> list[tuple[Table, scf.ForOp]]:
    """(its Table, the vector loop) for each vector loop with an expression worth a table."""
    found = []
    for fn in functions(module):
        for vector in _vector_loops(fn):
            chain = _chain(vector)
            if chain is None:
                continue
            if _roots(vector, _Vars(chain[0]), elements, min_ops):
                found.append((Table(stage=stage_number(fn), axis=loop_axis(vector), elements=elements), vector))
    return found


def _apply(vector: scf.ForOp, elements: int, min_ops: int, entry: Block) -> None:
    outer = _chain(vector)[0]
    _regroup_conjunctions(vector, _Vars(outer))
    plans = _roots(vector, _Vars(outer), elements, min_ops)
    chunks: dict[scf.ForOp, int] = {}
    for plan in plans:  # the chunk of each strip-mined vector loop: what its largest table holds
        fixed = 1
        for o in plan.loops[:-1] if plan.vector in plan.loops else ():
            fixed *= _extent(o)
        if plan.vector in plan.loops and _strips(plan.vector, fixed, elements):
            chunks[plan.at] = min(chunks.get(plan.at, elements), elements // fixed)
    if len(chunks) > 1:  # one strip per vector loop, the outermost host's: tables at another go without
        host = min(chunks, key=lambda a: len(_chain(a)))
        plans = [p for p in plans if p.at is host or p.at not in chunks]
        chunks = {host: chunks[host]}
    for at, chunk in chunks.items():
        _strip(at, vector, chunk)
    for plan in plans:
        if plan.root.parent is not None:
            _tabulate(plan, chunks.get(plan.at, 0), entry)


@dataclass(frozen=True)
class TabulateAxisExpressions(ModulePass):
    """Compute the expressions of a vector loop's body that depend on some of its nest's loops only
    into stack tables of at most `elements` elements (an expression of at least `min_ops` ops), read
    in the loop; with `directives` (Table, printed, `;`-separated), in the loops they name."""

    name = "tabulate-axis-expressions"
    elements: int = 1024
    min_ops: int = 4
    directives: str | None = None
    takes_text: ClassVar[str] = "Table"

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Table)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        candidates = tables(op, self.elements, self.min_ops)
        for vector, directive in chosen(self, candidates, "vector loop with an expression of some of its loops"):
            fn = vector.parent_op()
            while not isinstance(fn, func.FuncOp):
                fn = fn.parent_op()
            _apply(vector, directive.elements, self.min_ops, fn.body.block)

