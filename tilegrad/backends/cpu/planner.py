"""The cpu backend's decisions as directives (tilegrad/schedule): what each tiled pass will do
(the core split is tile-for-target's own, planner's and user's alike), each decided from the IR
the pass is about to rewrite, by the function the pass itself decides with (pure: nothing is
changed; outline-sibling-nests finds where nests move by moving them, so it is asked of a copy).
`tilegrad plan` prints them (`schedule:`), and the plan's streaming stores and packed panels are
read from them. Loops are named by `#tg.loop<role, axis = k>`'s axis (a reduction's own axis for a
sum loop; 0 for an unmarked window loop).

  stream-stores: Store            pack-reused-panels: Stage(memory=panel)
  pack-windowed-operands: Stage(memory=panel) (a windowed operand's: at its positions' tile)
  pack-windowed-reductions: Stage(memory=panel) (a reduction's windowed operand: at its output loop k)
  jam-row-sweeps: UnrollJam       chunk-row-sweeps: Split (guard, peel)
  unroll-reuse-loops: UnrollJam   jam-sweep-terms: Unroll
  split-column-reductions: RFactor
  fuse-sibling-loops (the tiled stage's, exchange_loops): ComputeWith(nests=...)
  fuse-sibling-reductions: ComputeWith(reductions=...)
  partition-clamped-loops: Partition(by=clamp)    split-stride-phases: Partition(by=residue)
  split-window-phases: Partition(by=phase) (a loop a sum's `% s == 0` test thins: a loop over its phases)
  overlap-vector-tails: Split(tail=shift_inwards) outline-sibling-nests: Outline
  interchange-column-reductions, reorder-for-reuse, hoist-tile-loops: Reorder (a sum's loop as 'rK')
  unroll-short-reductions: Unroll(factor=0)       unswitch-invariant-selects: Specialize
  branch-guarded-reads: Specialize(condition='TENSORS in bounds')
  defer-sum-epilogues, distribute-row-nests: Distribute  tabulate-axis-expressions: Table
  scan-reductions (the loops stage's): Scan      fuse-elementwise (the loops stage's): Inline

Canonicalizations, not listed (no alternative a directive would choose): the loops stage's
fuse-sibling-loops, forward-stored-values, fold-affine-tests, separate-strided-load-groups."""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tilegrad.passes.branch_guarded_reads import BranchGuardedReads, branched_reads
from tilegrad.passes.chunk_row_sweeps import ChunkRowSweeps, chunk_factors
from tilegrad.passes.common import (
    enclosing_func,
    functions,
    loop_axis,
    stage_number,
    tensor_name,
)
from tilegrad.passes.defer_sum_epilogues import DeferSumEpilogues, deferred_epilogues
from tilegrad.passes.distribute_row_nests import DistributeRowNests, distributed_rows
from tilegrad.passes.fuse_elementwise import FuseElementwise, inlines
from tilegrad.passes.fuse_sibling_loops import FuseSiblingLoops, fusions
from tilegrad.passes.fuse_sibling_reductions import FuseSiblingReductions, merged_reductions
from tilegrad.passes.hoist_tile_loops import HoistTileLoops, hoisted
from tilegrad.passes.interchange_column_reductions import InterchangeColumnReductions, planned_interchanges
from tilegrad.passes.jam_row_sweeps import JamRowSweeps, jam_tail, jammable_rows, jammed_rows
from tilegrad.passes.jam_sweep_terms import JamSweepTerms, jammed_sweeps
from tilegrad.passes.outline_sibling_nests import OutlineSiblingNests, outlines
from tilegrad.passes.overlap_vector_tails import OverlapVectorTails, overlapped_loops
from tilegrad.passes.pack_reused_panels import PackReusedPanels, panel_decisions
from tilegrad.passes.pack_windowed_operands import PackWindowedOperands, windows
from tilegrad.passes.pack_windowed_reductions import PackWindowedReductions, reductions
from tilegrad.passes.partition_clamped_loops import PartitionClampedLoops, partitioned_loops
from tilegrad.passes.reorder_for_reuse import ReorderForReuse, reuse_reorders
from tilegrad.passes.scan_reductions import ScanReductions, scanned_stages
from tilegrad.passes.split_column_reductions import SplitColumnReductions, rfactors
from tilegrad.passes.split_stride_phases import SplitStridePhases, phase_split_loops
from tilegrad.passes.split_window_phases import SplitWindowPhases, window_phases
from tilegrad.passes.stream_stores import StreamStores, streamable_loops
from tilegrad.passes.tabulate_axis_expressions import TabulateAxisExpressions, tables
from tilegrad.passes.unroll_reuse_loops import UnrollReuseLoops, reuse_decisions
from tilegrad.passes.unroll_short_reductions import UnrollShortReductions, unrolled_windows
from tilegrad.passes.unswitch_invariant_selects import UnswitchInvariantSelects, versioned_loops
from tilegrad.schedule import (
    Directive,
    Outline,
    Partition,
    PartitionBy,
    Split,
    Store,
    Tail,
    Unroll,
    UnrollJam,
)


def decide(step: ModulePass, module: ModuleOp) -> tuple[Directive, ...]:
    """The directives of what `step` does to `module` (none for a pass that lists nothing)."""
    if isinstance(step, FuseElementwise):  # (the loops stage's: on the op's tg stages)
        return inlines(module)
    if isinstance(step, ScanReductions):  # (the loops stage's: before the stages are loops)
        return scanned_stages(module)
    if isinstance(step, StreamStores):
        return streamed_stores(module, step)
    if isinstance(step, PackReusedPanels):
        return packed_panels(module, step.groups, step.once)
    if isinstance(step, PackWindowedOperands):  # a windowed operand, masked, in a panel per block of positions
        return _unique(window.directive(fn) for fn in functions(module)
                       for window in windows(fn, step.panel_bytes, step.columns))
    if isinstance(step, PackWindowedReductions):  # a sum over positions of a windowed operand: a GEMM per block
        return _unique(red.directive(fn) for fn in functions(module) for red in reductions(fn, step.panel_bytes))
    if isinstance(step, SplitColumnReductions):
        return split_columns(module, step)
    if isinstance(step, FuseSiblingLoops) and step.exchange_loops:  # (the loops stage's: a canonicalization)
        return _unique(d for fn in functions(module) for d, _ in fusions(fn, step.exchange_loops, step.contractions))
    if isinstance(step, FuseSiblingReductions):
        return _unique(d for fn in functions(module) for d in merged_reductions(fn))
    if isinstance(step, PartitionClampedLoops):
        return _on_loops(partitioned_loops(module), lambda stage, axis: Partition(stage=stage, axis=axis))
    if isinstance(step, SplitWindowPhases):  # a loop over the phases of a loop a sum's `% s == 0` tests
        return _unique(own for own, _ in window_phases(module))
    if isinstance(step, SplitStridePhases):
        return _on_loops(phase_split_loops(module),
                         lambda stage, axis: Partition(stage=stage, axis=axis, by=PartitionBy.RESIDUE))
    if isinstance(step, OverlapVectorTails):
        return _on_loops(overlapped_loops(module, step.vector),
                         lambda stage, axis: Split(stage=stage, axis=axis, factor=step.vector, tail=Tail.SHIFT_INWARDS))
    if isinstance(step, OutlineSiblingNests):
        return _unique(Outline(stage=stage_number(fn)) for fn in functions(module)
                       if outlines(fn, step.stage_ops, step.nest_ops))
    if isinstance(step, JamRowSweeps):  # the outermost row loop; one inside it, as not jammed (factor 1)
        return _unique(UnrollJam(stage=stage_number(fn), axis=loop_axis(loop), factor=step.rows, tail=jam_tail(loop))
                       if loop in jammed_rows(fn) else UnrollJam(stage=stage_number(fn), axis=loop_axis(loop), factor=1)
                       for fn in functions(module) for loop in jammable_rows(fn) if step.rows > 1)
    if isinstance(step, ChunkRowSweeps):  # the columns a chunk leaves over: one more chunk, masked
        return _unique(Split(stage=stage_number(fn), axis=loop_axis(row), factor=factor, tail=Tail.GUARD)
                       for fn in functions(module)
                       for _, row, factor in chunk_factors(fn, step.columns, step.rows, step.lanes))
    if isinstance(step, UnrollReuseLoops):
        return reused_loops(module, step)
    if isinstance(step, InterchangeColumnReductions):  # the sums' loops outside the column loop (nests: as they are)
        return planned_interchanges(module)
    if isinstance(step, ReorderForReuse):  # the tile loop outside the parallel loop that re-reads it
        return _unique(own for own, _, _ in reuse_reorders(module))
    if isinstance(step, HoistTileLoops):  # the tile loop outside the parallel loop it is all the body of
        return _unique(own for own, _, _ in hoisted(module))
    if isinstance(step, JamSweepTerms):
        return _unique(Unroll(stage=stage_number(fn), axis=loop_axis(sweep), factor=step.terms)
                       for fn in functions(module) for sweep, _ in jammed_sweeps(fn) if step.terms > 1)
    if isinstance(step, TabulateAxisExpressions):
        return _unique(own for own, _ in tables(module, step.elements, step.min_ops))
    if isinstance(step, UnrollShortReductions):
        return unrolled_windows(module)
    if isinstance(step, BranchGuardedReads):
        return branched_reads(module)
    if isinstance(step, UnswitchInvariantSelects):
        return versioned_loops(module)
    if isinstance(step, DistributeRowNests):  # (a row loop's nests, each over a tile of rows in a loop of its own)
        return _unique(own for own, _ in distributed_rows(module))
    if isinstance(step, DeferSumEpilogues):  # (a row loop's sums, then their math in a loop of its own)
        return _unique(own for own, _ in deferred_epilogues(module))
    return ()


def _unique(directives) -> tuple[Directive, ...]:
    return tuple(dict.fromkeys(directives))


def _on_loops(loops, make) -> tuple[Directive, ...]:
    """make(stage, axis) for each loop, by its stage and its axis (unmarked loops, a window's: 0)."""
    return _unique(make(stage_number(enclosing_func(loop)), loop_axis(loop)) for loop in loops)


def split_columns(module: ModuleOp, step: SplitColumnReductions) -> tuple[Directive, ...]:
    """The column sums split-column-reductions sums by chunks of rows, each named by its sum's axis
    and its column stage's number as the pass finds it, which is the combine stage's in the plan:
    the split puts a stage of partial sums before it, and fuse-sibling-loops runs that one with
    the row stage, as the pass means it to (layer norm: dx and the partials of dγ, dβ in stage 0,
    their combine in stage 1). chunks: the cores (a long float32 sum takes a multiple of them, at
    least one per block: the call's rows decide how many)."""
    if step.num_blocks < 2:
        return ()
    return _unique(directive for fn in functions(module) for directive, _ in rfactors(fn, step.num_blocks))


def reused_loops(module: ModuleOp, step: UnrollReuseLoops) -> tuple[Directive, ...]:
    """The dot products' loops unroll-reuse-loops unrolls (fuse-sibling-reductions then jams their
    sums: a register tile) and the row loops around them it jams, by stage."""
    found: list[Directive] = []
    loops, rows = reuse_decisions(module, step.jam_rows)
    for factor, chosen in ((step.unroll, loops), (step.jam_rows, rows)):
        if factor > 1:
            found += [UnrollJam(stage=stage_number(enclosing_func(loop)), axis=loop_axis(loop), factor=factor)
                      for loop in chosen]
    return _unique(found)


def streamed_stores(module: ModuleOp, step: StreamStores) -> tuple[Directive, ...]:
    """The outputs stream-stores writes with streaming stores, by stage (streamable_loops)."""
    found = []
    for fn in functions(module):
        for stores in streamable_loops(fn, step.compute_bound_ops, step.line_bytes, step.max_line_ops).values():
            found.append(Store(stage=stage_number(fn), tensor=tensor_name(fn, stores[0].memref)))
    return tuple(dict.fromkeys(found))


def packed_panels(module: ModuleOp, groups: int = 0, once: int = 0) -> tuple[Directive, ...]:
    """The inputs pack-reused-panels copies into stack panels, by stage, at the loop each is packed
    in (the column strips' tile loop; a row group's loop for its own columns, `groups` at a time,
    and with `once` packed once per call out of the strips' loop: `hoist`)."""
    return _unique(own for fn in functions(module) for panel in panel_decisions(fn)
                   for own, _ in panel.directives(fn, groups, once))
