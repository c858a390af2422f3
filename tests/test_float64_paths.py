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


def test_batch_norm_backward_in_float64(rng):
    x = rng.standard_normal((4, 3, 5, 6))
    dy = rng.standard_normal(x.shape)
    g = rng.uniform(0.5, 2, 3).astype(np.float32).astype(np.float64)  # parameters are float32 (SPEC 6.6)
    _, mean, invstd = torch.ops.aten.native_batch_norm(torch.from_numpy(x), torch.from_numpy(g), None, None, None,
                                                       True, 0.1, 1e-5)
    ref = torch.ops.aten.native_batch_norm_backward(torch.from_numpy(dy), torch.from_numpy(x), torch.from_numpy(g),
                                                    None, None, mean, invstd, True, 1e-5, [True, True, True])
    dx, d_scale, d_bias = tilegrad.compile("batch_norm_backward", "cpu")(
        x=x, dy=dy, bn_scale=g.reshape(1, 3, 1, 1).astype(np.float32))
    assert dx.dtype == np.float64
    assert_close(dx, ref[0], "float64")
    assert_close(d_scale.ravel(), ref[1], "float32")  # parameter gradients are float32
    assert_close(d_bias.ravel(), ref[2], "float32")
