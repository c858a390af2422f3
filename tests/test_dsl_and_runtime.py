"""User-defined ops, reductions, tiled vs untiled, specialization and the compile cache."""

import numpy as np
import pytest
from conftest import assert_close, torch

import tilegrad
import tilegrad.codegen.jit as jit_module
import tilegrad.dsl as tg
import tilegrad.kernel as kernel_module
import tilegrad.pipeline as pipeline


@tg.op(outputs={"dx": tg.like("y")}, replace=True)
def test_softmax_backward(y=tg.tensor("N C"), dy=tg.tensor("N C", dtype="y"), log=tg.attr(False)):
    """dx = y * (dy - Σ_c dy*y), or for log-softmax dx = dy - exp(y) * Σ_c dy."""
    rows, classes = y.shape
    s = tg.temp("s", (rows,), "float32")
    if log:
        s.assign(lambda n: tg.reduce_sum(classes, lambda c: dy[n, c]))
        return lambda n, c: dy[n, c] - tg.exp(y[n, c]) * s[n]
    s.assign(lambda n: tg.reduce_sum(classes, lambda c: dy[n, c] * y[n, c]))
    return lambda n, c: y[n, c] * (dy[n, c] - s[n])


@tg.op(outputs={"dx": tg.like("x")}, replace=True)
def test_gelu_tanh_backward(dy=tg.tensor("*S", dtype="x"), x=tg.tensor("*S")):
    k = 0.7978845608028654
    inner = k * (x + 0.044715 * x * x * x)
    t = tg.tanh(inner)
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3 * 0.044715 * x * x))


def test_registered_ops_are_listed():
    assert {"test_softmax_backward", "test_gelu_tanh_backward"} <= set(tilegrad.list_ops())
    assert tilegrad.list_ops() == sorted(tilegrad.list_ops())


@pytest.mark.parametrize("target", ["cpu", "ascend910b", "ft78ne", "metax-c500"])
@pytest.mark.parametrize("log", [False, True])
def test_user_reduction_op_matches_aten(target, log, rng):
    logits = torch.from_numpy(rng.standard_normal((37, 101)).astype(np.float32))
    y = (torch.log_softmax if log else torch.softmax)(logits, 1)
    dy = torch.from_numpy(rng.standard_normal((37, 101)).astype(np.float32))
    ref = (torch.ops.aten._log_softmax_backward_data if log else torch.ops.aten._softmax_backward_data)(
        dy, y, 1, torch.float32)
    got = tilegrad.compile("test_softmax_backward", target)(y=y.numpy(), dy=dy.numpy(), log=log)
    assert_close(got, ref, "float32", reduction=True)


@pytest.mark.parametrize("target", ["cpu", "mt7004"])
def test_user_elementwise_op_matches_autograd(target, rng):
    x = torch.from_numpy(rng.standard_normal((33, 65)).astype(np.float32)).requires_grad_()
    dy = torch.from_numpy(rng.standard_normal((33, 65)).astype(np.float32))
    torch.nn.functional.gelu(x, approximate="tanh").backward(dy)
    got = tilegrad.compile("test_gelu_tanh_backward", target)(dy=dy.numpy(), x=x.detach().numpy())
    assert_close(got, x.grad, "float32")


def _library_calls(rng):
    x = rng.uniform(0.05, 0.95, 3001).astype(np.float32)
    yield "binary_cross_entropy_grad", dict(input_x=x, input_y=rng.uniform(0, 1, 3001).astype(np.float32),
                                            dloss=np.array([0.3], np.float32))
    t = rng.integers(0, 97, 45).astype(np.int64)
    yield "nll_loss_backward", dict(grad_output=np.ones(1, np.float32),
                                    self=rng.standard_normal((45, 97)).astype(np.float32), target=t,
                                    weight=rng.uniform(0.5, 2, 97).astype(np.float32),
                                    total_weight=np.array([10.0], np.float32))
    yield "embedding_dense_backward", dict(grad=rng.standard_normal((300, 70)).astype(np.float32),
                                           indices=rng.integers(0, 40, 300).astype(np.int32), num_weights=40,
                                           scale_grad_by_freq=True, padding_idx=3)


@pytest.mark.parametrize("target", ["ascend910", "ascend910b", "ascend310p", "ft78ne", "mt7004", "metax-c500"])
def test_tiled_equals_untiled(target, rng):
    for name, call in _library_calls(rng):
        if target not in tilegrad.get_op(name).supported_targets():
            continue
        tiled = tilegrad.compile(name, target)(**call)
        untiled = tilegrad.compile(name, target, untiled=True)(**call)
        np.testing.assert_array_equal(tiled, untiled)


def test_new_batch_size_does_not_recompile(rng, monkeypatch):
    kernel = tilegrad.compile("nll_loss_backward", "ascend910b")

    def call(n):
        return kernel(grad_output=np.ones(1, np.float32), self=np.zeros((n, 11), np.float32),
                      target=np.zeros(n, np.int64), total_weight=np.ones(1, np.float32))

    call(5)
    before = len(kernel_module._SPECIALIZATIONS)
    monkeypatch.setattr(pipeline, "lower", lambda *a, **k: pytest.fail("recompiled"))
    for n in (1, 7, 300):
        assert call(n).shape == (n, 11)
    assert len(kernel_module._SPECIALIZATIONS) == before


def test_disk_cache_keeps_the_code_and_a_kernel_shows_every_stage(tmp_path, monkeypatch, rng):
    monkeypatch.setenv("TILEGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(kernel_module, "_SPECIALIZATIONS", {})
    x = rng.uniform(0.1, 0.9, 100).astype(np.float32)
    call = dict(input_x=x, input_y=x, dloss=np.ones(1, np.float32), reduction="sum")
    kernel = tilegrad.compile("binary_cross_entropy_grad", "mt7004")
    first = kernel(**call)
    entries = list(tmp_path.iterdir())
    assert len(entries) == 1
    assert {p.name for p in entries[0].iterdir()} >= {"llvm.ll", "kernel.so", "meta.json"}
    monkeypatch.setattr(kernel_module, "_SPECIALIZATIONS", {})
    monkeypatch.setattr(pipeline, "lower", lambda *a, **k: pytest.fail("cache miss"))
    monkeypatch.setattr(jit_module, "jit", lambda *a, **k: pytest.fail("a hit compiles nothing: it loads kernel.so"))
    np.testing.assert_array_equal(kernel(**call), first)
    assert "mt7004" in str(kernel.plan(**call))
    monkeypatch.undo()  # the stages up to tiled were not printed for a call: `ir` lowers the kernel again
    monkeypatch.setenv("TILEGRAD_CACHE_DIR", str(tmp_path))
    assert "tg.ub_alloc" in kernel.ir("tiled", **call) and "scf.for" in kernel.ir("loops", **call)
    assert "tg." in kernel.ir("op", **call)


def test_workspace_size_reports_temporaries(rng):
    y = tilegrad.Spec((300, 10))
    assert tilegrad.compile("test_softmax_backward", "cpu").workspace_size(y=y, dy=y) == 300 * 4
    emb = dict(grad=tilegrad.Spec((8, 4)), indices=tilegrad.Spec((8,), "int64"), num_weights=50,
               scale_grad_by_freq=True)
    assert tilegrad.compile("embedding_dense_backward", "cpu").workspace_size(**emb) == 50 * 8
    assert tilegrad.compile("embedding_dense_backward", "ascend910").workspace_size(**emb) == 0  # counts in UB


@tg.op(outputs={"dx": tg.like("x")}, replace=True)
def test_scaled_clip_backward(dy=tg.tensor("*S", dtype="x"), x=tg.tensor("*S"),
                              scale=tg.attr(1.0, runtime=True), limit=tg.attr(3, runtime=True)):
    """dx = scale * dy where |x| < limit, else 0: two runtime attributes, a float and an int."""
    return tg.where(tg.abs_(x) < limit, dy * scale, 0.0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_runtime_attributes_do_not_recompile(dtype, rng, monkeypatch):
    x = (rng.standard_normal(999) * 4).astype(dtype)
    dy = rng.standard_normal(999).astype(dtype)
    kernel = tilegrad.compile("test_scaled_clip_backward", "ascend910b" if dtype == "float32" else "cpu")
    kernel(dy=dy, x=x)
    assert "%scale" in kernel.ir("op", dy=dy, x=x)  # (printed when asked: a lowering of its own)
    monkeypatch.setattr(pipeline, "lower", lambda *a, **k: pytest.fail("recompiled"))
    for scale, limit in ((0.1, 1), (2.5, 2), (1e-3, 7)):
        got = kernel(dy=dy, x=x, scale=scale, limit=limit)
        np.testing.assert_allclose(got, np.where(np.abs(x) < limit, dy * np.asarray(scale, dtype), 0), rtol=1e-6)


def test_a_special_runtime_value_compiles_its_own_kernel_without_the_prior_read(rng):
    """beta = 0 (special) folds `where(beta.eq(0), ...)`: dx is never read, so NaN there cannot leak
    and no zero-filled dx is allocated; any other beta reads and blends it."""
    kernel = tilegrad.compile("activation_backward", "cpu")
    dy = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    assert "memref.load %dx" not in kernel.ir("loops", dy=dy, x=x, mode="relu")
    assert "memref.load %dx" in kernel.ir("loops", dy=dy, x=x, mode="relu", beta=0.5)
    relu = np.where(x > 0, dy, 0)
    for beta in (0.0, -0.0, 0.5, 2.0):
        prior = np.full(x.shape, np.nan if beta == 0 else 2.0, np.float32)
        kernel(dy=dy, x=x, mode="relu", beta=beta, dx=prior)
        np.testing.assert_allclose(prior, relu + (beta * 2.0 if beta else 0.0), rtol=1e-6)


def test_ignore_index_is_a_runtime_value(rng, monkeypatch):
    kernel = tilegrad.compile("nll_loss_backward", "cpu")
    x = rng.standard_normal((20, 6)).astype(np.float32)
    t = rng.integers(0, 6, 20).astype(np.int64)
    call = dict(grad_output=np.ones(1, np.float32), self=x, target=t, total_weight=np.ones(1, np.float32),
                reduction="sum")
    kernel(**call)
    monkeypatch.setattr(pipeline, "lower", lambda *a, **k: pytest.fail("recompiled"))
    for ignore in range(6):
        out = kernel(**call, ignore_index=ignore)
        assert not out[t == ignore].any() and (out[t != ignore].sum(1) == -1).all()


@tg.op(outputs={"dscale": tg.shaped(dtype="x")}, replace=True)
def test_scale_backward(dy=tg.tensor("*S", dtype="x"), x=tg.tensor("*S"), mean=tg.attr(False)):
    """y = scale * x with a scalar parameter: dscale = Σ dy * x (a reduction to one element)."""
    n = x.numel
    total = lambda: tg.reduce_sum(n, lambda r: dy.flat(r) * x.flat(r))  # noqa: E731
    return (lambda: total() / n) if mean else total


@pytest.mark.parametrize("target", ["cpu", "ascend910b", "ft78ne"])
@pytest.mark.parametrize("mean", [False, True])
def test_scalar_reduction_uses_cross_core_partials(target, mean, rng):
    x = rng.standard_normal((301, 7)).astype(np.float32)
    dy = rng.standard_normal((301, 7)).astype(np.float32)
    kernel = tilegrad.compile("test_scale_backward", target)
    got = kernel(dy=dy, x=x, mean=mean)
    expected = (dy.astype(np.float64) * x).sum() / (x.size if mean else 1)
    assert got.shape == () and abs(float(got) - expected) < 1e-4 * max(1.0, abs(expected))
    cores = tilegrad.get_target(target).cores
    assert kernel.workspace_size(dy=dy, x=x, mean=mean) == 4 * cores
    tiled = kernel.ir("tiled", dy=dy, x=x, mean=mean)
    assert f"%partials0: memref<{cores}xf32>" in tiled and "_stage1" in tiled
    assert "reduction axis split over cores" in str(kernel.plan(dy=dy, x=x, mean=mean))
    assert np.array_equal(got, kernel(dy=dy, x=x, mean=mean))  # deterministic combine order


@tg.op(outputs={"dx": tg.like("dy")}, replace=True)
def test_broadcast_backward(dy=tg.tensor("N C"), row_scale=tg.tensor("N 1", dtype="dy"),
                            col_bias=tg.tensor("C", dtype="dy"), one=tg.tensor(tg.ONE, dtype="dy")):
    """numpy broadcasting: [N, C] with [N, 1], [C] and a one-element tensor."""
    return dy * row_scale + col_bias * one


@pytest.mark.parametrize("target", ["cpu", "ascend910b"])
def test_numpy_broadcasting(target, rng):
    dy = rng.standard_normal((13, 29)).astype(np.float32)
    row_scale = rng.standard_normal((13, 1)).astype(np.float32)
    col_bias = rng.standard_normal(29).astype(np.float32)
    one = np.array([[2.0]], np.float32)
    got = tilegrad.compile("test_broadcast_backward", target)(dy=dy, row_scale=row_scale, col_bias=col_bias, one=one)
    np.testing.assert_allclose(got, dy * row_scale + col_bias * one, rtol=1e-6)
    with pytest.raises(tilegrad.ShapeError, match="row_scale"):
        tilegrad.compile("test_broadcast_backward", target)(dy=dy, row_scale=row_scale.T, col_bias=col_bias, one=one)


def test_ub_overflow_is_caught_by_the_canary():
    from tilegrad.codegen.launcher import acquire_ub, release_ub

    ub = acquire_ub(3, 1024)
    assert ub.shape == (3, 1024 + 64)
    release_ub(ub)  # intact
    ub = acquire_ub(3, 1024)
    ub[1, 1024] = 0  # one byte past block 1's UB
    with pytest.raises(RuntimeError, match="block 1 wrote past the end of its 1024-byte UB"):
        release_ub(ub)


@tg.op(outputs={"out": tg.like("x")}, replace=True)
def test_view_row_scale(
    x=tg.tensor("N C H W", view=lambda shape, a: ((0,), (1, 2, 3))),
):
    """out = x / Σ_sample x: the kernel sees x (and out) as [N, C*H*W]: one flat row per sample."""
    samples, size = x.shape
    total = tg.temp("total", (samples,))
    total.assign(lambda n: tg.reduce_sum(size, lambda k: x[n, k]))
    return lambda n, k: x[n, k] / total[n]


def test_a_view_chosen_per_call(rng):
    x = rng.uniform(0.5, 1.5, (3, 4, 5, 6)).astype(np.float32)
    want = x / x.sum(axis=(1, 2, 3), keepdims=True)
    kernel = tilegrad.compile("test_view_row_scale", "ascend910b")
    assert 'memref<?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N C*H*W"}' in kernel.ir("op", x=x)
    np.testing.assert_allclose(kernel(x=x), want, rtol=1e-5)
    strided = np.zeros((3, 4, 5, 12), np.float32)[..., ::2]  # not viewable: the input is copied, the output
    np.testing.assert_allclose(kernel(x=x.copy(), out=strided), want, rtol=1e-5)  # written through a copy
    np.testing.assert_allclose(strided, want, rtol=1e-5)
    np.testing.assert_allclose(kernel(x=np.asfortranarray(x)), want, rtol=1e-5)


@pytest.mark.parametrize("view, rule", [
    (lambda shape, a: (shape[0], shape[1] * shape[2] * shape[3]), "returns groups of the given axes"),
    (lambda shape, a: ((0,), (1,)), "leave out only axes of size 1"),
    (lambda shape, a: ((1,), (0, 2, 3)), "name axes in order"),
])
def test_a_view_that_is_no_grouping_of_the_axes_is_refused_naming_the_op(view, rule):
    @tg.op(outputs={"out": tg.like("x")}, replace=True)
    def test_bad_view(x=tg.tensor("N C H W", view=view)):
        """out = x."""
        return lambda *i: x[i]

    with pytest.raises(tilegrad.DefinitionError, match=rf"test_bad_view: the view of 'x' .*{rule}"):
        tilegrad.compile("test_bad_view", "cpu")(x=np.ones((2, 3, 4, 5), np.float32))


@pytest.mark.parametrize("mode", ["instance", "channel"])
def test_softmax_in_place_through_its_view(mode, rng):
    y = rng.uniform(0, 1, (2, 3, 4, 5)).astype(np.float32)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    kernel = tilegrad.compile("softmax_backward", "cpu")
    want = kernel(y=y, dy=dy, mode=mode)
    in_place = dy.copy()
    assert kernel(y=y, dy=in_place, dx=in_place, mode=mode) is in_place
    np.testing.assert_array_equal(in_place, want)


@tg.op(outputs={"y": tg.like("w")}, replace=True)
def test_strided_window_sum(x=tg.tensor("N"), w=tg.tensor("O", dtype="x")):
    """y[o] = w[o] * Σ_{k<3} x[2o + k]: an affine window read, plain when its bound is proven."""
    return lambda o: w[o] * tg.reduce_sum(3, lambda k: x[2 * o + k])


def test_an_affine_window_read_is_plain_and_its_bound_checked_before_the_call(rng):
    kernel = tilegrad.compile("test_strided_window_sum", "cpu")
    x = rng.standard_normal(11).astype(np.float32)
    w = rng.standard_normal(5).astype(np.float32)
    loops = kernel.ir("loops", x=x, w=w)
    assert "arith.maxsi" not in loops and "arith.minsi" not in loops  # no clamp on 2o + k
    want = w * np.array([x[2 * o:2 * o + 3].sum() for o in range(5)])
    np.testing.assert_allclose(kernel(x=x, w=w), want, rtol=1e-6)
    with pytest.raises(tilegrad.ShapeError, match=r"x is read along axis 0 at indices up to"):
        kernel(x=x, w=rng.standard_normal(6).astype(np.float32))  # 2*5 + 2 = 12 > 10
    assert kernel(x=x[:0], w=w[:0]).shape == (0,)  # nothing is read for an empty w
