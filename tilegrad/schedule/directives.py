"""The schedule vocabulary: typed, printable decisions about how a kernel's loops run.

An op's math says *what* it computes; a schedule says *how*: which axes split over the cores,
which loops are strip-mined, unrolled, vectorized, which tensors are staged in on-chip memory.
A planner (one per target family) decides a `KernelSchedule` from the loops IR and the target
before any IR is rewritten; a user may give directives that override what they name; small
appliers then carry them out. This is Halide's algorithm/schedule split, and tinygrad's list of
`Opt`s that `apply_opts` replays.

Loops are named by their stage (the number `tilegrad plan` prints, `tg.stage` in the IR) and their
axis in that stage's domain (`#tg.loop<role, axis = k>`), outer to inner. A directive whose
`stage` is None applies to every stage it can.

Every directive prints as the call that makes it (`Parallel(stage=3, axes=(0, 1))`), and
`parse_schedule` reads that text back, so a printed plan can be edited and given again
(`tilegrad plan --schedule FILE`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import ClassVar

from tilegrad.errors import ScheduleError


class Tail(StrEnum):
    """What a split does with the iterations its factor does not divide."""

    SHIFT_INWARDS = "shift_inwards"
    """The last tile moves back to end at the axis's end (recomputes some; Halide's ShiftInwards)."""
    PEEL = "peel"
    """The remainder runs as a loop of its own after the tiles."""
    GUARD = "guard"
    """The last tile is shorter: its bound is min(tile end, axis end)."""
    CLAMP = "clamp"
    """The last tile's iterations past the axis's end repeat its last one (recomputes it: only where
    an iteration may run again, its results stored over the same elements)."""


class Balance(StrEnum):
    """How a parallel split shares an extent D among c cores."""

    BALANCED = "balanced"
    """D // c each, one more for the first D % c cores."""
    VENDOR = "vendor"
    """D // c each, the remainder to the last core (as a vendor's documented bound assumes)."""


class Memory(StrEnum):
    """Where a staged tensor's tile lives."""

    UB = "ub"
    """The target's unified buffer (scratchpad targets): explicit GM<->UB copies."""
    PANEL = "panel"
    """A packed panel on the stack, sized for the core's cache (cpu)."""
    REGISTERS = "registers"
    """An accumulator row held in registers across a reduction (cpu)."""


class Copy(StrEnum):
    """How a staged tensor moves between GM and its staging memory."""

    BLOCK = "block"
    """A tile of the split's axes per copy."""
    RUN = "run"
    """A contiguous run (a row, a window with its halo, a reduction's range) per copy."""
    ELEMENT = "element"
    """One element per copy (the fallback a plan reports: each is a DMA of its own)."""


class PartitionBy(StrEnum):
    """How a loop's iterations are separated into ranges with simpler bodies."""

    CLAMP = "clamp"
    """Where clamped indices are not clamped (the interior) and the edges (Halide's partitioning)."""
    RESIDUE = "residue"
    """By the iteration's residue modulo a stride (one phase per residue)."""
    PHASE = "phase"
    """A loop over the residues modulo a stride running the stage's nest once per residue, its sums
    over the residue class their `% stride == 0` test keeps (split-window-phases)."""


@dataclass(frozen=True)
class Directive:
    """One decision about one stage's loops. Subclasses are frozen dataclasses whose fields are
    ints, strings, enums and tuples of them, so a directive prints, compares and hashes as data."""

    stage: int | None = None

    kind: ClassVar[str] = ""
    """What the directive does, in a few words (the plan's listing and the docs' table)."""

    def __post_init__(self) -> None:
        """Enum fields given as their strings (`balance="vendor"`) and lists as tuples, so a directive
        written in Python equals the one parsed from its printed form; then checked (check), so a
        directive that exists is well formed."""
        for f in fields(self):
            value = getattr(self, f.name)
            enum = _ENUM_FIELDS.get(f.type if isinstance(f.type, str) else getattr(f.type, "__name__", ""))
            if enum is not None and not isinstance(value, enum):
                try:
                    value = enum(value)
                except ValueError:
                    raise ScheduleError(f"{type(self).__name__}: {f.name} must be one of "
                                        f"{', '.join(repr(e.value) for e in enum)}, not {value!r}") from None
            if isinstance(value, list):
                value = tuple(value)
            object.__setattr__(self, f.name, value)
        self.check()

    def __str__(self) -> str:
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value == f.default and f.name != "stage":
                continue
            if f.name == "stage" and value is None:
                continue
            parts.append(f"{f.name}={_literal(value)}")
        return f"{type(self).__name__}({', '.join(parts)})"

    @property
    def off(self) -> bool:
        """Whether the directive turns its transformation off for what it names (a user's override
        of a planner's decision: `Store(..., nontemporal=False)`, `UnrollJam(..., factor=1)`)."""
        return False

    def names(self, other: Directive) -> bool:
        """Whether this directive is about the same loop or tensor as `other` (same kind, same stage,
        or this one's stage None, and the same axis, tensor, tail, partition and memory): a user's
        replaces a planner's it names."""
        return type(self) is type(other) and self.stage in (None, other.stage) and all(
            getattr(self, name, None) == getattr(other, name, None) for name in _IDENTITY)

    def check(self) -> None:
        """Refuse values no loop nest could take (ScheduleError naming the directive and the rule);
        whether the op's loops can take it is the applier's check, against the IR."""
        if self.stage is not None and (not isinstance(self.stage, int) or self.stage < 0):
            raise ScheduleError(f"{self}: stage must be an integer >= 0 (a stage number of `tilegrad plan`)")


_IDENTITY = ("axis", "tensor", "tail", "by", "memory")
"""The fields that say what a directive is about (Directive.names); the others say how."""


def _literal(value) -> str:
    if isinstance(value, StrEnum):
        return repr(value.value)
    if isinstance(value, tuple):
        return "(" + ", ".join(_literal(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return repr(value)


def _axis(directive: Directive, name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ScheduleError(f"{directive}: {name} must be an axis number >= 0 (outer to inner in the stage's domain)")


def _positive(directive: Directive, name: str, value, least: int = 1) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise ScheduleError(f"{directive}: {name} must be an integer >= {least}")


@dataclass(frozen=True)
class Parallel(Directive):
    """The stage's `axes` (fused, outer to inner) split over the cores: each core takes a
    contiguous range of the fused index. `cores` None: all of the kernel's blocks."""

    axes: tuple[int, ...] = (0,)
    balance: Balance = Balance.BALANCED
    cores: int | None = None
    kind: ClassVar[str] = "split axes over the cores"

    def check(self) -> None:
        super().check()
        if not self.axes:
            raise ScheduleError(f"{self}: axes must name at least one axis")
        for a in self.axes:
            _axis(self, "axes", a)
        if list(self.axes) != sorted(set(self.axes)):
            raise ScheduleError(f"{self}: axes must be distinct and outer to inner")
        if self.cores is not None:
            _positive(self, "cores", self.cores)


@dataclass(frozen=True)
class Split(Directive):
    """Strip-mine `axis` by `factor`: an outer loop over tiles, an inner one within a tile
    (factor 1: not strip-mined, a user's override of the planner's)."""

    axis: int = 0
    factor: int = 1
    tail: Tail = Tail.GUARD
    kind: ClassVar[str] = "strip-mine an axis"

    @property
    def off(self) -> bool:
        return self.factor == 1

    def check(self) -> None:
        super().check()
        _axis(self, "axis", self.axis)
        _positive(self, "factor", self.factor)


@dataclass(frozen=True)
class Reorder(Directive):
    """The stage's loops nested in `order` (axis numbers, outer to inner; a reduction's loop as
    'rK', K its axis in the reduction's own domain, which is numbered apart from the stage's and
    may repeat one of its numbers). The order the loops have already leaves them as they are (a
    user's override of the planner's). It names the planner's Reorder of the same stage and the
    same set of loops."""

    order: tuple[int | str, ...] = ()
    kind: ClassVar[str] = "interchange loops"

    def names(self, other: Directive) -> bool:
        return super().names(other) and set(self.order) == set(getattr(other, "order", ()))

    def check(self) -> None:
        super().check()
        for a in self.order:
            if isinstance(a, str):
                if not re.fullmatch(r"r(0|[1-9][0-9]*)", a):
                    raise ScheduleError(f"{self}: order's {a!r} must be a reduction's loop 'rK' (K its axis >= 0)")
            else:
                _axis(self, "order", a)
        if len(set(self.order)) != len(self.order) or len(self.order) < 2:
            raise ScheduleError(f"{self}: order must list two or more distinct axes")


@dataclass(frozen=True)
class Fuse(Directive):
    """Adjacent `axes` become one loop over their product."""

    axes: tuple[int, ...] = ()
    kind: ClassVar[str] = "fuse adjacent axes"

    def check(self) -> None:
        super().check()
        for a in self.axes:
            _axis(self, "axes", a)
        if len(self.axes) < 2 or list(self.axes) != list(range(self.axes[0], self.axes[0] + len(self.axes))):
            raise ScheduleError(f"{self}: axes must be two or more adjacent axes, outer to inner")


@dataclass(frozen=True)
class Unroll(Directive):
    """`axis` unrolled `factor` times (0: fully, for a loop of known trip count; 1: not unrolled, a
    user's override of the planner's)."""

    axis: int = 0
    factor: int = 0
    kind: ClassVar[str] = "unroll a loop"

    @property
    def off(self) -> bool:
        return self.factor == 1

    def check(self) -> None:
        super().check()
        _axis(self, "axis", self.axis)
        _positive(self, "factor", self.factor, least=0)


@dataclass(frozen=True)
class UnrollJam(Directive):
    """`axis` unrolled `factor` times with the copies of its inner loops jammed into one
    (a register tile: `factor` rows share each load of the inner loop's operands); factor 1: not
    jammed (a user's override of the planner's)."""

    axis: int = 0
    factor: int = 2
    tail: Tail = Tail.PEEL
    """What runs the iterations `factor` does not divide: a loop of their own after the jammed
    steps (peel), or the last step with its copies past the end clamped to the last (clamp)."""
    kind: ClassVar[str] = "unroll-and-jam (register tile)"

    @property
    def off(self) -> bool:
        return self.factor == 1

    def names(self, other: Directive) -> bool:
        """The same loop (stage and axis): `tail` says how, not which loop."""
        return type(self) is type(other) and self.stage in (None, other.stage) and self.axis == other.axis

    def check(self) -> None:
        super().check()
        _axis(self, "axis", self.axis)
        _positive(self, "factor", self.factor)
        if self.tail not in (Tail.PEEL, Tail.CLAMP):
            raise ScheduleError(f"{self}: tail must be 'peel' or 'clamp' (the iterations the factor does not divide "
                                f"run after the jammed steps, or the last step repeats the last iteration)")


@dataclass(frozen=True)
class Vectorize(Directive):
    """`axis` runs `lanes` iterations per vector instruction (0: the target's width)."""

    axis: int = 0
    lanes: int = 0
    kind: ClassVar[str] = "vectorize an axis"

    def check(self) -> None:
        super().check()
        _axis(self, "axis", self.axis)
        _positive(self, "lanes", self.lanes, least=0)


@dataclass(frozen=True)
class RFactor(Directive):
    """The reduction over `axis` is split in `chunks` partial sums (combined in chunk order after),
    so the chunks can run on different cores or as independent accumulators (chunks 1: not split,
    a user's override of the planner's)."""

    axis: int = 0
    chunks: int = 2
    kind: ClassVar[str] = "split a reduction into partials"

    @property
    def off(self) -> bool:
        return self.chunks == 1

    def check(self) -> None:
        super().check()
        _axis(self, "axis", self.axis)
        _positive(self, "chunks", self.chunks)


@dataclass(frozen=True)
class Stage(Directive):
    """`tensor`'s accesses in the stage go through `memory`, one tile per iteration of loop `at`,
    moved by `copy` (UB buffers on scratchpad targets; packed panels on cpu)."""

    tensor: str = ""
    at: int = 0
    memory: Memory = Memory.UB
    copy: Copy = Copy.BLOCK
    groups: int = 0
    """A row group's own panel (cpu, `at` the row groups' loop): the consecutive groups whose columns
    are packed at once, at most (as many as fit the panel), each source row read in one run; 0 or 1:
    each group packs its own (one short read from every source row, per group)."""
    hoist: int | None = None
    """A row group's own panel that every column strip reads again (cpu): the axis of the loop over
    the strips its pack moves out of, the panels then packed once per call into a workspace of the
    tensor's size (where that loop runs two strips or more) and read back by every strip; None: the
    panels packed again in every strip."""
    dtype: str = ""
    """A cpu panel's element type: 'float32' holds a half tensor's (bfloat16, float16) elements
    widened when packed, once per element, so the sweeps read float32 (their terms are float32
    already: half types compute in float32); such a panel lives in a float32 workspace of the
    tensor's size (it always fits). "": the tensor's own type (a half tensor widened at every load)."""
    kind: ClassVar[str] = "stage a tensor's tiles in fast memory"

    def check(self) -> None:
        super().check()
        if not self.tensor:
            raise ScheduleError(f"{self}: tensor must name one of the op's tensors")
        _axis(self, "at", self.at)
        if not isinstance(self.groups, int) or self.groups < 0:
            raise ScheduleError(f"{self}: groups must be an integer >= 0")
        if self.hoist is not None:
            _axis(self, "hoist", self.hoist)
        if self.dtype not in ("", "float32"):
            raise ScheduleError(f"{self}: dtype must be 'float32' (a half tensor's panel widened) or '' (the tensor's "
                                f"own type)")


@dataclass(frozen=True)
class Specialize(Directive):
    """Loop `axis` runs in two versions chosen by `condition`: one where it holds, with what the test
    decides folded in, the general one otherwise (`condition` as the plan prints it: tensors by name,
    loop indices by axis, `i3`). versioned=False: one version (a user's override of the planner's).
    A condition names what it is about, so `names` compares it too (spaces aside)."""

    axis: int = 0
    condition: str = ""
    versioned: bool = True
    kind: ClassVar[str] = "version a loop on a test"

    @property
    def off(self) -> bool:
        return not self.versioned

    def names(self, other: Directive) -> bool:
        return super().names(other) and "".join(self.condition.split()) == "".join(other.condition.split())

    def check(self) -> None:
        super().check()
        _axis(self, "axis", self.axis)
        if not self.condition:
            raise ScheduleError(f"{self}: condition must state the test (as `tilegrad plan` prints it)")


@dataclass(frozen=True)
class Partition(Directive):
    """`axis`'s iterations separated into ranges with simpler bodies (`by`). partitioned=False: one
    range (a user's override of the planner's)."""

    axis: int = 0
    by: PartitionBy = PartitionBy.CLAMP
    partitioned: bool = True
    kind: ClassVar[str] = "partition a loop's range"

    @property
    def off(self) -> bool:
        return not self.partitioned

    def check(self) -> None:
        super().check()
        _axis(self, "axis", self.axis)


@dataclass(frozen=True)
class Store(Directive):
    """How the stage stores `tensor`: `nontemporal` bypasses the caches (a stream of whole lines)."""

    tensor: str = ""
    nontemporal: bool = True
    kind: ClassVar[str] = "store mode of an output"

    @property
    def off(self) -> bool:
        return not self.nontemporal

    def check(self) -> None:
        super().check()
        if not self.tensor:
            raise ScheduleError(f"{self}: tensor must name one of the op's outputs")


@dataclass(frozen=True)
class Outline(Directive):
    """The stage's sibling loop nests compiled as functions of their own (compile time);
    `outlined=False`: kept in the stage (a user's override of the planner's)."""

    outlined: bool = True
    kind: ClassVar[str] = "outline sibling loop nests"

    @property
    def off(self) -> bool:
        return not self.outlined


@dataclass(frozen=True)
class Scan(Directive):
    """The stage's reductions whose range grows by one term per step of output axis `axis` (a prefix
    or suffix sum, `reduce_sum(i + 1, lambda t: x[t])`) run as one running accumulation along that
    axis, in order, per row: O(n), not O(n^2). The sum is taken in another order than each element's
    own (within SPEC's tolerance, not bitwise the naive form's), the same on any core count.
    `scanned=False`: each element reduces its own range (a user's override of the planner's)."""

    axis: int = 0
    scanned: bool = True
    kind: ClassVar[str] = "run a prefix or suffix reduction as a scan"

    @property
    def off(self) -> bool:
        return not self.scanned

    def check(self) -> None:
        super().check()
        _axis(self, "axis", self.axis)


@dataclass(frozen=True)
class Table(Directive):
    """The expressions of vector loop `axis`'s body that depend on some of the nest's loops only are
    computed once per value of those loops into stack tables of at most `elements` elements, filled
    before the loops they do not depend on (`axis` strip-mined by what a table holds), and read in
    the loop. elements=0: computed where they are used (a user's override of the planner's)."""

    axis: int = 0
    elements: int = 1024
    kind: ClassVar[str] = "tabulate expressions of some loops"

    @property
    def off(self) -> bool:
        return self.elements == 0

    def check(self) -> None:
        super().check()
        _axis(self, "axis", self.axis)
        _positive(self, "elements", self.elements, least=0)


VOCABULARY: dict[str, type[Directive]] = {
    cls.__name__: cls for cls in (Parallel, Split, Reorder, Fuse, Unroll, UnrollJam, Vectorize, RFactor, Stage,
                                  Specialize, Partition, Store, Outline, Scan, Table)
}
"""Every directive by the name it prints as."""


@dataclass(frozen=True)
class KernelSchedule:
    """A kernel's schedule for one target: its directives, in the order the appliers take them."""

    target: str
    directives: tuple[Directive, ...] = ()
    source: dict[Directive, str] = field(default_factory=dict, compare=False, hash=False)
    """Who decided each directive: "planner" or "user"."""
    deferred: dict[int, tuple[int, ...]] = field(default_factory=dict, compare=False, hash=False)
    """Stages whose core split a call's extents decide (the IR does not know them): stage -> the
    axes a fused split may take, outer to inner (passes/scratchpad_planner.py)."""

    def for_stage(self, stage: int) -> list[Directive]:
        return [d for d in self.directives if d.stage in (None, stage)]

    def of_type(self, kind: type[Directive]) -> list[Directive]:
        return [d for d in self.directives if isinstance(d, kind)]

    def streamed(self) -> dict[str, list[int]]:
        """Output -> the stages that store it with streaming stores (its Store directives)."""
        return _by_stage(d for d in self.of_type(Store) if d.nontemporal)

    def panels(self) -> dict[str, list[int]]:
        """Input -> the stages that read it through packed panels (its Stage(memory=panel) directives)."""
        return _by_stage(d for d in self.of_type(Stage) if d.memory == Memory.PANEL)

    def __str__(self) -> str:
        if not self.directives:
            return "(no directives)"
        return "\n".join(f"{d}  # {self.source.get(d, 'planner')}" for d in self.directives)


def _by_stage(directives) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for d in directives:
        if d.stage not in found.setdefault(d.tensor, []):
            found[d.tensor].append(d.stage)
    return found


def parse_schedule(text: str, where: str = "schedule") -> tuple[Directive, ...]:
    """Directives as `tilegrad plan` prints them, one call per line (`#` comments and blank lines
    skipped), checked; ScheduleError names the line and what is wrong."""
    found = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            found.append(parse_directive(line))
        except ScheduleError as err:
            raise ScheduleError(f"{where}, line {number}: {err}") from None
    return tuple(found)


def parse_directive(text: str) -> Directive:
    """One directive from its printed form, e.g. `Parallel(stage=0, axes=(0, 1))`."""
    try:
        call = ast.parse(text, mode="eval").body
    except SyntaxError:
        raise ScheduleError(f"{text!r} is not a directive call such as Parallel(stage=0, axes=(0, 1))") from None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.args:
        raise ScheduleError(f"{text!r}: a directive is a call with keyword arguments, "
                            f"such as Parallel(stage=0, axes=(0, 1))")
    cls = VOCABULARY.get(call.func.id)
    if cls is None:
        raise ScheduleError(f"{text!r}: unknown directive {call.func.id!r}; the vocabulary: "
                            f"{', '.join(VOCABULARY)}")
    known = {f.name: f for f in fields(cls)}
    values = {}
    for keyword in call.keywords:
        if keyword.arg not in known:
            raise ScheduleError(f"{text!r}: {cls.__name__} has no field {keyword.arg!r}; its fields: "
                                f"{', '.join(known)}")
        try:
            value = ast.literal_eval(keyword.value)
        except ValueError:
            raise ScheduleError(f"{text!r}: {keyword.arg} must be a literal (a number, string, tuple, "
                                f"True/False or None)") from None
        values[keyword.arg] = value
    return make_directive(cls, **values)


def make_directive(cls: type[Directive], **values) -> Directive:
    """`cls(**values)`, checked (enum fields may be given as their strings, lists for tuples)."""
    directive = cls(**values)
    directive.check()
    return directive


_ENUM_FIELDS = {e.__name__: e for e in (Tail, Balance, Memory, Copy, PartitionBy)}

__all__ = ["Balance", "Copy", "Directive", "Fuse", "KernelSchedule", "Memory", "Outline", "Parallel", "Partition",
           "PartitionBy", "RFactor", "Reorder", "Scan", "Specialize", "Split", "Stage", "Store", "Tail", "Unroll",
           "UnrollJam", "VOCABULARY", "Vectorize", "make_directive", "parse_directive", "parse_schedule"]


@dataclass(frozen=True)
class ComputeWith(Directive):
    """Sibling loop nests of the stage run in one loop (Halide's compute_with): `nests`, the loop
    nests the stage is made of, numbered in their order in it, share their outer loops (one pass
    over the data they share); or `reductions`, the stage's reductions numbered in their order in
    it (outer before inner), sweep their common range once. `fused=False`: each runs alone (a
    user's override of the planner's). Exactly one of `nests` and `reductions` is given."""

    nests: tuple[int, ...] = ()
    reductions: tuple[int, ...] = ()
    fused: bool = True
    kind: ClassVar[str] = "run sibling nests in one loop"

    @property
    def off(self) -> bool:
        return not self.fused

    def names(self, other: Directive) -> bool:
        return (isinstance(other, ComputeWith) and self.stage in (None, other.stage)
                and (self.nests, self.reductions) == (other.nests, other.reductions))

    def check(self) -> None:
        super().check()
        if bool(self.nests) == bool(self.reductions):
            raise ScheduleError(f"{self}: give either nests or reductions (the stage's, numbered in their order in it)")
        for name in ("nests", "reductions"):
            numbers = getattr(self, name)
            for n in numbers:
                _positive(self, name, n, least=0)
            if numbers and (len(numbers) < 2 or list(numbers) != sorted(set(numbers))):
                raise ScheduleError(f"{self}: {name} must be two or more distinct numbers, in order")


VOCABULARY[ComputeWith.__name__] = ComputeWith
__all__ += ["ComputeWith"]


@dataclass(frozen=True)
class Distribute(Directive):
    """The math after each sum in loop `axis` (a row loop of the stage, a loop of sums inside it)
    runs after it, in a copy of the two loops of its own that reads the stored sums back (loop
    distribution, or fission: the sums first, then their epilogues over the tile, which vectorize;
    defer-sum-epilogues). Or (distribute-row-nests) row loop `axis`, whose body is several loop
    nests, runs by tiles of `factor` rows, each nest over the tile in a loop of its own.
    `distributed=False`: the loop as it was (a user's override of the planner's)."""

    axis: int = 0
    distributed: bool = True
    factor: int = 0
    """distribute-row-nests': rows per tile (0: as many as its budget holds, sized at run time)."""
    kind: ClassVar[str] = "a sum's epilogue in a loop of its own, or a row loop's nests in loops of their own"

    @property
    def off(self) -> bool:
        return not self.distributed

    def check(self) -> None:
        super().check()
        _axis(self, "axis", self.axis)
        _positive(self, "factor", self.factor, least=0)


VOCABULARY[Distribute.__name__] = Distribute
__all__ += ["Distribute"]


@dataclass(frozen=True)
class Inline(Directive):
    """The elementwise temporary `tensor`, written by stage `stage` (the op's stages numbered as
    emitted, before any is inlined: `tilegrad show OP --stage op`), is computed where each later
    stage reads it (fuse-elementwise: no buffer, no pass over memory). `inlined=False`: it stays a
    stage of its own, stored and read back (the planner's where a contraction reads it as an operand,
    re-reading each element across an output loop, and it costs more than a load)."""

    tensor: str = ""
    inlined: bool = True
    kind: ClassVar[str] = "compute an elementwise temp where it is read"

    @property
    def off(self) -> bool:
        return not self.inlined

    def check(self) -> None:
        super().check()
        if not self.tensor:
            raise ScheduleError(f"{self}: tensor must name one of the op's temporaries")


VOCABULARY[Inline.__name__] = Inline
__all__ += ["Inline"]
