"""A picture of a tiling plan (`tilegrad plan ... --svg FILE`): how the cores split the work and,
per stage, what each core's unified buffer holds: every buffer at its offset (double-buffered ones
in two halves), the kernel's reserve and the free space, with the shape bound underneath."""

from __future__ import annotations

from html import escape

from tilegrad.report import PlanReport

WIDTH, LEFT, BAR = 960, 20, 44
COLOURS = {"in": "#8ecae6", "out": "#ffb703", "inout": "#90be6d", "element": "#cdb4db", "resident": "#f4a261"}


def _text(x: float, y: float, text: str, size: int = 12, anchor: str = "start", weight: str = "normal") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" font-weight="{weight}" '
            f'font-family="monospace">{escape(str(text))}</text>')


def _rect(x: float, y: float, w: float, h: float, fill: str, title: str, extra: str = "") -> str:
    return (f'<rect x="{x:.2f}" y="{y:.2f}" width="{max(w, 0.5):.2f}" height="{h:.1f}" fill="{fill}" '
            f'stroke="#333" stroke-width="0.6"{extra}><title>{escape(title)}</title></rect>')


def render_svg(report: PlanReport) -> str:
    """The plan as an SVG document (a string)."""
    span = WIDTH - 2 * LEFT
    parts, y = [], 28
    parts.append(_text(LEFT, y, f"{report.op} on {report.target}: {report.block_dim} cores", 16, weight="bold"))
    y += 26
    for stage in report.stages:  # the core split of each stage
        line = (f"stage {stage['stage']} ({stage['kind']}): extent {stage['extent']}, {stage['per_core']} per core, "
                f"last core {stage['last_core']}; {stage['split']}")
        parts.append(_text(LEFT, y, line if len(line) <= 110 else line[:107] + "..."))
        y += 8
        cores = report.block_dim
        width = span / cores
        for core in range(cores):
            share = stage["last_core"] if core == cores - 1 else stage["per_core"]
            parts.append(_rect(LEFT + core * width, y, width, 18, "#e9edc9" if core % 2 else "#ccd5ae",
                               f"core {core}: {share} of {stage['extent']}"))
            if width > 28:
                parts.append(_text(LEFT + (core + 0.5) * width, y + 13, str(core), 10, "middle"))
        y += 40
    if not report.staged:
        parts.append(_text(LEFT, y, f"no UB staging on {report.target}: tiles are sized for cache, "
                                    f"blocks are threads"))
        y += 22
    else:
        scale = span / report.ub_bytes
        stages = sorted({b["stage"] for b in report.buffers if b["stage"] != "all"}) or ["all"]
        for stage in stages:
            held = [b for b in report.buffers if b["stage"] in (stage, "all")]
            parts.append(_text(LEFT, y, f"UB of one core, stage {stage}: {report.ub_bytes} B "
                                        f"(buffers at their offsets)", weight="bold"))
            y += 8
            parts.append(_rect(LEFT, y, span, BAR, "#ffffff", f"free space in {report.ub_bytes} B"))
            used = []
            for b in held:
                colour = COLOURS["resident"] if b["stage"] == "all" else COLOURS.get(b["copies"], "#adb5bd")
                slots = max(int(b.get("slots", 1)), 1)
                half = b["bytes"] / slots
                for slot in range(slots):
                    x = LEFT + (b["offset"] + slot * half) * scale
                    what = (f"{b['name']}: {b['shape']} ({b['bytes']} B at offset {b['offset']}, {b['copies']}, "
                            f"stage {b['stage']})")
                    parts.append(_rect(x, y, half * scale, BAR, colour,
                                       what + (f", half {slot + 1} of {slots}" if slots > 1 else ""),
                                       ' stroke-dasharray="3,2"' if slot else ""))
                if b["bytes"] * scale > 40:
                    parts.append(_text(LEFT + (b["offset"] + b["bytes"] / 2) * scale, y + BAR / 2 + 4,
                                       b["name"], 11, "middle"))
                used.append((b["offset"], b["offset"] + b["bytes"]))
            reserve_start = report.ub_bytes - report.ub_reserve
            if report.ub_reserve:
                parts.append(_rect(LEFT + reserve_start * scale, y, report.ub_reserve * scale, BAR, "url(#hatch)",
                                   f"reserve: {report.ub_reserve} B (the kernel's own)"))
            end = max((e for _, e in used), default=0)
            free = max(reserve_start - end, 0)
            y += BAR + 16
            parts.append(_text(LEFT, y, f"buffers end at byte {end}; free {free} B; reserve {report.ub_reserve} B "
                                        f"(of {report.ub_bytes} B)", 11))
            y += 26
        legend_x = LEFT
        for label, colour in COLOURS.items():
            parts.append(_rect(legend_x, y - 10, 12, 12, colour, label))
            parts.append(_text(legend_x + 16, y, label, 11))
            legend_x += 110
        parts.append(_rect(legend_x, y - 10, 12, 12, "url(#hatch)", "reserve"))
        parts.append(_text(legend_x + 16, y, "reserve", 11))
        y += 26
    parts.append(_text(LEFT, y, f"workspace: {report.workspace_bytes} B"))
    y += 18
    parts.append(_text(LEFT, y, f"shape bound: {report.bound}", weight="bold"))
    y += 18
    if not report.fits:
        parts.append(_text(LEFT, y, f"DOES NOT FIT: {report.error}", 12))
        y += 18
    defs = ('<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
            'patternTransform="rotate(45)"><rect width="6" height="6" fill="#eeeeee"/>'
            '<line x1="0" y1="0" x2="0" y2="6" stroke="#999" stroke-width="2"/></pattern></defs>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{y + 10}" '
            f'viewBox="0 0 {WIDTH} {y + 10}">{defs}<rect width="100%" height="100%" fill="white"/>'
            + "".join(parts) + "</svg>\n")
