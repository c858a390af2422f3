"""tile-for-target: split every stage over the target's cores, tile it, stage tiles in UB.

Driven only by target data and the op's ScheduleHint, like Ascend C host tiling:
0. a stage that reduces to one element splits its reduction axis over the cores instead: per-core
   partials go to a workspace argument and a second stage combines them in core order;
1. block split: a stage's outer axis [0, D) is split over `num_blocks` cores the vendor way
   (D // blocks each, the remainder to the last). A scatter is split by its *destination*: every
   core walks the whole domain and accumulates only the rows it owns, so accumulation is
   deterministic (same order as serial) and needs no atomics or cross-core partial results;
2. strip-mining: the inner axis is tiled by T (or, in stages of the role the schedule names, its
   inner axes by the schedule's tile sizes, the innermost ones as whole tiles);
3. staging (scratchpad targets, `ub_staging.py`): each GM access whose last index walks a tiled
   axis gets a UB buffer covering that tile (double buffered when it fits), with explicit `tg.copy`
   GM->UB before the tile and UB->GM after it; temporaries indexed by the split axis live in UB
   for the whole kernel. T is the largest aligned size whose buffers fit the UB (strictly), and no
   longer than the axis where the plan knows its length (a static shape, a symbol the schedule
   fixes; a dim read per call keeps the longest tile: one kernel serves every value of it). What a
   tile does not cover (reduction runs, per-row scalars, gathers) goes through UB too
   (`ub_run_staging.py`): a scratchpad kernel has no direct GM access, or the pass fails.
Each stage then becomes its own function (`OP_stageK`), run over all blocks in turn, which is the
barrier between stages. The plan of all this is left on the module (`tg.tiling_plan`).

Plan, then apply: after the core split, the axes to tile, the accesses each UB buffer covers, tile
sizes and buffer offsets are decided as data on the split (not yet strip-mined) loops; only then
is each axis strip-mined with its final size and each buffer staged. Nothing built is patched.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    i8,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
from xdsl.transforms.dead_code_elimination import region_dce

from tilegrad.dialect import tg
from tilegrad.dialect.tg import LoopRole
from tilegrad.dialect.values import INDEX, BlockBuilder, element_bytes
from tilegrad.errors import ArgumentError, InternalError, TilegradError, UBCapacityError
from tilegrad.passes.common import (
    add_function_arg,
    arg_info,
    arg_roles,
    args_by_role,
    extent_symbol,
    loop_axis,
    loop_role,
    make_for,
    number_stages,
    stage_nests,
    viewed,
    written_memrefs,
)
from tilegrad.passes.scratchpad_planner import (
    plain_loop,
    plan_scratchpad,
    reduction_loops,
    scalar_reduction,
    scatters_own_rows,
    split_axis,
    static_extent,
    tiled_axes,
)
from tilegrad.passes.tiling_plan import (
    StagePlan,
    TensorUse,
    TilingPlan,
    UBBuffer,
    plan_from_dict,
    plan_to_dict,
)
from tilegrad.passes.ub_run_staging import (
    ColumnWalk,
    Leftovers,
    find_column_walks,
    find_leftovers,
    panel_loop,
    stage_column_walk,
    stage_elements,
    stage_runs,
    stage_short_rows,
)
from tilegrad.passes.ub_staging import (
    CopyForms,
    StagingGroup,
    TiledAxis,
    find_staging_groups,
    function_args,
    stage_group,
)
from tilegrad.schedule import Balance, Parallel, ScheduleHint, parse_schedule
from tilegrad.targets import Target, get_target

MAX_TILE = 16384
MAX_RUN = 2048
MAX_ROW_RUN = 256
"""Elements of a run of per-row values (`rstd[n]` read by a row's columns): each is read once per
row, not once per term, so R rows per copy already make the copies few; longer takes tile space."""
PANEL_SHARE = 0.4
"""The share of the UB a stage's column-walk panels (each rows x one aligned block of the loop its
column walks) take together: linear's dw reads dy[n, o] under the core's loop over o; its panel holds
up to 0.4 * 192 KiB / 32 B = 2457 rows on ascend910b (more rows: the column moves an element per row)."""

WALK_ROWS = 16
"""Rows of a column walk's block: each copy moves one row of the tile, each strip of rows one block
per walked tensor; more rows make the tile narrower (the blocks share the UB with it)."""
CPU_MAX_TILE = 65536


@dataclass
class StageState:
    nest: scf.ForOp
    plan: StagePlan
    lo: SSAValue
    hi: SSAValue
    split_extent: SSAValue
    depth: int = 1
    """The stage's axes before the split fused any (the tiled ones keep their numbers)."""
    cores: int = 1
    """The cores its split uses (a Parallel's `cores`, else all blocks)."""
    vendor: bool = False
    """Split the vendor's way (the remainder to the last core)."""
    fused: bool = False
    axes: dict[int, TiledAxis] = field(default_factory=dict)
    groups: list[StagingGroup] = field(default_factory=list)
    left: Leftovers = field(default_factory=Leftovers)
    walks: list[tuple[TiledAxis, ColumnWalk]] = field(default_factory=list)


_FORM_OPS = {arith.AddiOp: "add", arith.SubiOp: "sub", arith.MuliOp: "mul", arith.DivUIOp: "floordiv",
             arith.DivSIOp: "floordiv", arith.RemSIOp: "mod", arith.MaxSIOp: "max", arith.MinSIOp: "min"}
"""(a size's `//` is arith.divsi, which the forms' "floordiv" evaluates: truncated, as sizes are >= 0)"""


_const_value = static_extent  # the planner's readings of the loops IR (passes/scratchpad_planner.py)
_reduction_loops = reduction_loops
_plain_loop = plain_loop


class _Tiler:
    def __init__(self, fn: func.FuncOp, target: Target, num_blocks: int, hint: ScheduleHint):
        self.fn, self.target, self.num_blocks, self.hint = fn, target, num_blocks, hint
        self.entry = fn.body.block
        self.block_id = self._add_arg(INDEX, "block_id", "block_id")
        self.ub = self._add_arg(MemRefType(i8, [target.ub_bytes]), "ub", "ub") if target.staged else None
        self.top_zero = self._top_const(0)
        self.top_one = self._top_const(1)
        self.schedule = None

    def _top_const(self, value: int) -> SSAValue:
        op = arith.ConstantOp(IntegerAttr(value, INDEX))
        self.entry.insert_op_before(op, self.entry.first_op)
        return op.result

    def _add_arg(self, type_, name: str, role: str) -> SSAValue:
        return add_function_arg(self.fn, type_, name, role)

    def roles(self) -> dict[SSAValue, str]:
        return arg_roles(self.fn)

    # ---- 1. block split ---------------------------------------------------------------------
    def split(self, extent: SSAValue, before: Operation, vendor: bool | None = None,
              cores: int | None = None) -> tuple[SSAValue, SSAValue]:
        """[lo, hi) of this block. Balanced: D // blocks rows each, one more for the first D % blocks
        blocks, so no core has more than one row more than another. The vendor's (when a schedule
        asks for it, as a vendor bound assumes): D // blocks each, the remainder to the last block.
        Over `cores` fewer than the blocks (a Parallel's `cores`), the other blocks get [D, D)."""
        vendor = self.hint.vendor_split if vendor is None else vendor
        cores = cores or self.num_blocks
        b = BlockBuilder(self.entry, before)
        blocks = b.index(cores)
        per = b.add(arith.DivUIOp(extent, blocks))
        if vendor:
            lo = b.add(arith.MuliOp(self.block_id, per))
            is_last = b.add(arith.CmpiOp(self.block_id, b.index(cores - 1), "eq"))
            hi = b.add(arith.SelectOp(is_last, extent, b.add(arith.AddiOp(lo, per))))
        else:
            extra = b.add(arith.RemUIOp(extent, blocks))
            before_me = b.add(arith.MinSIOp(self.block_id, extra))
            lo = b.add(arith.AddiOp(b.add(arith.MuliOp(self.block_id, per)), before_me))
            takes_one_more = b.add(arith.CmpiOp(self.block_id, extra, "ult"))
            mine = b.add(arith.SelectOp(takes_one_more, b.add(arith.AddiOp(per, b.index(1))), per))
            hi = b.add(arith.AddiOp(lo, mine))
        if cores < self.num_blocks:
            idle = b.add(arith.CmpiOp(self.block_id, blocks, "uge"))
            lo, hi = b.add(arith.SelectOp(idle, extent, lo)), b.add(arith.SelectOp(idle, extent, hi))
        return lo, hi

    def loops(self, nest: scf.ForOp, role: LoopRole | None = None) -> dict[int, scf.ForOp]:
        role = role or loop_role(nest)
        found = {}
        for op in nest.walk():
            if isinstance(op, scf.ForOp) and loop_role(op) == role:
                found[loop_axis(op)] = op
        return found

    def split_stage(self, number: int, nest: scf.ForOp, parallel: Parallel | None = None) -> StageState:
        kind = loop_role(nest)
        loops = self.loops(nest)
        depth = len(loops)
        vendor = self.hint.vendor_split if parallel is None else parallel.balance == Balance.VENDOR
        cores = self.num_blocks if parallel is None or parallel.cores is None else parallel.cores
        fused = parallel is not None and len(parallel.axes) > 1
        deferred = self.schedule.deferred.get(number, ()) if self.schedule is not None else ()
        forms = [self._describe_extent(loops[a].ub) for a in deferred]  # (before the split sets the bounds)
        if nest.attributes.get("tg.split") == StringAttr("reduction"):
            reduce = next(o for o in nest.body.block.ops if loop_role(o) == LoopRole.REDUCE)
            extent = _plain_loop(reduce).ub
            lo, hi = self.split(extent, nest)
            for loop in _reduction_loops(reduce):
                loop.operands = [lo, hi, loop.step, *loop.iter_args]
                part = next((o for o in loop.body.block.ops if loop_role(o) == LoopRole.REDUCE_PART), None)
                if part is not None:  # a blocked sum: its last block ends where this core's range does
                    stop = part.ub.owner
                    stop.operands = [stop.operands[0], hi]
            split = "reduction axis split over cores, per-core partials in the workspace"
        elif fused:
            extent = self.fused_extent([loops[a] for a in parallel.axes], nest)
            lo, hi = self.split(extent, nest, vendor, cores)
            nest = self.fuse(nest, [loops[a] for a in parallel.axes], lo, hi)
            split = f"axes {', '.join(map(str, parallel.axes))} fused and split over cores"
        elif kind != LoopRole.SCATTER or self._scatters_own_rows(nest, loops):
            outer = loops[parallel.axes[0]] if parallel is not None else self._split_loop(loops)
            extent = outer.ub
            lo, hi = self.split(extent, nest, vendor, cores)
            outer.operands = [lo, hi, outer.step, *outer.iter_args]
            split = ("outer axis split over cores" if kind != LoopRole.SCATTER
                     else "rows split over cores (row = destination)")
        else:
            store = next(o for o in nest.walk() if isinstance(o, memref.StoreOp) and "tg.scatter_store" in o.attributes)
            b = BlockBuilder(self.entry, nest)
            extent = b.add(memref.DimOp(store.memref, b.index(0)))
            lo, hi = self.split(extent, nest, vendor, cores)
            self.guard_owner(nest, store.indices[0], lo, hi)
            split = "destination rows split over cores (owner computes)"
        split += " (vendor: the remainder to the last core)" if vendor else " (balanced)"
        split += f" over {cores} of the {self.num_blocks} cores" if cores < self.num_blocks else ""
        roles = self.roles()
        partials = sorted({self._name(o.memref) for o in nest.walk()
                           if isinstance(o, memref.StoreOp) and roles.get(o.memref) == "workspace"})
        if partials and nest.attributes.get("tg.split") != StringAttr("reduction"):
            split += f"; per-chunk partial sums in the workspace ({', '.join(partials)})"
        plan = StagePlan(number, kind, split, {}, extent=self._describe_extent(extent), balanced=not vendor,
                         cores=None if cores == self.num_blocks else cores)
        if deferred and None not in forms:
            plan.fusable = [[a, form] for a, form in zip(deferred, forms)]
        return StageState(nest, plan, lo, hi, extent, depth, cores, vendor, fused)

    @staticmethod
    def _split_loop(loops: dict[int, scf.ForOp]) -> scf.ForOp:
        return loops[split_axis(loops)]

    @staticmethod
    def _scatters_own_rows(nest: scf.ForOp, loops: dict[int, scf.ForOp]) -> bool:
        return scatters_own_rows(nest, loops)

    def fused_extent(self, chain: list[scf.ForOp], nest: scf.ForOp) -> SSAValue:
        """The product of the fused axes' extents (their bounds are set before the nest: the planner checked)."""
        b = BlockBuilder(self.entry, nest)
        extent = chain[0].ub
        for loop in chain[1:]:
            extent = b.add(arith.MuliOp(extent, loop.ub))
        return extent

    def fuse(self, nest: scf.ForOp, chain: list[scf.ForOp], lo: SSAValue, hi: SSAValue) -> scf.ForOp:
        """The perfectly nested loops `chain` (outer to inner) become one loop over [lo, hi) of their
        fused index f, delinearized once per iteration (i_last = f % E_last, f // E_last, ...); the
        index arithmetic between them moves into it, in order. The new loop keeps the outer loop's
        axis and attributes; the stage's nest is returned (the new loop if the outer one was it)."""
        outer = chain[0]
        fused, body = make_for(lo, hi, self.top_one, LoopRole.PARALLEL, loop_axis(outer))
        for name, value in outer.attributes.items():
            if name != "tg.loop":
                fused.attributes[name] = value
        b = BlockBuilder(body)
        rest = body.args[0]
        indices = {}
        for loop in reversed(chain[1:]):
            indices[loop] = b.add(arith.RemUIOp(rest, loop.ub))
            rest = b.add(arith.DivUIOp(rest, loop.ub))
        indices[outer] = rest
        for k, loop in enumerate(chain):
            inner = chain[k + 1] if k + 1 < len(chain) else None
            for op in list(loop.body.block.ops):
                if op is inner or isinstance(op, scf.YieldOp):
                    continue
                op.detach()
                body.add_op(op)
        body.add_op(scf.YieldOp())
        for loop in chain:
            loop.body.block.args[0].replace_all_uses_with(indices[loop])
        outer.parent_block().insert_op_before(fused, outer)
        outer.detach()
        outer.erase()
        return fused if outer is nest else nest

    def _describe_extent(self, extent: SSAValue) -> object:
        """The extent as a size form (dsl/bounds: ints, ["dim", tensor, axis], [op, a, b]), for the
        plan to evaluate at a call; None if it is not index arithmetic of dims and constants."""
        value = _const_value(extent)
        if value is not None:
            return value
        owner = extent.owner
        if isinstance(owner, memref.DimOp) and owner.source in self.entry.args:
            name = arg_info(self.fn, list(self.entry.args).index(owner.source)).get("tg.name")
            return ["dim", name, _const_value(owner.index)]
        if isinstance(owner, arith.SelectOp) and isinstance(owner.cond.owner, arith.CmpiOp):
            test = owner.cond.owner  # c ? a : b with c = (x > y), as 0/1 arithmetic
            if test.predicate.value.data in (4, 8):  # sgt, ugt
                c = ["gt", self._describe_extent(test.lhs), self._describe_extent(test.rhs)]
                a, b = self._describe_extent(owner.lhs), self._describe_extent(owner.rhs)
                if None in (a, b, *c):
                    return None
                return ["add", ["mul", c, a], ["mul", ["sub", 1, c], b]]
        op = _FORM_OPS.get(type(owner))
        if op is not None:
            a, b = (self._describe_extent(v) for v in owner.operands)
            return None if a is None or b is None else [op, a, b]
        return None

    def guard_owner(self, nest: scf.ForOp, row: SSAValue, lo: SSAValue, hi: SSAValue) -> None:
        guard = next(o for o in nest.walk() if isinstance(o, scf.IfOp) and "tg.in_range" in o.attributes)
        definer = row.owner if isinstance(row.owner, Operation) else row.owner.parent_op()
        if definer is not None and guard.is_ancestor(definer):
            # the row is computed inside the range check (from an inner domain variable): the
            # owner test joins the accumulation's own condition instead of skipping whole rows
            store = next(o for o in guard.walk()
                         if isinstance(o, memref.StoreOp) and "tg.scatter_store" in o.attributes)
            accumulate = store.parent_op()
            b = BlockBuilder(accumulate.parent_block(), accumulate)
            owned = b.add(arith.AndIOp(b.add(arith.CmpiOp(row, lo, "sge")), b.add(arith.CmpiOp(row, hi, "slt"))))
            accumulate.operands = [b.add(arith.AndIOp(accumulate.cond, owned)), *accumulate.operands[1:]]
            return
        then = guard.true_region.block
        body = [o for o in then.ops][:-1]
        inner = Block()
        for o in body:
            o.detach()
            inner.add_op(o)
        inner.add_op(scf.YieldOp())
        b = BlockBuilder(then, then.last_op)
        owned = b.add(arith.AndIOp(b.add(arith.CmpiOp(row, lo, "sge")), b.add(arith.CmpiOp(row, hi, "slt"))))
        b.add(scf.IfOp(owned, [], Region([inner])))

    # ---- 2. strip-mining ----------------------------------------------------------------------
    def plan_axes(self, state: StageState) -> None:
        """The schedule's tile sizes for the stage's inner axes if it names the stage's role and
        the stage has that many axes (embedding's 1-D scatter of counts has not), else the
        innermost axis, by the size choose_tiles decides."""
        for axis, size, whole in tiled_axes(state.plan.kind, state.depth, self.hint):
            self.plan_axis(state, axis, size, whole)

    def plan_axis(self, state: StageState, axis: int, size: int | None, whole: bool) -> None:
        """Axis `axis` of the stage is tiled: by `size` (the schedule's), or by the size
        choose_tiles decides (None). Its tile loop is built once the size is known."""
        point = self.loops(state.nest, state.plan.kind)[axis]
        state.axes[axis] = TiledAxis(axis, point, size or 0, whole, fixed=size is not None)
        if size is not None:
            state.plan.tiles[axis] = size

    def strip_mine(self, state: StageState, tiled: TiledAxis) -> None:
        """for i in [lo, hi)  ->  for t in [lo, hi) step T: for i in [t, min(t + T, hi))."""
        point = tiled.point_loop
        parent = point.parent_block()
        size_op = arith.ConstantOp(IntegerAttr(tiled.size, INDEX))
        parent.insert_op_before(size_op, point)
        tile, body = make_for(point.lb, point.ub, size_op.result, LoopRole.TILE, tiled.axis)
        parent.insert_op_before(tile, point)
        t = body.args[0]
        b = BlockBuilder(body)
        end = b.add(arith.MinSIOp(b.add(arith.AddiOp(t, size_op.result)), point.ub))
        point.detach()
        point.operands = [t, end, point.step, *point.iter_args]
        body.add_ops([point, scf.YieldOp()])
        if state.nest is point:
            state.nest = tile
            tile.attributes["tg.stage"] = point.attributes.pop("tg.stage")
        tiled.strip_mined(tile, t, end, size_op.result)

    def ub_alloc(self, buffer: UBBuffer, element_type) -> SSAValue:
        shape = ([buffer.slots] if buffer.slots > 1 else []) + list(buffer.shape)
        op = tg.UBAllocOp(self.ub, buffer.offset, buffer.name, MemRefType(element_type, shape))
        first_nest = next(o for o in self.entry.ops if isinstance(o, scf.ForOp))
        self.entry.insert_op_before(op, first_nest)
        return op.result

    # ---- the whole function ------------------------------------------------------------------
    # ---- 0. a scalar reduction splits its reduction axis instead -------------------------------
    def split_scalar_reductions(self) -> None:
        """A stage that reduces to one element would run on one core. Instead every core reduces
        its part of the reduction axis into a workspace of per-core partials, and a second stage
        combines them in core order (deterministic)."""
        if self.num_blocks < 2:
            return
        for nest in stage_nests(self.entry):
            reduce = scalar_reduction(nest)  # the planner's RFactor
            if reduce is not None:
                self.split_reduction(nest, reduce)
        number_stages(stage_nests(self.entry))

    def split_reduction(self, nest: scf.ForOp, reduce: scf.ForOp) -> None:
        acc_type = reduce.results[0].type
        name = f"partials{len(args_by_role(self.fn, 'workspace'))}"
        partials = self._add_arg(MemRefType(acc_type, [self.num_blocks]), name, "workspace")
        plain = _plain_loop(reduce)
        combine_op = plain.body.block.last_op.operands[0].owner  # what the reduction yields
        nest.attributes["tg.split"] = StringAttr("reduction")
        body = nest.body.block
        after = [o for o in body.ops if o is not body.last_op][list(body.ops).index(reduce) + 1:]
        b = BlockBuilder(body, body.last_op)
        b.add(memref.StoreOp.get(reduce.results[0], partials, [self.block_id]))
        # the combine stage: acc = combine over cores of partials[core], then the rest of the body
        zero, one = self.top_zero, self.top_one
        combine, combine_body = make_for(zero, one, one, LoopRole.PARALLEL, 0)
        self.entry.insert_op_after(combine, nest)
        cb = BlockBuilder(combine_body)
        blocks = cb.index(self.num_blocks)
        init = cb.add(plain.iter_args[0].owner.clone())  # the reduction's identity
        loop, loop_body = make_for(zero, blocks, one, LoopRole.REDUCE, 0, [init])
        lb = BlockBuilder(loop_body)
        part = lb.add(memref.LoadOp.get(partials, [loop_body.args[0]]))
        merged = lb.add(type(combine_op)(loop_body.args[1], part))
        lb.add(scf.YieldOp(merged))
        cb.add(loop)
        mapping = {reduce.results[0]: loop.results[0]}
        for op in after:
            op.detach()
            for index, operand in enumerate(op.operands):
                if operand in mapping:
                    op.operands[index] = mapping[operand]
            for inner in op.walk():
                for index, operand in enumerate(inner.operands):
                    if operand in mapping:
                        inner.operands[index] = mapping[operand]
            combine_body.add_op(op)
        cb.add(scf.YieldOp())
        combine.attributes["tg.stage"] = IntegerAttr(-1, i64)

    def run(self) -> TilingPlan:
        self.schedule = plan_scratchpad(self.fn, self.target, self.num_blocks, self.hint)  # before any rewrite
        parallel = {d.stage: d for d in self.schedule.of_type(Parallel)}
        self.split_scalar_reductions()
        nests = stage_nests(self.entry)
        states = [self.split_stage(i, n, parallel.get(i)) for i, n in enumerate(nests)]
        for state in states:
            self.plan_axes(state)
        roles = self.roles()
        temps = [a for a, r in roles.items() if r == "temp"]
        resident, workspace = self.place_temps(states, temps)
        # everything in GM is staged through UB: tensors, and temporaries kept in the workspace
        in_workspace = {a for a, r in roles.items() if r == "temp" and a not in self.resident_values}
        gm = {a for a, r in roles.items() if r in ("input", "output")} | in_workspace
        if not self.target.staged:
            gm = set()
        workspace_args = {a for a, r in roles.items() if r == "workspace"}
        for state in states:
            state.groups = find_staging_groups(state.nest, state.axes, gm)
            if self.target.staged:
                written = written_memrefs(state.nest)
                for axis in state.axes.values():
                    if not axis.fixed:
                        state.walks += [(axis, w) for w in find_column_walks(axis.point_loop, gm | workspace_args,
                                                                              written)]
                covered = {a for g in state.groups for a in g.accesses}
                covered |= {a for _, w in state.walks for a in w.accesses}
                points = {a.point_loop for a in state.axes.values()}
                lo, hi = state.lo, state.hi
                walked = {a: w.point for _, w in state.walks for loads in w.runs.values() for a in loads}
                state.left = find_leftovers(state.nest, gm | workspace_args, covered, points,
                                            lambda loop, lo=lo, hi=hi: loop.lb is lo and loop.ub is hi, walked)
                state.plan.tensors = self.tensor_uses(state)
        for arg in workspace_args:
            workspace[self._name(arg)] = element_bytes(arg.type.element_type)
        plan = TilingPlan(self.target, self.num_blocks, [s.plan for s in states], resident, workspace,
                          schedule=self.schedule)
        self.choose_tiles(states, plan)
        for state in states:
            state.plan.remains = self.window_remains(state)
        if any(b.offset + b.padded_bytes > self.target.ub_bytes for b in plan.buffers):
            plan.check()  # buffers past the UB itself cannot be laid out (tg.ub_alloc): refused now
        for state in states:  # the plan is complete: now the IR changes
            for tiled in state.axes.values():
                self.strip_mine(state, tiled)
        self.rewrite(states, plan, resident)
        if self.target.staged:
            plan.direct_gm = self.direct_gm_accesses()
            if plan.direct_gm:
                where = "; ".join(f"{w}: {n}" for w, n in sorted(plan.direct_gm.items()))
                raise InternalError(f"{self.fn.sym_name.data}: tile-for-target left direct GM accesses on "
                                    f"{self.target.name} ({where}); every access of a staged target goes "
                                    f"through UB")
        return plan

    def direct_gm_accesses(self) -> dict[str, int]:
        """Loads and stores that touch a GM buffer without going through UB, per buffer, kind and
        stage ("x load, stage 1": 3): what the staging does not cover yet."""
        roles = self.roles()
        found: dict[str, int] = {}
        for number, nest in enumerate(stage_nests(self.entry)):
            for op in nest.walk():
                if not isinstance(op, (memref.LoadOp, memref.StoreOp)):
                    continue
                if roles.get(op.memref) not in ("input", "output", "temp", "workspace"):
                    continue
                kind = "load" if isinstance(op, memref.LoadOp) else "store"
                where = f"{self._name(op.memref)} {kind}, stage {number}"
                found[where] = found.get(where, 0) + 1
        return found

    def place_temps(self, states: list[StageState], temps: list[SSAValue]) -> tuple[list[UBBuffer], dict[str, int]]:
        resident: list[UBBuffer] = []
        workspace: dict[str, int] = {}
        self.resident_values: dict[SSAValue, UBBuffer] = {}
        for temp in temps:
            name = arg_info(self.fn, list(self.entry.args).index(temp)).get("tg.name", "temp")
            eb = element_bytes(temp.type.element_type)
            using = [s for s in states if any(getattr(o, "memref", None) is temp for o in s.nest.walk())]
            extent_const = None
            if self.target.staged and using and not any(s.fused for s in using):  # a fused split's
                # rows are not one axis's: a temporary over one stays in the workspace
                extents = [s.split_extent for s in using]
                values = {_const_value(e) for e in extents}
                if len(values) == 1 and None not in values and len(temp.type.get_shape()) == 1:
                    extent_const = values.pop()
            if extent_const is None:
                workspace[name] = eb
                continue
            rows = max(self._most_rows(extent_const, s) for s in using)
            buffer = UBBuffer(name, None, (rows,), 1, eb, "resident", self.hint.packed, self.target.ub_align,
                              affine={f"{name}_size": eb})
            resident.append(buffer)
            self.resident_values[temp] = buffer
        return resident, workspace

    def choose_tiles(self, states: list[StageState], plan: TilingPlan) -> None:
        """T per stage: the largest aligned tile whose buffers (double buffered if possible) fit,
        at most its axis's length rounded up to an aligned block where the plan knows the length."""
        target, align = self.target, self.target.ub_align
        offset = 0
        for buffer in plan.resident:
            buffer.offset = offset
            offset += buffer.padded_bytes
        resident_bytes = offset
        known = self._whole_symbols(states)
        for state in states:
            free = [a for a in state.axes.values() if not a.fixed]
            streamed = [g for g in state.groups if len(g.positions) == 1 and not g.positions[0][1].fixed]
            if not target.staged:
                per = sum(element_bytes(a.type.element_type) for a in self._touched(state)) or 8
                size = self._align_down(min(CPU_MAX_TILE, (target.ub_bytes // 2) // per), 16)
                for axis in free:
                    self._set_size(state, axis, max(size, 16))
                continue
            fixed = [self._fixed_buffer(g, state) for g in state.groups if g not in streamed]
            fixed += self._walk_runs(state)
            fixed += self._leftover_buffers(state, plan.capacity - resident_bytes
                                            - sum(b.padded_bytes for b in fixed))
            fixed_bytes = sum(b.padded_bytes for b in fixed)
            available = plan.capacity - resident_bytes - fixed_bytes - 1  # the fit is strict
            per_element = sum(element_bytes(g.mem.type.element_type) for g in streamed)
            # a column walk's blocks (rows x the tile) and partial sums grow with the tile, once each
            walk_bytes = [b for _, w in state.walks for b in self._walk_sizes(w)]
            per_walk = sum(walk_bytes)
            smallest = min([element_bytes(g.mem.type.element_type) for g in streamed] + [4] * bool(walk_bytes),
                           default=1)
            quantum = max(1, align // smallest)
            # a tile no longer than the axis where the plan knows how long it is (a dim can change
            # from call to call without a new kernel, so a tile over one fits the longest)
            extents = [self._known_trips(state, axis, known) for axis in free]
            cap = min([MAX_TILE] + [max(1, -(-e // quantum)) * quantum for e in extents if e is not None])
            size, slots = quantum, 1
            if per_element or per_walk:
                for slots in (2, 1):
                    size = self._align_down(min(cap, available // (per_element * slots + per_walk)), quantum)
                    if size >= (min(cap, quantum * 8) if slots == 2 else quantum):
                        break
                # not even the smallest tile fits: planned at that size all the same, so the plan
                # is whole and its check refuses the call with the bound of every stage
                size = max(size, quantum)
            for axis in free:
                self._set_size(state, axis, size)
            state.plan.double_buffered = slots == 2 and bool(streamed)
            for g in streamed:
                eb = element_bytes(g.mem.type.element_type)
                g.buffer = UBBuffer(self._name(g.mem), state.plan.index, (size,), slots, eb,
                                    self._copies(g), False, align, min_bytes=-(-quantum * eb // align) * align)
            state.plan.buffers = fixed + [g.buffer for g in streamed] + self._walk_buffers(state, size)
            stage_offset = resident_bytes
            for buffer in state.plan.buffers:
                buffer.offset = stage_offset
                stage_offset += buffer.padded_bytes

    def _whole_symbols(self, states: list[StageState]) -> dict[str, int]:
        """Shape symbols the schedule fixes for this call: the extent of each whole axis (`E`)."""
        known = {}
        for state in states:
            for axis in state.axes.values():
                symbol = extent_symbol(self.fn, axis.point_loop.ub) if axis.whole else None
                if symbol is not None:
                    known[symbol] = axis.size
        return known

    def _known_trips(self, state: StageState, axis: TiledAxis, known: dict[str, int]) -> int | None:
        """The most iterations one core makes of a tiled axis, if the plan knows it: bounds that are
        constants (a static shape) or symbols the schedule fixes, or the split axis of a known
        extent (the most rows the split gives a core); None for a dim the kernel reads per call."""

        def value(v: SSAValue) -> int | None:
            constant = _const_value(v)
            return constant if constant is not None else known.get(extent_symbol(self.fn, v))

        loop = axis.point_loop
        if loop.lb is state.lo and loop.ub is state.hi:
            extent = value(state.split_extent)
            return None if extent is None else self._most_rows(extent, state)
        lb, ub = value(loop.lb), value(loop.ub)
        return None if lb is None or ub is None else max(ub - lb, 0)

    @staticmethod
    def _most_rows(extent: int, state: StageState) -> int:
        """The most iterations of its split a core gets."""
        per, extra = divmod(extent, state.cores)
        return per + extra if state.vendor else per + (1 if extra else 0)

    def _leftover_buffers(self, state: StageState, free: int) -> list[UBBuffer]:
        """One-element slots, then runs of R elements: R takes at most a quarter of what is free."""
        left, align, index = state.left, self.target.ub_align, state.plan.index
        for row in left.rows:
            element = row.accesses[0].memref.type.element_type
            row.buffer = UBBuffer(self._name(row.accesses[0].memref), index, (row.length,), 1, element_bytes(element),
                                  "row in" if isinstance(row.accesses[0], memref.LoadOp) else "row out", False, align)
            free -= row.buffer.padded_bytes
        for access in left.elements:
            element = access.memref.type.element_type
            if str(element) not in left.slots:
                left.slots[str(element)] = UBBuffer(f"one {element}", index, (1,), 1, element_bytes(element),
                                                    "element", False, align)
        free -= sum(b.padded_bytes for b in left.slots.values())
        # runs of per-row values first: short (MAX_ROW_RUN), so the reduction runs keep their length
        nested = [r for r in left.runs if r.nested]
        for group, most in ((nested, MAX_ROW_RUN), ([r for r in left.runs if not r.nested], MAX_RUN)):
            if not group:
                continue
            sizes = [element_bytes(r.mem.type.element_type) for r in group]
            quantum = max(1, align // min(sizes))
            length = self._align_down(min(most, free // 4 // sum(sizes)), quantum)
            if length < quantum:
                raise UBCapacityError(
                    f"target {self.target.name}: stage {index} cannot fit its reduction runs "
                    f"({len(group)} of {quantum} elements) in the {max(free, 0)} B of UB left")
            for run, size in zip(group, sizes):
                # a loop of a known short trip count (a window's taps, a core's rows) needs no longer run
                whole = self._run_trips(state, run.loop)
                whole = None if whole is None else max(quantum, -(-whole // quantum) * quantum)
                run.length = length if whole is None else min(length, whole * run.slope)
                run.buffer = UBBuffer(self._name(run.mem), index, (run.length,), 1, size, f"run {run.copies}",
                                      False, align)
            free -= sum(r.buffer.padded_bytes for r in group)
        return left.buffers

    def _run_trips(self, state: StageState, loop: scf.ForOp) -> int | None:
        """The most iterations of a run's loop, if the plan knows it: constant bounds, or the
        split of an extent it knows (the most rows a core gets)."""
        if loop.lb is state.lo and loop.ub is state.hi:
            extent = _const_value(state.split_extent)
            return None if extent is None else self._most_rows(extent, state)
        ub, lb = _const_value(loop.ub), _const_value(loop.lb)
        return None if None in (ub, lb) else max(ub - lb, 0)

    def _walk_sizes(self, walk: ColumnWalk) -> list[int]:
        """Bytes per column of the tile of a column walk's buffers: its blocks, its partial sums."""
        walk.rows = WALK_ROWS
        blocks = [walk.rows * element_bytes(mem.type.element_type) for mem, _, _ in walk.blocks]
        return blocks + [element_bytes(t) for t in walk.sums.values()]

    def _walk_runs(self, state: StageState) -> list[UBBuffer]:
        """The per-row runs and columns of the stage's column walks (a strip's rows each)."""
        found = []
        for _, walk in state.walks:
            for keys, copies in ((walk.runs, "run in"), (walk.columns, "column in")):
                for key in keys:
                    eb = element_bytes(key[0].type.element_type)
                    walk.buffers[key] = UBBuffer(self._name(key[0]), state.plan.index, (WALK_ROWS,), 1, eb, copies,
                                                 False, self.target.ub_align)
                    found.append(walk.buffers[key])
        panels = [(walk, key, loop) for _, walk in state.walks for key in walk.columns
                  if (loop := panel_loop(walk, key)) is not None]
        for walk, key, loop in panels:  # the stage's panels share PANEL_SHARE of the UB
            eb = element_bytes(key[0].type.element_type)
            width = max(1, self.target.ub_align // eb)
            known = self._run_trips(state, walk.reduce)
            rows = int(PANEL_SHARE * self.target.ub_bytes) // len(panels) // (width * eb)
            rows = rows if known is None else min(rows, max(known, 1))
            walk.panels[key] = loop
            walk.buffers[("panel", key)] = UBBuffer(self._name(key[0]), state.plan.index, (rows, width), 1, eb,
                                                    "panel in", False, self.target.ub_align)
            found.append(walk.buffers[("panel", key)])
        return found

    def _walk_buffers(self, state: StageState, size: int) -> list[UBBuffer]:
        """The blocks and partial sums of the stage's column walks, for tiles of `size` columns."""
        found = []
        for axis, walk in state.walks:
            for key in walk.blocks:
                eb = element_bytes(key[0].type.element_type)
                walk.buffers[key] = UBBuffer(self._name(key[0]), state.plan.index, (walk.rows, axis.size), 1, eb,
                                             "block in", False, self.target.ub_align)
                found.append(walk.buffers[key])
            for key, t in walk.sums.items():
                walk.buffers[key] = UBBuffer(f"{key[0]} {t}", state.plan.index, (axis.size,), 1, element_bytes(t),
                                             "partials", False, self.target.ub_align)
                found.append(walk.buffers[key])
        return found

    def _fixed_buffer(self, g: StagingGroup, state: StageState) -> UBBuffer:
        """A buffer whose box comes from the schedule: sized by its tiles, affine in the shape symbol
        of the whole axis it spans (if it spans one)."""
        eb = element_bytes(g.mem.type.element_type)
        affine = {}
        whole = [a for _, a in g.positions if a.whole]
        if len(whole) == 1:
            symbol = extent_symbol(self.fn, whole[0].point_loop.ub)
            if symbol is None:
                raise InternalError(f"stage {state.plan.index}: the whole axis {whole[0].axis} has no shape symbol")
            rows = 1
            for _, a in g.positions:
                rows *= 1 if a.whole else a.size
            affine = {symbol: rows * eb}
        g.buffer = UBBuffer(self._name(g.mem), state.plan.index, tuple(a.size for _, a in g.positions), 1,
                            eb, self._copies(g), self.hint.packed, self.target.ub_align, affine)
        return g.buffer

    def _touched(self, state: StageState) -> list[SSAValue]:
        roles = self.roles()
        seen = []
        for op in state.nest.walk():
            mem = getattr(op, "memref", None)
            if isinstance(op, (memref.LoadOp, memref.StoreOp)) and roles.get(mem) in ("input", "output", "temp"):
                if mem not in seen:
                    seen.append(mem)
        return seen

    @staticmethod
    def _set_size(state: StageState, axis: TiledAxis, size: int) -> None:
        axis.size = size
        state.plan.tiles[axis.axis] = size

    @staticmethod
    def _align_down(value: int, quantum: int) -> int:
        return max(0, value // quantum * quantum)

    def _name(self, mem: SSAValue) -> str:
        return arg_info(self.fn, list(self.entry.args).index(viewed(mem))).get("tg.name", "buffer")

    @staticmethod
    def _copies(g: StagingGroup) -> str:
        loads = any(isinstance(a, memref.LoadOp) for a in g.accesses)
        stores = any(isinstance(a, memref.StoreOp) for a in g.accesses)
        return "in+out" if loads and stores else "in" if loads else "out"

    def rewrite(self, states: list[StageState], plan: TilingPlan, resident: list[UBBuffer]) -> None:
        if not self.target.staged:
            return
        for temp, buffer in self.resident_values.items():
            value = self.ub_alloc(buffer, temp.type.element_type)
            for state in states:
                for op in list(state.nest.walk()):
                    if isinstance(op, (memref.LoadOp, memref.StoreOp)) and op.memref is temp:
                        b = BlockBuilder(op.parent_block(), op)
                        local = b.add(arith.SubiOp(op.indices[0], state.lo))
                        if isinstance(op, memref.LoadOp):
                            new = memref.LoadOp.get(value, [local])
                            op.parent_block().insert_op_before(new, op)
                            op.res.replace_all_uses_with(new.res)
                        else:
                            new = memref.StoreOp.get(op.value, value, [local])
                            op.parent_block().insert_op_before(new, op)
                        op.detach()
                        op.erase()
        forms = CopyForms(function_args(self.fn), self.block_id, self.num_blocks)
        for state in states:
            built = []
            for group in state.groups:
                value = self.ub_alloc(group.buffer, group.mem.type.element_type)
                built += stage_group(group, value, group.buffer.slots == 2)
            for axis, walk in state.walks:
                types = {key: key[0].type.element_type for key in [*walk.blocks, *walk.runs, *walk.columns]}
                types.update({("panel", key): key[0].type.element_type for key in walk.panels})
                types.update(walk.sums)
                values = {key: self.ub_alloc(walk.buffers[key], t) for key, t in types.items()}
                built += stage_column_walk(walk, axis.tile_start, axis.tile_end, values)
            left = state.left
            runs = {id(r): self.ub_alloc(r.buffer, r.mem.type.element_type) for r in left.runs}
            built += stage_runs(left.runs, runs)
            rows = {id(r): self.ub_alloc(r.buffer, r.accesses[0].memref.type.element_type) for r in left.rows}
            built += stage_short_rows(left.rows, rows)
            types = {str(a.memref.type.element_type): a.memref.type.element_type for a in left.elements}
            built += stage_elements(left.elements, {key: self.ub_alloc(left.slots[key], t) for key, t in types.items()})
            state.plan.copies = [forms.traffic(c, *self._gm_side(c)) for c in built]

    def _gm_side(self, copy: tg.CopyOp) -> tuple[str, int]:
        """The GM tensor a copy moves to or from, and its element bytes."""
        gm = copy.src if copy.direction.data == "gm_to_ub" else copy.dst
        return self._name(gm), element_bytes(gm.type.element_type)

    def window_remains(self, state: StageState) -> list[str]:
        """Runs copied per point of a tile, inside a reduction around them, that neighbouring points
        share (a conv's window dy[n, k, h + i - 1, w + j - 1] and its weight[k, c, 2 - i, 2 - j]
        under a tile of w, per (k, i)): each point copies them again. The window's rows with their halo (the
        weight's runs) would move once per tile only with the tile's points inside that reduction
        (an interchange), or with the whole reduction's rows in UB at once, which a reduction of an
        extent the plan does not know cannot size."""
        found = []
        for run in state.left.runs:
            axis = next((a for a in state.axes.values() if a.point_loop.is_ancestor(run.loop)), None)
            trips = None if axis is None else self._known_trips(state, axis, {})
            if axis is None or (trips is not None and trips < 2):  # (a tile of one point shares nothing)
                continue
            point = axis.point_loop
            between, loop = 0, run.loop.parent_op()
            while loop is not point:
                between += isinstance(loop, scf.ForOp) and loop_role(loop) == LoopRole.REDUCE
                loop = loop.parent_op()
            iv = point.body.block.args[0]
            if between and not any(_depends_on(v, iv) for v in run.fixed):  # (else each point reads its own)
                what = "its rows with their halo" if _depends_on(run.last, iv) else "the same for every point, they"
                found.append(f"{self._name(run.mem)}: runs of at most {run.length} elements copied per point of the "
                             f"tile and per iteration of the {between} reduction loop(s) around them; {what} would "
                             "move once per tile with the tile's points inside those loops (an interchange)")
        return list(dict.fromkeys(found))

    def tensor_uses(self, state: StageState) -> list[TensorUse]:
        """The GM tensors the stage's staged accesses touch, with their sizes as forms."""
        uses: dict[SSAValue, TensorUse] = {}
        accesses = [a for g in state.groups for a in g.accesses]
        accesses += [a for r in state.left.runs for a in r.accesses] + state.left.elements
        accesses += [a for r in state.left.rows for a in r.accesses]
        accesses += [a for _, w in state.walks for a in w.accesses]
        for access in accesses:
            mem = viewed(access.memref)
            if mem not in uses:
                size = 1
                for axis, d in enumerate(mem.type.get_shape()):
                    size = ["mul", size, d if d >= 0 else ["dim", self._name(mem), axis]]
                uses[mem] = TensorUse(self._name(mem), False, False, element_bytes(mem.type.element_type), size)
            if isinstance(access, memref.LoadOp):
                uses[mem].reads = True
            else:
                uses[mem].writes = True
        return list(uses.values())


def _depends_on(value: SSAValue, iv: SSAValue) -> bool:
    """Whether `value` is computed from `iv` (through the ops that define it)."""
    seen, todo = set(), [value]
    while todo:
        v = todo.pop()
        if v is iv:
            return True
        if v in seen or not isinstance(v.owner, Operation) or v.owner.regions:
            continue
        seen.add(v)
        todo.extend(v.owner.operands)
    return False


def split_stages(module: ModuleOp) -> None:
    """One function per stage (`OP_stageK`): running them in order over all blocks is the barrier.
    Each is the function's other ops (dims, splits, UB buffers: what the stage does not use goes)
    with its own stage: the stages come out first and the rest is copied once per stage (copying
    the whole function per stage was a sixth of the pass on ops of several stages)."""
    for fn in list(module.ops):
        block = fn.body.block
        nests = stage_nests(block)
        if not nests:
            fn.detach()
            fn.erase()
            continue
        following = [nest.next_op for nest in nests]
        while any(f in nests for f in following):  # (the first op after each that is not a stage)
            following = [f.next_op if f in nests else f for f in following]
        for nest in nests:
            nest.detach()
        for number, (nest, before) in enumerate(zip(nests, following)):
            stage = fn
            if number < len(nests) - 1:  # (the last stage keeps the function itself)
                mapping: dict[SSAValue, SSAValue] = {}
                stage = fn.clone(value_mapper=mapping)
                stage.body.block.insert_op_before(nest.clone(value_mapper=mapping),
                                                  list(stage.body.block.ops)[list(block.ops).index(before)])
                nest.erase()
            else:
                block.insert_op_before(nest, before)
                fn.detach()
            stage.sym_name = StringAttr(f"{fn.sym_name.data}_stage{nest.attributes['tg.stage'].value.data}")
            region_dce(stage.body)  # the other stages' dims, splits and UB buffers
            module.body.block.add_op(stage)


PLAN_ATTR = "tg.tiling_plan"
_DIRECTIVE_FIELDS = ("directives", "planned", "planner")  # ScheduleHint's directives: the pass takes them as text
# (planner: whether the backend's planner adds its own, the backend's concern)


@dataclass(frozen=True)
class TileForTarget(ModulePass):
    """Split, tile and stage every stage for the target named `target` (on `num_blocks` cores; 0:
    all of them), with the schedule's choices as options. The plan (`TilingPlan`, as JSON) is left
    on the module as the `tg.tiling_plan` attribute: `tiling_plan(module)` reads it back.

    `tilegrad opt`-style spec: `tile-for-target{target=ascend910b num_blocks=24}`."""

    name = "tile-for-target"
    target: str
    num_blocks: int = 0
    tile_role: str = ""
    tile_sizes: tuple[int, ...] = ()
    whole_axes: int = 0
    packed: bool = False
    vendor_split: bool = False
    schedule: str = ""
    """The user's directives, as `tilegrad plan` prints them, separated by `;`."""
    planned: str = ""
    """The planner's decisions at a call's extents (kernel.py), in the same form."""

    def __post_init__(self):  # options come from pass specs too (`tilegrad opt -p`): refuse bad ones there
        if not isinstance(self.num_blocks, int) or self.num_blocks < 0:
            raise ArgumentError(f"tile-for-target: num_blocks={self.num_blocks} must be an integer >= 0 "
                                f"(the cores to split over; 0: all of the target's)")
        _ = self.hint  # ScheduleHint refuses a bad tile_role, tile_sizes or whole_axes

    @classmethod
    def of(cls, target: Target, num_blocks: int, hint: ScheduleHint = ScheduleHint()) -> TileForTarget:
        options = {f.name: getattr(hint, f.name) for f in fields(ScheduleHint) if f.name not in _DIRECTIVE_FIELDS}
        return cls(target.name, num_blocks, **options, schedule="; ".join(map(str, hint.directives)),
                   planned="; ".join(map(str, hint.planned)))

    @property
    def hint(self) -> ScheduleHint:
        options = {f.name: getattr(self, f.name) for f in fields(ScheduleHint) if f.name not in _DIRECTIVE_FIELDS}
        given = {name: parse_schedule(getattr(self, name).replace(";", "\n"), f"tile-for-target's {name} option")
                 for name in ("schedule", "planned")}
        return ScheduleHint(**options, directives=given["schedule"], planned=given["planned"])

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = get_target(self.target)
        CommonSubexpressionElimination().apply(ctx, op)
        plans = [_Tiler(fn, target, self.num_blocks or target.cores, self.hint).run() for fn in list(op.ops)]
        split_stages(op)
        if plans:
            op.attributes[PLAN_ATTR] = StringAttr(json.dumps(plan_to_dict(plans[0])))


def tiling_plan(module: ModuleOp, keep: bool = True) -> TilingPlan | None:
    """The plan tile-for-target left on the module (None if it has not run); `keep=False` also
    removes the attribute (the printed IR then shows the kernel alone). A given module (a hand-edited
    stage) may carry a broken one: ArgumentError naming the attribute."""
    attr = module.attributes.get(PLAN_ATTR) if keep else module.attributes.pop(PLAN_ATTR, None)
    if attr is None:
        return None
    try:
        if not isinstance(attr, StringAttr):
            raise TypeError(f"it is {attr}, not a string")
        plan = plan_from_dict(json.loads(attr.data))
        if not isinstance(plan.num_blocks, int) or plan.num_blocks < 1:
            raise ValueError(f"num_blocks {plan.num_blocks!r} is not an integer >= 1")
        _ = plan.ub_used, plan.bound(), plan_to_dict(plan)  # each field of the kind the uses need
    except (TilegradError, ValueError, KeyError, TypeError, AttributeError, IndexError) as err:
        raise ArgumentError(f"the module's {PLAN_ATTR} attribute is not a tiling plan as tile-for-target writes "
                            f"it (JSON of a TilingPlan): {type(err).__name__}: {err}") from None
    return plan


__all__ = ["TileForTarget", "ScheduleHint", "tiling_plan"]
