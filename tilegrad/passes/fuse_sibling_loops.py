"""fuse-sibling-loops: consecutive stages that share their outer loops become one loop nest.

Two stages whose outer parallel (or scatter) loops agree (same bounds) on the first `depth` axes run
in one nest, slab by slab: for each point of the shared loops, the first stage's inner loops, then
the second's. The data a slab touches is loaded once into cache for both (batch norm's dβ and dγ
both sweep dy), and one barrier between them disappears. A per-row reduction and the row's
elementwise consumer (a softmax row's total, then its dx) run row by row; max pooling's window
choice, dx's zero fill and the scatter into dx run plane by plane, so dx is written once. Where the
outer loops differ but both stages loop over the same range further in (batch norm's per-channel
sums over (1, C, 1), its dx over (N, C, H*W)), each brings that loop to the front first (parallel
loops: the same iterations in another order), so the channel's dx reads x and dy from cache. A tensor
one stage writes and the other touches must be accessed by both only inside the slab (the same dims
indexed by the shared loops' variables in every access); otherwise the stages stay apart, their loops
as they were. A stage whose sums sweep the same matrix in every slab (G @ W) stays apart too: on its
own, its rows share each sweep.

Each run of stages fused into one is the choice `ComputeWith(stage=S, nests=(0, ..., m-1))`: S is
the number of the stage they become (as the pass numbers the stages after it), its m nests the
stages it is made of, in their order. With `directives` (ComputeWith with nests, printed,
`;`-separated: passes/applying.py), only the runs they name are fused (`fused=False`: each of its
stages stays a stage of its own, and the stages after it are numbered on). Where this is the
loops stage's instance, shared by every target (no exchanged loops), the cpu backend lists none
of its fusions: a canonicalization, before the cpu planner sees the stages.

Two contractions (sums of a product of two reads, each indexed by a loop of the nest the other is
not: a GEMM's terms) that would share the nest's innermost body and read different tensors on each
side join only with `contractions` (the default; a scratchpad target's tiler stages each nest's
tiles): in one body their register tile holds both sums' accumulators and each term loads both
sums' operands (sum_r a[r, i] b[r, j] beside sum_r c[r, i] e[r, j]: 44 ms of CPU joined against 32
apart at 16x512x512x64; attention backward's dk = ds^T q and dv = p^T do; docs/perf-notes.md).
Two reading the same tensor on a side (g.T @ x beside g.T @ y) load it once for both: they fuse.
On cpu both instances keep them apart (`contractions=False`); the tiled stage's lists each pair
kept apart as `ComputeWith(stage=S, nests=(0, ..., m-1), fused=False)` (S the number of the first,
m the stages the two are made of), and a user's `fused=True` for it joins them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import func, memref, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from tilegrad.dialect.tg import LoopRole
from tilegrad.passes.applying import chosen
from tilegrad.passes.common import (
    constant_index,
    depends_on,
    functions,
    loop_role,
    number_stages,
    perfect_chain,
    same_range,
    stage_nests,
    sum_loop,
    viewed,
    walks_columns,
)
from tilegrad.schedule import ComputeWith, Directive

FUSABLE = (LoopRole.PARALLEL, LoopRole.SCATTER)


def _slab_dims(access: Operation, ivs: list) -> tuple[int, ...] | None:
    """The dims the access indexes by the shared loops' variables, one per variable (None if one
    of them indexes no dim): batch norm's per-channel sums [0, c, 0, 0] lie in channel c's slab."""
    indices = list(access.indices)
    dims = [next((d for d, i in enumerate(indices) if i is v), None) for v in ivs]
    return None if None in dims else tuple(dims)


def _independent(first: list[scf.ForOp], second: list[scf.ForOp], depth: int) -> bool:
    """Whether running the two nests slab by slab (one iteration of the `depth` shared loops: first's
    then second's) does what running all of first, then all of second, does: every tensor one of them
    writes and the other touches is accessed by both only inside the slab of the shared variables
    (the same dims indexed by them in every access), and a scatter writes only inside its slab (so
    the slabs can also be split over cores)."""
    accesses = {}
    for nest, loops in ((0, first), (1, second)):
        ivs = [loop.body.block.args[0] for loop in loops[:depth]]
        for op in loops[0].walk():
            if isinstance(op, (memref.LoadOp, memref.StoreOp)):
                accesses.setdefault(viewed(op.memref), ([], []))[nest].append((op, ivs))
    for loops in (first, second):  # a scatter's rows follow its data: they must stay in the slab
        ivs = [loop.body.block.args[0] for loop in loops[:depth]]
        leading = tuple(range(depth))  # (its rows: the leading dims)
        if loop_role(loops[0]) == LoopRole.SCATTER and not all(
                _slab_dims(op, ivs) == leading for op in loops[0].walk() if isinstance(op, memref.StoreOp)):
            return False
    for mem, (in_first, in_second) in accesses.items():
        if not in_first or not in_second:
            continue
        if not any(isinstance(op, memref.StoreOp) for op, _ in in_first + in_second):
            continue
        dims = {_slab_dims(op, ivs) for op, ivs in in_first + in_second}
        if len(dims) != 1 or None in dims:  # each slab touches its own part, the same in both
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


def _column_sums_beside_loops(a: list[scf.ForOp], b: list[scf.ForOp], depth: int) -> bool:
    """Whether fusing would put a column sum (its terms walk down a column of the slab's innermost
    shared variable: batch norm's variance of x seen as [N, C]) beside a loop in its slab (the
    saved statistics' loop over 1xCx1x1). On its own, interchange-column-reductions turns it into
    sweeps of contiguous rows; beside a loop it stays a column walk (8192 x 1024: 37 ms against
    4). Sums beside sums fuse: their rows then share each sweep (per_activation's dβ and dγ)."""
    if len(a) == depth and len(b) == depth:
        return False
    columns = {a[depth - 1].body.block.args[0], b[depth - 1].body.block.args[0]}
    return any(loop is not None and any(walks_columns(loop, c) for c in columns)
               for chain in (a, b) for loop in map(sum_loop, chain[depth - 1].body.block.ops))


def _sides(chain: list[scf.ForOp]) -> list[dict[frozenset[int], frozenset]]:
    """Each contraction in the innermost body of the perfect chain (a sum multiplying two reads each
    indexed, with the sum's term, by a loop of the chain the other is not: dk[b, m, d] = sum_r
    ds[b, r, m] q[b, r, d], not batch norm's dgamma[c] = sum_n dy[n, c] xhat[n, c]) as its sides:
    the chain positions of the loops a read is indexed by -> the tensors read so."""
    found = []
    for loop in map(sum_loop, chain[-1].body.block.ops):
        if loop is None:
            continue
        term, sides = loop.body.block.args[0], {}
        for load in (o for o in loop.walk() if isinstance(o, memref.LoadOp)):
            if any(depends_on(i, term) for i in load.indices):
                at = frozenset(p for p, c in enumerate(chain)
                               if any(depends_on(i, c.body.block.args[0]) for i in load.indices))
                sides[at] = sides.get(at, frozenset()) | {viewed(load.memref)}
        if any(not x <= y and not y <= x for x in sides for y in sides):
            found.append(sides)
    return found


def _contractions_side_by_side(a: list[scf.ForOp], b: list[scf.ForOp], depth: int) -> bool:
    """Whether fusing would put two contractions in one innermost body (both chains whole in the
    shared loops) that read different tensors on every side: their register tile (jam-row-sweeps'
    rows, chunk-row-sweeps' columns) would hold both sums' accumulators, each term loading both
    sums' operands. Two that read the same tensors on a side (g.T @ x beside g.T @ y) load them
    once for both and sweep them once: they fuse."""
    if not depth == len(a) == len(b):
        return False
    first, second = _sides(a), _sides(b)
    return bool(first and second) and not any(
        x.get(at) == tensors for x in first for y in second for at, tensors in y.items()
        if any(not at <= other and not other <= at for other in y))


def _shared_depth(a: list[scf.ForOp], b: list[scf.ForOp]) -> int:
    depth, matched = 0, {}
    while depth < min(len(a), len(b)) and same_range(a[depth], b[depth], matched):
        matched[b[depth].body.block.args[0]] = a[depth].body.block.args[0]
        depth += 1
    return depth


Allow = Callable[[list[int], list[int]], bool]
"""Whether two (fused) stages may fuse, by the numbers of the stages each is made of."""


def fuse_function(fn: func.FuncOp, exchange_loops: bool = False, allow: Allow | None = None,
                  join: Allow | None = None, apart: list | None = None) -> list[list[int]]:
    """Fuse `fn`'s stages (those `allow` lets fuse, by their numbers as they were; two contractions
    side by side only where `join` lets them: None, always); the stages they became, each as the
    numbers of the stages it is made of, in order. `apart` gets the pairs of them kept apart as
    contractions."""
    made = {nest: [number] for number, nest in enumerate(stage_nests(fn.body.block))}
    refused: dict = {}
    fuse_siblings(fn.body.block, stages=True, exchange_loops=exchange_loops, made=made, allow=allow, join=join,
                  refused=refused)
    nests = stage_nests(fn.body.block)
    number_stages(nests)
    if apart is not None:
        apart += [(made[first], made[second]) for second, first in refused.items() if first in made and second in made
                  and nests.index(second) == nests.index(first) + 1]
    return [made[nest] for nest in nests]


def fusions(fn: func.FuncOp, exchange_loops: bool, contractions: bool = True) -> list[tuple[ComputeWith, list[int]]]:
    """The runs of stages fuse-sibling-loops fuses in `fn` (decided on a copy: `fn` is unchanged), each
    by the directive that names it and the numbers of its stages: what the pass does by itself, and
    what the cpu planner lists; then the pairs of stages it keeps apart as contractions side by side,
    each by its `fused=False` directive and the numbers of the stages the two are made of (only with
    `contractions` False: else it joins them)."""
    apart: list = []
    groups = fuse_function(fn.clone(), exchange_loops, join=None if contractions else _never, apart=apart)
    return [(ComputeWith(stage=number, nests=tuple(range(len(group)))), group)
            for number, group in enumerate(groups) if len(group) > 1] + [
        (ComputeWith(stage=groups.index(first), nests=tuple(range(len(first) + len(second))), fused=False),
         first + second) for first, second in apart]


def _never(first: list[int], second: list[int]) -> bool:
    return False


def fuse_siblings(block: Block, stages: bool, exchange_loops: bool = False, made: dict | None = None,
                  allow: Allow | None = None, join: Allow | None = None, refused: dict | None = None) -> None:
    """Fuse consecutive fusable loops of `block` (its stage nests, or inside a slab its inner loops);
    each fused slab's body is fused in turn (the two stages' row loops become one). `made`: each
    stage nest's stages as they were, which `allow` and `join` take (stages only); `refused` gets
    each second nest of two contractions kept apart (where `join`, given, does not let them join),
    mapped to the first."""
    changed = True
    while changed:
        changed = False
        loops = stage_nests(block) if stages else [o for o in block.ops if isinstance(o, scf.ForOp)]
        for first, second in zip(loops, loops[1:]):
            if loop_role(first) not in FUSABLE or loop_role(second) not in FUSABLE:
                continue
            if allow is not None and not allow(made[first], made[second]):
                continue
            a, b = perfect_chain(first), perfect_chain(second)
            exchanged = _shared_outer_loop(a, b) if stages and exchange_loops else []
            depth = _shared_depth(a, b)
            between = list(block.ops)
            between = between[between.index(first) + 1: between.index(second)]
            movable = (lambda o: not isinstance(o, scf.ForOp)) if stages else _index_value
            whole_scatter = loop_role(first) != LoopRole.SCATTER or depth == len(a)  # (it keeps its loops)
            fusable = (depth > 0 and whole_scatter and all(movable(o) for o in between)
                       and _independent(a, b, depth) and not (stages and _sweeps_data_of_every_slab(b, depth))
                       and not (stages and _column_sums_beside_loops(a, b, depth)))
            if fusable and stages and join is not None and not join(made[first], made[second]) \
                    and _contractions_side_by_side(a, b, depth):
                fusable = False
                if refused is not None:
                    refused[second] = first
            if not fusable:
                for chain, position in exchanged:
                    _exchange(chain, position)
                continue
            for op in between:  # the second stage's dims and constants move above the first
                op.detach()
                block.insert_op_before(op, first)
            _fuse(a, b, depth)
            if made is not None:
                made[first] = made[first] + made.pop(second)
            fuse_siblings(a[depth - 1].body.block, stages=False)
            changed = True
            break


def _unit(loop: scf.ForOp) -> bool:
    return constant_index(loop.lb) == 0 and constant_index(loop.ub) == 1


def _shared_outer_loop(a: list[scf.ForOp], b: list[scf.ForOp]) -> list[tuple[list[scf.ForOp], int]]:
    """Where the two stages' outer loops differ, bring to the front of each the loop over the first
    stage's outer range that is not a single iteration, if both have one: batch norm's per-channel
    sums loop over (1, C, 1), dx over (N, C, H*W); over (C, 1, 1) and (C, N, H*W), the two run
    channel by channel, and dx reads the channel's x and dy from cache. The (chain, position)
    exchanged, to undo them if the stages do not fuse."""
    if same_range(a[0], b[0]) or loop_role(a[0]) != LoopRole.PARALLEL or loop_role(b[0]) != LoopRole.PARALLEL:
        return []
    lead = next((p for p, loop in enumerate(a) if not _unit(loop)), None)
    if lead is None:
        return []
    match = next((p for p, loop in enumerate(b) if same_range(a[lead], loop)), None)
    if match is None or not _exchangeable(a, lead) or not _exchangeable(b, match):
        return []
    exchanged = [(chain, position) for chain, position in ((a, lead), (b, match)) if position]
    for chain, position in exchanged:
        _exchange(chain, position)
    return exchanged


def _exchangeable(chain: list[scf.ForOp], position: int) -> bool:
    """Whether loops 0 and `position` of a perfect chain of parallel loops can trade ranges: the
    inner one's bounds are defined outside the chain, the index values computed between them
    depend on none of the loops' variables, and the innermost loop (the one that walks rows) stays
    innermost unless only single iterations stand before it."""
    if position == 0:
        return True
    if position == len(chain) - 1 and not all(_unit(loop) for loop in chain[:position]):
        return False
    outer, inner = chain[0], chain[position]
    if any(isinstance(v.owner, Operation) and outer.is_ancestor(v.owner) for v in (inner.lb, inner.ub, inner.step)):
        return False
    ivs = [loop.body.block.args[0] for loop in chain[:position + 1]]
    between = [o for loop in chain[:position] for o in loop.body.block.ops
               if not isinstance(o, (scf.ForOp, scf.YieldOp))]
    return not any(depends_on(v, iv) for o in between for v in o.operands for iv in ivs)


def _exchange(chain: list[scf.ForOp], position: int) -> None:
    """Loops 0 and `position` trade ranges, and their variables what they index: the same
    iterations, in another order (the loops are parallel). Each keeps its place, role and axis."""
    outer, inner = chain[0], chain[position]
    bounds = list(outer.operands[:3])
    outer.operands = [*inner.operands[:3], *outer.operands[3:]]
    inner.operands = [*bounds, *inner.operands[3:]]
    v, w = outer.body.block.args[0], inner.body.block.args[0]
    uses_v, uses_w = list(v.uses), list(w.uses)
    for use in uses_v:
        use.operation.operands[use.index] = w
    for use in uses_w:
        use.operation.operands[use.index] = v
    v.name_hint, w.name_hint = w.name_hint, v.name_hint


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
    """Merge consecutive, independent stages that walk the same iteration space; with
    `exchange_loops`, also stages whose shared loop is further in (on cpu, where the fused stage's
    data stays in cache; a scratchpad target's tiler stages each of its own loops' tiles); with
    `directives` (ComputeWith with nests, printed, `;`-separated: passes/applying.py), the runs of
    stages they name (`fused=False`: none)."""

    name = "fuse-sibling-loops"

    exchange_loops: bool = False
    contractions: bool = True
    """Whether two contractions side by side join (else they stay apart, each listed as
    `ComputeWith(..., fused=False)`, which a user's `fused=True` overrides)."""
    directives: str | None = None
    takes_text: ClassVar[str] = "ComputeWith(nests=...)"

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, ComputeWith) and bool(directive.nests)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.directives is None:
            for fn in functions(op):
                fuse_function(fn, self.exchange_loops, join=None if self.contractions else _never)
            return
        runs: dict[func.FuncOp, list[set[int]]] = {fn: [] for fn in functions(op)}  # (the stages' numbers now)
        candidates = [(directive, (fn, group)) for fn in runs
                      for directive, group in fusions(fn, self.exchange_loops, self.contractions)]
        for (fn, group), directive in chosen(self, candidates, "run of stages"):
            if not directive.off:  # (a pair kept apart by the pass's own fused=False: apart)
                runs[fn].append(set(group))
        for fn, chosen_runs in runs.items():
            within = lambda a, b, runs=chosen_runs: any(set(a + b) <= r for r in runs)  # noqa: E731
            fuse_function(fn, self.exchange_loops, within, join=within)
