"""The package's layers, as pyproject.toml's import-linter contracts state them, and the one list of passes."""

import ast
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: import-linter reads its configuration with tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PASSES = ROOT / "tilegrad" / "passes"

importlinter = pytest.importorskip("importlinter", reason="the test extra installs import-linter")


def _contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def _pass_modules() -> set[str]:
    """The modules of tilegrad/passes/ that define a ModulePass (the source, not an import of it)."""
    found = set()
    for path in PASSES.glob("*.py"):
        tree = ast.parse(path.read_text())
        if any(isinstance(node, ast.ClassDef) and any(getattr(b, "id", None) == "ModulePass" for b in node.bases)
               for node in tree.body):
            found.add(f"tilegrad.passes.{path.stem}")
    return found


def test_the_import_contracts_hold(monkeypatch, capsys):
    """Layers, the front end apart from the compiler, pass modules independent, no cycles (`lint-imports`)."""
    from importlinter.cli import lint_imports

    monkeypatch.syspath_prepend(str(ROOT))  # the tree under test, not an installed copy
    monkeypatch.chdir(ROOT)  # where pyproject.toml is
    for name in [m for m in sys.modules if m == "tilegrad" or m.startswith("tilegrad.")]:
        assert sys.modules[name].__file__ is None or sys.modules[name].__file__.startswith(str(ROOT)), name
    code = lint_imports(no_cache=True)
    output = capsys.readouterr().out
    assert code == 0, output
    assert f"Contracts: {len(_contracts())} kept, 0 broken." in output


def test_the_independence_contract_lists_every_pass_module_and_the_pass_list_every_pass():
    """A new pass module joins the contract and ALL_PASSES; each entry's class has the entry's name."""
    from tilegrad.passes.registry import ALL_PASSES

    independent = next(c for c in _contracts() if c["type"] == "independence")
    assert set(independent["modules"]) == _pass_modules()
    assert {e.cls.partition(":")[0] for e in ALL_PASSES} == _pass_modules()
    assert len({e.name for e in ALL_PASSES}) == len(ALL_PASSES)
    for entry in ALL_PASSES:
        assert entry.load().name == entry.name, entry
        assert entry.runs and all(stage in ("loops", "tiled", "llvm") and on in ("all", "cpu", "scratchpad")
                                  for stage, on in entry.runs), entry


@pytest.mark.parametrize("target", ["cpu", "ascend910b"])
def test_the_pass_list_says_where_the_pipeline_runs_each_pass(target):
    """ALL_PASSES's (stage, targets) are the pipeline's: every pass a stage runs on this target is listed for
    that stage and a target family this one is in, and every pass listed for it runs there."""
    from tilegrad.passes.registry import ALL_PASSES
    from tilegrad.pipeline import stage_passes
    from tilegrad.schedule import ScheduleHint
    from tilegrad.targets import get_target

    t = get_target(target)
    families = ("all", "cpu") if not t.staged else ("all", "scratchpad")
    run = {stage: {p.name for p in passes} for stage, passes in stage_passes(t, 0, ScheduleHint()).items()}
    listed = {stage: {e.name for e in ALL_PASSES for s, on in e.runs if s == stage and on in families}
              for stage in run}
    if t.stream_store_bytes == 0:  # stream-stores runs only where the target streams stores
        listed["tiled"].discard("stream-stores")
    assert run == listed


def test_import_tilegrad_loads_neither_xdsl_nor_llvmlite_nor_the_library():
    """The function-local imports that stay keep `import tilegrad` light; the library registers at the first
    look-up (dsl/ does not import opdefs/)."""
    import subprocess

    code = ("import sys, tilegrad, tilegrad.schedule, tilegrad.abi, tilegrad.index_math\n"
            "heavy = sorted(m for m in sys.modules\n"
            "               if m.split('.')[0] in ('xdsl', 'llvmlite') or m == 'tilegrad.opdefs')\n"
            "assert not heavy, heavy\n"
            "assert 'softmax_backward' in tilegrad.list_ops() and 'tilegrad.opdefs' in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert done.returncode == 0, done.stderr


def test_no_module_imports_the_package_it_is_in():
    """`from tilegrad import dsl` in tilegrad/dsl/expr.py is a cycle through dsl/__init__.py, which imports expr,
    that the acyclic_siblings contract does not see (it relates siblings, not a module and its package): no
    module imports a package it is part of, or a name from that package's __init__ (a submodule is fine)."""
    def is_module(name: str) -> bool:
        path = ROOT.joinpath(*name.split("."))
        return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()

    found = []
    for path in sorted((ROOT / "tilegrad").rglob("*.py")):
        if path.name == "__init__.py":
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        packages = {".".join(parts[:depth]) for depth in range(2, len(parts))}  # tilegrad.dsl for tilegrad.dsl.expr
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [f"{node.module}.{a.name}" if is_module(f"{node.module}.{a.name}") else node.module
                         for a in node.names]
            else:
                continue
            found += [f"{'.'.join(parts)}:{node.lineno} imports {n}" for n in names if n in packages]
    assert not found, found
