"""The reference text of the docs, generated from the code and kept in the repository.

`docs/dsl.md`, `docs/targets.md`, `docs/cli.md` and `docs/passes.md` hold generated sections between markers
(`<!-- dsl-reference -->` ... `<!-- /dsl-reference -->`); `docs/ops/` holds one page per library
op. So a reader of the repository sees the same text as a reader of the site, and the text cannot
drift: tests/test_docs.py fails when a page is stale, and docs/hooks.py regenerates every page at
build time with the same functions.

    python docs/reference.py           # rewrite the generated text
    python docs/reference.py --check   # exit 1 (naming the pages) if any is stale

Everything here depends only on the code, not on the host or on what else a process registered:
the library's ops and the built-in targets only, the host target's figures by what they are
measured from, the command line from argparse's data (not its help layout, which differs between
Python versions).
"""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Callable
from pathlib import Path

import tilegrad
import tilegrad.dsl as tg
from tilegrad.dsl.opdef import ParamsDtype
from tilegrad.targets import BUILTIN_TARGETS, FIELD_RANGES, STAGED_SCRATCH_MAX

DOCS = Path(__file__).resolve().parent


# ---- op pages -----------------------------------------------------------------------------------
def library_ops() -> list[str]:
    """The library's ops (not ones a user or a test registered), sorted."""
    return [n for n in tilegrad.list_ops() if (tilegrad.get_op(n).fn.__module__ or "").startswith("tilegrad.opdefs")]


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
    for target in BUILTIN_TARGETS:
        dtypes = op.dtypes_on(target)
        if dtypes and (op.targets is None or target.name in op.targets):
            lines.append(f"- `{target.name}`: {', '.join(dtypes)}")
    lines += ["", f"From Python: `tilegrad.compile({name!r}, target)`; from torch: `torch.ops.tilegrad.{name}`."]
    return "\n".join(lines) + "\n"


def ops_index() -> str:
    lines = ["# Op library", "", "Every op of SPEC 6, one page each (generated from the op definitions).", ""]
    return "\n".join(lines + [f"- [{n}]({n}.md)" for n in library_ops()]) + "\n"


# ---- sections of hand-written pages -------------------------------------------------------------
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
    return "\n".join(lines).rstrip()


def targets_table() -> str:
    """The built-in targets; the host's figures by what they are read from (they differ by host)."""
    host = {"cores": "this host's", "ub_bytes": "its L2 per core"}
    lines = ["| name | cores | ub_bytes | align | staged | dtypes | aliases |", "|---|---|---|---|---|---|---|"]
    for t in BUILTIN_TARGETS:
        cores, ub_bytes = (host["cores"], host["ub_bytes"]) if t.name == "cpu" else (t.cores, t.ub_bytes)
        lines.append(f"| `{t.name}` | {cores} | {ub_bytes} | {t.ub_align} | {t.staged} | "
                     f"{', '.join(t.dtypes)} | {', '.join(t.aliases) or '-'} |")
    return "\n".join(lines)


def _number(n: int) -> str:
    """A large power of two as one (2^30), other numbers as they are."""
    return f"2^{n.bit_length() - 1}" if n >= 1 << 16 and n & (n - 1) == 0 else str(n)


def target_ranges() -> str:
    lines = ["| field | valid range | why |", "|---|---|---|"]
    lines += [f"| `{name}` | {_number(low)} to {_number(high)} | {why} |"
              for name, (low, high, why) in FIELD_RANGES.items()]
    return "\n".join(lines + ["", f"On a staged target `cores * ub_bytes` is at most {_number(STAGED_SCRATCH_MAX)} "
                                  "(1 GiB): each call allocates one UB per core."])


def _value(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.choices:
        value = " \\| ".join(f"`{c}`" for c in action.choices)
    else:
        value = f"`{action.metavar or action.dest.upper()}`" if action.option_strings else ""
    many = {"*": " (any number)", "+": " (one or more)", "?": " (optional)"}.get(action.nargs, "")
    default = action.default
    if action.option_strings and default not in (None, [], "", argparse.SUPPRESS):
        many += f" (default: `{default}`)"
    return (value + many).strip()


def _arguments(parser: argparse.ArgumentParser, shown: frozenset[str] = frozenset()) -> list[str]:
    """A table of the parser's arguments, but for those named in `shown` (every command's own)."""
    lines = ["| argument | value | meaning |", "|---|---|---|"]
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.dest in shown:
            continue
        names = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.dest}`"
        meaning = (action.help or "").replace("|", "\\|")
        lines.append(f"| {names} | {_value(action)} | {meaning} |")
    for group in parser._mutually_exclusive_groups:
        lines += ["", " and ".join(f"`{a.option_strings[0]}`" for a in group._group_actions)
                  + " exclude each other."]
    return lines


def cli_help() -> str:
    from tilegrad.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    summaries = {a.dest: a.help for a in commands._choices_actions}
    every = frozenset(a.dest for a in parser._actions if a.option_strings)
    blocks = [parser.description or "", "", "Every command takes:", "", *_arguments(parser)]
    for name, sub in commands.choices.items():
        arguments = _arguments(sub, every)
        blocks += ["", f"### `tilegrad {name}`", "", summaries.get(name) or ""]
        blocks += ["", *arguments] if len(arguments) > 2 else []
    return "\n".join(blocks)


# ---- pass table ---------------------------------------------------------------------------------
def pass_table() -> str:
    """Every tilegrad pass (passes/registry.ALL_PASSES), with where the pipeline runs it and the first
    line of its class's docstring."""
    from tilegrad.passes.registry import ALL_PASSES

    lines = ["| pass | runs in (on targets) | module | what it does |", "|---|---|---|---|"]
    for entry in ALL_PASSES:
        runs = ", ".join(f"{stage} ({targets})" for stage, targets in entry.runs)
        module = entry.cls.partition(":")[0].replace(".", "/") + ".py"
        summary = (inspect.getdoc(entry.load()) or "").split("\n\n")[0].replace("\n", " ").replace("|", "\\|")
        lines.append(f"| `{entry.name}` | {runs} | `{module}` | {summary} |")
    return "\n".join(lines)


SECTIONS: dict[str, Callable[[], str]] = {
    "dsl-reference": dsl_reference,
    "targets-table": targets_table,
    "target-ranges": target_ranges,
    "cli-help": cli_help,
    "pass-table": pass_table,
}
"""Marker name -> the text between `<!-- name -->` and `<!-- /name -->`."""


def fill(markdown: str) -> str:
    """The page with each generated section's text replaced by a fresh one (inserted after a
    start marker that has no end marker yet)."""
    for name, make in SECTIONS.items():
        start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
        head, found, rest = markdown.partition(start)
        if not found:
            continue
        _, closed, tail = rest.partition(end)
        markdown = f"{head}{start}\n{make()}\n{end}{tail if closed else rest}"
    return markdown


def pages() -> dict[Path, str]:
    """Every generated page or page with generated sections, by path, as it should read."""
    wanted = {DOCS / "ops" / "index.md": ops_index()}
    wanted.update({DOCS / "ops" / f"{name}.md": op_page(name) for name in library_ops()})
    for path in sorted(DOCS.glob("*.md")):
        wanted[path] = fill(path.read_text())
    return wanted


def stale() -> list[Path]:
    """The pages whose text differs from what the code generates, and op pages of no op."""
    wanted = pages()
    paths = [p for p, text in wanted.items() if not p.exists() or p.read_text() != text]
    return paths + sorted(p for p in (DOCS / "ops").glob("*.md") if p not in wanted)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale pages (exit 1 if any)")
    args = parser.parse_args(argv)
    paths = stale()
    if args.check:
        for path in paths:
            print(f"stale: {path.relative_to(DOCS.parent)} (run `python docs/reference.py`)", file=sys.stderr)
        return 1 if paths else 0
    wanted = pages()
    (DOCS / "ops").mkdir(exist_ok=True)
    for path in paths:
        if path in wanted:
            path.write_text(wanted[path])
        else:
            path.unlink()
        print(f"wrote {path.relative_to(DOCS.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
