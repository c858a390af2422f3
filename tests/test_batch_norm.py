"""SPEC 6.6: batch_norm_backward(_ex) against aten.native_batch_norm_backward and autograd."""

import numpy as np
import pytest
from conftest import NUMPY, assert_close, to_torch, torch

import tilegrad

F = torch.nn.functional


def params(values, x, mode):
    shape = (1, x.shape[1]) + (x.shape[2:] if mode == "per_activation" else (1,) * (x.ndim - 2))
    return np.ascontiguousarray(values.reshape(shape), np.float32)


def forward(x, gamma, beta, mode, eps=1e-5):
    """bn in float64 torch for either mode, returning (out, mean, invstd) of the reduced shape."""
    axes = [0] + ([] if mode == "per_activation" else list(range(2, x.dim())))
    mean = x.mean(axes, keepdim=True)
    invstd = 1.0 / torch.sqrt(((x - mean) ** 2).mean(axes, keepdim=True) + eps)
    return (x - mean) * invstd * gamma + beta, mean, invstd


# (6, 5, 1, 1): batch norm after a linear layer, which the kernel sees as [N, C] (_data_view)
CPU_CASES = [("cpu", "float32", shape, mode, saved) for shape in [(4, 3, 5, 6), (5, 3, 2, 3, 4), (6, 5, 1, 1)]
             for mode in ["spatial", "per_activation"] for saved in [True, False]]
OTHER_CASES = [("metax-c500", "float16", (4, 3, 5, 6), "spatial", True),
               ("metax-c500", "float16", (5, 3, 2, 3, 4), "per_activation", False),
               ("ascend910b", "float32", (4, 3, 5, 6), "spatial_persistent", False),
               ("ascend910b", "float32", (5, 3, 2, 3, 4), "spatial", True),
               ("ascend910b", "float32", (6, 5, 1, 1, 1), "spatial", False)]


@pytest.mark.parametrize("target,dtype,shape,mode,saved", CPU_CASES + OTHER_CASES)
def test_batch_norm_backward(target, dtype, shape, mode, saved, rng):
    x = rng.standard_normal(shape).astype(NUMPY[dtype])
    dy = rng.standard_normal(shape).astype(NUMPY[dtype])
    pshape = (1, shape[1]) + (shape[2:] if mode == "per_activation" else (1,) * (len(shape) - 2))
    gamma = rng.uniform(0.5, 2, pshape).astype(np.float32)
    xt = to_torch(x).double().requires_grad_()
    gt = torch.from_numpy(gamma).double().requires_grad_()
    bt = torch.zeros(pshape, dtype=torch.float64, requires_grad=True)
    out, mean, invstd = forward(xt, gt, bt, mode)
    out.backward(to_torch(dy).double())
    stats = dict(saved_mean=mean.detach().float().numpy(), saved_inv_variance=invstd.detach().float().numpy())
    dx, d_scale, d_bias = tilegrad.compile("batch_norm_backward", target)(
        x=x, dy=dy, bn_scale=gamma, mode=mode, **(stats if saved else {}))
    assert_close(dx, xt.grad, dtype, reduction=True)
    assert_close(d_scale, gt.grad, "float32" if dtype == "float32" else dtype, reduction=True)
    assert_close(d_bias, bt.grad, "float32" if dtype == "float32" else dtype, reduction=True)


def test_matches_native_batch_norm_backward_and_blends(rng):
    x = rng.standard_normal((4, 3, 5, 6)).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    g = rng.uniform(0.5, 2, 3).astype(np.float32)
    _, mean, invstd = torch.ops.aten.native_batch_norm(torch.from_numpy(x), torch.from_numpy(g), None, None,
                                                       None, True, 0.1, 1e-5)
    ref = torch.ops.aten.native_batch_norm_backward(torch.from_numpy(dy), torch.from_numpy(x), torch.from_numpy(g),
                                                    None, None, mean, invstd, True, 1e-5, [True, True, True])
    kernel = tilegrad.compile("batch_norm_backward", "cpu")
    p = lambda a: params(a, x, "spatial")  # noqa: E731
    prior = [np.ones_like(x), np.ones((1, 3, 1, 1), np.float32), np.ones((1, 3, 1, 1), np.float32)]
    dx, d_scale, d_bias = kernel(x=x, dy=dy, bn_scale=p(g), saved_mean=p(mean.numpy()),
                                 saved_inv_variance=p(invstd.numpy()), alpha_data_diff=2.0, beta_data_diff=1.0,
                                 alpha_param_diff=0.5, beta_param_diff=3.0, dx=prior[0], d_bn_scale=prior[1],
                                 d_bn_bias=prior[2])
    assert_close(dx, 2.0 * ref[0].numpy() + 1.0, "float32", reduction=True)
    assert_close(d_scale.ravel(), 0.5 * ref[1].numpy() + 3.0, "float32", reduction=True)
    assert_close(d_bias.ravel(), 0.5 * ref[2].numpy() + 3.0, "float32", reduction=True)


@pytest.mark.parametrize("bn_ops", ["bn", "bn_activation", "bn_add_activation"])
@pytest.mark.parametrize("activation", ["relu", "sigmoid", "swish"])
def test_batch_norm_backward_ex(bn_ops, activation, rng):
    if bn_ops == "bn_add_activation" and activation == "swish":
        pytest.skip("refused: see test_ex_errors")
    shape = (3, 4, 5, 5)
    x = rng.standard_normal(shape).astype(np.float32)
    z = rng.standard_normal(shape).astype(np.float32)
    dy = rng.standard_normal(shape).astype(np.float32)
    gamma = rng.uniform(0.5, 2, (1, 4, 1, 1)).astype(np.float32)
    beta = rng.standard_normal((1, 4, 1, 1)).astype(np.float32)
    xt = to_torch(x).double().requires_grad_()
    zt = to_torch(z).double().requires_grad_()
    gt = torch.from_numpy(gamma).double().requires_grad_()
    bt = torch.from_numpy(beta).double().requires_grad_()
    pre, mean, invstd = forward(xt, gt, bt, "spatial")
    if bn_ops == "bn_add_activation":
        pre = pre + zt
    act = {"relu": torch.relu, "sigmoid": torch.sigmoid, "swish": lambda t: t * torch.sigmoid(t)}[activation]
    y = act(pre) if bn_ops != "bn" else pre
    y.backward(to_torch(dy).double())
    outputs = tilegrad.compile("batch_norm_backward_ex", "cpu")(
        x=x, y=y.detach().float().numpy(), dy=dy, bn_scale=gamma, bn_bias=beta,
        saved_mean=mean.detach().float().numpy(), saved_inv_variance=invstd.detach().float().numpy(),
        bn_ops=bn_ops, activation=activation)
    dx, d_scale, d_bias, dz = outputs
    assert_close(dx, xt.grad, "float32", reduction=True)
    assert_close(d_scale, gt.grad, "float32", reduction=True)
    assert_close(d_bias, bt.grad, "float32", reduction=True)
    if bn_ops == "bn_add_activation":
        assert_close(dz, zt.grad, "float32", reduction=True)
    else:
        assert dz is None  # not produced: not allocated, not written


def test_ex_errors(rng):
    x = np.zeros((2, 3, 4, 4), np.float32)
    p = np.ones((1, 3, 1, 1), np.float32)
    kernel = tilegrad.compile("batch_norm_backward", "cpu")
    with pytest.raises(tilegrad.AttributeValueError, match="epsilon"):
        kernel(x=x, dy=x, bn_scale=p, epsilon=1e-6)
    with pytest.raises(tilegrad.ShapeError, match="pair"):
        kernel(x=x, dy=x, bn_scale=p, saved_mean=p)
    with pytest.raises(tilegrad.ShapeError, match="bn_scale.*1xCx1x1"):
        kernel(x=x, dy=x, bn_scale=np.ones((1, 3, 4, 4), np.float32))
    with pytest.raises(tilegrad.AttributeValueError, match="swish"):
        tilegrad.compile("batch_norm_backward_ex", "cpu")(x=x, y=x, dy=x, bn_scale=p, bn_bias=p,
                                                          bn_ops="bn_add_activation", activation="swish")


@pytest.mark.parametrize("target,dtype,shape", [("cpu", "float32", (4, 3, 5, 6)),
                                                ("metax-c500", "float16", (3, 2, 4, 5)),
                                                ("ascend910b", "float32", (2, 3, 2, 3, 4)),
                                                ("cpu", "float32", (7, 5, 1, 1)),
                                                ("cpu", "float32", (2051, 37, 1, 1)),  # blocks of 1024, 3
                                                ("ascend910b", "float32", (7, 5, 1, 1))])
def test_batch_norm_forward_training_matches_aten(target, dtype, shape, rng):
    x = rng.standard_normal(shape).astype(NUMPY[dtype])
    c = shape[1]
    g, b = rng.uniform(0.5, 2, c).astype(np.float32), rng.standard_normal(c).astype(np.float32)
    rm, rv = rng.standard_normal(c).astype(np.float32), rng.uniform(0.5, 2, c).astype(np.float32)
    rm_t, rv_t = torch.from_numpy(rm.copy()), torch.from_numpy(rv.copy())
    out, save_mean, save_inv = torch.ops.aten.native_batch_norm(
        to_torch(x), torch.from_numpy(g), torch.from_numpy(b), rm_t, rv_t, True, 0.2, 1e-5)
    p = lambda a: params(a, x, "spatial").copy()  # noqa: E731
    running_mean, running_var = p(rm), p(rv)
    y, mean, inv = tilegrad.compile("batch_norm_forward_training", target)(
        x=x, bn_scale=p(g), bn_bias=p(b), running_mean=running_mean, running_variance=running_var,
        exponential_average_factor=0.2)
    assert_close(y, out, dtype, reduction=True)
    assert_close(mean.ravel(), save_mean, "float32", reduction=True)
    assert_close(inv.ravel(), save_inv, "float32" if dtype == "float32" else dtype, reduction=True)
    assert_close(running_mean.ravel(), rm_t, "float32", reduction=True)  # updated in place
    assert_close(running_var.ravel(), rv_t, "float32" if dtype == "float32" else dtype, reduction=True)



def test_statistics_sweeps_jammed_by_eight_or_by_two_give_the_same_bits(monkeypatch, rng):
    """jam-sweep-terms adds each column's terms in row order however many rows a pass takes: the
    host model's 8 (sweep_terms) and 2 give the same outputs, the rows left over (2051 = 8 x 256 + 3,
    in blocks of 1024) included."""
    import dataclasses

    from tilegrad.backends import cpu as cpu_backend
    from tilegrad.targets import get_target
    from tilegrad.targets.host import HOST

    x = rng.standard_normal((2051, 37, 1, 1)).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    g, b = rng.uniform(0.5, 2, (1, 37, 1, 1)).astype(np.float32), rng.standard_normal((1, 37, 1, 1)).astype(np.float32)
    two = tilegrad.register_target(dataclasses.replace(get_target("cpu"), name="test-two-terms"), replace=True)
    results, tiled = {}, {}
    for target in ("cpu", two):
        if target is two:
            two_terms = dataclasses.replace(HOST, sweep_terms=2)  # the host model's value, as another host's
            monkeypatch.setattr(cpu_backend, "BACKEND", dataclasses.replace(cpu_backend.BACKEND, host=two_terms))
        kernel = tilegrad.compile("batch_norm_forward_training", target)
        forward = kernel(x=x, bn_scale=g, bn_bias=b)
        tiled[target is two] = kernel.ir("tiled", x=x, bn_scale=g, bn_bias=b)
        backward = tilegrad.compile("batch_norm_backward", target)(x=x, dy=dy, bn_scale=g)
        results[target is two] = [*forward, *backward]
    assert tiled[False].count("%x[") > tiled[True].count("%x[")  # the sweep reads 8 rows a pass, not 2
    for ours, theirs in zip(results[False], results[True]):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("shape", [(4096, 8, 1, 1), (8, 4, 16, 16)])
@pytest.mark.parametrize("mean, std, bound", [(0.0, 1.0, 2e-6), (1000.0, 0.01, 5e-5)])
def test_one_pass_variance_is_accurate(shape, mean, std, bound, rng):
    """The variance of one sweep (sums of x - K and its square around K, the mean of 16 of the
    channel's values) stays within float32 rounding of float64's, for centered data and for data
    whose mean is 1e5 of its std (where a two-pass float32 variance is 6.6e-4 off: its mean's
    rounding is of the std's size)."""
    x = (mean + std * rng.standard_normal(shape)).astype(np.float32)
    ones = np.ones((1, shape[1], 1, 1), np.float32)
    y, saved_mean, inv = tilegrad.compile("batch_norm_forward_training", "cpu")(x=x, bn_scale=ones, bn_bias=0 * ones)
    x64 = x.astype(np.float64)
    inv64 = 1.0 / np.sqrt(x64.var(axis=(0, 2, 3)) + 1e-5)
    assert np.max(np.abs(inv.ravel() / inv64 - 1.0)) < bound
    np.testing.assert_allclose(saved_mean.ravel(), x64.mean(axis=(0, 2, 3)), rtol=1e-6, atol=1e-6 * std)

def test_per_activation_and_ex_against_torch(rng):
    x = rng.standard_normal((5, 3, 4, 4)).astype(np.float32)
    z = rng.standard_normal(x.shape).astype(np.float32)
    gamma = rng.uniform(0.5, 2, (1, 3, 4, 4)).astype(np.float32)
    beta = rng.standard_normal((1, 3, 4, 4)).astype(np.float32)
    out, mean, invstd = forward(to_torch(x).double(), torch.from_numpy(gamma).double(),
                                torch.from_numpy(beta).double(), "per_activation")
    y, got_mean, got_inv = tilegrad.compile("batch_norm_forward_training", "cpu")(
        x=x, bn_scale=gamma, bn_bias=beta, mode="per_activation")
    assert_close(y, out, "float32", reduction=True)
    assert_close(got_mean, mean, "float32", reduction=True)
    assert_close(got_inv, invstd, "float32", reduction=True)
    g1, b1 = gamma[:, :, :1, :1].copy(), beta[:, :, :1, :1].copy()
    pre, _, _ = forward(to_torch(x).double(), torch.from_numpy(g1).double(), torch.from_numpy(b1).double(),
                        "spatial")
    prior = np.full(x.shape, 2.0, np.float32)
    y = tilegrad.compile("batch_norm_forward_training_ex", "cpu")(
        x=x, z=z, bn_scale=g1, bn_bias=b1, bn_ops="bn_add_activation", activation="relu", alpha=0.5, beta=1.0,
        y=prior)[0]
    assert_close(y, 0.5 * torch.relu(pre + to_torch(z).double()).numpy() + 2.0, "float32", reduction=True)
    with pytest.raises(tilegrad.ShapeError, match="'z'.*required"):
        tilegrad.compile("batch_norm_forward_training_ex", "cpu")(x=x, bn_scale=g1, bn_bias=b1,
                                                                  bn_ops="bn_add_activation")


@pytest.mark.parametrize("op", ["batch_norm_backward", "batch_norm_forward_training"])
def test_the_kernel_sees_one_position_a_sample_as_a_row_and_per_activation_as_columns(op, rng):
    """x of N x C x 1 x 1 in a spatial mode is [N, C] (each channel's sum a column of it, not a
    column one element wide); per_activation is [N, C*H*W] beside [1, C*H*W] parameters; x with
    positions in a spatial mode is as given. The kernel's axes keep their pattern's names (merged
    ones by their members'), so it knows x's columns are the parameters' (the parameters' unit
    dims are static: C's stride is 1)."""
    kernel = tilegrad.compile(op, "cpu")

    def op_stage(shape, mode):
        x = rng.standard_normal(shape).astype(np.float32)
        p = params(np.ones(shape[1] * (int(np.prod(shape[2:])) if mode == "per_activation" else 1)), x, mode)
        args = dict(dy=x) if op == "batch_norm_backward" else dict(bn_bias=p)
        return kernel.ir("op", x=x, bn_scale=p, mode=mode, **args)

    one_position = op_stage((6, 5, 1, 1), "spatial")
    assert '%x: memref<?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N C"}' in one_position
    assert '%bn_scale: memref<1x?x1x1xf32> {tg.name = "bn_scale", tg.role = "input", tg.dims = "1 C 1 1"}' \
        in one_position
    per_activation = op_stage((6, 5, 2, 3), "per_activation")
    assert '%x: memref<?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N C*H*W"}' in per_activation
    assert '%bn_scale: memref<1x?xf32> {tg.name = "bn_scale", tg.role = "input", tg.dims = "1 C*H*W"}' \
        in per_activation
    assert 'tg.dims = "N C H W"' in op_stage((6, 5, 2, 3), "spatial")
