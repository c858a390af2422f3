"""Seeded random cases: shapes, layouts, targets and options drawn at random, checked against aten.
Sizes straddle the tile and core-split boundaries so tails land in different places each time."""

import os

import numpy as np
import pytest
from conftest import NUMPY, assert_close, to_torch, torch

import tilegrad

TARGETS = ["cpu", "ascend910", "ascend910b", "ascend310p", "ft78ne", "mt7004", "metax-c500", "test-random-ub"]
tilegrad.register_target(tilegrad.Target("test-random-ub", 5, 3072, 32, 32, ("float32", "float16", "bfloat16"),
                                         staged=True, ub_reserve_bytes=256), replace=True)
CODES = {"none": 0, "mean": 1, "sum": 2}
CASES = int(os.environ.get("TILEGRAD_RANDOM_CASES", "12"))


def layout(rng, array):
    """The same values in a random layout: contiguous, Fortran order, or a strided view."""
    choice = rng.integers(0, 3)
    if choice == 1 and array.ndim >= 2:
        return np.asfortranarray(array)
    if choice == 2 and array.ndim >= 1:
        wide = np.zeros(array.shape[:-1] + (array.shape[-1] * 2,), array.dtype)
        wide[..., ::2] = array
        return wide[..., ::2]
    return array


def pick_dtype(rng, target, op):
    options = [d for d in tilegrad.get_op(op).dtypes_on(tilegrad.get_target(target))]
    return options[rng.integers(0, len(options))]


@pytest.mark.parametrize("seed", range(CASES))
def test_random_bce(seed):
    rng = np.random.default_rng(seed)
    target = TARGETS[rng.integers(0, len(TARGETS))]
    dtype = pick_dtype(rng, target, "binary_cross_entropy_grad")
    shape = tuple(int(d) for d in rng.integers(1, 90, rng.integers(1, 4)))
    reduction = ["none", "mean", "sum"][rng.integers(0, 3)]
    x = rng.uniform(0.05, 0.95, shape).astype(NUMPY[dtype])
    y = rng.uniform(0, 1, shape).astype(NUMPY[dtype])
    w = rng.uniform(0.5, 2, shape).astype(NUMPY[dtype]) if rng.integers(0, 2) else None
    g = (rng.standard_normal(shape) if reduction == "none" else rng.standard_normal(1)).astype(NUMPY[dtype])
    dx = tilegrad.compile("binary_cross_entropy_grad", target)(
        input_x=layout(rng, x), input_y=layout(rng, y), weight=None if w is None else layout(rng, w),
        dloss=layout(rng, g) if reduction == "none" else g, reduction=reduction)
    gt = to_torch(g) if reduction == "none" else to_torch(g).reshape(())
    ref = torch.ops.aten.binary_cross_entropy_backward(gt, to_torch(x), to_torch(y),
                                                       None if w is None else to_torch(w), CODES[reduction])
    assert_close(dx, ref, dtype)


@pytest.mark.parametrize("seed", range(CASES))
def test_random_nll(seed):
    rng = np.random.default_rng(100 + seed)
    target = TARGETS[rng.integers(0, len(TARGETS))]
    dtype = pick_dtype(rng, target, "nll_loss_backward")
    n, c = int(rng.integers(1, 70)), int(rng.integers(1, 300))
    reduction = ["none", "mean", "sum"][rng.integers(0, 3)]
    ignore = int(rng.integers(-1, c))
    x = rng.standard_normal((n, c)).astype(NUMPY[dtype])
    t = rng.integers(0, c, n).astype(["int32", "int64", "uint8"][rng.integers(0, 3)] if c < 256 else "int64")
    w = rng.uniform(0.5, 2, c).astype(NUMPY[dtype]) if rng.integers(0, 2) else None
    g = rng.standard_normal(n if reduction == "none" else 1).astype(NUMPY[dtype])
    tw = np.array([rng.uniform(1, 5)], NUMPY[dtype])
    out = tilegrad.compile("nll_loss_backward", target)(
        grad_output=g, self=layout(rng, x), target=t, weight=w, total_weight=tw, reduction=reduction,
        ignore_index=ignore)
    gt = to_torch(g) if reduction == "none" else to_torch(g).reshape(())
    ref = torch.ops.aten.nll_loss_backward(gt, to_torch(x), torch.from_numpy(t.astype(np.int64)),
                                           None if w is None else to_torch(w), CODES[reduction], ignore,
                                           to_torch(tw).reshape(()))
    assert_close(out, ref, dtype)


@pytest.mark.parametrize("seed", range(CASES))
def test_random_embedding(seed):
    rng = np.random.default_rng(200 + seed)
    targets = [t for t in TARGETS if t in tilegrad.get_op("embedding_dense_backward").supported_targets()]
    target = targets[rng.integers(0, len(targets))]
    dtype = pick_dtype(rng, target, "embedding_dense_backward")
    num_weights, e = int(rng.integers(1, 80)), int(rng.integers(1, 70))
    index_shape = tuple(int(d) for d in rng.integers(1, 12, rng.integers(1, 4)))
    indices = rng.integers(0, num_weights, index_shape).astype(["int32", "int64"][rng.integers(0, 2)])
    grad = rng.standard_normal(index_shape + (e,)).astype(NUMPY[dtype])
    padding = int(rng.integers(-1, num_weights))
    scale = bool(rng.integers(0, 2))
    out = tilegrad.compile("embedding_dense_backward", target)(
        grad=layout(rng, grad), indices=layout(rng, indices), num_weights=num_weights, padding_idx=padding,
        scale_grad_by_freq=scale)
    ref = torch.ops.aten.embedding_dense_backward(to_torch(grad), torch.from_numpy(indices.astype(np.int64)),
                                                  num_weights, padding, scale)
    assert_close(out, ref, dtype, reduction=True)
