"""Schedules as data: the directives a planner decides and a user may override (directives.py),
and the scratchpad layout hint an op may keep beside its math (hint.py). Below both the front end
(`dsl/`) and the passes; imports neither, nor xDSL."""

from tilegrad.schedule.directives import (
    VOCABULARY,
    Balance,
    ComputeWith,
    Copy,
    Directive,
    Distribute,
    Fuse,
    Inline,
    KernelSchedule,
    Memory,
    Outline,
    Parallel,
    Partition,
    PartitionBy,
    Reorder,
    RFactor,
    Scan,
    Specialize,
    Split,
    Stage,
    Store,
    Table,
    Tail,
    Unroll,
    UnrollJam,
    Vectorize,
    make_directive,
    parse_directive,
    parse_schedule,
)
from tilegrad.schedule.hint import ScheduleHint

__all__ = ["Balance", "Copy", "Directive", "Fuse", "KernelSchedule", "Memory", "Outline", "Parallel", "Partition",
           "PartitionBy", "RFactor", "Reorder", "Scan", "ScheduleHint", "Specialize", "Split", "Stage", "Store", "Tail",
           "Unroll", "UnrollJam", "VOCABULARY", "Vectorize", "make_directive", "parse_directive", "parse_schedule",
           "ComputeWith", "Distribute", "Inline", "Table"]
