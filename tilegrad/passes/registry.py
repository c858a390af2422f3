"""Every tilegrad pass by name, beside xDSL's own, for textual pipelines as `xdsl-opt` reads them:

    tilegrad opt kernel.mlir -p 'fuse-elementwise,lower-tg-to-loops,tile-for-target{target=ascend910b}'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module

from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import ArgSpecParseError

from tilegrad.errors import ArgumentError, TilegradError


@dataclass(frozen=True)
class PassEntry:
    """One tilegrad pass: its name, where its class is, and where the pipeline runs it."""

    name: str
    cls: str
    """module:Class, imported only when the pass is looked up (`import tilegrad` loads no xDSL)."""
    runs: tuple[tuple[str, str], ...]
    """(stage, targets) for each place the pipeline runs it: stage "loops", "tiled" or "llvm"; targets
    "all", "cpu" (no UB staging) or "scratchpad" (UB staged)."""

    def load(self) -> type[ModulePass]:
        module, _, name = self.cls.partition(":")
        return getattr(import_module(module), name)


def _entry(name: str, module: str, cls: str, *runs: tuple[str, str]) -> PassEntry:
    return PassEntry(name, f"tilegrad.passes.{module}:{cls}", runs)


ALL_PASSES: tuple[PassEntry, ...] = (
    _entry("fuse-elementwise", "fuse_elementwise", "FuseElementwise", ("loops", "all")),
    _entry("scan-reductions", "scan_reductions", "ScanReductions", ("loops", "all")),
    _entry("lower-tg-to-loops", "lower_tg_to_loops", "LowerTgToLoops", ("loops", "all")),
    _entry("fuse-sibling-loops", "fuse_sibling_loops", "FuseSiblingLoops", ("loops", "all"), ("tiled", "cpu")),
    _entry("collapse-contiguous-nests", "collapse_contiguous_nests", "CollapseContiguousNests", ("loops", "all")),
    _entry("collapse-contiguous-rows", "collapse_contiguous_rows", "CollapseContiguousRows", ("loops", "all")),
    _entry("unroll-short-parallel-loops", "unroll_short_parallel_loops", "UnrollShortParallelLoops",
           ("loops", "all")),
    _entry("forward-stored-values", "forward_stored_values", "ForwardStoredValues", ("tiled", "all")),
    _entry("split-column-reductions", "split_column_reductions", "SplitColumnReductions", ("tiled", "cpu")),
    _entry("tile-for-target", "tile_for_target", "TileForTarget", ("tiled", "all")),
    _entry("split-window-phases", "split_window_phases", "SplitWindowPhases", ("tiled", "cpu")),
    _entry("pack-windowed-operands", "pack_windowed_operands", "PackWindowedOperands", ("tiled", "cpu")),
    _entry("pack-windowed-reductions", "pack_windowed_reductions", "PackWindowedReductions", ("tiled", "cpu")),
    _entry("distribute-row-nests", "distribute_row_nests", "DistributeRowNests", ("tiled", "cpu")),
    _entry("interchange-column-reductions", "interchange_column_reductions", "InterchangeColumnReductions",
           ("tiled", "cpu")),
    _entry("jam-row-sweeps", "jam_row_sweeps", "JamRowSweeps", ("tiled", "cpu")),
    _entry("chunk-row-sweeps", "chunk_row_sweeps", "ChunkRowSweeps", ("tiled", "cpu")),
    _entry("pack-reused-panels", "pack_reused_panels", "PackReusedPanels", ("tiled", "cpu")),
    _entry("reorder-for-reuse", "reorder_for_reuse", "ReorderForReuse", ("tiled", "cpu")),
    _entry("defer-sum-epilogues", "defer_sum_epilogues", "DeferSumEpilogues", ("tiled", "cpu")),
    _entry("unroll-reuse-loops", "unroll_reuse_loops", "UnrollReuseLoops", ("tiled", "cpu")),
    _entry("jam-sweep-terms", "jam_sweep_terms", "JamSweepTerms", ("tiled", "cpu")),
    _entry("fuse-sibling-reductions", "fuse_sibling_reductions", "FuseSiblingReductions", ("tiled", "all")),
    _entry("hoist-tile-loops", "hoist_tile_loops", "HoistTileLoops", ("tiled", "cpu")),
    _entry("tabulate-axis-expressions", "tabulate_axis_expressions", "TabulateAxisExpressions", ("tiled", "cpu")),
    _entry("unroll-short-reductions", "unroll_short_reductions", "UnrollShortReductions", ("tiled", "cpu"),
           ("llvm", "all")),
    _entry("branch-guarded-reads", "branch_guarded_reads", "BranchGuardedReads", ("tiled", "cpu")),
    _entry("split-stride-phases", "split_stride_phases", "SplitStridePhases", ("tiled", "cpu")),
    _entry("fold-affine-tests", "fold_affine_tests", "FoldAffineTests", ("tiled", "cpu")),
    _entry("partition-clamped-loops", "partition_clamped_loops", "PartitionClampedLoops", ("tiled", "cpu")),
    _entry("unswitch-invariant-selects", "unswitch_invariant_selects", "UnswitchInvariantSelects", ("tiled", "cpu")),
    _entry("separate-strided-load-groups", "separate_strided_load_groups", "SeparateStridedLoadGroups",
           ("tiled", "cpu")),
    _entry("stream-stores", "stream_stores", "StreamStores", ("tiled", "cpu")),
    _entry("overlap-vector-tails", "overlap_vector_tails", "OverlapVectorTails", ("tiled", "cpu")),
    _entry("outline-sibling-nests", "outline_sibling_nests", "OutlineSiblingNests", ("tiled", "cpu")),
    _entry("expand-math", "expand_math", "ExpandMath", ("llvm", "all")),
    _entry("lower-to-llvm", "lower_to_llvm", "LowerToLLVM", ("llvm", "all")),
)
"""Every tilegrad pass, in the order the pipeline first runs it: the one list the registry, the docs'
pass table (docs/passes.md) and the layer check (tests/test_layers.py) read."""


def _tilegrad_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    return {entry.name: entry.load for entry in ALL_PASSES}


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
