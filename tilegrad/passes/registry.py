"""Every tilegrad pass by name, beside xDSL's own, for textual pipelines as `xdsl-opt` reads them:

    tilegrad opt kernel.mlir -p 'fuse-elementwise,lower-tg-to-loops,tile-for-target{target=ascend910b}'
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import ArgSpecParseError

from tilegrad.errors import ArgumentError, TilegradError


def _tilegrad_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    from tilegrad.passes.branch_guarded_reads import BranchGuardedReads
    from tilegrad.passes.chunk_row_sweeps import ChunkRowSweeps
    from tilegrad.passes.collapse_contiguous_nests import CollapseContiguousNests
    from tilegrad.passes.collapse_contiguous_rows import CollapseContiguousRows
    from tilegrad.passes.defer_sum_epilogues import DeferSumEpilogues
    from tilegrad.passes.expand_math import ExpandMath
    from tilegrad.passes.fold_affine_tests import FoldAffineTests
    from tilegrad.passes.forward_stored_values import ForwardStoredValues
    from tilegrad.passes.fuse_elementwise import FuseElementwise
    from tilegrad.passes.fuse_sibling_loops import FuseSiblingLoops
    from tilegrad.passes.fuse_sibling_reductions import FuseSiblingReductions
    from tilegrad.passes.hoist_tile_loops import HoistTileLoops
    from tilegrad.passes.interchange_column_reductions import InterchangeColumnReductions
    from tilegrad.passes.jam_row_sweeps import JamRowSweeps
    from tilegrad.passes.jam_sweep_terms import JamSweepTerms
    from tilegrad.passes.lower_tg_to_loops import LowerTgToLoops
    from tilegrad.passes.lower_to_llvm import LowerToLLVM
    from tilegrad.passes.outline_sibling_nests import OutlineSiblingNests
    from tilegrad.passes.overlap_vector_tails import OverlapVectorTails
    from tilegrad.passes.pack_reused_panels import PackReusedPanels
    from tilegrad.passes.partition_clamped_loops import PartitionClampedLoops
    from tilegrad.passes.reorder_for_reuse import ReorderForReuse
    from tilegrad.passes.separate_strided_load_groups import SeparateStridedLoadGroups
    from tilegrad.passes.split_column_reductions import SplitColumnReductions
    from tilegrad.passes.split_stride_phases import SplitStridePhases
    from tilegrad.passes.stream_stores import StreamStores
    from tilegrad.passes.tile_for_target import TileForTarget
    from tilegrad.passes.unroll_reuse_loops import UnrollReuseLoops
    from tilegrad.passes.unroll_short_parallel_loops import UnrollShortParallelLoops
    from tilegrad.passes.unroll_short_reductions import UnrollShortReductions
    from tilegrad.passes.unswitch_invariant_selects import UnswitchInvariantSelects

    classes = (BranchGuardedReads, ChunkRowSweeps, CollapseContiguousNests, CollapseContiguousRows,
               DeferSumEpilogues, ExpandMath, FoldAffineTests, ForwardStoredValues, FuseElementwise, FuseSiblingLoops,
               FuseSiblingReductions, HoistTileLoops, InterchangeColumnReductions, JamRowSweeps, JamSweepTerms,
               LowerTgToLoops,
               LowerToLLVM, OutlineSiblingNests, OverlapVectorTails, PackReusedPanels, PartitionClampedLoops,
               ReorderForReuse, SeparateStridedLoadGroups, SplitColumnReductions, SplitStridePhases, StreamStores,
               TileForTarget, UnrollReuseLoops, UnrollShortParallelLoops, UnrollShortReductions,
               UnswitchInvariantSelects)
    return {c.name: (lambda c=c: c) for c in classes}


def tilegrad_pass_names() -> list[str]:
    return sorted(_tilegrad_passes())


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """xDSL's passes and tilegrad's (tilegrad's win a name clash)."""
    from xdsl.transforms import get_all_passes

    return {**get_all_passes(), **_tilegrad_passes()}


def parse_pipeline(spec: str) -> PassPipeline:
    """`pass1,pass2{option=value other=1}` -> the passes, or ArgumentError naming what is wrong."""
    try:
        return PassPipeline.parse_spec(available_passes(), spec)
    except TilegradError as err:  # a pass refused an option's value: the message names it and the rule
        raise ArgumentError(f"pass pipeline {spec!r}: {err}") from None
    except ArgSpecParseError as err:  # malformed text; a BaseException, which `except Exception` (and the CLI's) misses
        raise ArgumentError(f"pass pipeline {spec!r}: {_spec_error(str(err))}") from None
    except Exception as err:  # xDSL reports unknown passes and options as ValueError / its own errors
        raise ArgumentError(f"pass pipeline {spec!r}: {err}; tilegrad's passes: "
                            f"{', '.join(tilegrad_pass_names())} (and xDSL's)") from None


def _spec_error(message: str) -> str:
    """xDSL's multi-line report (position, the spec, a caret line, the reason) as one line."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    where = next((line.rsplit(":", 1)[-1] for line in lines if line.startswith("pass-pipeline:")), "?")
    return f"{lines[-1]} (at column {where})" if lines else message


def pipeline_spec(passes) -> str:
    """The textual form of a list of pass instances (what `tilegrad opt -p` takes)."""
    return ",".join(str(p.pipeline_pass_spec()) for p in passes)
