"""Oracles for `tilegrad run --check`, the demo and the benchmarks (never used by kernels):
PyTorch's ATen backward ops when torch is installed, else float64 numpy of the SPEC formula; a
user op's author may register one (`register_reference`). Also the tolerance `--check` holds a
result to, and the comparison."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

CODES = {"none": 0, "mean": 1, "sum": 2}

TOLERANCE: dict[str, tuple[float, float]] = {
    "float64": (1e-10, 1e-10),
    "float32": (1e-4, 1e-5),
    "float16": (1e-2, 1e-3),
    "bfloat16": (1e-2, 1e-2),
}
"""dtype -> (rtol, atol) of `tilegrad run --check`: an element passes when |result - reference| <=
atol + rtol * |reference| (mixed, numpy.isclose's rule). These are the test suite's (tests/conftest.py),
float32 with the looser figures the suite gives ops that sum (the command cannot tell which ops do,
and its shapes may be long). A call is held to the loosest dtype among its float tensors: a float32
statistic computed from float16 data is as exact as the data."""

_USER: dict[str, Callable] = {}


def register_reference(op: str, fn: Callable) -> None:
    """Give `tilegrad run --check` an oracle for a (user) op: `fn(arrays, attrs)` returns the op's
    outputs (one array, or a tuple in the order the op declares them) from its inputs as float64
    numpy arrays (optional ones absent are None) and its attributes, normalized. Call it in the file
    `--load` imports; without one, `--check` compares with the op's untiled build, which tests the
    tiling, not the formula."""
    _USER[op] = fn


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _f(a):
    return None if a is None else np.asarray(a, dtype=np.float64)


def user_references() -> set[str]:
    """The ops with a reference registered by their author."""
    return set(_USER)


def has_reference(op: str) -> bool:
    return op in _USER or op in _NUMPY  # (every op with a torch form has a numpy one)


def reference(op: str, arrays: dict, attrs: dict) -> np.ndarray:
    """The float64 result of `op` on these inputs (torch computes in float64 too)."""
    if op in _USER:
        return _USER[op]({n: _f(a) if a is not None and np.asarray(a).dtype.kind == "f" else a
                          for n, a in arrays.items()}, attrs)
    torch = _torch()
    fn = _TORCH.get(op) if torch is not None else None
    if fn is not None:
        return fn(torch, arrays, attrs)
    if op not in _NUMPY:
        raise KeyError(f"no reference for {op}")
    return _NUMPY[op](arrays, attrs)


def reference_name(op: str = "") -> str:
    return "its registered reference" if op in _USER else "torch" if _torch() is not None else "float64 numpy"


def tolerance(dtypes) -> tuple[str, tuple[float, float]]:
    """The loosest (dtype, (rtol, atol)) of TOLERANCE among these dtype names (float64's if none is a float)."""
    known = [d for d in dtypes if d in TOLERANCE] or ["float64"]
    loosest = max(known, key=lambda d: TOLERANCE[d])
    return loosest, TOLERANCE[loosest]


@dataclass
class Comparison:
    """How a result compares with its reference under (rtol, atol); `index` is the worst element."""

    passed: bool
    max_error: float
    max_reference: float
    index: tuple[int, ...] = ()
    got: float = math.nan
    want: float = math.nan
    problem: str = ""


def compare(got, want, rtol: float, atol: float) -> Comparison:
    """Elementwise |got - want| <= atol + rtol * |want|; NaN matches only NaN and inf only the same
    inf (the oracle's NaN is the right answer, and a NaN compare is false, so a NaN elsewhere fails)."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        if got.size != want.size:
            return Comparison(False, math.inf, math.nan, problem=f"shape {got.shape}, the reference's {want.shape}")
        want = want.reshape(got.shape)  # (1,) against (): the same values
    if not got.size:
        return Comparison(True, 0.0, 0.0)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.where(same, 0.0, np.abs(got - want))
        excess = np.where(same, -np.inf, error - (atol + rtol * np.abs(want)))
    excess = np.where(np.isnan(excess), np.inf, excess)  # NaN against a number: the worst miss
    worst = np.unravel_index(int(np.argmax(excess)), got.shape)
    finite = np.abs(want[np.isfinite(want)])
    return Comparison(bool(excess[worst] <= 0), float(np.max(error)), float(finite.max()) if finite.size else 0.0,
                      tuple(int(i) for i in worst), float(got[worst]), float(want[worst]))


def _t(torch, a):
    return None if a is None else torch.from_numpy(np.ascontiguousarray(_f(a)))


def _bce_torch(torch, a, attrs):
    reduction = attrs["reduction"]
    g = _t(torch, a["dloss"])
    if reduction != "none":
        g = g.reshape(())
    return torch.ops.aten.binary_cross_entropy_backward(
        g, _t(torch, a["input_x"]), _t(torch, a["input_y"]), _t(torch, a.get("weight")), CODES[reduction]).numpy()


def _bce_numpy(a, attrs):
    x, y, g = _f(a["input_x"]), _f(a["input_y"]), _f(a["dloss"])
    w = _f(a.get("weight")) if a.get("weight") is not None else 1.0
    g = g if attrs["reduction"] == "none" else g.reshape(-1)[0]
    dx = g * w * (x - y) / np.maximum(x * (1 - x), 1e-12)
    return dx / x.size if attrs["reduction"] == "mean" else dx


def _nll_torch(torch, a, attrs):
    g = _t(torch, a["grad_output"])
    if g.numel() == 1 and not (attrs["reduction"] == "none" and a["self"].ndim == 2):
        g = g.reshape(())
    target = torch.from_numpy(np.asarray(a["target"]).astype(np.int64))
    return torch.ops.aten.nll_loss_backward(
        g, _t(torch, a["self"]), target, _t(torch, a.get("weight")), CODES[attrs["reduction"]],
        attrs["ignore_index"], _t(torch, a["total_weight"]).reshape(())).numpy()


def _nll_numpy(a, attrs):
    x = _f(a["self"])
    out = np.zeros_like(x)
    rows = x.reshape(-1, x.shape[-1])
    targets = np.asarray(a["target"]).reshape(-1).astype(np.int64)
    w = _f(a.get("weight")) if a.get("weight") is not None else np.ones(x.shape[-1])
    g = _f(a["grad_output"]).reshape(-1)
    flat = out.reshape(rows.shape)
    for i, t in enumerate(targets):
        if t == attrs["ignore_index"]:
            continue
        gi = g[i] if g.size == len(targets) and attrs["reduction"] == "none" else g[0]
        if attrs["reduction"] == "mean":
            gi = gi / _f(a["total_weight"]).reshape(-1)[0]
        flat[i, t] = -gi * w[t]
    return out


def _embedding_torch(torch, a, attrs):
    idx = torch.from_numpy(np.trunc(np.asarray(a["indices"], dtype=np.float64)).astype(np.int64))
    return torch.ops.aten.embedding_dense_backward(
        _t(torch, a["grad"]), idx, attrs["num_weights"], attrs["padding_idx"], attrs["scale_grad_by_freq"]).numpy()


def _embedding_numpy(a, attrs):
    grad = _f(a["grad"])
    e = grad.shape[-1]
    rows = grad.reshape(-1, e)
    idx = np.trunc(np.asarray(a["indices"], dtype=np.float64)).astype(np.int64).reshape(-1)
    out = np.zeros((attrs["num_weights"], e))
    keep = idx != attrs["padding_idx"]
    np.add.at(out, idx[keep], rows[keep])
    if attrs["scale_grad_by_freq"]:
        counts = np.bincount(idx, minlength=attrs["num_weights"])
        out /= np.maximum(counts, 1)[:, None]
    return out


_TORCH = {"binary_cross_entropy_grad": _bce_torch, "nll_loss_backward": _nll_torch,
          "embedding_dense_backward": _embedding_torch}
_NUMPY = {"binary_cross_entropy_grad": _bce_numpy, "nll_loss_backward": _nll_numpy,
          "embedding_dense_backward": _embedding_numpy}
