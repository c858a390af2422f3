"""The tiling plan: what `tile-for-target` decided, as data a user can print and check.

Sizes of UB buffers are affine in the shape symbols they depend on (`E`, `counts_size`), so a plan
states the shape bound the UB implies, like the vendor documents do:
`36*E < 180192 - 4*counts_size`. A kernel fits iff its buffers use *less* than `ub_bytes` minus the
target's reserve (the vendor's documented bounds are strict).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tilegrad.errors import UBCapacityError
from tilegrad.index_math import truncated_div
from tilegrad.schedule import KernelSchedule, parse_directive
from tilegrad.targets import Target


@dataclass
class UBBuffer:
    name: str
    stage: int | None  # None: resident for the whole kernel (a temporary)
    shape: tuple[int, ...]
    slots: int
    element_bytes: int
    copies: str
    packed: bool
    align: int
    affine: dict[str, int] = field(default_factory=dict)
    offset: int = 0
    min_bytes: int | None = None
    """For a streamed tile: the bytes of the smallest tile the tiler could fall back to."""

    @property
    def bytes(self) -> int:
        n = self.slots * self.element_bytes
        for d in self.shape:
            n *= d
        return n

    @property
    def padded_bytes(self) -> int:
        if self.packed:
            return self.bytes
        return -(-self.bytes // self.align) * self.align

    @property
    def padding(self) -> int:
        return self.padded_bytes - self.bytes


@dataclass
class CopyTraffic:
    """One `tg.copy` of a stage, as tile-for-target built it: how many elements it moves each time
    it runs, and the loops and branches around it, as size forms (dsl/bounds) in which `["var", k]`
    is the variable of loop k (loop 0 walks the cores: the stage's split is a form of it), so a
    plan counts what a call moves from its shapes alone."""

    tensor: str
    direction: str
    """"in" (GM -> UB) or "out" (UB -> GM)."""
    element_bytes: int
    length: object
    """Elements per copy (a form)."""
    loops: list = field(default_factory=list)
    """[lb, ub, step] of each loop around the copy, outermost first (forms)."""
    when: list = field(default_factory=list)
    """[condition, taken] of each branch around it; a condition None depends on data (counted as taken)."""

    @property
    def element(self) -> bool:
        """A one-element copy: a DMA of its own per element moved."""
        return self.length == 1


@dataclass
class TensorUse:
    """A GM tensor a stage reads and/or writes: its size in elements (a form)."""

    name: str
    reads: bool
    writes: bool
    element_bytes: int
    size: object


@dataclass
class StagePlan:
    index: int
    kind: str
    split: str
    tiles: dict[int, int]
    buffers: list[UBBuffer] = field(default_factory=list)
    double_buffered: bool = False
    extent: object = None
    """What the cores split, as a size form (dsl/bounds) evaluated with the call's shapes."""
    balanced: bool = True
    """The split gives cores D // cores or one more (else the vendor's: the remainder to the last)."""
    cores: int | None = None
    """The cores the split uses, if fewer than the kernel's blocks (a Parallel's `cores`)."""
    fusable: list = field(default_factory=list)
    """[axis, extent form] of the axes a fused core split may take, where the IR does not know their
    extents: a call's extents decide (passes/scratchpad_planner.py)."""
    copies: list[CopyTraffic] = field(default_factory=list)
    """Every GM<->UB copy of the stage (scratchpad targets)."""
    tensors: list[TensorUse] = field(default_factory=list)
    """The GM tensors the stage touches: what its copies move at least."""
    remains: list[str] = field(default_factory=list)
    """What the staging could not move by tiles or blocks yet, and why (the plan prints it)."""


@dataclass
class TilingPlan:
    target: Target
    num_blocks: int
    stages: list[StagePlan]
    resident: list[UBBuffer]
    workspace_temps: dict[str, int]
    """Temporaries kept in GM: name -> element bytes (times their element count at run time)."""
    direct_gm: dict[str, int] = field(default_factory=dict)
    """GM loads and stores that bypass the UB on a staged target ("x load, stage 1" -> count)."""
    streamed: dict[str, list[int]] = field(default_factory=dict)
    """Outputs stored with streaming stores (stream-stores) -> the stages that do it."""
    panels: dict[str, list[int]] = field(default_factory=dict)
    """Inputs read through stack panels (pack-reused-panels) -> the stages that do it."""
    schedule: KernelSchedule | None = None
    """Every directive in force, each with who decided it (tile-for-target's core split, the
    backend's other decisions)."""

    @property
    def capacity(self) -> int:
        return self.target.ub_bytes - self.target.ub_reserve_bytes

    @property
    def buffers(self) -> list[UBBuffer]:
        """Every UB buffer: the resident ones, then each stage's."""
        return self.resident + [b for s in self.stages for b in s.buffers]

    def stage_bytes(self, stage: StagePlan) -> int:
        return sum(b.padded_bytes for b in self.resident) + sum(b.padded_bytes for b in stage.buffers)

    @property
    def ub_used(self) -> int:
        if not self.target.staged:
            return 0
        return max((self.stage_bytes(s) for s in self.stages), default=sum(b.padded_bytes for b in self.resident))

    def _terms(self, stage: StagePlan | None) -> tuple[dict[str, int], int]:
        """A stage's UB use as `sum(coef * symbol) < rhs`: bytes per unit of each shape symbol, and
        the capacity left by the buffers of fixed size (a streamed tile counted at its smallest)."""
        terms: dict[str, int] = {}
        constant = 0
        for b in self.resident + (stage.buffers if stage else []):
            if not b.affine:
                constant += b.min_bytes if b.min_bytes is not None else b.padded_bytes
                continue
            for symbol, coef in b.affine.items():
                terms[symbol] = terms.get(symbol, 0) + coef
        return dict(sorted(terms.items(), key=lambda kv: (kv[0] != "E", kv[0]))), self.capacity - constant

    def bound(self) -> str:
        """The shape bound the UB implies, as an inequality on shape symbols."""
        if not self.target.staged:
            return "none (no staging on this target)"
        statements: dict[tuple, tuple[int, str]] = {}
        for stage in self.stages or [None]:
            terms, rhs = self._terms(stage)
            if not terms:
                continue
            (lead, coef), *rest = terms.items()
            text = f"{coef}*{lead} < {rhs}" + "".join(f" - {c}*{s}" for s, c in rest)
            shape = tuple(terms.items())
            if shape not in statements or rhs < statements[shape][0]:
                statements[shape] = (rhs, text)  # the tightest stage states the bound
        texts = [text for _, text in sorted(statements.values(), key=lambda v: -len(v[1]))]
        return "; ".join(texts) if texts else "none (tiles loop over any shape)"

    def symbol_values(self) -> dict[str, int]:
        """The shape symbols' values in the call this plan is for, read off the buffers sized in one
        of them (`counts_size`: the rows of `counts` one core holds; `E`: a whole row)."""
        values: dict[str, int] = {}
        for b in self.buffers:
            if len(b.affine) == 1:
                ((symbol, coef),) = b.affine.items()
                values[symbol] = b.bytes // coef
        return values

    def implied(self, stage: StagePlan) -> str:
        """What the stage's bound means for this call: the largest value of its leading symbol, the
        others at their values (`here counts_size = 1, so E <= 9009`); empty if it has no symbol."""
        terms, rhs = self._terms(stage)
        values = self.symbol_values()
        if not terms or any(s not in values for s in terms):
            return ""
        (lead, coef), *rest = terms.items()
        left = rhs - sum(c * values[s] for s, c in rest)
        given = "".join(f"{s} = {values[s]}, " for s, _ in rest)
        largest = (left - 1) // coef  # the bound is strict
        limit = f"{lead} <= {largest}" if largest >= 1 else f"no {lead} >= 1 fits"
        return f"{'here ' + given if given else ''}so {limit} (this call has {lead} = {values[lead]})"

    def check(self, symbols: dict[str, int] | None = None) -> None:
        """Raise UBCapacityError unless every stage fits (strictly) for these symbol values."""
        if not self.target.staged:
            return
        for stage in self.stages:
            used = self.stage_bytes(stage)
            if used >= self.capacity:
                worst = max(self.resident + stage.buffers, key=lambda b: b.padded_bytes)
                sizes = ", ".join(f"{b.name}={b.padded_bytes}" for b in self.resident + stage.buffers)
                failing = [s for s in self.stages if self.stage_bytes(s) >= self.capacity]
                implied = "; ".join(dict.fromkeys(t for t in map(self.implied, failing) if t))
                raise UBCapacityError(
                    f"target {self.target.name}: stage {stage.index} needs {used} B of UB, which must "
                    f"stay below {self.capacity} B ({self.target.ub_bytes} B UB - "
                    f"{self.target.ub_reserve_bytes} B reserve); largest buffer {worst.name!r}; "
                    f"buffers (B): {sizes}; shape bound: {self.bound()}" + (f"; {implied}" if implied else "")
                )


def _fields(value):
    """dataclasses.asdict without its deep copies (a plan's values are numbers, strings and
    containers of them; asdict was most of tile-for-target's time on small kernels)."""
    if hasattr(value, "__dataclass_fields__") and not isinstance(value, type):
        return {name: _fields(getattr(value, name)) for name in value.__dataclass_fields__}
    if isinstance(value, (list, tuple)):
        return type(value)(_fields(v) for v in value)
    if isinstance(value, dict):
        return {_fields(k): _fields(v) for k, v in value.items()}
    return value


def plan_to_dict(plan: TilingPlan) -> dict:
    return {
        "target": _fields(plan.target),
        "num_blocks": plan.num_blocks,
        "stages": [_fields(s) for s in plan.stages],
        "resident": [_fields(b) for b in plan.resident],
        "workspace_temps": plan.workspace_temps,
        "direct_gm": plan.direct_gm,
        "streamed": plan.streamed,
        "panels": plan.panels,
        "schedule": [[str(d), plan.schedule.source.get(d, "planner")] for d in plan.schedule.directives]
        if plan.schedule is not None else None,
    }


def plan_from_dict(data: dict) -> TilingPlan:
    target_fields = {k: tuple(v) if isinstance(v, list) else v for k, v in data["target"].items()}

    def buffer(d: dict) -> UBBuffer:
        return UBBuffer(**{**d, "shape": tuple(d["shape"])})

    stages = []
    for s in data["stages"]:
        stages.append(StagePlan(s["index"], s["kind"], s["split"], {int(k): v for k, v in s["tiles"].items()},
                                [buffer(b) for b in s["buffers"]], s["double_buffered"], s["extent"], s["balanced"],
                                s.get("cores"), list(s.get("fusable", [])),
                                [CopyTraffic(**c) for c in s.get("copies", [])],
                                [TensorUse(**t) for t in s.get("tensors", [])], list(s.get("remains", []))))
    return TilingPlan(Target(**target_fields), data["num_blocks"], stages,
                      [buffer(b) for b in data["resident"]], dict(data["workspace_temps"]), dict(data["direct_gm"]),
                      {k: list(v) for k, v in data.get("streamed", {}).items()},
                      {k: list(v) for k, v in data.get("panels", {}).items()},
                      _schedule(data["target"]["name"], data.get("schedule")))


def _schedule(target: str, printed: list[list[str]] | None) -> KernelSchedule | None:
    """A schedule from its JSON form: [directive as printed, who decided it] pairs."""
    if printed is None:
        return None
    directives = {parse_directive(text): source for text, source in printed}
    return KernelSchedule(target, tuple(directives), directives)


COUNT_BUDGET = 200_000
"""Loop iterations `stage_traffic` walks at most to count a stage's copies (those whose loop bounds
depend on outer loops; independent loops multiply): beyond it the plan says "not counted"."""


class _TooMany(Exception):
    pass


def _value(form, shapes: dict[str, tuple], env: dict[int, int]) -> int:
    if isinstance(form, int):
        return form
    head = form[0]
    if head == "var":
        return env[form[1]]
    if head == "dim":
        return int(shapes[form[1]][form[2]])
    a, b = _value(form[1], shapes, env), _value(form[2], shapes, env)
    match head:
        case "add":
            return a + b
        case "sub":
            return a - b
        case "mul":
            return a * b
        case "floordiv" | "div":
            return truncated_div(a, b)
        case "mod":
            return a - truncated_div(a, b) * b if b else 0
        case "max":
            return max(a, b)
        case "min":
            return min(a, b)
        case "gt":
            return int(a > b)
    raise KeyError(f"size form operation {head!r}")


def _uses(form) -> set[int]:
    if not isinstance(form, list):
        return set()
    if form[0] == "var":
        return {form[1]}
    return set().union(*(_uses(f) for f in form[1:]))


def _copy_totals(copy: CopyTraffic, shapes: dict[str, tuple], budget: list[int]) -> tuple[int, int]:
    """(elements moved, copies run) by one copy over the whole call (all cores)."""
    loops = copy.loops
    conditions = [c for c, _ in copy.when if c is not None]
    # the loops whose variable something inside them uses must be walked; the others multiply
    inner_uses: list[set[int]] = []
    leaf = _uses(copy.length).union(*(_uses(c) for c in conditions))
    below = leaf
    for level in range(len(loops) - 1, -1, -1):
        inner_uses.append(below)
        below = below | _uses(loops[level][0]) | _uses(loops[level][1]) | _uses(loops[level][2])
    inner_uses.reverse()
    # what a level counts depends only on the outer variables its loops, length and conditions use:
    # counted once per distinct value of those (every core's rows count the same inner loops once)
    needs = [inner_uses[level] | _uses(loops[level][0]) | _uses(loops[level][1]) | _uses(loops[level][2])
             for level in range(len(loops))] + [leaf]
    memo: dict[tuple, tuple[int, int]] = {}

    def total(level: int, env: dict[int, int]) -> tuple[int, int]:
        key = (level, *(env[v] for v in sorted(needs[level]) if v in env))
        if key not in memo:
            memo[key] = counted(level, env)
        return memo[key]

    def counted(level: int, env: dict[int, int]) -> tuple[int, int]:
        if level == len(loops):
            if any(bool(_value(c, shapes, env)) != taken for c, taken in copy.when if c is not None):
                return 0, 0
            return max(_value(copy.length, shapes, env), 0), 1
        lb, ub, step = (_value(f, shapes, env) for f in loops[level])
        trips = max(0, -(-(ub - lb) // step)) if step > 0 else 0
        if level not in inner_uses[level]:
            moved, count = total(level + 1, env) if trips else (0, 0)
            return moved * trips, count * trips
        budget[0] -= trips
        if budget[0] < 0:
            raise _TooMany
        moved = count = 0
        for v in range(lb, ub, step):
            m, c = total(level + 1, {**env, level: v})
            moved, count = moved + m, count + c
        return moved, count

    return total(0, {})


def stage_traffic(stage: StagePlan, shapes: dict[str, tuple]) -> dict | None:
    """What a stage's copies move for a call of these shapes, against the least it needs (each
    element of each tensor it touches read once and written once, or what it moves of that tensor
    if less: a gather need not read all of a table): {"moved", "minimum", "copies", "element_copies",
    "element_bytes"} in bytes and counts, "exact" False where a data-dependent branch was counted as
    taken. None if the stage has no record of its copies (a plan from before), or its copies' loops
    are too long to count (COUNT_BUDGET) or not described."""
    if not stage.copies and not stage.tensors:
        return None
    budget = [COUNT_BUDGET]
    moved: dict[tuple[str, str], int] = {}
    result = {"moved": 0, "minimum": 0, "copies": 0, "element_copies": 0, "element_bytes": 0,
              "exact": all(c is not None for copy in stage.copies for c, _ in copy.when)}
    try:
        for copy in stage.copies:
            elements, count = _copy_totals(copy, shapes, budget)
            key = (copy.tensor, copy.direction)
            moved[key] = moved.get(key, 0) + elements * copy.element_bytes
            result["moved"] += elements * copy.element_bytes
            result["copies"] += count
            if copy.element:
                result["element_copies"] += count
                result["element_bytes"] += elements * copy.element_bytes
        for t in stage.tensors:
            whole = max(_value(t.size, shapes, {}), 0) * t.element_bytes
            for direction, used in (("in", t.reads), ("out", t.writes)):
                if used:
                    result["minimum"] += min(whole, moved.get((t.name, direction), 0))
    except (_TooMany, KeyError, IndexError, TypeError):
        return None
    return result
