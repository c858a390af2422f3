"""The tiling plan: what `tile-for-target` decided, as data a user can print and check.

Sizes of UB buffers are affine in the shape symbols they depend on (`E`, `counts_size`), so a plan
states the shape bound the UB implies, like the vendor documents do:
`36*E < 180192 - 4*counts_size`. A kernel fits iff its buffers use *less* than `ub_bytes` minus the
target's reserve (the vendor's documented bounds are strict).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tilegrad.errors import UBCapacityError
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
    extents: a call's extents decide (schedule/scratchpad.py)."""


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


def plan_to_dict(plan: TilingPlan) -> dict:
    from dataclasses import asdict

    return {
        "target": asdict(plan.target),
        "num_blocks": plan.num_blocks,
        "stages": [asdict(s) for s in plan.stages],
        "resident": [asdict(b) for b in plan.resident],
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
                                s.get("cores"), list(s.get("fusable", []))))
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
