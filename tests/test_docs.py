"""The docs carry their reference text in the repository, and it is what the code generates."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _reference():
    spec = importlib.util.spec_from_file_location("tilegrad_docs_reference", ROOT / "docs" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = _reference()


def test_the_committed_reference_text_is_what_the_code_generates():
    """A change to an op, a DSL docstring, a target or the CLI needs `python docs/reference.py`."""
    stale = [str(p.relative_to(ROOT)) for p in reference.stale()]
    assert not stale, f"stale generated docs (run `python docs/reference.py` and commit): {', '.join(stale)}"


def test_each_marked_page_holds_its_section_and_every_op_has_a_page():
    for page, marker in (("dsl.md", "dsl-reference"), ("cli.md", "cli-help"), ("targets.md", "targets-table"),
                         ("targets.md", "target-ranges")):
        text = (ROOT / "docs" / page).read_text()
        body = text.split(f"<!-- {marker} -->\n", 1)[1].split(f"\n<!-- /{marker} -->", 1)[0]
        assert len(body.splitlines()) > 5, (page, marker)
    assert "### `tg.reduce_sum(extent, body)" in (ROOT / "docs" / "dsl.md").read_text()
    assert "| `cores` | 1 to 4096 |" in (ROOT / "docs" / "targets.md").read_text()
    assert "### `tilegrad run`" in (ROOT / "docs" / "cli.md").read_text()
    import tilegrad

    library = [n for n in tilegrad.list_ops() if (tilegrad.get_op(n).fn.__module__ or "").startswith("tilegrad.opdefs")]
    assert sorted(p.stem for p in (ROOT / "docs" / "ops").glob("*.md")) == sorted([*library, "index"])


def test_fill_replaces_a_stale_section_inserts_a_new_one_and_keeps_the_rest():
    fresh = reference.targets_table()
    stale = "intro\n<!-- targets-table -->\n| old |\n<!-- /targets-table -->\noutro\n"
    assert reference.fill(stale) == f"intro\n<!-- targets-table -->\n{fresh}\n<!-- /targets-table -->\noutro\n"
    assert reference.fill("intro\n<!-- targets-table -->\noutro\n") == \
        f"intro\n<!-- targets-table -->\n{fresh}\n<!-- /targets-table -->\noutro\n"
    assert reference.fill(reference.fill(stale)) == reference.fill(stale)
    assert reference.fill("no markers\n") == "no markers\n"


def test_the_generated_text_does_not_depend_on_what_a_process_registered():
    """User ops and targets (tests register some) stay out of the library's reference."""
    import numpy as np

    import tilegrad
    import tilegrad.dsl as tg

    before = reference.pages()
    tilegrad.register_target(tilegrad.Target("test-docs-npu", 2, 4096, 32, 32, ("float32",), staged=True),
                             replace=True)

    @tg.op(outputs={"dx": tg.like("x")}, replace=True)
    def test_docs_op(x=tg.tensor("N")):
        return x * 2.0

    assert tilegrad.compile("test_docs_op")(x=np.ones(2, np.float32)).tolist() == [2.0, 2.0]
    scope = {"tg": tg}  # an op defined by exec has no module
    exec("def test_docs_exec_op(x=tg.tensor('N')):\n    return x * 3.0\n", scope)
    tg.op(outputs={"dx": tg.like("x")}, replace=True)(scope["test_docs_exec_op"])
    assert reference.pages() == before


def test_the_check_command_reports_a_stale_page(tmp_path, monkeypatch):
    page = tmp_path / "targets.md"
    page.write_text("# Targets\n\n<!-- targets-table -->\n| stale |\n<!-- /targets-table -->\n")
    (tmp_path / "ops").mkdir()
    monkeypatch.setattr(reference, "DOCS", tmp_path)
    assert page in reference.stale()
    assert reference.main(["--check"]) == 1
    assert reference.main([]) == 0 and reference.main(["--check"]) == 0
    assert "| `ascend910` | 32 | 196608 |" in page.read_text()


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="mkdocs is the docs extra")
def test_the_site_builds_strictly(tmp_path):
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir",
                             str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "tg.reduce_sum" in (tmp_path / "dsl" / "index.html").read_text()


def _commands(markdown: str, heading: str) -> list[str]:
    """The command lines (not comments) of the first ```bash block after `heading`."""
    block = markdown.split(heading, 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_the_docs_give_the_readmes_install_commands():
    readme = _commands((ROOT / "README.md").read_text(), "# tilegrad")
    assert len(readme) == 2 and "pip install -e ." in readme[0] and "'.[test]'" in readme[1]
    assert _commands((ROOT / "docs" / "index.md").read_text(), "## Install") == readme
