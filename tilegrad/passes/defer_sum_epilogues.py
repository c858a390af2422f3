"""defer-sum-epilogues: the math a stage applies to each of its sums runs after the sums of a
whole tile, in a loop of its own that vectorizes.

The fused linear cross-entropy's logits stage computes G[i, j] = (exp(Σ_k x[i, k]·w[j, k] - m_i)
/ s_i - [j = t_i])·g_i. unroll-reuse-loops runs several dot products of two rows at once, and each
result then went through exp, a division and the target's test on its own: scalar code, about a
third of the stage. Here the row loop stores the sums themselves, and a second loop over the same
rows and columns reads them back and applies the rest:

    for i:                                  for i:
      for j:                                  for j: out[i, j] = Σ_k ...
        out[i, j] = f(Σ_k ..., i, j)   ->   for i:
                                              for j: out[i, j] = f(out[i, j], i, j)

The tile of sums stays in the core's cache between the two loops. Only where the output holds the
sum's own type (the stored sum is exact: results are bitwise the same), f calls a math function
(exp, log, tanh, ...: the work a vector loop saves; for a cheap f the second pass over the tile
costs more than it saves) and reads nothing the loops write. The first loop still stores only its
own elements, so unroll-reuse-loops may run a row past the end again. For targets without UB
staging (cpu), before unroll-reuse-loops.

Each row loop it distributes is `Distribute(stage=S, axis=A)` (the row loop's axis); with
`directives` (the cpu tiled stage), the pass distributes exactly the row loops they name
(`distributed=False`: the math stays with each sum).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import Float32Type, Float64Type, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import LoopRole
from tilegrad.passes.applying import chosen
from tilegrad.passes.common import (
    REDUCTION_ROLES,
    erase_unused,
    feeding_ops,
    functions,
    loop_axis,
    loop_role,
    make_for,
    read_memrefs,
    stage_number,
    written_memrefs,
)
from tilegrad.schedule import Directive, Distribute


def _after(ops: list[Operation], total: Operation) -> list[Operation]:
    """The ops of `ops` (a loop body, in order) computed from the sum's result."""
    tainted = set(total.results)
    found = []
    for op in ops:
        if any(v in tainted for v in op.operands):
            tainted.update(op.results)
            found.append(op)
    return found


def _epilogue(row: scf.ForOp, column: scf.ForOp) -> tuple[Operation, memref.StoreOp] | None:
    """(the sum, the store of f(sum)) of a column loop whose element is one sum with math after it."""
    if loop_role(column) != LoopRole.PARALLEL or column.iter_args:
        return None
    body = [o for o in column.body.block.ops if not isinstance(o, scf.YieldOp)]
    sums = [o for o in body if loop_role(o) in REDUCTION_ROLES and len(o.results) == 1]
    stores = [o for o in column.body.walk() if isinstance(o, memref.StoreOp)]
    if len(sums) != 1 or len(stores) != 1 or stores[0].parent_block() is not column.body.block:
        return None
    total, store = sums[0], stores[0]
    kind = total.results[0].type
    if not isinstance(kind, Float32Type | Float64Type) or store.value.type != kind or store.value is total.results[0]:
        return None
    tail = _after(body, total)
    epilogue = feeding_ops([store.value, *store.indices], column.body.block, total)
    if store not in tail or any(i.owner in tail for i in store.indices) or any(o.regions for o in epilogue):
        return None
    if not any(o.name.startswith("math.") for o in tail):
        return None
    reads = {o.memref for o in epilogue if isinstance(o, memref.LoadOp)}
    if store.memref in read_memrefs(row) or reads & written_memrefs(row):
        return None  # f reads what it read before the split, and nothing the loops write
    return total, store


def _split(row: scf.ForOp, column: scf.ForOp, total: Operation, store: memref.StoreOp) -> None:
    epilogue = feeding_ops([store.value, *store.indices], column.body.block, total)
    used = [v for o in epilogue for v in o.operands] + [column.lb, column.ub, column.step]
    prelude = feeding_ops(used, row.body.block)

    again, row_body = make_for(row.lb, row.ub, row.step, LoopRole.PARALLEL, loop_axis(row))
    mapping: dict[SSAValue, SSAValue] = {row.body.block.args[0]: row_body.args[0]}
    for op in prelude:
        _clone(op, row_body, mapping)
    columns, column_body = make_for(*(mapping.get(v, v) for v in (column.lb, column.ub, column.step)),
                                    LoopRole.PARALLEL, loop_axis(column))
    mapping[column.body.block.args[0]] = column_body.args[0]
    indexing = feeding_ops(store.indices, column.body.block, total)
    for op in indexing:
        _clone(op, column_body, mapping)
    loaded = memref.LoadOp.get(store.memref, [mapping.get(i, i) for i in store.indices])
    column_body.add_op(loaded)
    mapping[total.results[0]] = loaded.res
    for op in epilogue:
        if op not in indexing:
            _clone(op, column_body, mapping)
    _clone(store, column_body, mapping)
    column_body.add_op(scf.YieldOp())
    row_body.add_ops([columns, scf.YieldOp()])
    row.parent_block().insert_op_after(again, row)

    # the first loop stores the sum itself; what computed f from it goes
    store.operands = (total.results[0], *store.operands[1:])
    erase_unused(epilogue)


def _clone(op: Operation, into: Block, mapping: dict[SSAValue, SSAValue]) -> None:
    clone = op.clone(value_mapper=mapping)
    into.add_op(clone)
    mapping.update(zip(op.results, clone.results))


Deferral = tuple[scf.ForOp, scf.ForOp, Operation, memref.StoreOp]
"""What one distribution splits: the row loop, its column loop, the sum, the store of f(sum)."""


def deferred_epilogues(module: ModuleOp) -> list[tuple[Distribute, Deferral]]:
    """The row loops defer-sum-epilogues distributes, each by its own directive, with what it splits:
    its decision, which the cpu planner lists. Pure: distributing one leaves the others as they were."""
    found = []
    for fn in functions(module):
        for row in [o for o in fn.walk() if isinstance(o, scf.ForOp) and loop_role(o) == LoopRole.PARALLEL]:
            columns = [o for o in row.body.block.ops if isinstance(o, scf.ForOp)]
            if len(columns) != 1 or row.iter_args or not isinstance(row.parent_op(), scf.ForOp):
                continue  # (rows of a tile of columns only: the tile's sums are still in cache for the second loop)
            epilogue = _epilogue(row, columns[0])
            if epilogue is not None:
                found.append((Distribute(stage=stage_number(fn), axis=loop_axis(row)), (row, columns[0], *epilogue)))
    return found


@dataclass(frozen=True)
class DeferSumEpilogues(ModulePass):
    """Store each sum first, then apply the math after it in a loop of its own over the tile; with
    `directives` (Distribute, printed, `;`-separated: passes/applying.py), the row loops they name
    (`distributed=False`: left as they are)."""

    name = "defer-sum-epilogues"
    directives: str | None = None
    """Distribute directives, printed, `;`-separated (passes/applying.py): the row loops they name."""
    takes_text: ClassVar[str] = "Distribute"

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Distribute)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for split, _ in chosen(self, deferred_epilogues(op), "row loop of sums with math after them"):
            _split(*split)
