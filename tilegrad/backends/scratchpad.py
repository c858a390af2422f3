"""The scratchpad backend: targets whose cores compute in a unified buffer (UB) and copy every tile
GM -> UB and back (the Ascend, DSP and GPU-shared-memory targets). tile-for-target does the work:
it splits the stages over the cores, tiles them to fit the UB and stages every access."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.passes import ModulePass

from tilegrad.backends.common import Backend
from tilegrad.passes.forward_stored_values import ForwardStoredValues
from tilegrad.passes.fuse_sibling_reductions import FuseSiblingReductions
from tilegrad.passes.tile_for_target import TileForTarget
from tilegrad.schedule import ScheduleHint
from tilegrad.targets import Target


@dataclass(frozen=True)
class ScratchpadBackend(Backend):
    scans: bool = False
    """A prefix or suffix reduction keeps its loops, staged by runs: tile-for-target does not stage a
    scan's rows by runs yet, so its output would move to GM element by element (a stage that reads
    its own earlier elements still runs as a scan: it runs only so)."""

    def tiled_passes(self, target: Target, num_blocks: int, hint: ScheduleHint) -> list[ModulePass]:
        return [
            ForwardStoredValues(),  # a temp read right after it is stored is the stored value: one UB buffer less
            TileForTarget.of(target, num_blocks, hint),  # core split, UB tiles, GM <-> UB copies: the plan
            FuseSiblingReductions(),  # reductions over the same tile share one loop
        ]


BACKEND = ScratchpadBackend("scratchpad")
