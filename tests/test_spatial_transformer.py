"""SPEC 6.14: affine grid generator and bilinear sampler backward (align_corners=True, zeros outside)."""

import numpy as np
import pytest
from conftest import assert_close, torch

import tilegrad

TARGETS = ["cpu", "metax-c500", "ascend910b"]


@pytest.mark.parametrize("size", [(2, 5, 7), (1, 1, 4), (3, 4, 1), (2, 33, 65)])
@pytest.mark.parametrize("target", TARGETS)
def test_grid_generator_backward(size, target, rng):
    n, h, w = size
    dgrid = rng.standard_normal((n, h, w, 2)).astype(np.float32)
    ref = torch.ops.aten.affine_grid_generator_backward(torch.from_numpy(dgrid), [n, 1, h, w], True)
    got = tilegrad.compile("spatial_tf_grid_generator_backward", target)(dgrid=dgrid)
    assert got.shape == (n, 2, 3)
    assert_close(got, ref, "float32", reduction=True)


@pytest.mark.parametrize("shapes", [((2, 3, 6, 5), (4, 7)), ((1, 2, 9, 11), (13, 3)), ((1, 1, 1, 4), (2, 2))])
@pytest.mark.parametrize("target", TARGETS)
def test_sampler_backward(shapes, target, rng):
    (n, c, h, w), (oh, ow) = shapes
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    grid = rng.uniform(-1.3, 1.3, (n, oh, ow, 2)).astype(np.float32)  # some points fall outside
    grid[0, 0, 0] = (1.0, -1.0)  # exactly on the corners
    dy = rng.standard_normal((n, c, oh, ow)).astype(np.float32)
    dx_ref, dgrid_ref = torch.ops.aten.grid_sampler_2d_backward(
        torch.from_numpy(dy), torch.from_numpy(x), torch.from_numpy(grid), 0, 0, True, [True, True])
    kernel = tilegrad.compile("spatial_tf_sampler_backward", target)
    dx, dgrid = kernel(x=x, grid=grid, dy=dy)
    assert_close(dx, dx_ref, "float32", reduction=True)
    assert_close(dgrid, dgrid_ref, "float32", reduction=True)
    prior_dx, prior_dgrid = np.ones_like(x), np.full_like(grid, 2.0)
    dx, dgrid = kernel(x=x, grid=grid, dy=dy, alpha=0.5, beta=1.0, alpha_dgrid=2.0, beta_dgrid=-1.0,
                       dx=prior_dx, dgrid=prior_dgrid)
    assert_close(dx, 0.5 * dx_ref.numpy() + 1.0, "float32", reduction=True)
    assert_close(dgrid, 2.0 * dgrid_ref.numpy() - 2.0, "float32", reduction=True)
