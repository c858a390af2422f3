"""Integer arithmetic and sizes that the front end (dsl/bounds.py, at a call's shapes) and the passes
(in the IR) must agree on, below both so neither imports the other."""

from __future__ import annotations

REDUCE_BLOCK = 1024
"""A float sum runs in blocks of this many terms whose partials are combined in float64
(lower-tg-to-loops), unless it is short: at most one block at the shapes a kernel is specialized for."""


def truncated_div(a: int, b: int) -> int:
    """arith.divsi: the quotient truncated toward zero (0 for b = 0, which no size divides by)."""
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q
