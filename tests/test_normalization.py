"""SPEC 6.8: normalization_backward / normalization_forward_training (group_cnt = 1 is batch norm,
group_cnt > 1 group norm, oracle aten.native_group_norm(_backward))."""

import numpy as np
import pytest
from conftest import NUMPY, assert_close, to_torch, torch

import tilegrad


def channel_params(values):
    return np.ascontiguousarray(values.reshape(1, -1, 1, 1), np.float32)


@pytest.mark.parametrize("target,dtype,saved", [("cpu", "float32", True), ("cpu", "float32", False),
                                                ("ascend910b", "float32", False), ("metax-c500", "float16", True)])
def test_group_norm_against_aten(target, dtype, saved, rng):
    n, c, h, w, groups = 3, 6, 4, 5, 3
    x = rng.standard_normal((n, c, h, w)).astype(NUMPY[dtype])
    dy = rng.standard_normal(x.shape).astype(NUMPY[dtype])
    g, b = rng.uniform(0.5, 2, c).astype(np.float32), rng.standard_normal(c).astype(np.float32)
    out, mean, rstd = torch.ops.aten.native_group_norm(to_torch(x), torch.from_numpy(g), torch.from_numpy(b),
                                                       n, c, h * w, groups, 1e-5)
    y, save_mean, save_inv = tilegrad.compile("normalization_forward_training", target)(
        x=x, bn_scale=channel_params(g), bn_bias=channel_params(b), group_cnt=groups)
    assert save_mean.shape == (n, groups)
    assert_close(y, out, dtype, reduction=True)
    assert_close(save_mean, mean, "float32", reduction=True)
    ref = torch.ops.aten.native_group_norm_backward(to_torch(dy), to_torch(x), mean, rstd, torch.from_numpy(g),
                                                    n, c, h * w, groups, [True, True, True])
    stats = dict(saved_mean=mean.numpy(), saved_inv_variance=rstd.numpy()) if saved else {}
    dx, d_scale, d_bias, _ = tilegrad.compile("normalization_backward", target)(
        x=x, dy=dy, bn_scale=channel_params(g), group_cnt=groups, **stats)
    assert_close(dx, ref[0], dtype, reduction=True)
    assert_close(d_scale.ravel(), ref[1], dtype if dtype != "float32" else "float32", reduction=True)
    assert_close(d_bias.ravel(), ref[2], dtype if dtype != "float32" else "float32", reduction=True)


@pytest.mark.parametrize("shape", [(4, 3, 5, 6), (6, 3, 1, 1)])  # (6, 3, 1, 1): seen as [N, C] by both
def test_group_cnt_one_is_batch_norm(shape, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    g = channel_params(rng.uniform(0.5, 2, 3).astype(np.float32))
    b = channel_params(rng.standard_normal(3).astype(np.float32))
    norm = tilegrad.compile("normalization_backward", "cpu")(x=x, dy=dy, bn_scale=g)
    batch = tilegrad.compile("batch_norm_backward", "cpu")(x=x, dy=dy, bn_scale=g)
    for got, want in zip(norm[:3], batch):
        np.testing.assert_array_equal(got, want)
    forward_norm = tilegrad.compile("normalization_forward_training", "cpu")(x=x, bn_scale=g, bn_bias=b)
    forward_batch = tilegrad.compile("batch_norm_forward_training", "cpu")(x=x, bn_scale=g, bn_bias=b)
    for got, want in zip(forward_norm, forward_batch):
        np.testing.assert_array_equal(got, want)


def manual_group_norm(x, gamma, beta, groups, eps=1e-5):
    n, c = x.shape[:2]
    grouped = x.reshape(n, groups, -1)
    mean = grouped.mean(-1, keepdim=True)
    var = ((grouped - mean) ** 2).mean(-1, keepdim=True)
    return ((grouped - mean) / torch.sqrt(var + eps)).reshape(x.shape) * gamma + beta


@pytest.mark.parametrize("mode,norm_ops", [("per_activation", "norm"), ("per_channel", "norm_activation"),
                                           ("per_channel", "norm_add_activation")])
def test_group_norm_modes_against_autograd(mode, norm_ops, rng):
    n, c, h, w, groups = 2, 4, 3, 3, 2
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    z = rng.standard_normal(x.shape).astype(np.float32)
    pshape = (1, c, h, w) if mode == "per_activation" else (1, c, 1, 1)
    gamma = rng.uniform(0.5, 2, pshape).astype(np.float32)
    beta = rng.standard_normal(pshape).astype(np.float32)
    xt, zt = to_torch(x).double().requires_grad_(), to_torch(z).double().requires_grad_()
    gt, bt = torch.from_numpy(gamma).double().requires_grad_(), torch.from_numpy(beta).double().requires_grad_()
    pre = manual_group_norm(xt, gt, bt, groups)
    if norm_ops == "norm_add_activation":
        pre = pre + zt
    y = torch.relu(pre) if norm_ops != "norm" else pre
    dy = rng.standard_normal(x.shape).astype(np.float32)
    y.backward(to_torch(dy).double())
    forward = tilegrad.compile("normalization_forward_training", "cpu")(
        x=x, z=z if norm_ops == "norm_add_activation" else None, bn_scale=gamma, bn_bias=beta, mode=mode,
        norm_ops=norm_ops, group_cnt=groups)
    assert_close(forward[0], y, "float32", reduction=True)
    dx, d_scale, d_bias, dz = tilegrad.compile("normalization_backward", "cpu")(
        x=x, y=y.detach().float().numpy(), dy=dy, bn_scale=gamma, bn_bias=beta, mode=mode, norm_ops=norm_ops,
        group_cnt=groups)
    assert_close(dx, xt.grad, "float32", reduction=True)
    assert_close(d_scale, gt.grad, "float32", reduction=True)
    assert_close(d_bias, bt.grad, "float32", reduction=True)
    if norm_ops == "norm_add_activation":
        assert_close(dz, zt.grad, "float32", reduction=True)
    else:
        assert dz is None


def test_errors(rng):
    x = np.zeros((2, 6, 3, 3), np.float32)
    p = np.ones((1, 6, 1, 1), np.float32)
    with pytest.raises(tilegrad.AttributeValueError, match="group_cnt"):
        tilegrad.compile("normalization_backward", "cpu")(x=x, dy=x, bn_scale=p, group_cnt=4)
    with pytest.raises(tilegrad.ShapeError, match="running"):
        tilegrad.compile("normalization_forward_training", "cpu")(x=x, bn_scale=p, bn_bias=p, group_cnt=2,
                                                                  running_mean=p.copy(), running_variance=p.copy())
    with pytest.raises(tilegrad.ShapeError, match="saved_mean.*group_cnt"):
        tilegrad.compile("normalization_backward", "cpu")(x=x, dy=x, bn_scale=p, group_cnt=2,
                                                          saved_mean=np.zeros((2, 3), np.float32),
                                                          saved_inv_variance=np.zeros((2, 3), np.float32))


def test_size_queries_are_pure_and_match_the_kernels():
    shape = (4, 6, 5, 5)
    assert tilegrad.batch_norm_backward_ex_workspace_size(shape) == 4 * 6 * 2  # d_beta, d_gamma in GM
    # + mean, inv_std, and the shift K and the sums of x - K and of its square (batch_statistics' one sweep)
    assert tilegrad.batch_norm_backward_ex_workspace_size(shape, saved=False) == 4 * 6 * 7
    # K and the two sums
    assert tilegrad.batch_norm_forward_training_ex_workspace_size(shape) == 4 * 6 * 3
    # a, b per (n, group) and the per-(n, channel) sums Σ dŷ x, Σ dŷ
    assert tilegrad.normalization_backward_workspace_size(shape, group_cnt=3) == 4 * (4 * 3 * 2 + 4 * 6 * 2)
    assert tilegrad.normalization_forward_training_workspace_size(shape, group_cnt=3) == 0
    assert tilegrad.batch_norm_training_ex_reserve_space_size(shape) == 0
    assert tilegrad.normalization_training_reserve_space_size(shape) == 0
    assert tilegrad.dropout_reserve_space_size(shape) == 4 * 6 * 5 * 5
    again = tilegrad.batch_norm_backward_ex_workspace_size(shape)
    assert again == tilegrad.batch_norm_backward_ex_workspace_size(shape)
