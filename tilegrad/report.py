"""The tiling plan of one call, as a table a kernel engineer reads (`tilegrad plan`, `Kernel.plan`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tilegrad.dsl.bounds import describe, evaluate
from tilegrad.errors import UBCapacityError
from tilegrad.passes.tiling_plan import stage_traffic
from tilegrad.targets.host import HOST


@dataclass
class PlanReport:
    op: str
    target: str
    block_dim: int
    stages: list[dict]
    buffers: list[dict]
    ub_used: int
    ub_bytes: int
    ub_reserve: int
    workspace_bytes: int
    bound: str
    fits: bool
    error: str = ""
    staged: bool = True
    direct_gm: dict = field(default_factory=dict)
    streamed: dict = field(default_factory=dict)
    stream_bytes: int = 0
    panels: dict = field(default_factory=dict)
    panel_bytes: int = 0
    schedule: list[dict] = field(default_factory=list)
    """Every schedule directive in force: {"directive": as printed, "source": "planner" or "user"}."""

    @classmethod
    def build(cls, kernel, binding, spec, workspace_bytes: int) -> PlanReport:
        """The report of `kernel`'s plan for one call (`binding`, specialized as `spec`), whose GM
        workspace takes `workspace_bytes`."""
        from tilegrad.codegen.launcher import kernel_shapes

        target = kernel.target
        arrays = {n: a for n, a in binding.tensors.items() if a is not None}
        plan = spec.plan
        stages, buffers = [], []
        if plan is not None:
            shapes = kernel_shapes(spec.layout, arrays)
            # what the copies' forms may name besides the inputs: the outputs and the temporaries
            counted = {**binding.kernel_shapes, **shapes}
            given = {n: a.shape for n, a in arrays.items()}
            counted.update({n: tuple(evaluate(d, given) for d in shape) for n, (_, shape) in spec.temps.items()})
            for stage in plan.stages:
                extent = _extent(stage.extent, shapes)
                known = isinstance(extent, int)
                cores = stage.cores or spec.num_blocks
                per = extent // cores if known else None
                extra = extent % cores if known else 0
                if stage.balanced:  # the first `extra` cores take one more
                    per, last = (f"{per}-{per + 1}" if extra else per), per
                else:
                    last = per + extra if known else None
                stages.append({"stage": stage.index, "kind": stage.kind, "split": stage.split, "extent": extent,
                               "per_core": per, "last_core": last, "cores_busy": min(extent, cores) if known else None,
                               "tiles": dict(stage.tiles), "double_buffered": stage.double_buffered,
                               "traffic": stage_traffic(stage, counted) if target.staged else None,
                               "remains": list(stage.remains)})
            for b in plan.resident + [b for s in plan.stages for b in s.buffers]:
                buffers.append({"stage": "all" if b.stage is None else b.stage, "name": b.name,
                                "shape": "x".join(map(str, ((b.slots,) if b.slots > 1 else ()) + tuple(b.shape))),
                                "bytes": b.bytes, "padding": b.padding, "align": 1 if b.packed else b.align,
                                "copies": b.copies, "offset": b.offset, "slots": b.slots})
        error, fits = "", True
        if plan is not None:
            try:
                plan.check()
            except UBCapacityError as exc:
                error, fits = str(exc), False
        return cls(kernel.op.name, target.name, spec.num_blocks, stages, buffers,
                   plan.ub_used if plan else 0, target.ub_bytes, target.ub_reserve_bytes,
                   workspace_bytes, plan.bound() if plan else "untiled", fits, error,
                   target.staged, dict(plan.direct_gm) if plan else {}, dict(plan.streamed) if plan else {},
                   target.stream_store_bytes, dict(plan.panels) if plan else {}, HOST.panel_bytes(target.ub_bytes),
                   _directives(plan.schedule) if plan is not None else [])

    def __str__(self) -> str:
        lines = [f"{self.op} on {self.target}: block dim {self.block_dim}"]
        lines.append(f"{'stage':>5}  {'kind':<9} {'extent':>8} {'per core':>9} {'last core':>9}  tiles  split")
        for s in self.stages:
            tiles = ",".join(f"axis{a}={t}" for a, t in s["tiles"].items())
            lines.append(f"{s['stage']:>5}  {s['kind']:<9} {str(s['extent']):>8} {str(s['per_core']):>9} "
                         f"{str(s['last_core']):>9}  {tiles}{' (double buffered)' if s['double_buffered'] else ''}"
                         f"  {s['split']}")
        if self.schedule:
            lines.append("schedule:")
            lines += [f"  {d['directive']}  # {d['source']}" for d in self.schedule]
        busy = [f"stage {s['stage']}: {s['cores_busy']}" for s in self.stages if s.get("cores_busy") is not None]
        if busy:
            lines.append(f"cores busy (of {self.block_dim}): {'; '.join(busy)}")
        if self.staged:
            lines.append("UB buffers:")
            lines.append(f"  {'stage':>5}  {'name':<14} {'shape':<12} {'bytes':>8} {'pad':>5} {'align':>5} "
                         f"{'offset':>7}  copies")
            for b in self.buffers:
                lines.append(f"  {str(b['stage']):>5}  {b['name']:<14} {b['shape']:<12} {b['bytes']:>8} "
                             f"{b['padding']:>5} {b['align']:>5} {b['offset']:>7}  {b['copies']}")
            lines.append(f"UB used: {self.ub_used} B of {self.ub_bytes - self.ub_reserve} B available "
                         f"({self.ub_bytes} B UB - {self.ub_reserve} B reserve); the fit is strict")
            total = sum(self.direct_gm.values())
            where = "; ".join(f"{where}: {count}" for where, count in sorted(self.direct_gm.items()))
            lines.append(f"direct GM accesses: {total}" + (f" ({where})" if total else ""))
            lines.append("copy traffic (this call, all cores): bytes the copies move vs the least the stage needs "
                         "(each element it reads or writes once)")
            for s in self.stages:
                lines.append(f"  stage {s['stage']}: {_traffic(s.get('traffic'))}")
                lines += [f"    remains: {text}" for text in s.get("remains", [])]
        else:
            lines.append(f"no UB staging on {self.target}: tiles are sized for cache, blocks are threads")
            streamed = "; ".join(f"{name} (stage {', '.join(map(str, stages))})"
                                 for name, stages in sorted(self.streamed.items()))
            lines.append(f"streaming stores: {streamed} when the tensors total at least {self.stream_bytes} B, "
                         f"in runs of at least {HOST.stream_min_lines} cache lines"
                         if streamed else "streaming stores: none")
            panels = "; ".join(f"{name} (stage {', '.join(map(str, stages))})"
                               for name, stages in sorted(self.panels.items()))
            lines.append(f"packed panels: {panels}: copied to the stack, at most {self.panel_bytes} B each, where they "
                         "fit (a GEMM's column strips narrower than a row, read by every row group; a windowed "
                         "operand's blocks of output positions, masked, read by every output channel)"
                         if panels else "packed panels: none")
        lines.append(f"workspace: {self.workspace_bytes} B")
        lines.append(f"shape bound: {self.bound}")
        if not self.fits:
            lines.append(f"DOES NOT FIT: {self.error}")
        return "\n".join(lines)


def _traffic(t: dict | None) -> str:
    if t is None:
        return "not counted (loops too long to count, or a plan without its copies)"
    ratio = f" = {t['moved'] / t['minimum']:.2f}x" if t["minimum"] else ""
    bound = "" if t["exact"] else " at most (data decides some branches)"
    return (f"moves {t['moved']} B{bound} vs minimum {t['minimum']} B{ratio} in {t['copies']} copies; "
            f"element-sized copies: {t['element_copies']} ({t['element_bytes']} B)")


def _extent(extent, shapes: dict[str, tuple]) -> int | str | None:
    """A stage's extent for this call's shapes (its plan keeps it as a size form); the form itself,
    as text, where the shapes do not give it; None where the plan does not know it."""
    if extent is None:
        return None
    try:
        return evaluate(extent, shapes)
    except (KeyError, IndexError, TypeError):
        return describe(extent)


def _directives(schedule) -> list[dict]:
    """A KernelSchedule as the report's rows: each directive as printed and who decided it."""
    if schedule is None:
        return []
    return [{"directive": str(d), "source": schedule.source.get(d, "planner")} for d in schedule.directives]
