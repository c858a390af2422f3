"""SPEC 6.3: embedding_dense_backward on ascend910 with scale_grad_by_freq has the vendor's UB bound."""

import numpy as np
import pytest
from conftest import assert_close, torch

import tilegrad

CASES = [("int32", 36, 4), ("int64", 20, 8)]


@pytest.mark.parametrize("index_dtype,coef,entry", CASES)
@pytest.mark.parametrize("num_weights", [1000, 45])
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
