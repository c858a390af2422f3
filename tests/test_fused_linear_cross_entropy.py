"""SPEC 6.2: fused_linear_cross_entropy_loss_grad against the formula in torch (float64)."""

import numpy as np
import pytest
from conftest import NUMPY, assert_close, torch

import tilegrad


def reference(grad, inp, weight, mask_bits, target, softmax=None, logits_max=None, sum_exp=None):
    inp64, w64 = torch.from_numpy(inp.astype(np.float64)), torch.from_numpy(weight.astype(np.float64))
    if softmax is not None:
        p = torch.from_numpy(softmax.astype(np.float64)).clone()
    else:
        p = torch.exp(inp64 @ w64.T - torch.from_numpy(logits_max.astype(np.float64))[:, None])
        p = p / torch.from_numpy(sum_exp.astype(np.float64))[:, None]
    rows = torch.arange(len(target))
    p[rows, torch.from_numpy(target.astype(np.int64))] -= torch.from_numpy(1.0 - mask_bits)
    g = (p * torch.from_numpy(grad.astype(np.float64))[:, None]).numpy().astype(inp.dtype).astype(np.float64)
    return g @ weight.astype(np.float64), g.T @ inp.astype(np.float64)


def inputs(rng, dtype, bt=37, h=19, v=23):
    inp = (rng.standard_normal((bt, h)) * 0.3).astype(NUMPY[dtype])
    weight = (rng.standard_normal((v, h)) * 0.3).astype(NUMPY[dtype])
    logits = inp.astype(np.float64) @ weight.astype(np.float64).T
    logits_max = logits.max(1).astype(np.float32)
    sum_exp = np.exp(logits - logits_max[:, None]).sum(1).astype(np.float32)
    softmax = (np.exp(logits - logits_max[:, None]) / sum_exp[:, None]).astype(np.float32)
    bits = rng.integers(0, 2, bt).astype(np.uint8)
    mask = np.packbits(bits, bitorder="little")
    target = rng.integers(0, v, bt).astype(np.int64)
    grad = rng.standard_normal(bt).astype(np.float32)
    return grad, inp, weight, bits, mask, target, softmax, logits_max, sum_exp


@pytest.mark.parametrize("target_device,dtype", [("cpu", "float32"), ("ascend910b", "float32"),
                                                 ("metax-c500", "float16"), ("cpu", "bfloat16")])
@pytest.mark.parametrize("with_softmax", [True, False])
def test_fused_linear_cross_entropy_loss_grad(target_device, dtype, with_softmax, rng):
    grad, inp, weight, bits, mask, target, softmax, logits_max, sum_exp = inputs(rng, dtype)
    kernel = tilegrad.compile("fused_linear_cross_entropy_loss_grad", target_device)
    stats = dict(softmax=softmax) if with_softmax else dict(logits_max=logits_max, sum_exp_logits=sum_exp)
    grad_input, grad_weight = kernel(grad=grad, input=inp, weight=weight, target_mask=mask,
                                     masked_target=target, **stats)
    ref_input, ref_weight = reference(grad, inp, weight, bits, target, **(
        dict(softmax=softmax) if with_softmax else dict(logits_max=logits_max, sum_exp=sum_exp)))
    assert grad_input.dtype == inp.dtype and grad_weight.shape == weight.shape
    assert_close(grad_input, ref_input, dtype, reduction=True)
    assert_close(grad_weight, ref_weight, dtype, reduction=True)


def test_errors(rng):
    grad, inp, weight, bits, mask, target, softmax, logits_max, sum_exp = inputs(rng, "float32")
    kernel = tilegrad.compile("fused_linear_cross_entropy_loss_grad", "cpu")
    with pytest.raises(tilegrad.ShapeError, match="softmax.*logits_max"):
        kernel(grad=grad, input=inp, weight=weight, target_mask=mask, masked_target=target, logits_max=logits_max)
    with pytest.raises(tilegrad.ShapeError, match="target_mask.*one bit per row"):
        kernel(grad=grad, input=inp, weight=weight, target_mask=mask[:2], masked_target=target, softmax=softmax)
    bad = target.copy()
    bad[5] = 23
    with pytest.raises(tilegrad.IndexOutOfRangeError, match="masked_target"):
        kernel(grad=grad, input=inp, weight=weight, target_mask=mask, masked_target=bad, softmax=softmax)
    with pytest.raises(tilegrad.UnsupportedError, match="ascend910'"):
        tilegrad.compile("fused_linear_cross_entropy_loss_grad", "ascend910")
