"""The `.mlir` corpus in tests/filecheck/<pass-name>/: each file is IR in and, in `// CHECK` lines, the
whole IR out, as xDSL's tests/filecheck/ are. Its first line says how to make the output:

    // RUN: tilegrad opt %s -p 'pass-name{option=value}' | filecheck %s

Each file is one test here: the RUN line's `tilegrad opt` runs in-process (tilegrad.cli.main, its
stdout captured) and the `filecheck` package matches the output against the file's CHECK lines. By
hand, from the repository's root, the same RUN line is

    f=tests/filecheck/fuse-elementwise/inline-an-elementwise-temp.mlir
    tilegrad opt $f -p 'fuse-elementwise' | filecheck $f

A further test asserts every registered tilegrad pass has a case. tests/filecheck/update.py rewrites
a case's CHECK lines from its output, for review (see its docstring).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest
from filecheck.finput import FInput  # the test extra's filecheck package (not skipped: a skip would hide the corpus)
from filecheck.matcher import Matcher
from filecheck.options import Options
from filecheck.parser import Parser

CORPUS = Path(__file__).parent / "filecheck"
CASES = sorted(CORPUS.glob("*/*.mlir"))
RUN = re.compile(r"// RUN: (tilegrad opt .*?) \| filecheck %s\n")

# Passes registered by other branches of this session (issue 44) that have no case yet: the lead
# empties this list once their cases are written. A name here that has a case, or is not a
# registered pass, fails the test below, so the list cannot go stale.
WITHOUT_CASES: set[str] = set()


def run_line(path: Path) -> list[str]:
    """The arguments of the file's `tilegrad opt` (after `tilegrad`), %s being the file."""
    found = RUN.match(path.read_text())
    assert found, f"{path}: the first line must be `// RUN: tilegrad opt %s -p '...' | filecheck %s`"
    return [arg.replace("%s", str(path)) for arg in shlex.split(found.group(1))][1:]


def tilegrad_opt(argv: list[str]) -> tuple[int, str, str]:
    from tilegrad.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def match(path: Path, output: str) -> tuple[int, str]:
    """filecheck's exit code and report for `output` against the CHECK lines of `path`."""
    opts = Options(match_filename=str(path))
    report = io.StringIO()
    with contextlib.redirect_stderr(report):  # the matcher reports to sys.stderr as it is made
        code = Matcher(opts, FInput("<tilegrad opt>", FInput.canonicalize_line_ends(output)),
                       Parser.from_opts(opts)).run()
    return code, report.getvalue()


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_case(path: Path):
    code, output, errors = tilegrad_opt(run_line(path))
    assert code == 0, f"tilegrad opt failed: {errors}"
    code, report = match(path, output)
    assert code == 0, f"{report}\n--- tilegrad opt printed:\n{output}"


def test_every_pass_has_a_case():
    from tilegrad.passes.registry import tilegrad_pass_names

    names = set(tilegrad_pass_names())
    covered = {p.parent.name for p in CASES}
    assert covered <= names, f"folders named after no pass: {sorted(covered - names)}"
    uncovered = names - covered
    assert WITHOUT_CASES <= uncovered, f"allow-listed but covered or unknown: {sorted(WITHOUT_CASES - uncovered)}"
    assert uncovered <= WITHOUT_CASES, f"passes without a case in tests/filecheck/: {sorted(uncovered - WITHOUT_CASES)}"
    for folder in CORPUS.iterdir():  # a case's folder says which pass it is for: its RUN line runs that pass
        for path in folder.glob("*.mlir"):
            assert folder.name in " ".join(run_line(path)), f"{path}: the RUN line does not run {folder.name}"


def test_a_wrong_check_fails():
    """The runner is not vacuous: output that differs from a case's CHECK lines is reported."""
    path = CASES[0]
    code, output, _ = tilegrad_opt(run_line(path))
    assert code == 0
    lines = output.splitlines()
    changed = "\n".join(lines[:2] + ["  // an extra line"] + lines[2:]) + "\n"
    code, report = match(path, changed)
    assert code != 0 and "Couldn't match" in report, report
