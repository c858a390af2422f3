import numpy as np
import pytest
from conftest import NUMPY, assert_close, cases, to_torch, torch

import tilegrad

CODES = {"none": 0, "mean": 1, "sum": 2}


def reference(x, y, w, g, reduction):
    weight = to_torch(w) if w is not None else None
    grad = to_torch(g) if reduction == "none" else to_torch(g).reshape(())
    return torch.ops.aten.binary_cross_entropy_backward(grad, to_torch(x), to_torch(y), weight, CODES[reduction])


def inputs(rng, shape, dtype, reduction, weighted):
    np_dtype = NUMPY[dtype]
    x = rng.uniform(0.02, 0.98, shape).astype(np_dtype)
    y = rng.uniform(0.0, 1.0, shape).astype(np_dtype)
    w = rng.uniform(0.5, 2.0, shape).astype(np_dtype) if weighted else None
    g = (rng.standard_normal(shape) if reduction == "none" else rng.standard_normal(1) + 2).astype(np_dtype)
    return x, y, w, g


@pytest.mark.parametrize("target,dtype", cases())
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_every_target_and_dtype(target, dtype, reduction, rng):
    # 10007 is prime: tails in the core split and in every tile
    x, y, w, g = inputs(rng, (10007,), dtype, reduction, weighted=True)
    dx = tilegrad.compile("binary_cross_entropy_grad", target)(input_x=x, input_y=y, weight=w, dloss=g,
                                                              reduction=reduction)
    assert dx.dtype == x.dtype and dx.shape == x.shape
    assert_close(dx, reference(x, y, w, g, reduction), dtype)


@pytest.mark.parametrize("target", ["cpu", "ascend910b", "mt7004"])
@pytest.mark.parametrize("shape", [(3, 5, 7), (1,), (0,), ()])
def test_shapes_without_weight_and_integer_reduction(target, shape, rng):
    x, y, _, g = inputs(rng, shape, "float32", "sum", weighted=False)
    dx = tilegrad.compile("binary_cross_entropy_grad", target)(input_x=x, input_y=y, dloss=g, reduction=2)
    assert_close(dx, reference(x, y, None, g, "sum"), "float32")


def test_strided_inputs_and_output_buffer(rng):
    x, y, w, g = inputs(rng, (64, 40), "float32", "none", weighted=True)
    x_t, y_t = np.asfortranarray(x), y[:, ::-1].copy()[:, ::-1]
    out = np.full((64, 40), np.nan, np.float32)
    k = tilegrad.compile("binary_cross_entropy_grad", "cpu")
    got = k(input_x=x_t, input_y=y_t, weight=w[:, :], dloss=g, reduction="none", dx=out)
    assert got is out
    assert_close(out, reference(x, y, w, g, "none"), "float32")
    sliced = k(input_x=x[::2, ::3], input_y=y[::2, ::3], dloss=g[::2, ::3], reduction="none")
    assert_close(sliced, reference(x[::2, ::3], y[::2, ::3], None, g[::2, ::3], "none"), "float32")


@pytest.mark.parametrize("target", ["ft78ne", "mt7004"])
@pytest.mark.parametrize("core_mask", [0x1, 0x0F, 0xA5, 0xFF])
def test_core_mask(target, core_mask, rng):
    x, y, w, g = inputs(rng, (4099,), "float32", "mean", weighted=True)
    dx = tilegrad.compile("binary_cross_entropy_grad", target)(input_x=x, input_y=y, weight=w, dloss=g,
                                                              core_mask=core_mask)
    assert_close(dx, reference(x, y, w, g, "mean"), "float32")


def test_core_mask_is_refused_elsewhere_and_when_empty(rng):
    x, y, _, g = inputs(rng, (16,), "float32", "mean", weighted=False)
    with pytest.raises(tilegrad.UnsupportedError, match="core_mask"):
        tilegrad.compile("binary_cross_entropy_grad", "ascend910b")(input_x=x, input_y=y, dloss=g, core_mask=1)
    with pytest.raises(tilegrad.AttributeValueError, match="core_mask"):
        tilegrad.compile("binary_cross_entropy_grad", "ft78ne")(input_x=x, input_y=y, dloss=g, core_mask=0x100)
