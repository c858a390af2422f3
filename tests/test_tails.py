"""Tails everywhere: sizes that leave a remainder in the core split and in every tile level."""

import numpy as np
import pytest
from conftest import assert_close, to_torch, torch

import tilegrad
import tilegrad.dsl as tg

# a 3-core scratchpad target with a UB so small that every stage runs many short tiles
SMALL = tilegrad.register_target(tilegrad.Target(
    "test-small-ub", cores=3, ub_bytes=4096, ub_align=32, vector_bytes=32, dtypes=("float32", "float16"),
    staged=True, ub_reserve_bytes=512), replace=True)


@pytest.mark.parametrize("target", ["test-small-ub", "ascend910b"])
def test_bce_tails(target, rng):
    n = 24 * 7504 * 2 + 13 if target == "ascend910b" else 5003  # several tiles per core plus a tail
    x = rng.uniform(0.05, 0.95, n).astype(np.float32)
    y = rng.uniform(0, 1, n).astype(np.float32)
    w = rng.uniform(0.5, 2, n).astype(np.float32)
    g = rng.standard_normal(n).astype(np.float32)
    dx = tilegrad.compile("binary_cross_entropy_grad", target)(input_x=x, input_y=y, weight=w, dloss=g,
                                                              reduction="none")
    ref = torch.ops.aten.binary_cross_entropy_backward(to_torch(g), to_torch(x), to_torch(y), to_torch(w), 0)
    assert_close(dx, ref, "float32")


def test_nll_tails_on_small_ub(rng):
    n, c = 31, 1001
    x = rng.standard_normal((n, c)).astype(np.float32)
    t = rng.integers(0, c, n).astype(np.int64)
    w = rng.uniform(0.5, 2, c).astype(np.float32)
    g = rng.standard_normal(n).astype(np.float32)
    tw = np.array([3.0], np.float32)
    k = tilegrad.compile("nll_loss_backward", SMALL)
    plan = k.plan(grad_output=g, self=x, target=t, weight=w, total_weight=tw, reduction="none")
    # the zero fill walks grad_input as one row (collapse-contiguous-rows), split over cores, in UB tiles
    assert plan.stages[0]["extent"] == n * c and plan.stages[0]["tiles"][0] < n * c // 3
    out = k(grad_output=g, self=x, target=t, weight=w, total_weight=tw, reduction="none")
    ref = torch.ops.aten.nll_loss_backward(to_torch(g), to_torch(x), torch.from_numpy(t), to_torch(w), 0, -100,
                                           torch.tensor(3.0))
    assert_close(out, ref, "float32")


@tg.op(outputs={"dx": tg.like("x"), "dsum": tg.shaped("N", dtype="x")}, replace=True)
def test_two_outputs(x=tg.tensor("N C"), dy=tg.tensor("N C", dtype="x")):
    """dx = dy * x * 2 and dsum[n] = Σ_c dy[n, c]: two outputs from one op."""
    return dy * x * 2.0, (lambda n: tg.reduce_sum(x.shape[1], lambda c: dy[n, c]))


@pytest.mark.parametrize("target", ["cpu", "test-small-ub"])
def test_multi_output_op(target, rng):
    x = rng.standard_normal((19, 1037)).astype(np.float32)
    dy = rng.standard_normal((19, 1037)).astype(np.float32)
    dx, dsum = tilegrad.compile("test_two_outputs", target)(x=x, dy=dy)
    np.testing.assert_allclose(dx, dy * x * 2, rtol=1e-6)
    np.testing.assert_allclose(dsum, dy.astype(np.float64).sum(1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", ["ascend910b", "ft78ne", "test-small-ub"])
def test_strided_inputs_on_scratchpad_targets(target, rng):
    x = rng.uniform(0.05, 0.95, (40, 300)).astype(np.float32)[:, ::3]  # inner stride 3: element-wise copies
    y = np.asfortranarray(rng.uniform(0, 1, (40, 100)).astype(np.float32))
    g = rng.standard_normal((40, 100)).astype(np.float32)
    dx = tilegrad.compile("binary_cross_entropy_grad", target)(input_x=x, input_y=y, dloss=g, reduction="none")
    ref = torch.ops.aten.binary_cross_entropy_backward(to_torch(g), to_torch(x), to_torch(y), None, 0)
    assert_close(dx, ref, "float32")


@pytest.mark.parametrize("target", ["ascend910", "ascend910b"])
@pytest.mark.parametrize("scale", [False, True])
def test_strided_embedding_grad(target, scale, rng):
    grad = rng.standard_normal((50, 64)).astype(np.float32)[:, ::2]
    indices = rng.integers(0, 9, (50,)).astype(np.int32)[::-1]  # negative stride: copied
    out = tilegrad.compile("embedding_dense_backward", target)(grad=grad, indices=indices, num_weights=9,
                                                               scale_grad_by_freq=scale)
    ref = torch.ops.aten.embedding_dense_backward(to_torch(grad), torch.from_numpy(indices.astype(np.int64)),
                                                  9, -1, scale)
    assert_close(out, ref, "float32", reduction=True)
