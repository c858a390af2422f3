"""Scans: each element combines every element before it (or after it, `reverse`) along one axis.

`tg.cumsum(x, axis)` and `tg.scan(x, axis, combine)` state a scan as the reduction it is, over the
prefix (or suffix) each element ends (starts): y[..., i, ...] = combine over t < i + 1 of
x[..., t, ...], or over t < D - i of x[..., i + t, ...]. The compiler recognizes that form
(passes/scan_reductions.py) and runs it as one running accumulation along the axis, in order, per
row: O(n), split over cores by rows, deterministic. Written by hand as `tg.reduce_sum(i + 1, lambda
t: x[n, t])` the same form is recognized the same way.
"""

from __future__ import annotations

from tilegrad.dsl.expr import Expr, _reduce, as_expr
from tilegrad.dsl.tensor import TensorExpr, to_tensor_expr

COMBINES = ("sum", "max", "min", "prod")


def scan(x, axis: int, combine: str = "sum", reverse: bool = False) -> TensorExpr:
    """The inclusive scan of `x` along `axis` by an associative `combine` ("sum", "max", "min" or
    "prod"): element i combines elements 0..i (`reverse`: i..D-1), as torch.cumsum, torch.cummax's
    values, torch.cummin's values and torch.cumprod (of torch.flip for `reverse`). max and min
    propagate NaN as torch does; a float32 sum or product runs in float64."""
    tensor = to_tensor_expr(x)
    if tensor is None:
        raise TypeError(f"tg.scan: x must be a tensor or a tensor expression, got {x!r}")
    if combine not in COMBINES:
        raise TypeError(f"tg.scan: combine must be one of {', '.join(map(repr, COMBINES))}, got {combine!r}")
    if isinstance(axis, bool) or not isinstance(axis, int) or not -tensor.rank <= axis < tensor.rank:
        raise TypeError(f"tg.scan: axis must be an int in [{-tensor.rank}, {tensor.rank}) for a rank-{tensor.rank} "
                        f"tensor, got {axis!r}")
    axis %= tensor.rank
    length = tensor.shape[axis]

    def element(index: tuple[Expr, ...]) -> Expr:
        i = as_expr(index[axis])

        def at(position: Expr) -> Expr:
            return tensor.at(index[:axis] + (position,) + index[axis + 1:])

        if reverse:
            return _reduce(combine, length - i, lambda t: at(i + t))
        return _reduce(combine, i + 1, at)

    return TensorExpr(tensor.shape, element)


def cumsum(x, axis: int, reverse: bool = False) -> TensorExpr:
    """The cumulative sum of `x` along `axis` (torch.cumsum); `reverse`: from the end (cumsum's
    backward: torch.flip(torch.cumsum(torch.flip(dy, [axis]), axis), [axis]))."""
    return scan(x, axis, "sum", reverse)
