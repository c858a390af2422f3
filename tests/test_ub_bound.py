"""SPEC 6.3: embedding_dense_backward on ascend910 with scale_grad_by_freq has the vendor's UB bound."""

import re

import numpy as np
import pytest
from conftest import assert_close, torch

import tilegrad

CASES = [("int32", 36, 4), ("int64", 20, 8)]


@pytest.mark.parametrize("index_dtype,coef,entry", CASES)
@pytest.mark.parametrize("num_weights", [1000, 45, 1])
def test_largest_admissible_e_runs_and_the_next_is_refused(index_dtype, coef, entry, num_weights, rng):
    cores = tilegrad.get_target("ascend910").cores
    counts_size = num_weights // cores + num_weights % cores
    limit = 180192 - entry * counts_size
    largest = (limit - 1) // coef
    assert coef * largest < limit <= coef * (largest + 1)
    kernel = tilegrad.compile("embedding_dense_backward", "ascend910")
    indices = rng.integers(0, num_weights, 40).astype(index_dtype)
    grad = rng.standard_normal((40, largest)).astype(np.float32)
    out = kernel(grad=grad, indices=indices, num_weights=num_weights, scale_grad_by_freq=True)
    ref = torch.ops.aten.embedding_dense_backward(torch.from_numpy(grad), torch.from_numpy(indices.astype(np.int64)),
                                                  num_weights, -1, True)
    assert_close(out, ref, "float32", reduction=True)

    bound = f"{coef}*E < 180192 - {entry}*counts_size"
    report = kernel.plan(grad=grad, indices=indices, num_weights=num_weights, scale_grad_by_freq=True)
    assert bound in str(report) and report.fits
    too_big = np.zeros((40, largest + 1), np.float32)
    with pytest.raises(tilegrad.UBCapacityError, match=r"ascend910.*grad.*" + bound.replace("*", r"\*")):
        kernel(grad=too_big, indices=indices, num_weights=num_weights, scale_grad_by_freq=True)
    with pytest.raises(tilegrad.UBCapacityError):
        kernel.plan(grad=too_big, indices=indices, num_weights=num_weights, scale_grad_by_freq=True)
    refused = kernel.plan(grad=too_big, indices=indices, num_weights=num_weights, scale_grad_by_freq=True, check=False)
    assert not refused.fits and "DOES NOT FIT" in str(refused)


def vendor_largest_e(num_weights: int, coef: int, entry: int) -> tuple[int, int]:
    """Seed 002: the largest embeddingDim with coef*E < 180192 - entry*countsSize, and countsSize."""
    cores = tilegrad.get_target("ascend910").cores
    counts_size = num_weights // cores + num_weights % cores
    return (180192 - entry * counts_size - 1) // coef, counts_size


def embedding_plan(index_dtype: str, num_weights: int, e: int, check: bool = True):
    kernel = tilegrad.compile("embedding_dense_backward", "ascend910")
    return kernel.plan(grad=tilegrad.Spec((4, e), "float32"), indices=tilegrad.Spec((4,), index_dtype),
                       num_weights=num_weights, scale_grad_by_freq=True, check=check)


# below, at and above the core count, primes, and vocabularies that leave little or no room for E
SWEEP = [1, 2, 3, 4, 5, 7, 13, 31, 32, 33, 64, 97, 4093, 100003]


@pytest.mark.parametrize("index_dtype,coef,entry", CASES)
def test_bound_is_the_vendors_for_every_num_weights(index_dtype, coef, entry):
    """The refusal of the first E the vendor formula rejects states the formula and the largest E it
    implies for this num_weights; that E is the vendor's (plans only: no memory, no machine code for
    a plan that does not fit)."""
    bound = f"{coef}*E < 180192 - {entry}*counts_size"
    for num_weights in SWEEP:
        largest, counts_size = vendor_largest_e(num_weights, coef, entry)
        refused = embedding_plan(index_dtype, num_weights, largest + 1, check=False)
        assert not refused.fits, num_weights
        assert refused.error.startswith("target ascend910: stage 2 needs"), refused.error
        assert "must stay below 180224 B" in refused.error and f"shape bound: {bound}" in refused.error
        assert f"here counts_size = {counts_size}, so E <= {largest} (this call has E = {largest + 1})" \
            in refused.error, (num_weights, refused.error)
        with pytest.raises(tilegrad.UBCapacityError, match=re.escape(f"so E <= {largest} ")):
            embedding_plan(index_dtype, num_weights, largest + 1)


@pytest.mark.parametrize("index_dtype,coef,entry", CASES)
@pytest.mark.parametrize("num_weights", [1, 3, 33, 100003])
def test_the_vendors_largest_e_is_admitted(index_dtype, coef, entry, num_weights):
    largest, _ = vendor_largest_e(num_weights, coef, entry)
    plan = embedding_plan(index_dtype, num_weights, largest)
    assert plan.fits and plan.ub_used < 180224


def test_a_vocabulary_that_leaves_no_room_for_any_e_is_refused_with_the_bound():
    largest, counts_size = vendor_largest_e(1_000_003, 20, 8)
    assert largest < 1
    with pytest.raises(tilegrad.UBCapacityError, match=re.escape(
            f"20*E < 180192 - 8*counts_size; 8*counts_size < 180192; so counts_size <= 22523 (this call has "
            f"counts_size = {counts_size}); here counts_size = {counts_size}, so no E >= 1 fits")):
        embedding_plan("int64", 1_000_003, 1)


def test_e_far_past_the_ub_is_refused_not_an_internal_error():
    """Buffers that reach past the UB itself are refused before tg.ub_alloc's verifier sees them
    (the tests and the guard build verify every pass)."""
    match = r"ascend910: stage 2 needs 600144 B.*here counts_size = 14, so E <= 9003 \(this call has E = 30000\)"
    with pytest.raises(tilegrad.UBCapacityError, match=match):
        embedding_plan("int64", 45, 30000, check=False)
    kernel = tilegrad.compile("embedding_dense_backward", "ascend910")
    with pytest.raises(tilegrad.UBCapacityError, match=match):
        kernel(grad=np.zeros((4, 30000), np.float32), indices=np.zeros(4, np.int64), num_weights=45,
               scale_grad_by_freq=True)


def test_without_scaling_e_is_tiled_and_unbounded(rng):
    kernel = tilegrad.compile("embedding_dense_backward", "ascend910")
    indices = rng.integers(0, 30, 16).astype(np.int32)
    grad = rng.standard_normal((16, 20000)).astype(np.float32)
    out = kernel(grad=grad, indices=indices, num_weights=30)
    ref = torch.ops.aten.embedding_dense_backward(torch.from_numpy(grad), torch.from_numpy(indices.astype(np.int64)),
                                                  30, -1, False)
    assert_close(out, ref, "float32", reduction=True)


def test_cli_plan_prints_the_bound(capsys):
    from tilegrad.cli import main

    code = main(["plan", "embedding_dense_backward", "--target", "ascend910", "--shape", "grad=64x100",
                 "indices=64", "--dtype", "indices=int32", "--attr", "num_weights=1000", "scale_grad_by_freq=true"])
    out = capsys.readouterr().out
    assert code == 0
    assert "36*E < 180192 - 4*counts_size" in out and "UB buffers" in out and "block dim 32" in out


def test_a_short_static_axis_gets_a_tile_no_longer_than_itself(rng):
    """batch norm's per-channel parameters are 1xCx1x1: their last axis is statically 1, so its UB
    tiles are one aligned block (2x8 float32), not the 2x5624 the UB would hold. The clamped stage
    copies d_gamma and d_beta out, so the tile changes no bits."""
    x = rng.standard_normal((2, 3, 4, 56)).astype(np.float32)
    dy = rng.standard_normal((2, 3, 4, 56)).astype(np.float32)
    gamma = rng.uniform(0.5, 2, (1, 3, 1, 1)).astype(np.float32)
    kernel = tilegrad.compile("batch_norm_backward", "ascend910b")
    plan = kernel.plan(x=x, dy=dy, bn_scale=gamma)
    params = [b for b in plan.buffers if b["name"] in ("d_bn_scale", "d_bn_bias", "d_gamma", "d_beta")]
    assert len(params) == 4 and all(b["shape"] == "2x8" and b["bytes"] == 64 for b in params), params
    got = kernel(x=x, dy=dy, bn_scale=gamma)
    xt, gt = torch.from_numpy(x).double().requires_grad_(), torch.from_numpy(gamma).double().requires_grad_()
    bt = torch.zeros_like(gt, requires_grad=True)
    y = torch.nn.functional.batch_norm(xt, None, None, gt.flatten(), bt.flatten(), training=True, eps=1e-5)
    y.backward(torch.from_numpy(dy).double())
    for ours, want in zip(got, (xt.grad, gt.grad, bt.grad)):
        assert_close(ours, want, "float32", reduction=True)


def test_a_tile_over_a_runtime_dim_fits_the_longest_row():
    """Dims are values the kernel reads per call (one kernel for every W), so a tile along W is as
    long as the UB allows whatever this call's W: 56-wide and 4000-wide rows share the kernel and
    its buffers; the copies move only the row's own 56 elements."""
    kernel = tilegrad.compile("divisive_normalization_backward", "ascend910b")

    def buffers(w: int) -> dict[str, int]:
        spec = tilegrad.Spec((2, 3, 4, w), "float32")
        return {(b["stage"], b["name"]): b["bytes"] for b in kernel.plan(x=spec, dy=spec).buffers}

    short = buffers(56)
    assert short == buffers(4000) and short[(0, "squares_1")] == 2 * 16384 * 4
