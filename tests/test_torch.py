"""tilegrad.torch (SPEC 8): torch custom ops, out= forms, fake kernels, autograd pairing, training."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from conftest import library_ops  # noqa: E402
from torch.autograd import gradcheck  # noqa: E402

import tilegrad  # noqa: E402
import tilegrad.dsl as tg  # noqa: E402
import tilegrad.torch as tt  # noqa: E402

EXAMPLES = Path(__file__).parent.parent / "examples"


def bce_inputs(dtype=torch.float32, shape=(37, 53)):
    generator = torch.Generator().manual_seed(0)
    x = (torch.rand(shape, generator=generator, dtype=torch.float64) * 0.8 + 0.1).to(dtype)
    y = torch.rand(shape, generator=generator, dtype=torch.float64).to(dtype)
    return x, y, torch.tensor(0.7, dtype=dtype)


def test_every_op_is_a_torch_op_with_spec_argument_names():
    for name in library_ops():
        packet = getattr(torch.ops.tilegrad, name)
        op = tilegrad.get_op(name)
        arguments = [a.name for a in packet.default._schema.arguments]
        assert arguments[:len(op.tensors) + len(op.attrs)] == [*op.tensors, *op.attrs]
        out_arguments = [a.name for a in packet.out._schema.arguments]
        assert out_arguments[-len(op.outputs):] == list(op.outputs)
    # nll_loss_backward has a tensor named target: the target is picked with kernel_target=
    assert "kernel_target" in [a.name for a in torch.ops.tilegrad.nll_loss_backward.default._schema.arguments]


def test_bce_matches_aten_and_writes_out_in_place():
    x, y, g = bce_inputs()
    expected = torch.ops.aten.binary_cross_entropy_backward(g, x, y, None, 1)
    dx = torch.ops.tilegrad.binary_cross_entropy_grad(input_x=x, input_y=y, dloss=g, reduction="mean")
    torch.testing.assert_close(dx, expected, rtol=1e-5, atol=1e-6)
    buffer = torch.full_like(x, float("nan"))
    returned = torch.ops.tilegrad.binary_cross_entropy_grad(input_x=x, input_y=y, dloss=g, dx=buffer)
    assert returned is buffer
    torch.testing.assert_close(buffer, expected, rtol=1e-5, atol=1e-6)


def test_strided_inputs_and_outputs_without_copies():
    x, y, g = bce_inputs(shape=(53, 37))
    x, y = x.t(), y.t()  # transposed views
    g = torch.full_like(x, 0.5)[:, ::1]
    expected = torch.ops.aten.binary_cross_entropy_backward(g, x, y, None, 0)
    out = torch.empty(74, 53)[::2]  # every other row
    torch.ops.tilegrad.binary_cross_entropy_grad(input_x=x, input_y=y, dloss=g, reduction="none", dx=out)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6)


def test_zero_copy_view_of_a_tensor():
    x = torch.arange(12, dtype=torch.float32).view(3, 4).t()
    array = tt.as_numpy("op", "x", x)
    assert array.ctypes.data == x.data_ptr() and array.strides == (4, 16)
    b = torch.ones(5, dtype=torch.bfloat16)[::2]
    array = tt.as_numpy("op", "b", b)
    assert array.ctypes.data == b.data_ptr() and str(array.dtype) == "bfloat16"
    back = tt.as_tensor(np.ones(3, array.dtype))
    assert back.dtype == torch.bfloat16


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_other_dtypes(dtype):
    x, y, g = bce_inputs(dtype)
    wide = torch.float64 if dtype == torch.float64 else torch.float32
    expected = torch.ops.aten.binary_cross_entropy_backward(g.to(wide), x.to(wide), y.to(wide), None, 1)
    dx = torch.ops.tilegrad.binary_cross_entropy_grad(input_x=x, input_y=y, dloss=g)
    assert dx.dtype == dtype
    tolerance = 1e-10 if dtype == torch.float64 else 1e-2
    torch.testing.assert_close(dx.to(wide), expected, rtol=tolerance, atol=tolerance)


def test_errors_are_tilegrad_errors_before_any_work():
    x, y, g = bce_inputs()
    with pytest.raises(tilegrad.DTypeError, match="input_x"):
        torch.ops.tilegrad.binary_cross_entropy_grad(input_x=x.int(), input_y=y, dloss=g)
    with pytest.raises(tilegrad.ShapeError, match="input_y"):
        torch.ops.tilegrad.binary_cross_entropy_grad(input_x=x, input_y=y[:3], dloss=g)
    with pytest.raises(tilegrad.AttributeValueError, match="reduction"):
        torch.ops.tilegrad.binary_cross_entropy_grad(input_x=x, input_y=y, dloss=g, reduction="avg")
    with pytest.raises(tilegrad.UnsupportedError, match="device meta"):
        tt.as_numpy("binary_cross_entropy_grad", "input_x", torch.empty(3, device="meta"))
    with pytest.raises(tilegrad.UnsupportedError, match="nosuch"):
        torch.ops.tilegrad.binary_cross_entropy_grad(input_x=x, input_y=y, dloss=g, target="nosuch")


def test_meta_tensors_get_shapes_from_the_fake_kernel():
    y = torch.empty(2, 3, 4, 4, device="meta")
    dx, dgrid = torch.ops.tilegrad.spatial_tf_sampler_backward(
        x=y, grid=torch.empty(2, 5, 6, 2, device="meta"), dy=torch.empty(2, 3, 5, 6, device="meta"))
    assert dx.device.type == "meta" and dx.shape == (2, 3, 4, 4) and dgrid.shape == (2, 5, 6, 2)


def test_other_target_and_multi_output_with_an_unproduced_output():
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(4, 3, 2, 2, generator=generator)
    dy = torch.randn(4, 3, 2, 2, generator=generator)
    scale = torch.randn(1, 3, 1, 1, generator=generator)
    results = {target: torch.ops.tilegrad.batch_norm_backward_ex(
        x=x, y=x, dy=dy, bn_scale=scale, bn_bias=scale, bn_ops="bn", target=target)
        for target in ("cpu", "ascend910b")}
    for cpu, tiled in zip(*results.values()):
        torch.testing.assert_close(cpu, tiled, rtol=1e-4, atol=1e-5)
    assert results["cpu"][3].numel() == 0  # dz is produced only with bn_add_activation
    mean, invstd = x.mean((0, 2, 3)), 1 / torch.sqrt(x.var((0, 2, 3), unbiased=False) + 1e-5)
    expected = torch.ops.aten.native_batch_norm_backward(dy, x, scale.flatten(), None, None, mean, invstd, True,
                                                         1e-5, [True, True, True])
    for got, want in zip(results["cpu"][:3], expected):
        torch.testing.assert_close(got.flatten(), want.flatten(), rtol=1e-4, atol=1e-5)


def test_running_statistics_are_updated_in_place():
    x = torch.randn(8, 3, 2, 2)
    scale, bias = torch.ones(1, 3, 1, 1), torch.zeros(1, 3, 1, 1)
    mean, var = torch.zeros(1, 3, 1, 1), torch.ones(1, 3, 1, 1)
    y, saved_mean, _ = torch.ops.tilegrad.batch_norm_forward_training(
        x=x, bn_scale=scale, bn_bias=bias, running_mean=mean, running_variance=var, exponential_average_factor=0.5)
    torch.testing.assert_close(mean.flatten(), 0.5 * x.mean((0, 2, 3)))
    torch.testing.assert_close(var.flatten(), 0.5 + 0.5 * x.var((0, 2, 3)))
    torch.testing.assert_close(y, F.batch_norm(x, None, None, training=True), rtol=1e-4, atol=1e-5)


def test_torch_compile_matches_eager():
    x, y, g = bce_inputs()

    def f(x, y, g):
        return torch.ops.tilegrad.binary_cross_entropy_grad(input_x=x * 0.5 + 0.25, input_y=y, dloss=g).sum(0) * 2

    compiled = torch.compile(f, fullgraph=True, dynamic=False)
    torch.testing.assert_close(compiled(x, y, g), f(x, y, g))


def test_a_user_op_defined_after_import_is_a_torch_op():
    @tg.op(outputs={"dx": tg.like("x")}, replace=True)
    def torch_scaled_square_grad(x=tg.tensor("*S"), dy=tg.tensor("*S", dtype="x"), coef=tg.attr(2.0)):
        return dy * x * coef

    x, dy = torch.randn(5, 6), torch.randn(5, 6)
    dx = torch.ops.tilegrad.torch_scaled_square_grad(x=x, dy=dy, coef=3.0)
    torch.testing.assert_close(dx, dy * x * 3.0)
    tt.register(torch_scaled_square_grad, target="ft78ne")  # the same schema: a new default target
    torch.testing.assert_close(torch.ops.tilegrad.torch_scaled_square_grad(x=x, dy=dy), dy * x * 2.0)

    @tg.op(outputs={"dx": tg.like("x")}, replace=True)
    def torch_scaled_square_grad(x=tg.tensor("*S"), dy=tg.tensor("*S", dtype="x")):  # noqa: F811
        return dy * x

    with pytest.raises(tilegrad.DefinitionError, match="another signature"):
        torch.ops.tilegrad.torch_scaled_square_grad(x=x, dy=dy)


# ---- autograd: tilegrad backward ops paired with forwards, checked by gradcheck in float64 ----------
F64 = torch.float64


def test_gradcheck_binary_cross_entropy():
    bce = tt.function(lambda x, y, reduction="mean": F.binary_cross_entropy(x, y, reduction=reduction),
                      "binary_cross_entropy_grad", grads=("dx", None),
                      args=lambda x, y, loss, g, reduction="mean": dict(input_x=x, input_y=y, dloss=g,
                                                                         reduction=reduction))
    x = (torch.rand(5, 7, dtype=F64) * 0.8 + 0.1).requires_grad_()
    y = torch.rand(5, 7, dtype=F64)
    assert gradcheck(bce, (x, y))
    assert gradcheck(lambda x, y: bce(x, y, reduction="none"), (x, y))


def test_gradcheck_nll_loss():
    nll = tt.function(lambda x, t: torch.ops.aten.nll_loss_forward(x, t, None, 1, -100), "nll_loss_backward",
                      args=lambda x, t, loss, total, g: dict(grad_output=g, self=x, target=t, total_weight=total),
                      grads=("out", None), returns=1)
    x = torch.randn(6, 5, dtype=F64, requires_grad=True)
    assert gradcheck(nll, (x, torch.tensor([0, 4, 2, -100, 1, 3])))


@pytest.mark.parametrize("log", [False, True])
def test_gradcheck_softmax(log):
    forward = torch.log_softmax if log else torch.softmax
    softmax = tt.function(lambda x: forward(x, 1), "softmax_backward", grads="dx",
                          args=lambda x, y, dy: dict(y=y, dy=dy, mode="channel",
                                                     algorithm="log" if log else "accurate"))
    assert gradcheck(softmax, (torch.randn(3, 4, 2, 2, dtype=F64, requires_grad=True),))


def test_gradcheck_batch_norm_forward_and_backward_from_tilegrad():
    batch_norm = tt.function("batch_norm_forward_training", "batch_norm_backward", returns=1,
                             args=lambda x, w, b, y, mean, inv_var, dy: dict(x=x, dy=dy, bn_scale=w, saved_mean=mean,
                                                                            saved_inv_variance=inv_var),
                             grads=("dx", "d_bn_scale", "d_bn_bias"))
    x = torch.randn(4, 3, 2, 2, dtype=F64, requires_grad=True)
    w = torch.randn(1, 3, 1, 1, dtype=F64, requires_grad=True)
    b = torch.randn(1, 3, 1, 1, dtype=F64, requires_grad=True)
    assert gradcheck(batch_norm, (x, w, b))
    torch.testing.assert_close(batch_norm(x, w, b), F.batch_norm(x, None, None, w.flatten(), b.flatten(), True))


@pytest.mark.parametrize("mode", ["max", "avg"])
def test_gradcheck_pooling(mode):
    forward = (lambda x: F.max_pool2d(x, 3, 2, 1)) if mode == "max" else \
        (lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=True))
    pool = tt.function(forward, "pooling_backward", grads="dx",
                       args=lambda x, y, dy: dict(y=y, dy=dy, x=x, window=(3, 3), stride=(2, 2), padding=(1, 1),
                                                  mode="max" if mode == "max" else "avg_include_padding"))
    assert gradcheck(pool, (torch.randn(2, 3, 5, 6, dtype=F64, requires_grad=True),))


def test_function_refuses_a_gradient_the_backward_does_not_make():
    with pytest.raises(tilegrad.ArgumentError, match="d_nothing"):
        tt.function(torch.relu, "activation_backward", args=lambda x, y, dy: {}, grads="d_nothing")


# ---- the training example ---------------------------------------------------------------------------
def _example_env():
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLES.parent), os.environ.get("PYTHONPATH", "")])}


def test_training_example_matches_pure_torch_for_50_steps():
    result = subprocess.run([sys.executable, str(EXAMPLES / "08_train_with_torch.py"), "--steps", "50",
                             "--tolerance", "1e-4"], capture_output=True, text=True, timeout=600, env=_example_env())
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert "largest difference" in result.stdout


def test_training_example_runs_data_parallel_under_torchrun():
    result = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                             str(EXAMPLES / "08_train_with_torch.py"), "--steps", "4", "--tolerance", "1e-4"],
                            capture_output=True, text=True, timeout=600, env=_example_env())
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert "processes: 2" in result.stdout
