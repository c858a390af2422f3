"""Every example script runs to completion and prints figures, none of them NaN."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("[0-9]*.py"))
SMALL = {"06_benchmark.py": ["tiny"], "07_layer_norm_backward.py": ["256", "128"]}
"""The arguments that keep a timing example fast here (its figures are not what is tested)."""


def _run(script: Path) -> str:
    result = subprocess.run([sys.executable, str(script), *SMALL.get(script.name, [])], capture_output=True,
                            text=True, timeout=300, env={**os.environ}, cwd=script.parent)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip()
    assert not re.search(r"\bnan", result.stdout, re.IGNORECASE), result.stdout  # a figure that is not one
    return result.stdout


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script):
    stdout = _run(script)
    if script.name in SMALL:  # timings are measured in interleaved rounds, with the load they ran under
        assert "load average" in stdout, stdout
    if script.name == "07_layer_norm_backward.py":
        assert re.search(r"best of 7 interleaved rounds.*load average [\d.]+ [\d.]+ [\d.]+:", stdout), stdout
        assert re.search(r"tilegrad layer_norm_backward: +\d+\.\d+ ms", stdout), stdout
    if script.name == "06_benchmark.py":
        assert re.search(r"\| batch_norm_backward \|.*\| - \| (?:[\d.]+x|-) \| - \|", stdout), stdout  # no numpy form
