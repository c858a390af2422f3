"""fuse-sibling-loops: consecutive stages over the same outer iteration space become one loop nest.

Two stages whose parallel loops agree (same bounds) on every axis of the first, and that do not
depend on each other across iterations, run in one nest: the data a point touches is loaded once
into cache for both (batch norm's dβ and dγ both sweep dy), and one barrier between them
disappears. The second may be deeper: a per-row reduction and the row's elementwise consumer (a
softmax row's total, then its dx) run row by row, so the second sweep reads the row from cache. The
second may read what the first writes only at the first's point; otherwise the stages stay apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, memref, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from tilegrad.passes.common import loop_role, number_stages, same_range, stage_nests


def _chain(nest: scf.ForOp) -> list[scf.ForOp] | None:
    """The perfect nest of parallel loops from the stage's outer loop inwards."""
    loops = [nest]
    while True:
        body = [o for o in loops[-1].body.block.ops if not isinstance(o, scf.YieldOp)]
        if len(body) == 1 and isinstance(body[0], scf.ForOp) and loop_role(body[0]) == "parallel":
            loops.append(body[0])
        else:
            return loops


def _accesses(nest: Operation):
    reads = [o for o in nest.walk() if isinstance(o, memref.LoadOp)]
    writes = [o for o in nest.walk() if isinstance(o, memref.StoreOp)]
    return reads, writes


def _independent(first: list[scf.ForOp], second: list[scf.ForOp]) -> bool:
    reads1, writes1 = _accesses(first[0])
    reads2, writes2 = _accesses(second[0])
    written1 = {w.memref for w in writes1}
    written2 = {w.memref for w in writes2}
    if written2 & ({r.memref for r in reads1} | written1):
        return False  # the second would overwrite what the first still reads or writes
    ivs1 = [loop.body.block.args[0] for loop in first]
    ivs2 = [loop.body.block.args[0] for loop in second[:len(first)]]
    for read in reads2:
        if read.memref in written1:  # allowed only at the same point: indices are the ivs in order
            if [ivs2.index(i) if i in ivs2 else -1 for i in read.indices] != list(range(len(ivs2))):
                return False
    for write in writes1:  # and the first writes each point of its own domain only
        if [ivs1.index(i) if i in ivs1 else -1 for i in write.indices] != list(range(len(ivs1))):
            return False
    return True


def fuse_function(fn: func.FuncOp) -> None:
    block = fn.body.block
    changed = True
    while changed:
        changed = False
        nests = stage_nests(block)
        for first, second in zip(nests, nests[1:]):
            if loop_role(first) != "parallel" or loop_role(second) != "parallel":
                continue
            a, b = _chain(first), _chain(second)
            if len(a) > len(b) or not all(same_range(x, y) for x, y in zip(a, b)):
                continue
            between = list(block.ops)
            between = between[between.index(first) + 1: between.index(second)]
            if any(isinstance(o, scf.ForOp) for o in between) or not _independent(a, b):
                continue
            for op in between:  # the second stage's dims and constants move above the first
                op.detach()
                block.insert_op_before(op, first)
            inner_a, inner_b = a[-1].body.block, b[len(a) - 1].body.block
            for x, y in zip(a, b):
                y.body.block.args[0].replace_all_uses_with(x.body.block.args[0])
            for op in [o for o in inner_b.ops if not isinstance(o, scf.YieldOp)]:
                op.detach()
                inner_a.insert_op_before(op, inner_a.last_op)
            second.detach()
            second.erase()
            changed = True
            break
    number_stages(stage_nests(block))


@dataclass(frozen=True)
class FuseSiblingLoops(ModulePass):
    """Merge consecutive, independent stages that walk the same iteration space."""

    name = "fuse-sibling-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.ops:
            if isinstance(fn, func.FuncOp):
                fuse_function(fn)
