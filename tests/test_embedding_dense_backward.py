import numpy as np
import pytest
from conftest import NUMPY, assert_close, cases, to_torch, torch

import tilegrad

TARGETS = ("cpu", "ascend910", "ascend910b", "metax-c500")


def reference(grad, indices, num_weights, padding_idx, scale):
    idx = torch.from_numpy(np.trunc(indices.astype(np.float64)).astype(np.int64))
    return torch.ops.aten.embedding_dense_backward(to_torch(grad), idx, num_weights, padding_idx, scale)


def run(target, grad, indices, num_weights, padding_idx=-1, scale=False, **kw):
    k = tilegrad.compile("embedding_dense_backward", target)
    return k(grad=grad, indices=indices, num_weights=num_weights, padding_idx=padding_idx,
             scale_grad_by_freq=scale, **kw)


@pytest.mark.parametrize("target,dtype", cases(TARGETS))
@pytest.mark.parametrize("scale", [False, True])
def test_every_target_and_dtype(target, dtype, scale, rng):
    num_weights, e = 53, 37
    indices = rng.integers(0, num_weights, (11, 7)).astype(np.int64)
    grad = rng.standard_normal((11, 7, e)).astype(NUMPY[dtype])
    out = run(target, grad, indices, num_weights, padding_idx=4, scale=scale)
    assert out.shape == (num_weights, e) and out.dtype == grad.dtype
    assert_close(out, reference(grad, indices, num_weights, 4, scale), dtype, reduction=True)


INDEX_DTYPES = ["int32", "int64", "int16", "int8", "uint8", "bool", "float16", "float32", "float64"]


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("target", ["cpu", "ascend910"])
def test_index_dtypes(index_dtype, target, rng):
    num_weights = 2 if index_dtype == "bool" else 23
    indices = rng.integers(0, num_weights, (40,))
    if index_dtype.startswith("float"):
        indices = indices + rng.uniform(0, 0.9, 40)  # truncated toward zero
    indices = indices.astype(index_dtype)
    grad = rng.standard_normal((40, 9)).astype(np.float32)
    for scale in (False, True):
        out = run(target, grad, indices, num_weights, scale=scale)
        assert_close(out, reference(grad, indices, num_weights, -1, scale), "float32", reduction=True)


@pytest.mark.parametrize("target", ["cpu", "ascend910b"])
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 2, 3), (1, 2, 1, 2, 1, 2, 3)])
def test_multi_dim_indices(target, shape, rng):
    indices = rng.integers(0, 10, shape).astype(np.int32)
    grad = rng.standard_normal(shape + (6,)).astype(np.float32)
    out = run(target, grad, indices, 10, padding_idx=0, scale=True)
    assert_close(out, reference(grad, indices, 10, 0, True), "float32", reduction=True)


def test_grad_rank_may_differ_from_indices(rng):
    indices = rng.integers(0, 10, (4, 6)).astype(np.int64)
    grad = rng.standard_normal((24, 5)).astype(np.float32)
    out = run("cpu", grad, indices, 10)
    ref = torch.ops.aten.embedding_dense_backward(torch.from_numpy(grad), torch.from_numpy(indices.reshape(24)),
                                                  10, -1, False)
    assert_close(out, ref, "float32", reduction=True)


@pytest.mark.parametrize("target", ["cpu", "ascend910", "ascend910b"])
def test_deterministic(target, rng):
    indices = rng.integers(0, 8, (4000,)).astype(np.int64)  # many duplicates per row
    grad = rng.standard_normal((4000, 33)).astype(np.float32)
    first = run(target, grad, indices, 8, scale=True)
    for _ in range(3):
        assert np.array_equal(first.view(np.uint32), run(target, grad, indices, 8, scale=True).view(np.uint32))


@pytest.mark.parametrize("target", ["cpu", "ascend910"])
@pytest.mark.parametrize("bad", [-1, 10, 1 << 40])
@pytest.mark.parametrize("scale", [False, True])
def test_out_of_range_indices_raise(target, bad, scale, rng):
    indices = rng.integers(0, 10, (16,)).astype(np.int64)
    indices[7] = bad
    grad = rng.standard_normal((16, 4)).astype(np.float32)
    with pytest.raises(tilegrad.IndexOutOfRangeError, match="indices"):
        run(target, grad, indices, 10, scale=scale)


def test_not_on_atlas_inference():
    with pytest.raises(tilegrad.UnsupportedError, match="ascend310p"):
        tilegrad.compile("embedding_dense_backward", "ascend310p")


@pytest.mark.parametrize("target,dtype", [("cpu", "float16"), ("cpu", "bfloat16"), ("ascend910", "float16"),
                                          ("ascend910b", "bfloat16")])
@pytest.mark.parametrize("scale", [False, True])
def test_half_types_accumulate_in_float32(target, dtype, scale, rng):
    indices = rng.integers(0, 8, 4000).astype(np.int64)  # ~500 rows add into each output row
    grad = rng.standard_normal((4000, 33)).astype(NUMPY[dtype])
    out = run(target, grad, indices, 8, scale=scale)
    ref = reference(grad, indices, 8, -1, scale)
    assert_close(out, ref, dtype)  # rounded once: the plain half-type tolerance holds


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_one_row_vocabulary_on_ascend910(index_dtype, rng):
    """num_weights=1 with scaling: counts lives in UB (as in the vendor kernel, whose bound assumes
    it) and the fill of out tiles E no longer than E itself; bitwise the untiled build."""
    indices = np.zeros(20, index_dtype)
    grad = rng.standard_normal((20, 37)).astype(np.float32)
    kernel = tilegrad.compile("embedding_dense_backward", "ascend910")
    plan = kernel.plan(grad=grad, indices=indices, num_weights=1, scale_grad_by_freq=True)
    shapes = {(b["stage"], b["name"]): (b["shape"], b["bytes"]) for b in plan.buffers}
    assert shapes[("all", "counts")] == ("1", np.dtype(index_dtype).itemsize)
    assert shapes[(0, "out")] == ("2x40", 320)  # 37 rounded up to a 32-byte block of float32
    assert "workspace: 0 B" in str(plan) and not any(name.startswith("one ") for _, name in shapes)
    out = kernel(grad=grad, indices=indices, num_weights=1, scale_grad_by_freq=True)
    untiled = tilegrad.compile("embedding_dense_backward", "ascend910", untiled=True)(
        grad=grad, indices=indices, num_weights=1, scale_grad_by_freq=True)
    np.testing.assert_array_equal(out, untiled)
    assert_close(out, reference(grad, indices, 1, -1, True), "float32", reduction=True)
