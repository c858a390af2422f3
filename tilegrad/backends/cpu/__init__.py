"""The cpu backend: this host as a target. No scratchpad: tiles are sized for the caches, blocks are
threads, and the speed comes from loop transformations LLVM does not make by itself (register tiles,
packed panels, streaming stores, straight-line windows). Every host-tuned value comes from the host
model (targets/host.py), passed to each pass as its options."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tilegrad.backends.common import Backend, loops_passes
from tilegrad.errors import ScheduleError
from tilegrad.passes.branch_guarded_reads import BranchGuardedReads
from tilegrad.passes.chunk_row_sweeps import ChunkRowSweeps
from tilegrad.passes.defer_sum_epilogues import DeferSumEpilogues
from tilegrad.passes.distribute_row_nests import DistributeRowNests, granule
from tilegrad.passes.fold_affine_tests import FoldAffineTests
from tilegrad.passes.forward_stored_values import ForwardStoredValues
from tilegrad.passes.fuse_sibling_loops import FuseSiblingLoops
from tilegrad.passes.fuse_sibling_reductions import FuseSiblingReductions
from tilegrad.passes.hoist_tile_loops import HoistTileLoops
from tilegrad.passes.interchange_column_reductions import InterchangeColumnReductions
from tilegrad.passes.jam_row_sweeps import JamRowSweeps
from tilegrad.passes.jam_sweep_terms import JamSweepTerms
from tilegrad.passes.outline_sibling_nests import OutlineSiblingNests
from tilegrad.passes.overlap_vector_tails import OverlapVectorTails
from tilegrad.passes.pack_reused_panels import PackReusedPanels
from tilegrad.passes.pack_windowed_operands import PackWindowedOperands
from tilegrad.passes.pack_windowed_reductions import PackWindowedReductions
from tilegrad.passes.partition_clamped_loops import PartitionClampedLoops
from tilegrad.passes.reorder_for_reuse import ReorderForReuse
from tilegrad.passes.scratchpad_planner import APPLIED as TILED
from tilegrad.passes.separate_strided_load_groups import SeparateStridedLoadGroups
from tilegrad.passes.split_column_reductions import SplitColumnReductions
from tilegrad.passes.split_stride_phases import SplitStridePhases
from tilegrad.passes.split_window_phases import SplitWindowPhases
from tilegrad.passes.stream_stores import StreamStores
from tilegrad.passes.tabulate_axis_expressions import TabulateAxisExpressions
from tilegrad.passes.tile_for_target import TileForTarget
from tilegrad.passes.unroll_reuse_loops import UnrollReuseLoops
from tilegrad.passes.unroll_short_reductions import UnrollShortReductions
from tilegrad.passes.unswitch_invariant_selects import UnswitchInvariantSelects
from tilegrad.schedule import (
    ComputeWith,
    Directive,
    Distribute,
    Reorder,
    RFactor,
    ScheduleHint,
    Specialize,
    Stage,
    Unroll,
    UnrollJam,
)
from tilegrad.targets import Target


@dataclass(frozen=True)
class CpuBackend(Backend):
    plans: bool = True
    contractions: bool = False  # (two side by side: the tiled stage's fuse-sibling-loops lists them)

    def tiled_passes(self, target: Target, num_blocks: int, hint: ScheduleHint) -> list[ModulePass]:
        passes = self._passes(target, num_blocks, hint)
        loops = loops_passes(self.scans, self.contractions)  # (scan-reductions takes its Scan there)
        # the user's directives a pass here carries out reach it in the pipeline (direct); the others
        # go to tile-for-target, which carries out the core split's and refuses the rest by name (an
        # RFactor goes to both: split-column-reductions takes one naming its planned split, direct)
        kept = tuple(d for d in hint.directives
                     if isinstance(d, RFactor) or not any(_takes(p, d) for p in (*loops, *passes)))
        for directive in kept:
            if not isinstance(directive, (*TILED, RFactor)):
                appliers = ", ".join(f"{p.takes_text} ({p.name})" for p in passes if hasattr(p, "takes"))
                raise ScheduleError(f"{directive}: not applied on cpu yet: tile-for-target carries out Parallel, the "
                                    f"cpu passes {appliers}; remove it from the schedule")
        return [TileForTarget.of(target, num_blocks, replace(hint, directives=kept))
                if isinstance(p, TileForTarget) else p for p in passes]

    def _passes(self, target: Target, num_blocks: int, hint: ScheduleHint) -> list[ModulePass]:
        host = self.host
        columns = host.chunk_columns(target.vector_registers)
        passes: list[ModulePass] = [
            # a temp read right after it is stored is the stored value (fewer loads, fewer temps)
            ForwardStoredValues(),
            # a column sum too long for one core is split in per-core partials (rfactor over cores)
            SplitColumnReductions(num_blocks or target.cores),
            # sibling nests that exchange their loops can share one pass over the data
            FuseSiblingLoops(exchange_loops=True, contractions=False),
            # the core split (blocks are threads) and cache-sized tiles: the plan
            TileForTarget.of(target, num_blocks, hint),
            # a sum a `% stride == 0` test thins (a strided conv's grad_input): a loop over its phases
            SplitWindowPhases(),
            # a contraction's windowed operand (a conv's input), masked, in a panel per block of positions
            PackWindowedOperands(host.panel_bytes(target.ub_bytes), columns * host.jam_rows),
            # a sum over positions of a windowed operand (a conv's grad_weight): a GEMM per block of positions
            PackWindowedReductions(host.panel_bytes(target.ub_bytes)),
            # a row loop of several nests, one a contraction: each nest over a tile of rows in a loop of its own
            DistributeRowNests(target.ub_bytes // 2, granule(host.jam_rows, host.reuse_jam_rows)),
            # a sum that walks a column accumulates a stack row instead (contiguous terms)
            InterchangeColumnReductions(row=host.column_row),
            # rows that sweep the same data run `rows` at a time (register tile, row side)
            JamRowSweeps(rows=host.jam_rows),
            # ... column chunk by chunk, the chunk's accumulators in registers
            ChunkRowSweeps(columns, lanes=host.chunk_lanes, rows=host.jam_rows),
            # the columns every row group sweeps are copied to a stack panel (cache blocking)
            PackReusedPanels(host.panel_bytes(target.ub_bytes), columns, host.panel_groups,
                             host.group_alias_bytes, host.panel_once, blocks=num_blocks or target.cores),
            # a tile every outer iteration re-reads moves outside it (stays in the core's cache)
            ReorderForReuse(target.ub_bytes // 2),
            # a sum's epilogue runs after the sweep, not per term
            DeferSumEpilogues(),
            # dot products that share a row run `unroll` at a time (register tile, column side)
            UnrollReuseLoops(host.reuse_unroll(target.vector_registers), jam_rows=host.reuse_jam_rows),
            # a sweep adds `terms` terms per pass over its accumulators (fewer loads and stores)
            JamSweepTerms(terms=host.sweep_terms),
            # reductions over the same loop share it (the copies unroll-reuse-loops made)
            FuseSiblingReductions(),
            # windows become straight-line code LLVM can vectorize:
            HoistTileLoops(),  # a tile loop of one trip is its body
            # values of some of a gather's loops (its weights, masks) computed once, into tables
            TabulateAxisExpressions(host.table_elements, host.table_min_ops),
            UnrollShortReductions(),  # a window of a few terms, unrolled
            BranchGuardedReads(),  # a read under a bounds test moves into a branch (no clamped loads)
            SplitStridePhases(),  # a strided window's phases as separate loops (no divisions)
            FoldAffineTests(),  # tests decided by the loop bounds fold away
            PartitionClampedLoops(),  # the interior of a clamped window apart from its edges
            UnswitchInvariantSelects(),  # a select on a loop-invariant test: two loops
            SeparateStridedLoadGroups(),  # strided loads of one tensor as separate groups LLVM vectorizes
        ]
        if target.stream_store_bytes:  # large write-only outputs skip the write-allocate read
            passes.append(StreamStores(target.stream_store_bytes, target.compute_bound_ops,
                                       min_lines=host.stream_min_lines, line_bytes=host.line_bytes,
                                       alias_window=host.alias_window, max_line_ops=host.max_line_ops))
        passes += [
            # a short map loop ends on a whole vector that overlaps the one before (no scalar tail)
            OverlapVectorTails(vector=host.tail_vector),
            # a large stage's sibling nests become functions LLVM compiles side by side (compile time)
            OutlineSiblingNests(stage_ops=host.outline_stage_ops, nest_ops=host.outline_nest_ops),
        ]
        return passes

    def decide(self, step: ModulePass, module: ModuleOp, target: Target) -> tuple[Directive, ...]:
        from tilegrad.backends.cpu.planner import decide

        return decide(step, module)

    def direct(self, step: ModulePass, planned: tuple[Directive, ...], user: tuple[Directive, ...],
               earlier: Sequence[tuple[Directive, str]] = (), planner: bool = True,
               ) -> tuple[ModulePass, list[tuple[Directive, str]]]:
        """A pass that carries out directives (passes/applying.py) is given the planner's for it, each
        one the user's names replaced by the user's (same kind, stage and axis or tensor; one that
        turns it off removes it), and the user's it takes that name nothing the planner decided: so
        the plan is what runs. The pass refuses one that names nothing it can transform. A kind two
        passes carry out (ROUTED) goes to the pass whose planned loop it names (check_directed refuses
        one that names none; an RFactor that names no split of split-column-reductions goes on to
        tile-for-target, which carries out its own, a reduction to one element over the cores, and
        refuses any other). A user directive taken by a pass is not given to tile-for-target after
        it; one equal to the planner's for a pass that does not take directives is in force already
        (listed as the user's). Without the planner (`planner` False) a pass that takes directives
        gets only the user's: the planner's decisions serve only to route a ROUTED kind to its pass."""
        if isinstance(step, TileForTarget):
            taken = {d for d, who in earlier if who == "user"}
            mine = [d for d in step.hint.directives if d not in taken]
            _check_column_rfactors(mine, earlier)
            return super().direct(replace(step, schedule="; ".join(map(str, mine))), planned, user, earlier)
        if isinstance(step, FuseSiblingLoops) and not step.exchange_loops:  # the loops stage's: a canonicalization
            return step, []
        if not hasattr(step, "takes"):
            _, given = super().direct(step, planned, user, earlier)
            return step, [(d, "user" if d in user else who) for d, who in given]
        mine = [d for d in user if step.takes(d) and (not isinstance(d, ROUTED) or any(_routed_here(d, p, user)
                                                                                  for p in planned))]
        kept = [d for d in planned if planner and not any(u.names(d) for u in mine)]
        given = [(d, "planner") for d in kept] + [(d, "user") for d in mine]
        return replace(step, directives="; ".join(str(d) for d, _ in given)), given

    def check_directed(self, user: tuple[Directive, ...], decided: Sequence[tuple[Directive, str]]) -> None:
        """A user directive of a kind two passes carry out (ROUTED) that names no loop either planned."""
        for directive in user:
            if isinstance(directive, RFactor):  # (one no pass took was tile-for-target's: it checked it)
                continue
            if isinstance(directive, ROUTED) and (directive, "user") not in decided:
                can = "; ".join(dict.fromkeys(str(d) for d, who in decided if type(d) is type(directive)))
                kind = type(directive).__name__
                raise ScheduleError(f"{directive}: names no loop a cpu pass can transform by {kind} "
                                    f"(the ones they can: {can or 'none in this kernel'})")


ROUTED = (UnrollJam, RFactor, ComputeWith, Reorder, Unroll, Specialize, Stage, Distribute)
"""Kinds more than one cpu pass carries out (jam-row-sweeps' and unroll-reuse-loops' UnrollJam;
split-column-reductions' and tile-for-target's RFactor; fuse-sibling-loops' and
fuse-sibling-reductions' ComputeWith, of which the loops stage's fuse-sibling-loops plans none;
interchange-column-reductions', reorder-for-reuse's and hoist-tile-loops' Reorder; jam-sweep-terms'
and unroll-short-reductions' Unroll; unswitch-invariant-selects' and branch-guarded-reads'
Specialize; pack-windowed-operands', pack-windowed-reductions' and pack-reused-panels'
Stage(memory=panel); defer-sum-epilogues' and distribute-row-nests' Distribute): a user's goes to
the pass whose planned loop it names."""


def _check_column_rfactors(given: Sequence[Directive], earlier: Sequence[tuple[Directive, str]]) -> None:
    """An RFactor left for tile-for-target in a stage where split-column-reductions planned one (the
    combine stage of column sums, never a reduction to one element): it named none of that pass's."""
    columns = [d for d, _ in earlier if isinstance(d, RFactor)]
    for directive in given:
        if isinstance(directive, RFactor) and any(d.stage == directive.stage for d in columns):
            can = "; ".join(dict.fromkeys(map(str, columns)))
            raise ScheduleError(f"{directive}: names no column stage beside a row stage that split-column-reductions "
                                f"can transform (the ones it can: {can})")


def _routed_here(directive: Directive, planned: Directive, user: Sequence[Directive]) -> bool:
    """Whether a user's directive of a kind two passes carry out (ROUTED) goes to the pass that planned
    `planned`: it names it, and it is that directive itself or no other user directive is. Two passes
    may plan the same kind for one stage and axis (distribute-row-nests' nests: jam-row-sweeps' rows
    of one, unroll-reuse-loops' of another): a plan given back restates both, each claiming its own."""
    return directive.names(planned) and (directive == planned or planned not in user)


def _takes(step: ModulePass, directive: Directive) -> bool:
    return hasattr(step, "takes") and step.takes(directive)


BACKEND = CpuBackend("cpu")
