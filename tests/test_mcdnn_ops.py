"""mcDNN ops (SPEC 6.5, 6.10, 6.13): activation, softmax and dropout backward with alpha/beta blending."""

import os

import numpy as np
import pytest
from conftest import NUMPY, assert_close, to_torch, torch

import tilegrad
from tilegrad.references import divisive_forward, lrn_forward_spec  # SPEC 6.11, 6.9 in torch

F = torch.nn.functional
SHAPES = [(2, 3, 5, 7), (2, 3, 2, 3, 4)]
LONG = os.environ.get("TILEGRAD_FUZZ") == "long"
"""The long profile: the grids' second scratchpad target (metax-c500, the same stage table as
ascend910b with other cores and UB) over every case; by default over a covering part of them."""


def activation_reference(mode, x, y, dy, coef):
    xt = to_torch(x).requires_grad_()
    forward = {
        "sigmoid": torch.sigmoid, "relu": torch.relu, "tanh": torch.tanh,
        "clipped_relu": lambda t: F.hardtanh(t, 0.0, coef), "elu": lambda t: F.elu(t, coef),
        "swish": lambda t: t * torch.sigmoid(coef * t), "identity": lambda t: t * 1.0,
    }[mode]
    forward(xt).backward(to_torch(dy))
    return xt.grad


@pytest.mark.parametrize("mode", ["sigmoid", "relu", "tanh", "clipped_relu", "elu", "swish", "identity"])
@pytest.mark.parametrize("target,dtype", [("cpu", "float32"), ("metax-c500", "float64"), ("metax-c500", "bfloat16"),
                                          ("ascend910b", "float16")])
def test_activation_backward(mode, target, dtype, rng):
    shape = SHAPES[hash(mode) % 2]
    coef = 1.5
    x = rng.standard_normal(shape).astype(NUMPY[dtype])
    xt = to_torch(x)
    y = {"sigmoid": torch.sigmoid(xt), "tanh": torch.tanh(xt), "elu": F.elu(xt, coef)}.get(mode, xt)
    y = y.numpy().astype(NUMPY[dtype])
    dy = rng.standard_normal(shape).astype(NUMPY[dtype])
    got = tilegrad.compile("activation_backward", target)(y=y, dy=dy, x=x, mode=mode, coef=coef)
    assert_close(got, activation_reference(mode, x, y, dy, coef), dtype)


def test_activation_blending_and_in_place(rng):
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    dy = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    kernel = tilegrad.compile("activation_backward", "metax-c500")
    plain = dy * (x > 0)
    prior = rng.standard_normal(x.shape).astype(np.float32)
    blended = kernel(dy=dy, x=x, mode="relu", alpha=2.0, beta=0.5, dx=prior.copy())
    np.testing.assert_allclose(blended, 2.0 * plain + 0.5 * prior, rtol=1e-6)
    clean = kernel(dy=dy, x=x, mode="relu", dx=np.full(x.shape, np.nan, np.float32))  # beta = 0: prior unread
    np.testing.assert_array_equal(clean, plain)
    in_place = dy.copy()
    assert kernel(dy=in_place, x=x, mode="relu", dx=in_place) is in_place  # dy is dx
    np.testing.assert_array_equal(in_place, plain)
    with pytest.raises(tilegrad.ShapeError, match="in place"):
        wide = np.zeros((2, 3, 4, 10), np.float32)
        kernel(dy=wide[..., :5], x=x, mode="relu", dx=wide[..., ::2])
    with pytest.raises(tilegrad.ShapeError, match="'y'.*required"):
        kernel(dy=dy, x=x, mode="sigmoid")


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", ["instance", "channel"])
@pytest.mark.parametrize("algorithm", ["accurate", "log"])
@pytest.mark.parametrize("target", ["cpu", "metax-c500", "ascend910b"])
def test_softmax_backward(shape, mode, algorithm, target, rng):
    logits = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    flat = logits.reshape(shape[0], -1) if mode == "instance" else logits
    fn = torch.log_softmax if algorithm == "log" else torch.softmax
    y = fn(flat, 1).reshape(shape)
    dy = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    aten = torch.ops.aten
    backward = aten._log_softmax_backward_data if algorithm == "log" else aten._softmax_backward_data
    ref = backward(dy.reshape(flat.shape), y.reshape(flat.shape), 1, torch.float32).reshape(shape)
    got = tilegrad.compile("softmax_backward", target)(y=y.numpy(), dy=dy.numpy(), mode=mode, algorithm=algorithm)
    assert_close(got, ref, "float32", reduction=True)
    prior = rng.standard_normal(shape).astype(np.float32)
    blended = tilegrad.compile("softmax_backward", target)(y=y.numpy(), dy=dy.numpy(), mode=mode,
                                                           algorithm=algorithm, alpha=0.5, beta=2.0, dx=prior.copy())
    assert_close(blended, 0.5 * ref.numpy() + 2.0 * prior, "float32", reduction=True)


@pytest.mark.parametrize("target", ["cpu", "ascend910b"])
def test_channel_softmax_of_one_position_sums_each_sample_as_a_row(target, rng):
    """N x C x 1 x 1 (a classifier's softmax): channel mode sees each sample as one row, as
    instance mode does, in both modes' kernel (the same sums), and in either kernel a shape with
    positions after it still sums per position."""
    kernel = tilegrad.compile("softmax_backward", target)
    for shape in [(5, 37, 1, 1), (3, 8, 1, 1, 1)]:
        y = torch.softmax(torch.from_numpy(rng.standard_normal(shape).astype(np.float32)), 1)
        dy = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
        ref = torch.ops.aten._softmax_backward_data(dy, y, 1, torch.float32)
        channel = kernel(y=y.numpy(), dy=dy.numpy(), mode="channel")
        assert_close(channel, ref, "float32", reduction=True)
        np.testing.assert_array_equal(channel, kernel(y=y.numpy(), dy=dy.numpy(), mode="instance"))
        assert "%y: memref<?x?xf32>" in kernel.ir("op", y=y.numpy(), dy=dy.numpy(), mode="channel")
    y = torch.softmax(torch.from_numpy(rng.standard_normal((2, 6, 3, 1)).astype(np.float32)), 1)
    dy = torch.from_numpy(rng.standard_normal((2, 6, 3, 1)).astype(np.float32))
    assert_close(kernel(y=y.numpy(), dy=dy.numpy(), mode="channel"),
                 torch.ops.aten._softmax_backward_data(dy, y, 1, torch.float32), "float32", reduction=True)


@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("flat_reserve", [False, True])
@pytest.mark.parametrize("target", ["cpu", "metax-c500", "ft78ne"])
def test_dropout_backward(p, flat_reserve, target, rng):
    shape = (2, 3, 6, 7)
    dy = rng.standard_normal(shape).astype(np.float32)
    mask = (rng.uniform(0, 1, shape) > 0.4).astype(np.uint8)
    reserve = np.zeros(tilegrad.dropout_reserve_space_size(shape), np.uint8)
    reserve[:] = mask.reshape(-1)
    got = tilegrad.compile("dropout_backward", target)(dy=dy, reserve_space=reserve if flat_reserve else mask,
                                                       dropout=p)
    ref = torch.ops.aten.native_dropout_backward(to_torch(dy), torch.from_numpy(mask.astype(bool)),
                                                 0.0 if p == 1 else 1.0 / (1.0 - p))
    assert_close(got, ref, "float32")
    with pytest.raises(tilegrad.ShapeError, match="reserve_space.*smaller"):
        tilegrad.compile("dropout_backward", target)(dy=dy, reserve_space=reserve[:-1], dropout=p)


def pool_reference(mode, x, window, stride, padding, rng):
    xt = to_torch(x)
    three = x.ndim == 5
    if mode.startswith("avg"):
        include = mode == "avg_include_padding"
        y = (F.avg_pool3d if three else F.avg_pool2d)(xt, window, stride, padding, count_include_pad=include)
        dy = torch.from_numpy(rng.standard_normal(tuple(y.shape)).astype(np.float32))
        backward = torch.ops.aten.avg_pool3d_backward if three else torch.ops.aten.avg_pool2d_backward
        return y, dy, backward(dy, xt, window, stride, padding, False, include, None)
    forward = torch.ops.aten.max_pool3d_with_indices if three else torch.ops.aten.max_pool2d_with_indices
    y, indices = forward(xt, window, stride, padding)
    dy = torch.from_numpy(rng.standard_normal(tuple(y.shape)).astype(np.float32))
    aten = torch.ops.aten
    backward = aten.max_pool3d_with_indices_backward if three else aten.max_pool2d_with_indices_backward
    return y, dy, backward(dy, xt, window, stride, padding, [1] * len(window), False, indices)


POOL_CASES = [((2, 3, 9, 8), [3, 3], [2, 2], [1, 1]), ((1, 2, 7, 6), [2, 3], [2, 1], [0, 1]),
              ((1, 2, 5, 6, 7), [3, 2, 3], [2, 2, 1], [1, 0, 1])]


POOL_GRID = [pytest.param(case, mode, target, id=f"{target}-{mode}-{label}")
             for target in ("cpu", "metax-c500", "ascend910b")
             for mode in ("max", "max_deterministic", "avg_include_padding", "avg_exclude_padding")
             for case, label in zip(POOL_CASES, ("2d", "2d-rect", "3d"))
             if LONG or target != "metax-c500" or label == "2d"]


@pytest.mark.parametrize("case, mode, target", POOL_GRID)
def test_pooling_backward(case, mode, target, rng):
    shape, window, stride, padding = case
    x = rng.standard_normal(shape).astype(np.float32)
    if mode.startswith("max"):
        x = np.round(x * 2)  # ties: the first maximum in row-major window order gets dy
    y, dy, ref = pool_reference(mode, x, window, stride, padding, rng)
    got = tilegrad.compile("pooling_backward", target)(y=y.numpy(), dy=dy.numpy(), x=x, mode=mode, window=window,
                                                       stride=stride, padding=padding)
    assert_close(got, ref, "float32", reduction=True)


def test_pooling_blending_and_errors(rng):
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    y, dy, ref = pool_reference("max", x, [2, 2], [2, 2], [0, 0], rng)
    kernel = tilegrad.compile("pooling_backward", "cpu")
    prior = np.ones(x.shape, np.float32)
    got = kernel(y=y.numpy(), dy=dy.numpy(), x=x, window=(2, 2), alpha=3.0, beta=-1.0, dx=prior)
    np.testing.assert_allclose(got, 3.0 * ref.numpy() - 1.0, rtol=1e-6)
    with pytest.raises(tilegrad.AttributeValueError, match="window"):
        kernel(y=y.numpy(), dy=dy.numpy(), x=x, window=(2, 2, 2))
    with pytest.raises(tilegrad.ShapeError, match="dy.*pooled shape"):
        kernel(y=y.numpy(), dy=dy.numpy(), x=x, window=(3, 3))
    with pytest.raises(tilegrad.AttributeValueError, match="window.*required"):
        kernel(y=y.numpy(), dy=dy.numpy(), x=x)


LRN_GRID = [(shape, n, target) for target in ("cpu", "metax-c500", "ascend910b") for n in (1, 3, 4, 5)
            for shape in SHAPES if LONG or target != "metax-c500" or shape == SHAPES[n % 2]]


@pytest.mark.parametrize("shape, n, target", LRN_GRID)
def test_lrn_cross_channel_backward(shape, n, target, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    xt = to_torch(x).double().requires_grad_()
    y = lrn_forward_spec(xt, n, 1e-2, 0.75, 2.0)
    if n % 2:  # the SPEC oracle: autograd of F.local_response_norm for odd n
        torch.testing.assert_close(y, F.local_response_norm(xt, n, 1e-2, 0.75, 2.0))
    dy = rng.standard_normal(shape).astype(np.float32)
    y.backward(to_torch(dy).double())
    got = tilegrad.compile("lrn_cross_channel_backward", target)(
        y=y.detach().float().numpy(), dy=dy, x=x, lrn_n=n, lrn_alpha=1e-2, lrn_beta=0.75, lrn_k=2.0)
    assert_close(got, xt.grad, "float32", reduction=True)


DIVISIVE_GRID = [(shape, n, with_means, target) for target in ("cpu", "metax-c500") for with_means in (True, False)
                 for n in (1, 2, 3) for shape in SHAPES
                 if LONG or target == "cpu" or (n, with_means) in ((2, True), (3, False))]


@pytest.mark.parametrize("shape, n, with_means, target", DIVISIVE_GRID)
def test_divisive_normalization_backward(shape, n, with_means, target, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    means = (rng.standard_normal(shape) * 0.3).astype(np.float32)
    xt = to_torch(x).double().requires_grad_()
    mt = (to_torch(means).double() if with_means else torch.zeros(shape, dtype=torch.float64)).requires_grad_()
    dy = rng.standard_normal(shape).astype(np.float32)
    divisive_forward(xt, mt, n, 0.5, 0.75, 2.0).backward(to_torch(dy).double())
    dx, d_means = tilegrad.compile("divisive_normalization_backward", target)(
        x=x, means=means if with_means else None, dy=dy, lrn_n=n, lrn_alpha=0.5)
    assert_close(dx, xt.grad, "float32", reduction=True)
    assert_close(d_means, mt.grad, "float32", reduction=True)


def test_max_pooling_routes_dy_by_y(rng):
    """Max pooling finds each window's maximum by comparing with y (one scan of the window); a y
    that matches no cell of its window routes nothing, as cuDNN, which also reads y."""
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    y, dy, ref = pool_reference("max", x, [2, 2], [2, 2], [0, 0], rng)
    kernel = tilegrad.compile("pooling_backward", "ascend910b")
    np.testing.assert_allclose(kernel(y=y.numpy(), dy=dy.numpy(), x=x, window=(2, 2)), ref.numpy(), rtol=1e-6)
    wrong = y.numpy().copy()
    wrong[0, 0, 0, 0] = 99.0  # matches nothing in its window
    got = kernel(y=wrong, dy=dy.numpy(), x=x, window=(2, 2))
    assert (got[0, 0, :2, :2] == 0).all()
    np.testing.assert_allclose(got[0, 1], ref.numpy()[0, 1], rtol=1e-6)
