"""The scratchpad layout hint an op may keep beside its math (embedding's vendor layout)."""

from __future__ import annotations

from dataclasses import dataclass

from tilegrad.errors import DefinitionError
from tilegrad.schedule.directives import VOCABULARY, Directive


@dataclass(frozen=True)
class ScheduleHint:
    """Per-op, per-target choices kept beside the opdef (Halide's schedule apart from the algorithm),
    in the tiler's general terms: which stages, the tile size of each of their inner axes, whole
    axes, packing and the core split. The default is the tiler's own: split the outer axis over the
    cores (balanced), tile the innermost axis as large as the UB allows, buffers aligned."""

    tile_role: str = ""
    """The stages `tile_sizes` applies to: those whose loops have this role (a `LoopRole`:
    "parallel", "scatter"); empty: none."""
    tile_sizes: tuple[int, ...] = ()
    """Tile sizes of those stages' innermost len(tile_sizes) axes, outer to inner; every tile of such
    an axis is staged in UB as one block."""
    whole_axes: int = 0
    """How many of those axes, from the innermost, are one whole tile: their size is the axis's
    extent in this call, and a UB buffer over one is sized in the axis's shape symbol, which the
    plan's bound names (`36*E < ...`)."""
    packed: bool = False
    """Buffers are packed back to back with no alignment padding (the vendor kernel's layout)."""
    vendor_split: bool = False
    """Split over cores the vendor way (D // cores each, the remainder to the last core), as a
    vendor bound assumes; otherwise balanced (the first D % cores cores take one row more)."""

    directives: tuple[Directive, ...] = ()
    """The user's schedule directives for this op and target (`@tg.op(schedule=...)`, `tg.schedule`,
    `compile(schedule=...)`): they replace the planner's for the stages they name."""
    planned: tuple[Directive, ...] = ()
    """The planner's decisions at a call's extents, where the IR does not know them (kernel.py)."""
    planner: bool = True
    """False: the backend's planner adds nothing: the passes that carry out directives carry out
    exactly `directives` (a printed plan, edited), none of their own; a pass's decision left out is
    not made. (The core split and tiles stay tile-for-target's unless a directive gives them.)"""

    def __post_init__(self):
        roles = ("", "parallel", "scatter")  # LoopRole's stage roles, spelled out: opdefs import this
        # module, and `import tilegrad` does not import xDSL
        if self.tile_role not in roles:
            raise DefinitionError(f"schedule: tile_role {self.tile_role!r} is not one of {roles[1:]}")
        if any(size < 1 for size in self.tile_sizes):
            raise DefinitionError(f"schedule: tile_sizes {self.tile_sizes} must be positive")
        for directive in (*self.directives, *self.planned):
            if not isinstance(directive, Directive):
                raise DefinitionError(f"schedule: {directive!r} is not a schedule directive (tilegrad.schedule: "
                                      f"{', '.join(VOCABULARY)})")
        if not 0 <= self.whole_axes <= len(self.tile_sizes):
            raise DefinitionError(f"schedule: whole_axes {self.whole_axes} must be within the "
                                  f"{len(self.tile_sizes)} axes tile_sizes names")
