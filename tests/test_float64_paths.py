"""float64 data through ops whose temporaries and scatters must follow it (cpu and metax-c500)."""

import numpy as np
import pytest
from conftest import assert_close, torch

import tilegrad


@pytest.mark.parametrize("target", ["cpu", "metax-c500"])
def test_max_pooling_and_sampler_in_float64(target, rng):
    x = np.round(rng.standard_normal((1, 2, 7, 6)) * 2)
    y, indices = torch.ops.aten.max_pool2d_with_indices(torch.from_numpy(x), [3, 3], [2, 2], [1, 1])
    dy = rng.standard_normal(tuple(y.shape))
    ref = torch.ops.aten.max_pool2d_with_indices_backward(torch.from_numpy(dy), torch.from_numpy(x), [3, 3],
                                                          [2, 2], [1, 1], [1, 1], False, indices)
    got = tilegrad.compile("pooling_backward", target)(y=y.numpy(), dy=dy, x=x, window=(3, 3), stride=(2, 2),
                                                       padding=(1, 1))
    assert got.dtype == np.float64
    assert_close(got, ref, "float64")
    grid = rng.uniform(-1.2, 1.2, (1, 3, 4, 2))
    dy = rng.standard_normal((1, 2, 3, 4))
    dx_ref, dgrid_ref = torch.ops.aten.grid_sampler_2d_backward(
        torch.from_numpy(dy), torch.from_numpy(x), torch.from_numpy(grid), 0, 0, True, [True, True])
    dx, dgrid = tilegrad.compile("spatial_tf_sampler_backward", target)(x=x, grid=grid, dy=dy)
    assert_close(dx, dx_ref, "float64")
    assert_close(dgrid, dgrid_ref, "float64")


@pytest.mark.parametrize("target", ["cpu", "metax-c500"])
def test_batch_norm_backward_in_float64(target, rng):
    """cuDNN's rule: float64 data comes with float64 parameters, and every output is float64-accurate."""
    x = rng.standard_normal((4, 3, 5, 6))
    dy = rng.standard_normal(x.shape)
    g = rng.uniform(0.5, 2, 3)
    _, mean, invstd = torch.ops.aten.native_batch_norm(torch.from_numpy(x), torch.from_numpy(g), None, None, None,
                                                       True, 0.1, 1e-5)
    ref = torch.ops.aten.native_batch_norm_backward(torch.from_numpy(dy), torch.from_numpy(x), torch.from_numpy(g),
                                                    None, None, mean, invstd, True, 1e-5, [True, True, True])
    dx, d_scale, d_bias = tilegrad.compile("batch_norm_backward", target)(x=x, dy=dy, bn_scale=g.reshape(1, 3, 1, 1))
    assert dx.dtype == d_scale.dtype == np.float64
    assert_close(dx, ref[0], "float64")
    assert_close(d_scale.ravel(), ref[1], "float64")
    assert_close(d_bias.ravel(), ref[2], "float64")
    with pytest.raises(tilegrad.DTypeError, match="bn_scale.*float64 for float64 data"):
        tilegrad.compile("batch_norm_backward", target)(x=x, dy=dy, bn_scale=g.reshape(1, 3, 1, 1).astype(np.float32))


@pytest.mark.parametrize("target", ["cpu", "metax-c500"])
def test_batch_norm_forward_training_in_float64(target, rng):
    x = rng.standard_normal((5, 3, 4, 4)) * 3 + 1
    g, b = rng.uniform(0.5, 2, 3), rng.standard_normal(3)
    rm, rv = rng.standard_normal(3), rng.uniform(0.5, 2, 3)
    rm_t, rv_t = torch.from_numpy(rm.copy()), torch.from_numpy(rv.copy())
    out, save_mean, save_inv = torch.ops.aten.native_batch_norm(
        torch.from_numpy(x), torch.from_numpy(g), torch.from_numpy(b), rm_t, rv_t, True, 0.2, 1e-5)
    p = lambda a: a.reshape(1, 3, 1, 1).copy()  # noqa: E731
    running_mean, running_var = p(rm), p(rv)
    y, mean, inv = tilegrad.compile("batch_norm_forward_training", target)(
        x=x, bn_scale=p(g), bn_bias=p(b), running_mean=running_mean, running_variance=running_var,
        exponential_average_factor=0.2)
    for got, want in ((y, out), (mean.ravel(), save_mean), (inv.ravel(), save_inv),
                      (running_mean.ravel(), rm_t), (running_var.ravel(), rv_t)):
        assert got.dtype == np.float64
        assert_close(got, want, "float64")


def test_group_norm_in_float64(rng):
    x = rng.standard_normal((3, 4, 5, 5))
    dy = rng.standard_normal(x.shape)
    g, b = rng.uniform(0.5, 2, 4), rng.standard_normal(4)
    out, mean, rstd = torch.ops.aten.native_group_norm(torch.from_numpy(x), torch.from_numpy(g), torch.from_numpy(b),
                                                       3, 4, 25, 2, 1e-5)
    y, got_mean, got_rstd = tilegrad.compile("normalization_forward_training")(
        x=x, bn_scale=g.reshape(1, 4, 1, 1), bn_bias=b.reshape(1, 4, 1, 1), group_cnt=2)
    assert_close(y, out, "float64")
    ref = torch.ops.aten.native_group_norm_backward(torch.from_numpy(dy), torch.from_numpy(x), mean, rstd,
                                                    torch.from_numpy(g), 3, 4, 25, 2, [True, True, True])
    dx, d_scale, d_bias, dz = tilegrad.compile("normalization_backward")(
        x=x, dy=dy, bn_scale=g.reshape(1, 4, 1, 1), saved_mean=got_mean, saved_inv_variance=got_rstd, group_cnt=2)
    assert dz is None
    for got, want in ((dx, ref[0]), (d_scale.ravel(), ref[1]), (d_bias.ravel(), ref[2])):
        assert got.dtype == np.float64
        assert_close(got, want, "float64")
