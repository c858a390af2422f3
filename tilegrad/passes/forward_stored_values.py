"""forward-stored-values: a load of a temp element that the same block just stored is that value.

A stage that fills a temp and reads it back in the same iteration (divisive normalization's
`spread`, stored and then read by dx and d_means at the same point) loads what it has just
written:

    memref.store %v, %t[%i, %j]                  memref.store %v, %t[%i, %j]
    ...                                  ->      ...
    %w = memref.load %t[%i, %j]                  (%w's uses take %v)

The load costs little by itself, but it makes the loop one that reads a tensor it writes, which
overlap-vector-tails must leave alone (an overlapping chunk would read elements it has already
overwritten), so a short row ran a scalar remainder with the stage's whole body in it.

Only a temp (tg.role "temp": storage of the kernel's own, which no other argument aliases) is
forwarded, from a store to a load in the same block with the same index values, when no op between
them may store to the temp. The value loaded is the value stored, bit for bit: results are the same.

A canonicalization, not a schedule choice: there is no alternative a directive would pick (the cpu
planner lists nothing for it; docs/schedule.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, SSAValue
from xdsl.passes import ModulePass

from tilegrad.passes.common import arg_roles, functions, viewed, written_memrefs


def _forward_in(block: Block, temps: set[SSAValue]) -> None:
    stored: dict[SSAValue, memref.StoreOp] = {}  # temp -> its last store in the block so far
    for op in list(block.ops):
        if isinstance(op, memref.LoadOp):
            store = stored.get(op.memref)
            if store is not None and tuple(store.indices) == tuple(op.indices) and op.res.type == store.value.type:
                op.res.replace_all_uses_with(store.value)
                op.detach()
                op.erase()
            continue
        for region in op.regions:
            for inner in region.blocks:
                _forward_in(inner, temps)
        # anything else that is handed a temp (a store, through a view too; a call) or writes one
        # inside its regions may change it
        if stored:
            touched = {viewed(v) for v in op.operands} | (written_memrefs(op) if op.regions else set())
            for temp in touched & stored.keys():
                del stored[temp]
        if isinstance(op, memref.StoreOp) and op.memref in temps:
            stored[op.memref] = op


@dataclass(frozen=True)
class ForwardStoredValues(ModulePass):
    """Replace a load of a temp element just stored in the same block by the stored value."""

    name = "forward-stored-values"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            temps = {value for value, role in arg_roles(fn).items()
                     if role == "temp" and viewed(value) is value and _plainly_used(value)}
            if temps:  # (most kernels have none: nothing to walk)
                _forward_in(fn.body.block, temps)


def _plainly_used(temp: SSAValue) -> bool:
    """Every use of the temp is seen by `_forward_in` for what it is: a load, a store, a dim, a row
    view (whose stores count as the temp's), a call handed it. A subview or a cast could be stored
    through without naming the temp."""
    return all(isinstance(use.operation, (memref.LoadOp, memref.StoreOp, memref.DimOp, memref.CollapseShapeOp,
                                          func.CallOp)) for use in temp.uses)
