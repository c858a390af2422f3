"""Backends: one per target family, each owning its stage table (Triton's per-backend `add_stages`,
TileLang's `engine/phase.py`). `pipeline.py` loops over the table; the target-family branches live
here, not there.

    backend_for(target).stage_table(target, num_blocks, hint)  -> {"loops": [...], "tiled": [...], "llvm": [...]}

- scratchpad.py: targets that stage every tile GM <-> UB (the Ascend, DSP and GPU targets); their
  planner (the core split) runs inside tile-for-target (passes/scratchpad_planner.py);
- cpu/: this host's target (tiles for cache, threads for cores): its passes and its planner
  (cpu/planner.py: each pass's decisions as directives, merged with the user's);
- codegen.py: the loop hints and stores marked in the LLVM code (every target's kernel runs here).

Importing this package loads no xDSL: a backend module is imported when first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tilegrad.backends.common import Backend
    from tilegrad.targets import Target

STAGES = ("loops", "tiled", "llvm")
"""The stages a backend's passes make, in order (`op` is emitted from the trace; `asm` is LLVM's)."""


def backend_for(target: Target) -> Backend:
    """The backend of the target's family: explicit staging (a scratchpad), or this host's caches."""
    if target.staged:
        from tilegrad.backends.scratchpad import BACKEND
    else:
        from tilegrad.backends.cpu import BACKEND
    return BACKEND
