import numpy as np
import pytest
from conftest import NUMPY, assert_close, cases, to_torch, torch

import tilegrad

CODES = {"none": 0, "mean": 1, "sum": 2}


def make(rng, n, c, dtype, target_dtype="int64", ignore_index=-100, weighted=True, one_d=False):
    np_dtype = NUMPY[dtype]
    x = rng.standard_normal((c,) if one_d else (n, c)).astype(np_dtype)
    t = rng.integers(0, c, () if one_d else (n,)).astype(target_dtype)
    if not one_d and n > 3 and ignore_index >= 0 or (not one_d and n > 3 and target_dtype != "uint8"):
        t[n // 2] = ignore_index
    w = rng.uniform(0.5, 2.0, c).astype(np_dtype) if weighted else None
    return x, t, w


def reference(g, x, t, w, reduction, ignore_index):
    xt, tt = to_torch(x), torch.from_numpy(t.astype(np.int64))
    wt = to_torch(w) if w is not None else None
    _, total = torch.ops.aten.nll_loss_forward(xt, tt, wt, CODES[reduction], ignore_index)
    gt = to_torch(g) if g.ndim else to_torch(g).reshape(())
    return torch.ops.aten.nll_loss_backward(gt, xt, tt, wt, CODES[reduction], ignore_index, total), total


def run(target, g, x, t, w, reduction, ignore_index, total):
    k = tilegrad.compile("nll_loss_backward", target)
    tw = total.numpy().astype(x.dtype).reshape(1)
    return k(grad_output=g, self=x, target=t, weight=w, total_weight=tw, reduction=reduction,
             ignore_index=ignore_index)


@pytest.mark.parametrize("target,dtype", cases())
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_every_target_and_dtype(target, dtype, reduction, rng):
    n, c = 67, 131  # primes: tails in the core split and the class tiles
    x, t, w = make(rng, n, c, dtype)
    g = rng.standard_normal(n if reduction == "none" else 1).astype(x.dtype)
    if reduction != "none":
        g = g.reshape(())
    ref, total = reference(g, x, t, w, reduction, -100)
    out = run(target, g, x, t, w, reduction, -100, total)
    assert out.shape == x.shape and out.dtype == x.dtype
    assert_close(out, ref, dtype)


@pytest.mark.parametrize("target", ["cpu", "ascend910b", "ft78ne"])
@pytest.mark.parametrize("target_dtype", ["int32", "int64", "uint8"])
@pytest.mark.parametrize("weighted", [True, False])
def test_target_dtypes_weights_and_ignore_index(target, target_dtype, weighted, rng):
    n, c = 29, 40
    ignore = 7
    x, t, w = make(rng, n, c, "float32", target_dtype, ignore_index=ignore, weighted=weighted)
    t[::5] = ignore
    g = np.array([0.75], np.float32)
    ref, total = reference(g.reshape(()), x, t, w, "mean", ignore)
    out = run(target, g, x, t, w, "mean", ignore, total)
    assert_close(out, ref, "float32")


@pytest.mark.parametrize("target", ["cpu", "ascend310p"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_one_dimensional_self(target, reduction, rng):
    x, t, w = make(rng, 1, 17, "float32", one_d=True)
    g = np.array(1.25, np.float32)
    ref, total = reference(g, x, t, w, reduction, -100)
    out = run(target, g, x, t, w, reduction, -100, total)
    assert_close(out, ref, "float32")


@pytest.mark.parametrize("target", ["cpu", "ascend910b"])
def test_empty_batch(target, rng):
    x = np.zeros((0, 5), np.float32)
    t = np.zeros((0,), np.int64)
    out = tilegrad.compile("nll_loss_backward", target)(
        grad_output=np.ones(1, np.float32), self=x, target=t, total_weight=np.zeros(1, np.float32))
    assert out.shape == (0, 5)


def test_zero_total_weight_follows_ieee(rng):
    x, t, w = make(rng, 4, 3, "float32")
    g = np.array(1.0, np.float32)
    out = tilegrad.compile("nll_loss_backward", "cpu")(
        grad_output=g, self=x, target=t, weight=w, total_weight=np.zeros(1, np.float32), reduction="mean")
    ref = torch.ops.aten.nll_loss_backward(torch.tensor(1.0), to_torch(x), torch.from_numpy(t), to_torch(w), 1,
                                           -100, torch.tensor(0.0))
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref.numpy()))
    np.testing.assert_array_equal(np.isinf(out), np.isinf(ref.numpy()))


@pytest.mark.parametrize("target", ["cpu", "ascend910b"])
@pytest.mark.parametrize("bad", [5, -1, 200])
def test_out_of_range_target_raises_without_writing(target, bad, rng):
    x, t, w = make(rng, 6, 5, "float32")
    t[2] = bad
    out = np.zeros((6, 5), np.float32)
    guard = np.zeros((6, 5), np.float32)
    with pytest.raises(tilegrad.IndexOutOfRangeError, match="target"):
        tilegrad.compile("nll_loss_backward", target)(
            grad_output=np.ones(1, np.float32), self=x, target=t, weight=w,
            total_weight=np.ones(1, np.float32), out=out)
    assert not guard.any()
