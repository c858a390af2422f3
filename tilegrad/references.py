"""Oracles for `tilegrad run --check`, the demo and the tests (never used by kernels): for every
library op, PyTorch's form (its ATen backward op, or autograd of the forward; in float64) when torch
is installed and has a form of the call, else float64 numpy of the SPEC formula (SPEC section 6);
a user op's author may register one (`register_reference`). Also the tolerance `--check` holds a
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


def has_reference(op: str, arrays: dict | None = None, attrs: dict | None = None) -> bool:
    """Whether `op` has an oracle here; given a call (its arrays and normalized attributes), whether
    the oracle covers that call (a combination it does not cover says False, never a wrong answer)."""
    if op in _USER:
        return True
    oracle = _ORACLES.get(op)
    if oracle is None:
        return False
    return arrays is None or oracle.covers is None or oracle.covers(arrays, attrs)


def reference(op: str, arrays: dict, attrs: dict):
    """The float64 result of `op` on these inputs (and the prior value of each output it blends
    into, under the output's name; zeros where absent, as the kernel allocates them): one array, or
    a tuple in the order the op declares its outputs (None for one the call does not produce)."""
    if op in _USER:
        return _USER[op]({n: _f(a) if a is not None and np.asarray(a).dtype.kind == "f" else a
                          for n, a in arrays.items()}, attrs)
    if op not in _ORACLES:
        raise KeyError(f"no reference for {op}")
    oracle = _ORACLES[op]
    torch = _torch()
    if torch is not None and oracle.torch is not None and _torch_applies(oracle, arrays, attrs):
        return oracle.torch(torch, arrays, attrs)
    return oracle.numpy(arrays, attrs)


def reference_name(op: str = "", arrays: dict | None = None, attrs: dict | None = None) -> str:
    """What `reference` computes with: "its registered reference", "torch" (its ATen op or autograd
    of the forward, in float64) or "float64 numpy" (the SPEC formula: no torch, or no torch form of
    this call)."""
    if op in _USER:
        return "its registered reference"
    if _torch() is None:
        return "float64 numpy"
    oracle = _ORACLES.get(op)
    if oracle is None or arrays is None:
        return "torch"
    return "torch" if oracle.torch is not None and _torch_applies(oracle, arrays, attrs) else "float64 numpy"


def _torch_applies(oracle: Oracle, arrays: dict, attrs: dict) -> bool:
    return oracle.torch_applies is None or oracle.torch_applies(arrays, attrs)


def consistent_inputs(op: str, arrays: dict, attrs: dict) -> dict:
    """The inputs with each forward result the op reads beside the forward's input made the
    forward's output of it, as a training step passes them: elu's y = elu(x), max pooling's
    y = maxpool(x). Random inputs otherwise test little (a random y matches no cell of its window,
    so max pooling routes nothing) and leave torch's form, which reads x, without a say."""
    fix = _CONSISTENT.get(op)
    if fix is None or "y" not in arrays or "x" not in arrays:
        return arrays
    try:
        y = fix(arrays, attrs)
    except (KeyError, IndexError, ValueError, TypeError):  # a call the op refuses: its kernel says why
        return arrays
    if y is None:
        return arrays
    return {**arrays, "y": np.asarray(y).astype(np.asarray(arrays["y"]).dtype)}


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


# ---- the oracles ------------------------------------------------------------------------------------
# Each op has a float64 numpy form of its SPEC formula (valid for every call) and a torch form (ATen's
# op, or autograd of the forward, in float64), which may apply to fewer calls (`torch_applies`). Both
# take the inputs as given, and blend into the prior value of an output where SPEC says so.


@dataclass(frozen=True)
class Oracle:
    numpy: Callable
    torch: Callable | None = None
    torch_applies: Callable | None = None
    """(arrays, attrs) -> whether the torch form computes this call (else the numpy form does)."""
    covers: Callable | None = None
    """(arrays, attrs) -> whether either form computes this call (else has_reference is False)."""


def _t(torch, a):
    """A float64 torch copy (np.ascontiguousarray would make a 0-d array 1-d)."""
    return None if a is None else torch.from_numpy(np.array(a, dtype=np.float64, order="C"))


def _n(tensor) -> np.ndarray:
    return tensor.detach().numpy()


def _long(torch, a):
    return torch.from_numpy(np.array(a, dtype=np.int64, order="C"))


def _blend(result, arrays: dict, attrs: dict, output: str, alpha: str = "alpha", beta: str = "beta"):
    """SPEC 5: alpha * result + beta * the output's prior value (zeros where not given, as the
    kernel allocates it); with beta = 0 the prior is not read."""
    result = np.asarray(result, dtype=np.float64)
    if attrs[beta] == 0:
        return attrs[alpha] * result
    prior = arrays.get(output)
    prior = np.zeros(result.shape) if prior is None else _f(prior).reshape(result.shape)
    return attrs[alpha] * result + attrs[beta] * prior


def _grad(torch, forward, inputs: list, dy) -> list:
    """autograd: the gradients of sum(forward(*inputs) * dy) with respect to the inputs (float64)."""
    leaves = [_t(torch, a).requires_grad_() for a in inputs]
    out = forward(*leaves)
    return [_n(g) for g in torch.autograd.grad(out, leaves, _t(torch, dy))]


# ---- binary_cross_entropy_grad (SPEC 6.4) ----
def _bce_torch(torch, a, attrs):
    reduction = attrs["reduction"]
    g = _t(torch, a["dloss"])
    if reduction != "none":
        g = g.reshape(())
    return _n(torch.ops.aten.binary_cross_entropy_backward(
        g, _t(torch, a["input_x"]), _t(torch, a["input_y"]), _t(torch, a.get("weight")), CODES[reduction]))


def _bce_numpy(a, attrs):
    x, y, g = _f(a["input_x"]), _f(a["input_y"]), _f(a["dloss"])
    w = _f(a.get("weight")) if a.get("weight") is not None else 1.0
    g = g if attrs["reduction"] == "none" else g.reshape(-1)[0]
    dx = g * w * (x - y) / np.maximum(x * (1 - x), 1e-12)
    return dx / x.size if attrs["reduction"] == "mean" else dx


# ---- nll_loss_backward (SPEC 6.1) ----
def _nll_torch(torch, a, attrs):
    g = _t(torch, a["grad_output"])
    if g.numel() == 1 and not (attrs["reduction"] == "none" and a["self"].ndim == 2):
        g = g.reshape(())
    return _n(torch.ops.aten.nll_loss_backward(
        g, _t(torch, a["self"]), _long(torch, a["target"]), _t(torch, a.get("weight")), CODES[attrs["reduction"]],
        attrs["ignore_index"], _t(torch, a["total_weight"]).reshape(())))


def _nll_numpy(a, attrs):
    x = _f(a["self"])
    out = np.zeros_like(x)
    targets = np.asarray(a["target"]).reshape(-1).astype(np.int64)
    w = _f(a.get("weight")) if a.get("weight") is not None else np.ones(x.shape[-1])
    g = _f(a["grad_output"]).reshape(-1)
    flat = out.reshape(-1, x.shape[-1])
    for i, t in enumerate(targets):
        if t == attrs["ignore_index"]:
            continue
        gi = g[i] if g.size == len(targets) and attrs["reduction"] == "none" else g[0]
        if attrs["reduction"] == "mean":
            gi = gi / _f(a["total_weight"]).reshape(-1)[0]
        flat[i, t] = -gi * w[t]
    return out


# ---- embedding_dense_backward (SPEC 6.3) ----
def _indices(a) -> np.ndarray:
    """The indices as int64 (float ones truncated, as the kernel converts them)."""
    return np.trunc(np.asarray(a["indices"], dtype=np.float64)).astype(np.int64)


def _embedding_torch(torch, a, attrs):
    padding = attrs["padding_idx"] if attrs["padding_idx"] >= 0 else -1  # SPEC: any negative is none, aten's -1
    return _n(torch.ops.aten.embedding_dense_backward(
        _t(torch, a["grad"]), torch.from_numpy(_indices(a)), attrs["num_weights"], padding,
        attrs["scale_grad_by_freq"]))


def _embedding_numpy(a, attrs):
    grad = _f(a["grad"])
    rows = grad.reshape(-1, grad.shape[-1])
    idx = _indices(a).reshape(-1)
    out = np.zeros((attrs["num_weights"], grad.shape[-1]))
    keep = idx != attrs["padding_idx"]
    np.add.at(out, idx[keep], rows[keep])
    if attrs["scale_grad_by_freq"]:
        counts = np.bincount(idx, minlength=attrs["num_weights"])
        out /= np.maximum(counts, 1)[:, None]
    return out


# ---- fused_linear_cross_entropy_loss_grad (SPEC 6.2) ----
def _flce_gradients(a, p: np.ndarray, matmul):
    """From P (float64, [BT, V]): subtract the in-shard target's 1, scale by grad, round G to
    input's dtype (the kernel's G is), then grad_input = G @ weight, grad_weight = G.T @ input."""
    rows = p.shape[0]
    bits = np.unpackbits(np.asarray(a["target_mask"], np.uint8), bitorder="little")[:rows].astype(np.float64)
    p[np.arange(rows), np.asarray(a["masked_target"]).astype(np.int64)] -= 1.0 - bits
    g = (p * _f(a["grad"])[:, None]).astype(np.asarray(a["input"]).dtype).astype(np.float64)
    return matmul(g, _f(a["weight"])), matmul(g.T, _f(a["input"]))


def _flce_torch(torch, a, attrs):
    if a.get("softmax") is not None:
        p = _t(torch, a["softmax"]).clone()
    else:
        p = torch.exp(_t(torch, a["input"]) @ _t(torch, a["weight"]).T - _t(torch, a["logits_max"])[:, None])
        p = p / _t(torch, a["sum_exp_logits"])[:, None]
    return _flce_gradients(a, _n(p), lambda m, n: _n(_t(torch, m) @ _t(torch, n)))


def _flce_numpy(a, attrs):
    if a.get("softmax") is not None:
        p = _f(a["softmax"]).copy()
    else:
        p = np.exp(_f(a["input"]) @ _f(a["weight"]).T - _f(a["logits_max"])[:, None]) / _f(a["sum_exp_logits"])[:, None]
    return _flce_gradients(a, p, np.matmul)


# ---- activation_backward (SPEC 6.5) ----
def _activation_numpy(a, attrs):
    mode, coef = attrs["mode"], attrs["coef"]
    dy, y, x = _f(a["dy"]), _f(a.get("y")), _f(a.get("x"))
    with np.errstate(over="ignore", invalid="ignore"):
        if mode == "sigmoid":
            result = dy * y * (1 - y)
        elif mode == "relu":
            result = np.where(x <= 0, 0.0, dy)
        elif mode == "tanh":
            result = dy * (1 - y * y)
        elif mode == "clipped_relu":
            result = np.where((x <= 0) | (x >= coef), 0.0, dy)
        elif mode == "elu":
            result = np.where(x <= 0, dy * (y + coef), dy)
        elif mode == "swish":
            s = 1 / (1 + np.exp(-coef * x))
            result = dy * (s + coef * x * s * (1 - s))
        else:
            result = dy
    return _blend(result, a, attrs, "dx")


def _activation_torch(torch, a, attrs):
    aten, mode, coef = torch.ops.aten, attrs["mode"], attrs["coef"]
    dy, y, x = _t(torch, a["dy"]), _t(torch, a.get("y")), _t(torch, a.get("x"))
    if mode == "swish":
        result = _grad(torch, lambda v: v * torch.sigmoid(coef * v), [a["x"]], a["dy"])[0]
    else:
        result = _n({"sigmoid": lambda: aten.sigmoid_backward(dy, y), "tanh": lambda: aten.tanh_backward(dy, y),
                     "relu": lambda: aten.threshold_backward(dy, x, 0.0),
                     "clipped_relu": lambda: aten.hardtanh_backward(dy, x, 0.0, coef),
                     "elu": lambda: aten.elu_backward(dy, coef, 1.0, 1.0, True, y),
                     "identity": lambda: dy}[mode]())
    return _blend(result, a, attrs, "dx")


def _activation_torch_applies(a, attrs) -> bool:
    """aten's elu backward from its result masks by y <= 0, the op by x <= 0: the same where y = elu(x)."""
    if attrs["mode"] != "elu":
        return True
    return bool(np.array_equal(_f(a["x"]) <= 0, _f(a["y"]) <= 0))


def _elu_forward(a, attrs):
    if attrs["mode"] != "elu":
        return None
    x = _f(a["x"])
    return np.where(x > 0, x, attrs["coef"] * np.expm1(np.minimum(x, 0)))


# ---- softmax_backward (SPEC 6.13) ----
def _softmax_rows(a, attrs, name):
    """instance: [N, C*H*W] summed along 1; channel: as given, summed along C (axis 1)."""
    array = _f(a[name])
    return array.reshape(array.shape[0], math.prod(array.shape[1:])) if attrs["mode"] == "instance" else array


def _softmax_numpy(a, attrs):
    y, dy = _softmax_rows(a, attrs, "y"), _softmax_rows(a, attrs, "dy")
    if attrs["algorithm"] == "log":
        result = dy - np.exp(y) * dy.sum(1, keepdims=True)
    else:
        result = y * (dy - (dy * y).sum(1, keepdims=True))
    return _blend(result.reshape(a["y"].shape), a, attrs, "dx")


def _softmax_torch(torch, a, attrs):
    aten = torch.ops.aten
    backward = aten._log_softmax_backward_data if attrs["algorithm"] == "log" else aten._softmax_backward_data
    y, dy = (torch.from_numpy(_softmax_rows(a, attrs, n)) for n in ("y", "dy"))
    return _blend(_n(backward(dy, y, 1, torch.float64)).reshape(a["y"].shape), a, attrs, "dx")


# ---- dropout_backward (SPEC 6.10) ----
def _dropout_mask(a) -> np.ndarray:
    """One byte per element of dy (row-major), from reserve space shaped like dy or a flat buffer."""
    dy = np.asarray(a["dy"])
    return np.asarray(a["reserve_space"]).reshape(-1)[:dy.size].reshape(dy.shape) != 0


def _dropout_scale(attrs) -> float:
    return 0.0 if attrs["dropout"] >= 1 else 1.0 / (1.0 - attrs["dropout"])


def _dropout_numpy(a, attrs):
    return np.where(_dropout_mask(a), _f(a["dy"]) * _dropout_scale(attrs), 0.0)


def _dropout_torch(torch, a, attrs):
    return _n(torch.ops.aten.native_dropout_backward(_t(torch, a["dy"]), torch.from_numpy(_dropout_mask(a)),
                                                      _dropout_scale(attrs)))


# ---- pooling_backward (SPEC 6.12) ----
def _pool_geometry(attrs):
    window = tuple(attrs["window"])
    spatial = len(window)
    padding = tuple(attrs["padding"]) or (0,) * spatial
    stride = tuple(attrs["stride"]) or window
    return window, stride, padding


def _pool_cells(x_shape, out_shape, attrs):
    """Per window cell k (row-major): x's spatial index of that cell of every window
    ([spatial][*out]) and whether it lies inside x (the rest is padding)."""
    window, stride, padding = _pool_geometry(attrs)
    origins = np.meshgrid(*[np.arange(o) for o in out_shape], indexing="ij")
    for offsets in np.ndindex(*window):
        at = [origins[d] * stride[d] - padding[d] + offsets[d] for d in range(len(window))]
        inside = np.logical_and.reduce([(at[d] >= 0) & (at[d] < x_shape[d]) for d in range(len(window))])
        yield [np.clip(at[d], 0, x_shape[d] - 1) for d in range(len(window))], inside


def _gather(x, at):
    """x[n, c, at...] for every window: [N, C, *out]."""
    return x[(slice(None), slice(None), *at)]


def _max_pool_numpy(a, attrs):
    """Each window's maximum over its cells inside x (NaN if one is NaN: torch's rule)."""
    x = _f(a["x"])
    out_shape = np.asarray(a["dy"]).shape[2:]
    y = np.full(x.shape[:2] + out_shape, -np.inf)
    for at, inside in _pool_cells(x.shape[2:], out_shape, attrs):
        value = np.where(inside, _gather(x, at), -np.inf)
        y = np.where(np.isnan(value) | (value > y), value, y)
    return y


def _pool_numpy(a, attrs):
    """Max: each window's dy goes to its first cell (row-major) equal to its y, or its last NaN cell
    if y is NaN, nowhere if none matches; average: dy / area to each cell (area counting padding
    or not). The cells then sum what the windows route to them."""
    x, y, dy = _f(a["x"]), _f(a["y"]), _f(a["dy"])
    dx = np.zeros_like(x)
    out_shape = dy.shape[2:]
    cells = list(_pool_cells(x.shape[2:], out_shape, attrs))
    lead = np.ix_(np.arange(x.shape[0]), np.arange(x.shape[1]))
    if attrs["mode"].startswith("max"):
        first_equal = np.full(dy.shape, -1)
        last_nan = np.full(dy.shape, -1)
        for k in reversed(range(len(cells))):
            at, inside = cells[k]
            first_equal = np.where(inside & (_gather(x, at) == y), k, first_equal)
        for k, (at, inside) in enumerate(cells):
            last_nan = np.where(inside & np.isnan(_gather(x, at)), k, last_nan)
        chosen = np.where(np.isnan(y), last_nan, first_equal)
        shares = [np.where(chosen == k, dy, 0.0) for k in range(len(cells))]
    else:
        window, stride, padding = _pool_geometry(attrs)
        if attrs["mode"] == "avg_include_padding":
            area = float(np.prod(window))
        else:
            area = np.ones(out_shape)
            for d, grid in enumerate(np.meshgrid(*[np.arange(o) for o in out_shape], indexing="ij")):
                start = grid * stride[d] - padding[d]
                area = area * (np.minimum(start + window[d], x.shape[2 + d]) - np.maximum(start, 0))
        shares = [dy / area] * len(cells)
    for (at, inside), share in zip(cells, shares):
        where = np.broadcast_to(inside, dy.shape)
        index = [np.broadcast_to(i.reshape(1, 1, *out_shape), dy.shape)[where] for i in at]
        leading = [np.broadcast_to(i.reshape(*i.shape, *(1,) * len(out_shape)), dy.shape)[where] for i in lead]
        np.add.at(dx, (*leading, *index), share[where])
    return _blend(dx, a, attrs, "dx")


def _pool_torch(torch, a, attrs):
    aten = torch.ops.aten
    window, stride, padding = (list(v) for v in _pool_geometry(attrs))
    three = len(window) == 3
    x, dy = _t(torch, a["x"]), _t(torch, a["dy"])
    if attrs["mode"].startswith("max"):
        _, indices = (aten.max_pool3d_with_indices if three else aten.max_pool2d_with_indices)(x, window, stride,
                                                                                               padding)
        backward = aten.max_pool3d_with_indices_backward if three else aten.max_pool2d_with_indices_backward
        dx = backward(dy, x, window, stride, padding, [1] * len(window), False, indices)
    else:
        backward = aten.avg_pool3d_backward if three else aten.avg_pool2d_backward
        dx = backward(dy, x, window, stride, padding, False, attrs["mode"] == "avg_include_padding", None)
    return _blend(_n(dx), a, attrs, "dx")


def _pool_torch_applies(a, attrs) -> bool:
    """torch routes a window's dy to its first maximum of x, the op to its first cell equal to y: the
    same where y is the max pool of x (and torch takes no empty batch)."""
    if not np.asarray(a["x"]).size:
        return False
    if not attrs["mode"].startswith("max"):
        return True
    y, want = _f(a["y"]), _max_pool_numpy(a, attrs)
    return bool(np.all((y == want) | (np.isnan(y) & np.isnan(want))))


def _pool_forward(a, attrs):
    return _max_pool_numpy(a, attrs) if attrs["mode"].startswith("max") else None


# ---- lrn_cross_channel_backward (SPEC 6.11) and divisive_normalization_backward (SPEC 6.9) ----
def _window_sum(values: np.ndarray, axis: int, before: int, count: int) -> np.ndarray:
    """Σ_{k < count} values[..., p - before + k, ...] along `axis`, zero outside."""
    pad = [(0, 0)] * values.ndim
    pad[axis] = (before, count - 1 - before)
    padded = np.pad(values, pad)
    length = values.shape[axis]
    return sum(np.take(padded, range(k, k + length), axis=axis) for k in range(count))


def _lrn_numpy(a, attrs):
    """S_c = k + alpha/n Σ_{j in window(c)} x_j², window(c) = [c - (n-1)//2, c + n-1 - (n-1)//2];
    dx_c = dy_c S_c^-beta - 2 alpha beta / n x_c Σ_{j: c in window(j)} dy_j x_j S_j^(-beta-1)."""
    x, dy = _f(a["x"]), _f(a["dy"])
    n, alpha, beta = attrs["lrn_n"], attrs["lrn_alpha"], attrs["lrn_beta"]
    behind = (n - 1) // 2
    with np.errstate(all="ignore"):
        scale = attrs["lrn_k"] + alpha / n * _window_sum(x * x, 1, behind, n)
        spread = _window_sum(dy * x * scale ** (-beta - 1), 1, n - 1 - behind, n)
        return _blend(dy * scale ** -beta - 2 * alpha * beta / n * x * spread, a, attrs, "dx")


def lrn_forward_spec(x, n: int, alpha: float, beta: float, k: float):
    """SPEC 6.11's forward in torch (window [c - (n-1)//2, c + n-1 - (n-1)//2]), for any n."""
    import torch.nn.functional as F

    behind = (n - 1) // 2
    padded = F.pad(x * x, (0, 0) * (x.dim() - 2) + (behind, n - 1 - behind))
    window = sum(padded[:, j:j + x.shape[1]] for j in range(n))
    return x * (k + alpha / n * window) ** (-beta)


def _lrn_torch(torch, a, attrs):
    """autograd of F.local_response_norm (SPEC's oracle; odd n), or of SPEC's forward (even n:
    torch centres an even window one channel later)."""
    n, alpha, beta, k = attrs["lrn_n"], attrs["lrn_alpha"], attrs["lrn_beta"], attrs["lrn_k"]
    if n % 2:
        forward = lambda x: torch.nn.functional.local_response_norm(x, n, alpha, beta, k)  # noqa: E731
    else:
        forward = lambda x: lrn_forward_spec(x, n, alpha, beta, k)  # noqa: E731
    return _blend(_grad(torch, forward, [a["x"]], a["dy"])[0], a, attrs, "dx")


def _means(a) -> np.ndarray:
    return _f(a["means"]) if a.get("means") is not None else np.zeros(np.shape(a["x"]))


def _divisive_numpy(a, attrs):
    """d = x - m, S = k + alpha/n^s Σ_{n^s window} d², y = x S^-beta (SPEC 6.9); with R_q =
    Σ_{p whose window holds q} dy_p x_p S_p^(-beta-1): dx = dy S^-beta - 2 alpha beta / n^s d R,
    d_means = 2 alpha beta / n^s d R."""
    x, dy = _f(a["x"]), _f(a["dy"])
    d = x - _means(a)
    n, alpha, beta = attrs["lrn_n"], attrs["lrn_alpha"], attrs["lrn_beta"]
    behind, cells = (n - 1) // 2, n ** (x.ndim - 2)

    def box(values, before):
        for axis in range(2, x.ndim):
            values = _window_sum(values, axis, before, n)
        return values

    with np.errstate(all="ignore"):
        scale = attrs["lrn_k"] + alpha / cells * box(d * d, behind)
        spread = 2 * alpha * beta / cells * d * box(dy * x * scale ** (-beta - 1), n - 1 - behind)
        return _blend(dy * scale ** -beta - spread, a, attrs, "dx"), _blend(spread, a, attrs, "d_means")


def divisive_forward(x, means, n: int, alpha: float, beta: float, k: float):
    """SPEC 6.9's forward in torch: an n x n (x n) spatial window of squared deviations."""
    import torch.nn.functional as F

    d = x - means
    spatial = x.dim() - 2
    behind = (n - 1) // 2
    padded = F.pad(d * d, (behind, n - 1 - behind) * spatial)
    total = 0
    for offsets in np.ndindex(*(n,) * spatial):
        window = padded
        for axis, o in enumerate(offsets):
            window = window.narrow(2 + axis, o, x.shape[2 + axis])
        total = total + window
    return x * (k + alpha / n ** spatial * total) ** (-beta)


def _divisive_torch(torch, a, attrs):
    n, alpha, beta, k = attrs["lrn_n"], attrs["lrn_alpha"], attrs["lrn_beta"], attrs["lrn_k"]
    dx, d_means = _grad(torch, lambda x, m: divisive_forward(x, m, n, alpha, beta, k), [a["x"], _means(a)], a["dy"])
    return _blend(dx, a, attrs, "dx"), _blend(d_means, a, attrs, "d_means")


# ---- batch norm (SPEC 6.6, 6.7) and normalization (SPEC 6.8) ----
BN_OPS = {"norm": "bn", "norm_activation": "bn_activation", "norm_add_activation": "bn_add_activation"}


def _bn_axes(x: np.ndarray, mode: str) -> tuple[int, ...]:
    """What batch norm reduces over: N (per_activation) or N and the spatial dims (the others)."""
    return (0,) if mode in ("per_activation",) else (0, *range(2, x.ndim))


def _bn_statistics(x: np.ndarray, axes, epsilon: float):
    """The mean and inverse std (biased variance) over `axes`, kept as dims; 0 and 1/sqrt(eps) for
    an empty batch, as the kernel."""
    count = max(int(np.prod([x.shape[a] for a in axes])), 1)
    mean = x.sum(axes, keepdims=True) / count
    variance = ((x - mean) ** 2).sum(axes, keepdims=True) / count
    return mean, 1 / np.sqrt(variance + epsilon)


def _act_slope_numpy(activation: str, coef: float, y, pre):
    """act'(pre-activation), from the activation's output y (swish from the pre-activation)."""
    if activation == "relu":
        return (y > 0).astype(np.float64)
    if activation == "clipped_relu":
        return ((y > 0) & (y < coef)).astype(np.float64)
    if activation == "sigmoid":
        return y * (1 - y)
    if activation == "tanh":
        return 1 - y * y
    if activation == "elu":
        return np.where(y > 0, 1.0, y + coef)
    if activation == "swish":
        s = 1 / (1 + np.exp(-coef * pre))
        return s + coef * pre * s * (1 - s)
    return np.ones_like(y)


def _act_backward_torch(torch, activation: str, coef: float, dy, y, pre=None) -> np.ndarray:
    """dy · act'(pre-activation) by ATen's backward of the activation from its result y (swish:
    autograd of its forward at the pre-activation)."""
    aten = torch.ops.aten
    if activation == "swish":
        return _grad(torch, lambda v: v * torch.sigmoid(coef * v), [pre], dy)[0]
    dy_t, y_t = _t(torch, dy), _t(torch, y)
    return _n({"relu": lambda: aten.threshold_backward(dy_t, y_t, 0.0),
               "clipped_relu": lambda: aten.hardtanh_backward(dy_t, y_t, 0.0, coef),
               "sigmoid": lambda: aten.sigmoid_backward(dy_t, y_t), "tanh": lambda: aten.tanh_backward(dy_t, y_t),
               "elu": lambda: aten.elu_backward(dy_t, coef, 1.0, 1.0, True, y_t),
               "identity": lambda: dy_t}[activation]())


def _activate_numpy(activation: str, coef: float, pre):
    with np.errstate(over="ignore"):
        return {"relu": lambda: np.maximum(pre, 0), "clipped_relu": lambda: np.clip(pre, 0, coef),
                "sigmoid": lambda: 1 / (1 + np.exp(-pre)), "tanh": lambda: np.tanh(pre),
                "elu": lambda: np.where(pre > 0, pre, coef * np.expm1(np.minimum(pre, 0))),
                "swish": lambda: pre / (1 + np.exp(-coef * pre)), "identity": lambda: pre}[activation]()


def _activate_torch(torch, activation: str, coef: float, pre):
    F = torch.nn.functional
    return {"relu": lambda: torch.relu(pre), "clipped_relu": lambda: F.hardtanh(pre, 0.0, coef),
            "sigmoid": lambda: torch.sigmoid(pre), "tanh": lambda: torch.tanh(pre), "elu": lambda: F.elu(pre, coef),
            "swish": lambda: pre * torch.sigmoid(coef * pre), "identity": lambda: pre}[activation]()


class _Norm:
    """One call of a batch/group norm op, its attributes read the same way for all six ops: `ops`
    in bn terms (bn, bn_activation, bn_add_activation), `mode` in batch norm's terms, `groups`."""

    def __init__(self, a: dict, attrs: dict):
        self.a, self.attrs = a, attrs
        self.x = _f(a["x"])
        self.groups = attrs.get("group_cnt", 1)
        self.ops = BN_OPS.get(attrs.get("norm_ops"), attrs.get("bn_ops", "bn"))
        mode = attrs["mode"]
        self.mode = "per_activation" if mode == "per_activation" else "spatial"
        self.activation, self.coef = attrs.get("activation", "identity"), attrs.get("coef", 1.0)
        self.gamma = _f(a["bn_scale"])
        self.grouped = (self.x.shape[0], self.groups, math.prod(self.x.shape[1:]) // self.groups)
        """x as [N, group_cnt, the values of a group] (explicit: an empty batch has no -1 dim)"""

    def statistics(self, grouped: bool = False):
        """mean and inverse std, the saved pair if given, else of x: broadcast against x, or kept
        in their own shape (`grouped`: [N, group_cnt, 1] for group norm; as the params for batch norm)."""
        x, saved = self.x, self.a.get("saved_mean")
        if self.groups == 1:
            if saved is not None:
                return _f(saved), _f(self.a["saved_inv_variance"])
            return _bn_statistics(x, _bn_axes(x, self.mode), self.attrs["epsilon"])
        if saved is not None:
            mean, inv = (_f(self.a[n]).reshape(x.shape[0], self.groups, 1) for n in ("saved_mean",
                                                                                     "saved_inv_variance"))
        else:
            mean, inv = _bn_statistics(x.reshape(self.grouped), (2,), self.attrs["epsilon"])
        if grouped:
            return mean, inv
        return (np.broadcast_to(mean, self.grouped).reshape(x.shape),
                np.broadcast_to(inv, self.grouped).reshape(x.shape))

    def pre_activation(self, mean, inv):
        return self.gamma * (self.x - mean) * inv + _f(self.a["bn_bias"])

    def dy_hat(self, torch=None) -> np.ndarray:
        """dŷ = dy · act'(pre-activation) (from y; swish recomputes the pre-activation), or dy."""
        dy = _f(self.a["dy"])
        if self.ops == "bn":
            return dy
        y = _f(self.a["y"])
        pre = self.pre_activation(*self.statistics()) if self.activation == "swish" else None
        if torch is not None:
            return _act_backward_torch(torch, self.activation, self.coef, dy, y, pre)
        with np.errstate(over="ignore"):
            return dy * _act_slope_numpy(self.activation, self.coef, y, pre)

    def param_axes(self) -> tuple[int, ...]:
        return _bn_axes(self.x, self.mode)

    def blend_backward(self, dx, d_scale, d_bias, dy_hat) -> tuple:
        a, attrs, shape = self.a, self.attrs, self.gamma.shape
        data, params = ("alpha_data_diff", "beta_data_diff"), ("alpha_param_diff", "beta_param_diff")
        dz = _blend(dy_hat, a, attrs, "dz", *data) if self.ops == "bn_add_activation" else None
        return (_blend(dx, a, attrs, "dx", *data), _blend(np.reshape(d_scale, shape), a, attrs, "d_bn_scale", *params),
                _blend(np.reshape(d_bias, shape), a, attrs, "d_bn_bias", *params), dz)


def _norm_backward_numpy(a, attrs):
    """Batch norm (SPEC 6.6): x̂ = (x - μ) invstd over M values, dβ = Σ dŷ, dγ = Σ dŷ x̂,
    dx = γ invstd / M (M dŷ - dβ - x̂ dγ). Group norm (SPEC 6.8): over the D values of a group,
    dx = r (γ dŷ - a/D - x̂ b/D), a = Σ_group γ dŷ, b = Σ_group γ dŷ x̂; dγ, dβ sum over the batch
    (and the spatial dims per channel)."""
    norm = _Norm(a, attrs)
    x, gamma, dy_hat = norm.x, norm.gamma, norm.dy_hat()
    mean, inv = norm.statistics()
    x_hat = (x - mean) * inv
    axes = norm.param_axes()
    d_bias, d_scale = dy_hat.sum(axes, keepdims=True), (dy_hat * x_hat).sum(axes, keepdims=True)
    with np.errstate(all="ignore"):
        if norm.groups == 1:
            count = int(np.prod([x.shape[k] for k in axes]))
            dx = gamma * inv / count * (count * dy_hat - d_bias - x_hat * d_scale)
        else:
            grouped, size = norm.grouped, norm.grouped[2]
            scaled = np.broadcast_to(gamma, x.shape) * dy_hat
            a_sum = scaled.reshape(grouped).sum(2, keepdims=True)
            b_sum = (scaled * x_hat).reshape(grouped).sum(2, keepdims=True)
            dx = inv * (scaled - (a_sum / size + x_hat.reshape(grouped) * b_sum / size).reshape(x.shape))
    return norm.blend_backward(dx, d_scale, d_bias, dy_hat)


def _norm_backward_torch(torch, a, attrs):
    """Batch norm: aten.native_batch_norm_backward (per_activation on x as [N, C*H*W]); group norm
    per channel: aten.native_group_norm_backward; group norm per activation (no saved statistics):
    autograd of its forward. dŷ by ATen's activation backward from y."""
    aten, norm = torch.ops.aten, _Norm(a, attrs)
    x, n, c = norm.x, norm.x.shape[0], norm.x.shape[1]
    dy_hat = norm.dy_hat(torch)
    shaped = (lambda v: v.reshape(n, -1)) if norm.mode == "per_activation" else (lambda v: v)
    gamma = _t(torch, norm.gamma.reshape(-1))
    mask = [True, True, True]
    if norm.groups == 1:
        if a.get("saved_mean") is not None:
            mean, inv = (_t(torch, a[k]).reshape(-1) for k in ("saved_mean", "saved_inv_variance"))
        else:
            _, mean, inv = aten.native_batch_norm(_t(torch, shaped(x)), gamma, None, None, None, True, 0.0,
                                                  attrs["epsilon"])
        grads = aten.native_batch_norm_backward(_t(torch, shaped(dy_hat)), _t(torch, shaped(x)), gamma, None, None,
                                                mean, inv, True, attrs["epsilon"], mask)
        dx, d_scale, d_bias = (_n(g) for g in grads)
        return norm.blend_backward(dx.reshape(x.shape), d_scale, d_bias, dy_hat)
    if norm.mode == "spatial":
        size = x[0, 0].size
        if a.get("saved_mean") is not None:
            mean, inv = _t(torch, a["saved_mean"]), _t(torch, a["saved_inv_variance"])
        else:
            _, mean, inv = aten.native_group_norm(_t(torch, x), gamma, None, n, c, size, norm.groups,
                                                  attrs["epsilon"])
        grads = aten.native_group_norm_backward(_t(torch, dy_hat), _t(torch, x), mean, inv, gamma, n, c, size,
                                                norm.groups, mask)
        return norm.blend_backward(*(_n(g) for g in grads), dy_hat)
    dx, d_scale, d_bias = _grad(torch, lambda xt, g, b: _group_norm_torch(xt, g, b, norm.groups, attrs["epsilon"]),
                                [x, norm.gamma, np.zeros(norm.gamma.shape)], dy_hat)
    return norm.blend_backward(dx, d_scale, d_bias, dy_hat)


def _group_norm_torch(x, gamma, beta, groups: int, epsilon: float):
    """Group norm's forward in torch (biased variance), γ and β broadcast against x."""
    grouped = x.reshape(x.shape[0], groups, -1)
    mean = grouped.mean(-1, keepdim=True)
    variance = ((grouped - mean) ** 2).mean(-1, keepdim=True)
    return ((grouped - mean) / (variance + epsilon).sqrt()).reshape(x.shape) * gamma + beta


def _norm_backward_torch_applies(a, attrs) -> bool:
    """torch takes no empty batch; group norm per activation has no ATen form, and its autograd
    recomputes the statistics, so it cannot take saved ones."""
    if not np.asarray(a["x"]).size:
        return False
    return attrs.get("group_cnt", 1) == 1 or attrs["mode"] != "per_activation" or a.get("saved_mean") is None


def _norm_backward_covers(a, attrs) -> bool:
    """normalization_backward's swish with norm_add_activation recomputes the pre-activation
    without z (not an input of the op): no reference for what that gives."""
    return not (attrs.get("norm_ops") == "norm_add_activation" and attrs.get("activation") == "swish")


def _norm_forward_numpy(a, attrs):
    """mean and biased variance (per group for group norm), y = act(γ x̂ + β (+ z)) blended; the
    saved statistics shaped like bn_scale (batch norm) or [N, group_cnt] (group norm)."""
    norm = _Norm(a, attrs)
    pre = norm.pre_activation(*norm.statistics())
    if norm.ops == "bn_add_activation":
        pre = pre + _f(a["z"])
    y = _activate_numpy(norm.activation, norm.coef, pre) if norm.ops != "bn" else pre
    mean, inv = norm.statistics(grouped=True)
    if norm.groups > 1:
        mean, inv = mean[:, :, 0], inv[:, :, 0]
    return _blend(y, a, attrs, "y"), mean, inv


def _norm_forward_torch(torch, a, attrs):
    """aten.native_batch_norm(training=True) (per_activation on x as [N, C*H*W]) or
    aten.native_group_norm (per channel; per activation: its forward in torch), then the activation."""
    aten, norm = torch.ops.aten, _Norm(a, attrs)
    x, n, c = norm.x, norm.x.shape[0], norm.x.shape[1]
    bias = _f(a["bn_bias"])
    if norm.groups == 1:
        shaped = (lambda v: v.reshape(n, -1)) if norm.mode == "per_activation" else (lambda v: v)
        y, mean, inv = aten.native_batch_norm(_t(torch, shaped(x)), _t(torch, norm.gamma.reshape(-1)),
                                              _t(torch, bias.reshape(-1)), None, None, True,
                                              attrs["exponential_average_factor"], attrs["epsilon"])
        y, mean, inv = y.reshape(x.shape), mean.reshape(norm.gamma.shape), inv.reshape(norm.gamma.shape)
    elif norm.mode == "spatial":
        y, mean, inv = aten.native_group_norm(_t(torch, x), _t(torch, norm.gamma.reshape(-1)),
                                              _t(torch, bias.reshape(-1)), n, c, x[0, 0].size, norm.groups,
                                              attrs["epsilon"])
    else:
        xt = _t(torch, x)
        grouped = xt.reshape(n, norm.groups, -1)
        mean, variance = grouped.mean(-1), grouped.var(-1, unbiased=False)
        inv = 1 / (variance + attrs["epsilon"]).sqrt()
        y = _group_norm_torch(xt, _t(torch, norm.gamma), _t(torch, bias), norm.groups, attrs["epsilon"])
    if norm.ops == "bn_add_activation":
        y = y + _t(torch, a["z"])
    if norm.ops != "bn":
        y = _activate_torch(torch, norm.activation, norm.coef, y)
    return _blend(_n(y), a, attrs, "y"), _n(mean), _n(inv)


def _nonempty(a, attrs) -> bool:
    return bool(np.asarray(a["x"]).size)


# ---- spatial transformer (SPEC 6.14) ----
def _coordinates(size: int) -> np.ndarray:
    """align_corners=True: index 0..size-1 -> -1..1; a size of 1 uses coordinate 0."""
    return np.linspace(-1, 1, size) if size > 1 else np.zeros(size)


def _grid_generator_numpy(a, attrs):
    """grid[n,h,w,i] = Σ_j theta[n,i,j] (x_w, y_h, 1)_j, so dtheta[n,i,j] = Σ_{h,w} dgrid[n,h,w,i] base_j."""
    dgrid = _f(a["dgrid"])
    _, h, w, _ = dgrid.shape
    xs, ys = np.meshgrid(_coordinates(w), _coordinates(h))
    base = np.stack([xs, ys, np.ones((h, w))], -1)
    return np.einsum("nhwi,hwj->nij", dgrid, base)


def _grid_generator_torch(torch, a, attrs):
    dgrid = _t(torch, a["dgrid"])
    n, h, w, _ = dgrid.shape
    return _n(torch.ops.aten.affine_grid_generator_backward(dgrid, [n, 1, h, w], True))


def _sampler_numpy(a, attrs):
    """Bilinear sampling (align_corners=True, zero outside): dx scatters dy * weight to the four
    corners; dgrid sums dy * ∂y/∂grid over the channels."""
    x, grid, dy = _f(a["x"]), _f(a["grid"]), _f(a["dy"])
    n, c, h, w = x.shape
    ix, iy = (grid[..., 0] + 1) * 0.5 * (w - 1), (grid[..., 1] + 1) * 0.5 * (h - 1)
    x0, y0 = np.floor(ix), np.floor(iy)
    tx, ty = ix - x0, iy - y0
    dx, dgrid = np.zeros_like(x), np.zeros_like(grid)
    batch = np.broadcast_to(np.arange(n)[:, None, None, None], dy.shape)
    channel = np.broadcast_to(np.arange(c)[None, :, None, None], dy.shape)
    for right in (0, 1):
        for down in (0, 1):
            cx, cy = (x0 + right).astype(np.int64), (y0 + down).astype(np.int64)
            wx, wy = (tx if right else 1 - tx), (ty if down else 1 - ty)
            inside = (cx >= 0) & (cx < w) & (cy >= 0) & (cy < h)
            at = np.broadcast_to(inside[:, None], dy.shape)
            rows, cols = (np.broadcast_to(v[:, None], dy.shape) for v in (cy, cx))
            np.add.at(dx, (batch[at], channel[at], rows[at], cols[at]), (dy * (wx * wy)[:, None])[at])
            value = np.where(at, x[batch, channel, np.clip(rows, 0, h - 1), np.clip(cols, 0, w - 1)], 0.0)
            dgrid[..., 0] += (dy * value).sum(1) * (1 if right else -1) * wy
            dgrid[..., 1] += (dy * value).sum(1) * (1 if down else -1) * wx
    dgrid[..., 0] *= (w - 1) * 0.5
    dgrid[..., 1] *= (h - 1) * 0.5
    return _blend(dx, a, attrs, "dx"), _blend(dgrid, a, attrs, "dgrid", "alpha_dgrid", "beta_dgrid")


def _sampler_torch(torch, a, attrs):
    dx, dgrid = torch.ops.aten.grid_sampler_2d_backward(_t(torch, a["dy"]), _t(torch, a["x"]), _t(torch, a["grid"]),
                                                        0, 0, True, [True, True])
    return _blend(_n(dx), a, attrs, "dx"), _blend(_n(dgrid), a, attrs, "dgrid", "alpha_dgrid", "beta_dgrid")


_ORACLES: dict[str, Oracle] = {
    "activation_backward": Oracle(_activation_numpy, _activation_torch, _activation_torch_applies),
    "batch_norm_backward": Oracle(lambda a, attrs: _norm_backward_numpy(a, attrs)[:3],
                                  lambda torch, a, attrs: _norm_backward_torch(torch, a, attrs)[:3],
                                  _norm_backward_torch_applies),
    "batch_norm_backward_ex": Oracle(_norm_backward_numpy, _norm_backward_torch, _norm_backward_torch_applies),
    "batch_norm_forward_training": Oracle(_norm_forward_numpy, _norm_forward_torch, _nonempty),
    "batch_norm_forward_training_ex": Oracle(_norm_forward_numpy, _norm_forward_torch, _nonempty),
    "binary_cross_entropy_grad": Oracle(_bce_numpy, _bce_torch),
    "divisive_normalization_backward": Oracle(_divisive_numpy, _divisive_torch),
    "dropout_backward": Oracle(_dropout_numpy, _dropout_torch),
    "embedding_dense_backward": Oracle(_embedding_numpy, _embedding_torch),
    "fused_linear_cross_entropy_loss_grad": Oracle(_flce_numpy, _flce_torch),
    "lrn_cross_channel_backward": Oracle(_lrn_numpy, _lrn_torch),
    "nll_loss_backward": Oracle(_nll_numpy, _nll_torch),
    "normalization_backward": Oracle(_norm_backward_numpy, _norm_backward_torch, _norm_backward_torch_applies,
                                     _norm_backward_covers),
    "normalization_forward_training": Oracle(_norm_forward_numpy, _norm_forward_torch, _nonempty),
    "pooling_backward": Oracle(_pool_numpy, _pool_torch, _pool_torch_applies),
    "softmax_backward": Oracle(_softmax_numpy, _softmax_torch),
    "spatial_tf_grid_generator_backward": Oracle(_grid_generator_numpy, _grid_generator_torch),
    "spatial_tf_sampler_backward": Oracle(_sampler_numpy, _sampler_torch),
}
_CONSISTENT: dict[str, Callable] = {"activation_backward": _elu_forward, "pooling_backward": _pool_forward}
