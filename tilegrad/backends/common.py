"""What every backend shares: the loops stage (the op's math as loop nests, the same on every target)
and the llvm stage (the kernel's own lowering to the llvm dialect; LLVM's O3 follows)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tilegrad.passes.collapse_contiguous_nests import CollapseContiguousNests
from tilegrad.passes.collapse_contiguous_rows import CollapseContiguousRows
from tilegrad.passes.expand_math import ExpandMath
from tilegrad.passes.fuse_elementwise import FuseElementwise
from tilegrad.passes.fuse_sibling_loops import FuseSiblingLoops
from tilegrad.passes.lower_tg_to_loops import LowerTgToLoops
from tilegrad.passes.lower_to_llvm import LowerToLLVM
from tilegrad.passes.scan_reductions import ScanReductions
from tilegrad.passes.unroll_short_parallel_loops import UnrollShortParallelLoops
from tilegrad.passes.unroll_short_reductions import UnrollShortReductions
from tilegrad.schedule import Directive, ScheduleHint
from tilegrad.targets import Target
from tilegrad.targets.host import HOST, HostModel

StageTable = dict[str, list[ModulePass]]
"""Stage name -> the passes that make it from the stage before, in order (backends.STAGES)."""


def loops_passes(scans: bool = True, contractions: bool = True) -> list[ModulePass]:
    """`scans` False: only stages that read their own earlier elements run as scans (Backend.scans);
    `contractions` False: two contractions side by side stay apart (Backend.contractions)."""
    return [
        FuseElementwise(),  # an elementwise producer read by one consumer is computed where it is read
        ScanReductions(reductions=scans),  # a prefix or suffix reduction runs as an in-order scan per row (O(n))
        LowerTgToLoops(),  # tg ops become scf loop nests over memrefs, one nest per stage
        # sibling nests over the same range share one loop (one pass over the data)
        FuseSiblingLoops(contractions=contractions),
        CollapseContiguousNests(),  # nests over contiguous axes become one loop (fewer, longer loops)
        CollapseContiguousRows(),  # rows walked whole become one row (a plane as one run)
        UnrollShortParallelLoops(),  # a parallel loop of a few trips around a reduction, unrolled
    ]


def llvm_passes(guard: bool = False, first_code: int = 0, host: HostModel = HOST) -> list[ModulePass]:
    """The passes before xDSL's conversion to llvmlite (then LLVM's own O3). Every target's kernel
    runs on this host (a scratchpad target's in emulation), so the host model's values apply."""
    return [
        UnrollShortReductions(),  # windows of a few terms as straight-line code (made again by the stages)
        ExpandMath(),  # exp/log/tanh as polynomials LLVM vectorizes
        LowerToLLVM(guard=guard, first_code=first_code, arithmetic_bound=host.arithmetic_bound,
                    interleave_count=host.interleave_count),  # the llvm dialect, with loop hints
    ]


@dataclass(frozen=True)
class Backend:
    """A target family's stage table, planner hook and code generation hooks."""

    name: str
    host: HostModel = HOST
    """The host the kernels run on (every target's: a scratchpad target's in emulation) and the
    values tuned for it."""

    scans: bool = True
    """Whether a reduction over a prefix or suffix runs as a scan (scan-reductions)."""

    contractions: bool = True
    """Whether the loops stage's fuse-sibling-loops joins two contractions side by side (else a
    later stage decides: the cpu tiled stage's instance lists them)."""

    plans: bool = False
    """Whether the backend lists its decisions as a schedule (decide); else the plan has none."""

    def tiled_passes(self, target: Target, num_blocks: int, hint: ScheduleHint) -> list[ModulePass]:
        raise NotImplementedError

    def stage_table(self, target: Target, num_blocks: int, hint: ScheduleHint, untiled: bool = False,
                    guard: bool = False) -> StageTable:
        """The passes of each stage, decided before any runs (a textual form of each list runs the
        same way in `tilegrad opt -p`)."""
        tiled = [] if untiled else self.tiled_passes(target, num_blocks, hint)
        return {"loops": loops_passes(self.scans, self.contractions), "tiled": tiled, "llvm": self.llvm_passes(guard)}

    def decide(self, step: ModulePass, module: ModuleOp, target: Target) -> tuple[Directive, ...]:
        """What `step` will do to `module`, as directives, decided before it runs (pure: the module
        is not changed): the backend's schedule, which `tilegrad plan` prints."""
        return ()

    def direct(self, step: ModulePass, planned: tuple[Directive, ...], user: tuple[Directive, ...],
               earlier: Sequence[tuple[Directive, str]] = (), planner: bool = True,
               ) -> tuple[ModulePass, list[tuple[Directive, str]]]:
        """The step to run for `step` with the directives in force, and those directives, each with
        who decided it (`earlier`: those of the steps before it): here the planner's, as the step
        decides them itself. `planner` False: a step that carries out directives gets only the
        user's (ScheduleHint.planner)."""
        return step, [(d, "planner") for d in planned]

    def check_directed(self, user: tuple[Directive, ...], decided: Sequence[tuple[Directive, str]]) -> None:
        """After the tiled passes: refuse a user directive no step took (`decided`: every step's
        directives in force, with who decided each). Here none is left over."""

    def llvm_passes(self, guard: bool = False, first_code: int = 0) -> list[ModulePass]:
        return llvm_passes(guard, first_code, self.host)

    def mark_llvm(self, module: ModuleOp, llvm_module) -> None:
        """Carry what xDSL's llvmlite conversion drops (nontemporal stores, loop hints) into
        `llvm_module`. Every target's kernel is this host's code (a scratchpad target's in
        emulation), so every backend marks it as the cpu's code generation does."""
        from tilegrad.backends.codegen import mark_loop_hints, mark_nontemporal_stores  # (llvmlite: loaded to lower)

        mark_nontemporal_stores(module, llvm_module)
        mark_loop_hints(module, llvm_module, self.host)
