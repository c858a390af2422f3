"""fuse-sibling-loops: consecutive stages that share their outer loops become one loop nest.

Two stages whose outer parallel (or scatter) loops agree (same bounds) on the first `depth` axes run
in one nest, slab by slab: for each point of the shared loops, the first stage's inner loops, then
the second's. The data a slab touches is loaded once into cache for both (batch norm's dβ and dγ
both sweep dy), and one barrier between them disappears. A per-row reduction and the row's
elementwise consumer (a softmax row's total, then its dx) run row by row; max pooling's window
choice, dx's zero fill and the scatter into dx run plane by plane, so dx is written once. A tensor
one stage writes and the other touches must be accessed by both only inside the slab (its leading
indices are the shared loops' variables); otherwise the stages stay apart. A stage whose sums sweep
the same data in every slab (G @ W) stays apart too: on its own, its rows share each sweep.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, memref, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import LoopRole
from tilegrad.passes.common import (
    depends_on,
    functions,
    loop_role,
    number_stages,
    perfect_chain,
    same_range,
    stage_nests,
    viewed,
)

FUSABLE = (LoopRole.PARALLEL, LoopRole.SCATTER)


def _in_slab(access: Operation, ivs: list) -> bool:
    """Whether the access indexes its leading dims by the shared loops' variables, in order."""
    indices = list(access.indices)
    return len(indices) >= len(ivs) and all(i is v for i, v in zip(indices, ivs))


def _independent(first: list[scf.ForOp], second: list[scf.ForOp], depth: int) -> bool:
    """Whether running the two nests slab by slab (one iteration of the `depth` shared loops: first's
    then second's) does what running all of first, then all of second, does: every tensor one of them
    writes and the other touches is accessed by both only inside the slab of the shared variables, and
    a scatter writes only inside its slab (so the slabs can also be split over cores)."""
    accesses = {}
    for nest, loops in ((0, first), (1, second)):
        ivs = [loop.body.block.args[0] for loop in loops[:depth]]
        for op in loops[0].walk():
            if isinstance(op, (memref.LoadOp, memref.StoreOp)):
                accesses.setdefault(viewed(op.memref), ([], []))[nest].append((op, ivs))
    for loops in (first, second):  # a scatter's rows follow its data: they must stay in the slab
        ivs = [loop.body.block.args[0] for loop in loops[:depth]]
        if loop_role(loops[0]) == LoopRole.SCATTER and not all(
                _in_slab(op, ivs) for op in loops[0].walk() if isinstance(op, memref.StoreOp)):
            return False
    for mem, (in_first, in_second) in accesses.items():
        if not in_first or not in_second:
            continue
        if not any(isinstance(op, memref.StoreOp) for op, _ in in_first + in_second):
            continue
        if not all(_in_slab(op, ivs) for op, ivs in in_first + in_second):
            return False
    return True


def _sweeps_data_of_every_slab(loops: list[scf.ForOp], depth: int) -> bool:
    """Whether a sum in the nest reads, in every slab of the shared loops, the same matrix (G @ W:
    every row's sum sweeps all of W). Left as its own stage, its rows can share each sweep
    (jam-row-sweeps); fused with a producer, each slab would sweep it alone. A vector swept in
    every slab (group norm's per-channel scale, summed per group) stays in cache: the slabs fuse,
    and the data they share is read from memory once instead of once per stage."""
    ivs = [loop.body.block.args[0] for loop in loops[:depth]]
    inner = [o.body.block.args[0] for o in loops[0].walk() if isinstance(o, scf.ForOp) and o not in loops[:depth]]
    for reduce in (o for o in loops[0].walk() if isinstance(o, scf.ForOp) and loop_role(o) == LoopRole.REDUCE):
        term = reduce.body.block.args[0]
        for load in (o for o in reduce.walk() if isinstance(o, memref.LoadOp)):
            indices = list(load.indices)
            if not any(depends_on(i, term) for i in indices) or any(depends_on(i, v) for i in indices for v in ivs):
                continue
            if sum(any(depends_on(i, v) for v in inner) for i in indices) >= 2:
                return True
    return False


def _shared_depth(a: list[scf.ForOp], b: list[scf.ForOp]) -> int:
    depth, matched = 0, {}
    while depth < min(len(a), len(b)) and same_range(a[depth], b[depth], matched):
        matched[b[depth].body.block.args[0]] = a[depth].body.block.args[0]
        depth += 1
    return depth


def fuse_function(fn: func.FuncOp) -> None:
    fuse_siblings(fn.body.block, stages=True)
    number_stages(stage_nests(fn.body.block))


def fuse_siblings(block: Block, stages: bool) -> None:
    """Fuse consecutive fusable loops of `block` (its stage nests, or inside a slab its inner loops);
    each fused slab's body is fused in turn (the two stages' row loops become one)."""
    changed = True
    while changed:
        changed = False
        loops = stage_nests(block) if stages else [o for o in block.ops if isinstance(o, scf.ForOp)]
        for first, second in zip(loops, loops[1:]):
            if loop_role(first) not in FUSABLE or loop_role(second) not in FUSABLE:
                continue
            a, b = perfect_chain(first), perfect_chain(second)
            depth = _shared_depth(a, b)
            if depth == 0 or (loop_role(first) == LoopRole.SCATTER and depth < len(a)):
                continue  # (a scatter nest keeps its own loops whole)
            between = list(block.ops)
            between = between[between.index(first) + 1: between.index(second)]
            movable = (lambda o: not isinstance(o, scf.ForOp)) if stages else _index_value
            if not all(movable(o) for o in between) or not _independent(a, b, depth):
                continue
            if stages and _sweeps_data_of_every_slab(b, depth):
                continue
            for op in between:  # the second stage's dims and constants move above the first
                op.detach()
                block.insert_op_before(op, first)
            _fuse(a, b, depth)
            fuse_siblings(a[depth - 1].body.block, stages=False)
            changed = True
            break


def _index_value(op: Operation) -> bool:
    return not op.regions and not isinstance(op, (memref.LoadOp, memref.StoreOp))


def _fuse(a: list[scf.ForOp], b: list[scf.ForOp], depth: int) -> None:
    """Run b's body after a's inside a's first `depth` loops; b's loops go."""
    inner_a, inner_b = a[depth - 1].body.block, b[depth - 1].body.block
    for x, y in zip(a, b[:depth]):
        y.body.block.args[0].replace_all_uses_with(x.body.block.args[0])
    for x, y, y_inner in zip(a, b[:depth - 1], b[1:depth]):  # the second's loop bounds
        anchor = x.body.block.first_op
        for op in [o for o in y.body.block.ops if o is not y_inner and not isinstance(o, scf.YieldOp)]:
            op.detach()
            x.body.block.insert_op_before(op, anchor)
    for op in [o for o in inner_b.ops if not isinstance(o, scf.YieldOp)]:
        op.detach()
        inner_a.insert_op_before(op, inner_a.last_op)
    b[0].detach()
    b[0].erase()


@dataclass(frozen=True)
class FuseSiblingLoops(ModulePass):
    """Merge consecutive, independent stages that walk the same iteration space."""

    name = "fuse-sibling-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            fuse_function(fn)
