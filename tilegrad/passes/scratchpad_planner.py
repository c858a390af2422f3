"""plan_scratchpad: how tile-for-target splits each stage over the cores, decided before it rewrites anything.

The planner reads the loops IR, the target, the kernel's block count and the op's ScheduleHint (with
the user's directives); it never mutates the IR. Its KernelSchedule holds, per stage:
- `RFactor(stage, axis=0, chunks=blocks)` for a stage that reduces to one element: each core reduces
  its part into a workspace of partials, and a stage added after it combines them in core order;
- `Parallel(stage, axes, balance)` for every other stage whose domain splits over the cores: the
  axes are fused (one index over their product) and the cores take contiguous ranges of it. A scatter
  whose destination rows are data splits by destination (owner computes) and gets no directive.

The default (`fused_count`): start from the outer axis that is not statically 1, and fuse the next
axis of the stage's perfect nest while the split is badly balanced, i.e. while the average core's
share is less than FUSE_BELOW of the busiest core's: E / (cores * ceil(E / cores)) < 0.9 for the fused
extent E. Only axes that are not tiled (strip-mined and staged in UB), with bounds set before the nest,
fuse; an op whose hint asks for the vendor's split keeps the outer axis (a vendor bound assumes it).
An extent the IR does not know (a dim read per call) leaves the outer split in place and the stage in
`KernelSchedule.deferred`: the kernel decides at a call, with the call's extents, whether a kernel
with the fused split serves it better (kernel.py: the decision goes into the cache key, not the shapes).

User directives (the op's schedule, `tg.schedule`, `compile(schedule=...)`, `--schedule FILE`) replace
the planner's for the stage they name; one that cannot apply is refused with ScheduleError naming it
and the reason. xDSL is imported only by the functions that read IR, so `import tilegrad` stays light.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from tilegrad.errors import ScheduleError
from tilegrad.schedule.directives import Balance, Directive, KernelSchedule, Parallel, RFactor
from tilegrad.schedule.hint import ScheduleHint

if TYPE_CHECKING:
    from xdsl.dialects import func, scf
    from xdsl.ir import Operation, SSAValue

FUSE_BELOW = 0.9
"""Fuse another axis into the core split while the average core does less than this share of the
busiest core's work (B=16 on 24 cores: 0.67, fused with L=64: 0.99)."""

APPLIED = (Parallel,)
"""The directives tile-for-target carries out (an RFactor equal to the planner's is accepted as in force)."""


def balance(extent: int, cores: int) -> float:
    """The average core's share of the busiest one's when `extent` iterations split over `cores`."""
    if extent <= 0:
        return 1.0
    return extent / (cores * math.ceil(extent / cores))


def fused_count(extents: Sequence[int | None], cores: int) -> int | None:
    """How many of a stage's fusable axes (outer to inner, their extents) the default split fuses:
    the next one while the split is balanced below FUSE_BELOW. None: an extent it needs is unknown."""
    if not extents or extents[0] is None:
        return None
    count, total = 1, extents[0]
    while count < len(extents) and balance(total, cores) < FUSE_BELOW:
        if extents[count] is None:
            return None
        total *= extents[count]
        count += 1
    return count


def tiled_axes(kind: str, depth: int, hint: ScheduleHint) -> list[tuple[int, int | None, bool]]:
    """(axis, tile size or None for the tiler's choice, whole) of each axis the tiler strip-mines:
    the hint's tile sizes for the stage's inner axes if it names the stage's role and the stage has
    that many axes (embedding's 1-D scatter of counts has not), else the innermost axis."""
    sizes = hint.tile_sizes if kind == hint.tile_role else ()
    if not sizes or len(sizes) > depth:
        return [(depth - 1, None, False)]
    return [(depth - len(sizes) + k, size, k >= len(sizes) - hint.whole_axes) for k, size in enumerate(sizes)]


@dataclass
class StageInfo:
    """What the planner reads off one stage of the loops IR (numbered as the tiled kernel is)."""

    number: int
    kind: str
    """The loops' role ("parallel", "scatter"), or "rfactor" / "combine" / "by destination"."""
    extents: dict[int, int | None] = field(default_factory=dict)
    """Each axis's extent where the IR states it (a constant), else None."""
    chain: list[int] = field(default_factory=list)
    """The axes of the stage's perfect nest, outer to inner, whose loops run 0..extent by 1 with
    bounds set before the nest (what a fused split can take)."""
    tiled: set[int] = field(default_factory=set)
    split_axis: int = 0
    """The axis the default split takes: the outermost that is not statically 1 (see split_axis)."""


def plan_scratchpad(fn: func.FuncOp, target, num_blocks: int, hint: ScheduleHint) -> KernelSchedule:
    """The schedule of tile-for-target for one kernel function (its loops IR, before any rewrite):
    the planner's directives, then the given ones (`hint.directives`, `hint.planned`) in their place."""
    stages = read_stages(fn, num_blocks, hint)
    directives: list[Directive] = []
    source: dict[Directive, str] = {}
    deferred: dict[int, tuple[int, ...]] = {}
    given = _given(hint, stages, num_blocks, target)
    for info in stages:
        if info.kind == "rfactor":
            chosen: Directive | None = RFactor(stage=info.number, axis=0, chunks=num_blocks)
        elif info.kind in ("combine", "by destination"):
            chosen = None
        else:
            chosen, deferred_axes = _default_parallel(info, num_blocks, hint, target)
            if deferred_axes and info.number not in given:
                deferred[info.number] = deferred_axes
        mine = given.get(info.number)
        if mine is not None:
            directive, who = mine
            source[directive] = who
            directives.append(directive)
        elif chosen is not None:
            source[chosen] = "planner"
            directives.append(chosen)
    return KernelSchedule(target.name, tuple(directives), source, deferred)


def _default_parallel(info: StageInfo, num_blocks: int, hint: ScheduleHint, target) -> tuple[Parallel, tuple]:
    """The planner's split of a stage, and the axes a call's extents may fuse if the IR does not know them."""
    balance_ = Balance.VENDOR if hint.vendor_split else Balance.BALANCED
    outer = Parallel(stage=info.number, axes=(info.split_axis,), balance=balance_)
    fusable = _fusable(info)
    if not target.staged or hint.vendor_split or info.kind != "parallel" or len(fusable) < 2:
        return outer, ()
    count = fused_count([info.extents.get(a) for a in fusable], num_blocks)
    if count is None:
        return outer, fusable
    return replace(outer, axes=fusable[:count]), ()


def _fusable(info: StageInfo) -> tuple[int, ...]:
    """The axes from the default split axis inwards that a fused split may take."""
    axes = []
    for axis in info.chain:
        if axis < info.split_axis:
            continue
        if axis != info.split_axis + len(axes) or axis in info.tiled:
            break
        axes.append(axis)
    return tuple(axes)


def _given(hint: ScheduleHint, stages: list[StageInfo], num_blocks: int, target) -> dict[int, tuple[Directive, str]]:
    """The user's directives (and the planner's decisions at a call) by stage, each checked."""
    found: dict[int, tuple[Directive, str]] = {}
    for who, directives in (("planner", hint.planned), ("user", hint.directives)):
        for directive in directives:
            if isinstance(directive, RFactor):
                _check_rfactor(directive, stages, num_blocks)
                continue  # the planner's own: in force already
            if not isinstance(directive, APPLIED):
                where = "scratchpad targets" if target.staged else f"target {target.name} by tile-for-target"
                raise ScheduleError(f"{directive}: not applied on {where} yet (tile-for-target carries out "
                                    f"{', '.join(c.__name__ for c in APPLIED)}); remove it from the schedule")
            if directive.stage is not None:
                _check_parallel(directive, _stage(directive, stages), num_blocks)
                found[directive.stage] = (directive, who)
                continue
            reasons = []
            for info in stages:  # stage None: every stage it can apply to
                one = replace(directive, stage=info.number)
                try:
                    _check_parallel(one, info, num_blocks)
                except ScheduleError as err:
                    reasons.append(str(err))
                    continue
                found[info.number] = (one, who)
            if len(reasons) == len(stages):
                raise ScheduleError(f"{directive}: applies to no stage: {'; '.join(reasons)}")
    return found


def _stage(directive: Directive, stages: list[StageInfo]) -> StageInfo:
    if directive.stage >= len(stages):
        raise ScheduleError(f"{directive}: the kernel has no stage {directive.stage}: its stages are "
                            f"0 to {len(stages) - 1} (as `tilegrad plan` numbers them)")
    return stages[directive.stage]


def _check_rfactor(directive: RFactor, stages: list[StageInfo], num_blocks: int) -> None:
    info = _stage(directive, stages) if directive.stage is not None else None
    if info is None or info.kind != "rfactor" or directive.axis != 0 or directive.chunks != num_blocks:
        raise ScheduleError(f"{directive}: not applied on scratchpad targets yet: tile-for-target splits only "
                            f"a reduction to one element, over all {num_blocks} blocks (the planner's "
                            f"RFactor(stage=k, axis=0, chunks={num_blocks}))")


def _check_parallel(directive: Parallel, info: StageInfo, num_blocks: int) -> None:
    """Refuse a Parallel the stage cannot take (ScheduleError naming the directive and the reason)."""
    number = info.number
    if info.kind == "rfactor":
        raise ScheduleError(f"{directive}: stage {number} reduces to one element; its reduction axis is split "
                            f"over the cores (RFactor), it has no parallel axes to split")
    if info.kind == "combine":
        raise ScheduleError(f"{directive}: stage {number} combines stage {number - 1}'s per-core partials "
                            f"in core order, on one core")
    if info.kind == "by destination":
        raise ScheduleError(f"{directive}: stage {number} is a scatter whose destination rows are data: it is "
                            f"split by destination row (each core adds only into the rows it owns), not by "
                            f"its axes")
    depth = len(info.extents)
    for axis in directive.axes:
        if axis >= depth:
            raise ScheduleError(f"{directive}: axis {axis} is not a parallel axis of stage {number} (its "
                                f"{info.kind} axes are 0 to {depth - 1})")
    if directive.cores is not None and directive.cores > num_blocks:
        raise ScheduleError(f"{directive}: cores={directive.cores} is more than the kernel's {num_blocks} blocks")
    before = [a for a in range(directive.axes[0]) if info.extents[a] != 1]
    if before:
        raise ScheduleError(f"{directive}: the axes split must be the stage's outer axes, but axis {before[0]} "
                            f"(outside axis {directive.axes[0]}) is not of extent 1")
    if len(directive.axes) == 1:
        return
    if info.kind == "scatter":
        raise ScheduleError(f"{directive}: stage {number} is a scatter split by its destination row (axis 0): "
                            f"fusing more axes would let two cores add into one row")
    if info.kind != "parallel":
        raise ScheduleError(f"{directive}: stage {number}'s loops are {info.kind} loops: only a parallel "
                            f"stage's axes fuse into one core split")
    if list(directive.axes) != list(range(directive.axes[0], directive.axes[-1] + 1)):
        raise ScheduleError(f"{directive}: the axes fused must be adjacent")
    for axis in directive.axes:
        if axis in info.tiled:
            raise ScheduleError(f"{directive}: axis {axis} of stage {number} is tiled (strip-mined and staged in "
                                f"UB tile by tile), so it cannot also be fused into the core split")
        if axis not in info.chain:
            raise ScheduleError(f"{directive}: axis {axis} of stage {number} is not perfectly nested in the axes "
                                f"outside it (its loop shares a level with other loops or memory accesses, or "
                                f"its bounds depend on them), so it cannot be fused")


# ---- reading the loops IR ---------------------------------------------------------------------
def read_stages(fn: func.FuncOp, num_blocks: int, hint: ScheduleHint) -> list[StageInfo]:
    """Each stage as the tiled kernel numbers them: a stage RFactor splits is followed by its combine."""
    from tilegrad.passes.common import loop_role, stage_nests

    stages: list[StageInfo] = []
    for nest in stage_nests(fn.body.block):
        if num_blocks > 1 and scalar_reduction(nest) is not None:
            stages.append(StageInfo(len(stages), "rfactor", {0: 1}))
            stages.append(StageInfo(len(stages), "combine", {0: 1}))
            continue
        stages.append(_read_stage(len(stages), nest, str(loop_role(nest).value), hint))
    return stages


def _read_stage(number: int, nest: scf.ForOp, kind: str, hint: ScheduleHint) -> StageInfo:
    from tilegrad.passes.common import constant_index, loop_axis, perfect_chain

    loops = stage_loops(nest)
    info = StageInfo(number, kind, {a: static_extent(loop.ub) for a, loop in sorted(loops.items())})
    if kind == "scatter" and not scatters_own_rows(nest, loops):
        info.kind = "by destination"
        return info
    info.split_axis = split_axis(loops)
    for loop in perfect_chain(nest):
        if (loop.iter_args or constant_index(loop.lb) != 0 or constant_index(loop.step) != 1
                or not _defined_outside(loop.ub, nest)):
            break
        info.chain.append(loop_axis(loop))
    info.tiled = {axis for axis, _, _ in tiled_axes(kind, len(loops), hint)}
    return info


def stage_loops(nest: Operation, role=None) -> dict[int, scf.ForOp]:
    """The stage's loops of its role (or `role`) by axis (a sibling loop of an axis: the last one)."""
    from xdsl.dialects import scf

    from tilegrad.passes.common import loop_axis, loop_role

    role = role or loop_role(nest)
    return {loop_axis(op): op for op in nest.walk() if isinstance(op, scf.ForOp) and loop_role(op) == role}


def split_axis(loops: dict[int, scf.ForOp]) -> int:
    """The outermost axis that is not statically 1 (a 1xCx1x1 parameter splits over C), passing over a
    size-1 axis only if all its accesses are in the next axis's loop: an access of its own (a sibling
    fused in at that level, as embedding's fill of counts with one row) would run on every core, and a
    temporary it reaches could not live in UB split with the stage's rows."""
    from xdsl.dialects import memref

    axes = sorted(loops)
    for a, b in zip(axes, axes[1:]):
        inner = loops[b]
        own = any(isinstance(op, (memref.LoadOp, memref.StoreOp)) and not inner.is_ancestor(op)
                  for op in loops[a].walk())
        if static_extent(loops[a].ub) != 1 or own:
            return a
    return axes[-1] if static_extent(loops[axes[-1]].ub) != 1 else axes[0]


def scatters_own_rows(nest: Operation, loops: dict[int, scf.ForOp]) -> bool:
    """A scatter whose destination row is its domain's outer index: each point's row is known
    without data, so the domain itself splits over cores like a compute."""
    from xdsl.dialects import memref

    store = next(o for o in nest.walk() if isinstance(o, memref.StoreOp) and "tg.scatter_store" in o.attributes)
    return store.indices[0] is loops[0].body.block.args[0]


def static_extent(value: SSAValue) -> int | None:
    """The integer a bound is: a constant, or a dim of a static axis; None if it is read per call."""
    from xdsl.dialects import arith, memref
    from xdsl.dialects.builtin import IntegerAttr, MemRefType

    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    if isinstance(owner, memref.DimOp) and isinstance(owner.source.type, MemRefType):
        axis = static_extent(owner.index)
        if axis is not None and owner.source.type.get_shape()[axis] >= 0:
            return owner.source.type.get_shape()[axis]
    return None


def reduction_loops(reduce: Operation) -> list[scf.ForOp]:
    """The loops of one reduction: itself, or both forms of a run-time choice (blocked, plain)."""
    from xdsl.dialects import scf

    if isinstance(reduce, scf.ForOp):
        return [reduce]
    return [o for region in reduce.regions for o in region.block.ops if isinstance(o, scf.ForOp)]


def plain_loop(reduce: Operation) -> scf.ForOp:
    """The loop that adds one term per iteration (the plain form of a run-time choice)."""
    from xdsl.dialects import scf

    return reduce if isinstance(reduce, scf.ForOp) else reduction_loops(reduce)[-1]


def scalar_reduction(nest: scf.ForOp) -> Operation | None:
    """The reduction of a stage that reduces to one element (a float sum from a constant start, and
    what follows it uses only its result and values from outside): RFactor splits its axis over the
    cores. None for any other stage."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import Float32Type, Float64Type

    from tilegrad.dialect.tg import LoopRole
    from tilegrad.passes.common import loop_role

    if loop_role(nest) != LoopRole.PARALLEL or static_extent(nest.ub) != 1:
        return None
    body = nest.body.block
    reduce = next((o for o in body.ops if loop_role(o) == LoopRole.REDUCE), None)
    if reduce is None or len(reduce.results) != 1:
        return None
    init = plain_loop(reduce).iter_args[0].owner
    floating = isinstance(reduce.results[0].type, (Float32Type, Float64Type))
    if not floating or not isinstance(init, arith.ConstantOp):
        return None
    ops = list(body.ops)
    after = ops[ops.index(reduce) + 1:-1]
    inner = {r for o in after for r in o.results} | {reduce.results[0]}
    used = {v for o in after for x in [o, *o.walk()] for v in x.operands}
    if any(v not in inner and not _defined_outside(v, nest) for v in used):
        return None  # what follows the reduction needs values of this stage: keep it whole
    return reduce


def _defined_outside(value: SSAValue, loop: Operation) -> bool:
    from xdsl.ir import Operation

    owner = value.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op()  # block argument -> its op
    return op is None or not loop.is_ancestor(op)


__all__ = ["FUSE_BELOW", "balance", "fused_count", "plan_scratchpad", "read_stages", "tiled_axes"]
