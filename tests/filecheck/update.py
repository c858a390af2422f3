"""Rewrite the CHECK lines of .mlir cases from what their RUN line prints now:

    python tests/filecheck/update.py tests/filecheck/fuse-elementwise/*.mlir

For a pass whose output changed on purpose (or a new case). The CHECK lines it writes say only what
the pass does today: read `git diff` line by line and keep a change only if it is what the pass is
meant to do (its docstring, the case's comment); a change you cannot explain is a bug to fix, not a
case to update. The case's RUN line, comment and input stay as they are.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the runner's helpers
from test_filecheck import run_line, tilegrad_opt  # noqa: E402

# the target's description in a tiling plan is not a pass's decision: its name is matched, the rest not
TARGET = re.compile(r"(\\22target\\22: \{\\22name\\22: \\22[^\\]*\\22, )[^}]*\}")


def check_lines(output: str) -> list[str]:
    lines = output.rstrip("\n").splitlines()
    checks = []
    for k, line in enumerate(lines):
        # FileCheck reads [[ and {{ as its own syntax: match them literally
        line = line.replace("{{", "{{[{][{]}}").replace("[[", "{{\\[\\[}}")
        if "tg.tiling_plan" in line:
            line = TARGET.sub(lambda m: m.group(1) + "{{.*}}}", line)
        prefix = "// CHECK:      " if k == 0 else "// CHECK-NEXT: "
        checks.append(prefix + line if line.strip() else "// CHECK-EMPTY:")
    return checks


def update(path: Path) -> None:
    code, output, errors = tilegrad_opt(run_line(path))
    if code:
        raise SystemExit(f"{path}: tilegrad opt failed: {errors}")
    body = [line for line in path.read_text().splitlines() if not line.startswith("// CHECK")]
    while body and not body[-1]:
        body.pop()
    path.write_text("\n".join(body + [""] + check_lines(output)) + "\n")


if __name__ == "__main__":
    for name in sys.argv[1:]:
        update(Path(name))
