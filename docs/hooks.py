"""mkdocs hooks: the pages that come from the code itself, so the site cannot drift from it.

- `ops/index.md` and one `ops/<op>.md` per library op: its docstring (the formula), tensors with
  their shape patterns and dtypes, attributes with defaults and choices, outputs, targets;
- `<!-- dsl-reference -->` in a page: every public `tilegrad.dsl` name with its docstring;
- `<!-- targets-table -->`: the built-in targets' figures;
- `<!-- cli-help -->`: `--help` of every command.
"""

from __future__ import annotations

import inspect

from mkdocs.structure.files import File

import tilegrad
import tilegrad.dsl as tg
from tilegrad.dsl.opdef import ParamsDtype


def _dtype(spec) -> str:
    if isinstance(spec.dtype, ParamsDtype):
        return f"parameters of `{spec.dtype.data}` (float64 for float64 data, else float32)"
    if spec.dtype == "data":
        return "the op's data dtype"
    if isinstance(spec.dtype, tuple):
        return ", ".join(spec.dtype)
    return f"as `{spec.dtype}`"


def _pattern(patterns) -> str:
    return " or ".join("one element" if p == tg.ONE else f"`[{', '.join(p)}]`" for p in patterns)


def op_page(name: str) -> str:
    op = tilegrad.get_op(name)
    lines = [f"# {name}", "", op.doc or "(no docstring)", "", "## Tensors", "",
             "| name | shape | dtype | notes |", "|---|---|---|---|"]
    for arg, spec in op.tensors.items():
        notes = ", ".join(n for n, on in (("optional", spec.optional), ("updated in place", spec.updated),
                                           ("collapsed", spec.collapse)) if on)
        lines.append(f"| `{arg}` | {_pattern(spec.patterns)} | {_dtype(spec)} | {notes} |")
    if op.attrs:
        lines += ["", "## Attributes", "", "| name | default | choices | read at each call |", "|---|---|---|---|"]
        for arg, spec in op.attrs.items():
            default = "required" if spec.required else f"`{spec.default!r}`"
            choices = ", ".join(f"`{c!r}`" for c in spec.choices)
            lines.append(f"| `{arg}` | {default} | {choices} | {'yes' if spec.runtime else ''} |")
    lines += ["", "## Outputs", ""]
    for out, spec in op.outputs.items():
        shape = spec.shape if isinstance(spec.shape, str) else "computed" if callable(spec.shape) else spec.shape
        when = " (only in some modes)" if spec.when is not None else ""
        lines.append(f"- `{out}`: shape of {shape}, dtype of `{spec.dtype}`{when}")
    if op.in_place:
        lines += ["", "In place: " + ", ".join(f"`{o}` may be `{i}`" for o, i in op.in_place.items())]
    lines += ["", "## Targets and dtypes", ""]
    for target in op.supported_targets():
        lines.append(f"- `{target}`: {', '.join(op.dtypes_on(tilegrad.get_target(target)))}")
    lines += ["", f"From Python: `tilegrad.compile({name!r}, target)`; from torch: `torch.ops.tilegrad.{name}`."]
    return "\n".join(lines) + "\n"


def dsl_reference() -> str:
    lines = []
    for name in sorted(tg.__all__):
        value = getattr(tg, name)
        if not callable(value):
            lines += [f"### `tg.{name}`", "", f"`{value!r}`", ""]
            continue
        try:
            signature = str(inspect.signature(value))
        except (TypeError, ValueError):
            signature = "(...)"
        lines += [f"### `tg.{name}{signature}`", "", inspect.getdoc(value) or "", ""]
    return "\n".join(lines)


def targets_table() -> str:
    lines = ["| name | cores | ub_bytes | align | staged | dtypes | aliases |", "|---|---|---|---|---|---|---|"]
    for name in tilegrad.list_targets():
        t = tilegrad.get_target(name)
        lines.append(f"| `{t.name}` | {t.cores} | {t.ub_bytes} | {t.ub_align} | {t.staged} | "
                     f"{', '.join(t.dtypes)} | {', '.join(t.aliases) or '-'} |")
    return "\n".join(lines)


def cli_help() -> str:
    from tilegrad.cli import build_parser

    parser = build_parser()
    blocks = ["```", parser.format_help().rstrip(), "```"]
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, sub in commands.choices.items():
        blocks += ["", f"### `tilegrad {name}`", "", "```", sub.format_help().rstrip(), "```"]
    return "\n".join(blocks)


def on_files(files, config):
    names = tilegrad.list_ops()
    index = ["# Op library", "", "Every op of SPEC 6, one page each (generated from the op definitions).", ""]
    index += [f"- [{n}]({n}.md)" for n in names]
    files.append(File.generated(config, "ops/index.md", content="\n".join(index) + "\n"))
    for name in names:
        files.append(File.generated(config, f"ops/{name}.md", content=op_page(name)))
    return files


def on_page_markdown(markdown, page, config, files):
    for marker, make in (("<!-- dsl-reference -->", dsl_reference), ("<!-- targets-table -->", targets_table),
                         ("<!-- cli-help -->", cli_help)):
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return markdown
