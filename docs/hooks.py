"""mkdocs hooks: every generated page is regenerated at build time from the code (docs/reference.py),
so the site cannot drift from it even where the repository's copy is stale (tests/test_docs.py
keeps that copy fresh):

- `ops/index.md` and one `ops/<op>.md` per library op: its docstring (the formula), tensors with
  their shape patterns and dtypes, attributes with defaults and choices, outputs, targets;
- `<!-- dsl-reference -->` in a page: every public `tilegrad.dsl` name with its docstring;
- `<!-- targets-table -->`, `<!-- target-ranges -->`: the built-in targets' figures, a target's valid ranges;
- `<!-- cli-help -->`: every command's arguments.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("tilegrad_docs_reference", Path(__file__).with_name("reference.py"))
reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)


def on_page_markdown(markdown, page, config, files):
    path = Path(page.file.abs_src_path)
    if path.parent.name != "ops":
        return reference.fill(markdown)
    if path.stem == "index":
        return reference.ops_index()
    return reference.op_page(path.stem) if path.stem in reference.library_ops() else markdown
