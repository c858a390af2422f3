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


# ---- torch's rules: no silent gradient, no out= under autograd, no written tensor sharing memory ----
def test_backward_through_an_op_without_backward_raises_naming_the_op_and_function():
    x, y, g = bce_inputs(F64)
    x.requires_grad_()
    dx = torch.ops.tilegrad.binary_cross_entropy_grad(input_x=x, input_y=y, dloss=g)  # the forward runs
    torch.testing.assert_close(dx, torch.ops.aten.binary_cross_entropy_backward(g, x.detach(), y, None, 1))
    with pytest.raises(tt.TorchUnsupportedError, match=r"binary_cross_entropy_grad.*'input_x'.*tilegrad\.torch\."
                                                         r"function"):
        dx.sum().backward()
    assert x.grad is None
    assert issubclass(tt.TorchUnsupportedError, RuntimeError) and issubclass(tt.TorchUnsupportedError,
                                                                             tilegrad.UnsupportedError)
    with torch.no_grad():  # no graph, no error
        assert not torch.ops.tilegrad.binary_cross_entropy_grad(input_x=x, input_y=y, dloss=g).requires_grad
    # an op updating running statistics, differentiated for x: the same error at backward
    x = torch.randn(4, 3, 2, 2, requires_grad=True)
    mean, var = torch.zeros(1, 3, 1, 1), torch.ones(1, 3, 1, 1)
    y, _, _ = torch.ops.tilegrad.batch_norm_forward_training(x=x, bn_scale=torch.ones(1, 3, 1, 1),
                                                             bn_bias=torch.zeros(1, 3, 1, 1), running_mean=mean,
                                                             running_variance=var)
    assert mean.abs().sum() > 0  # updated
    with pytest.raises(RuntimeError, match="batch_norm_forward_training.*'x'.*tilegrad.torch.function"):
        y.sum().backward()


def test_backward_through_a_compiled_op_raises_at_backward_not_at_compile():
    x, y, g = bce_inputs(F64)
    x.requires_grad_()

    def f(x):
        return torch.ops.tilegrad.binary_cross_entropy_grad(input_x=x, input_y=y, dloss=g) * 2

    dx = torch.compile(f, fullgraph=True, backend="aot_eager")(x)
    torch.testing.assert_close(dx, f(x.detach()))
    with pytest.raises(tt.TorchUnsupportedError, match="binary_cross_entropy_grad.*tilegrad.torch.function"):
        dx.sum().backward()
    assert x.grad is None


def test_out_refuses_arguments_that_require_grad_as_torch_does():
    x, y, g = bce_inputs()
    message = r"binary_cross_entropy_grad\(\): functions with out=\.\.\. arguments don't support automatic differ"
    for leaf in ("dx", "input_x"):
        buffer = torch.full_like(x, float("nan"), requires_grad=leaf == "dx")
        inputs = dict(input_x=x.clone().requires_grad_(leaf == "input_x"), input_y=y, dloss=g)
        with pytest.raises(tt.TorchUnsupportedError, match=message + f".*'{leaf}'"):
            torch.ops.tilegrad.binary_cross_entropy_grad(**inputs, dx=buffer)
        assert buffer.isnan().all()  # not written
    with pytest.raises(RuntimeError, match="functions with out="):  # what torch's own ops raise
        torch.add(x, y, out=torch.empty_like(x, requires_grad=True))
    with torch.no_grad():  # as for torch's ops, allowed without autograd
        buffer = torch.empty_like(x, requires_grad=True)
        torch.ops.tilegrad.binary_cross_entropy_grad(input_x=x, input_y=y, dloss=g, dx=buffer)
    torch.testing.assert_close(buffer.detach(), torch.ops.aten.binary_cross_entropy_backward(g, x, y, None, 1))
    with pytest.raises(tt.TorchUnsupportedError, match="not differentiable with respect to argument 'running_mean'"):
        torch.ops.tilegrad.batch_norm_forward_training(
            x=torch.randn(4, 3, 2, 2), bn_scale=torch.ones(1, 3, 1, 1), bn_bias=torch.zeros(1, 3, 1, 1),
            running_mean=torch.zeros(1, 3, 1, 1, requires_grad=True), running_variance=torch.ones(1, 3, 1, 1))


def test_written_tensors_whose_elements_share_memory_are_refused():
    x, y, g = bce_inputs(shape=(3, 4))
    message = "more than one element of the written-to tensor '{}' refers to a single memory location"
    expanded = torch.zeros(1, 4).expand(3, 4)
    with pytest.raises(tt.TorchUnsupportedError, match=message.format("dx")):
        torch.ops.tilegrad.binary_cross_entropy_grad(input_x=x, input_y=y, dloss=g, dx=expanded)
    with pytest.raises(RuntimeError, match=message.format("").replace("'' ", "")):  # torch's own message
        torch.add(x, y, out=expanded)
    overlapping = torch.zeros(6).as_strided((3, 4), (1, 1))  # no zero stride, yet rows overlap
    with pytest.raises(tt.TorchUnsupportedError, match=message.format("dx")):
        torch.ops.tilegrad.binary_cross_entropy_grad(input_x=x, input_y=y, dloss=g, dx=overlapping)
    assert expanded.abs().sum() == 0 and overlapping.abs().sum() == 0
    # strides (2, 3) over sizes (3, 2) interleave without meeting: accepted and written
    apart = torch.full((8,), float("nan")).as_strided((3, 2), (2, 3))
    a, b, c = bce_inputs(shape=(3, 2))
    torch.ops.tilegrad.binary_cross_entropy_grad(input_x=a, input_y=b, dloss=c, dx=apart)
    torch.testing.assert_close(apart, torch.ops.aten.binary_cross_entropy_backward(c, a, b, None, 1))
    x4 = torch.randn(4, 3, 2, 2)
    for name in ("running_mean", "running_variance"):
        stats = dict(running_mean=torch.zeros(1, 3, 1, 1), running_variance=torch.ones(1, 3, 1, 1))
        stats[name] = torch.zeros(1, 1, 1, 1).expand(1, 3, 1, 1)
        with pytest.raises(tt.TorchUnsupportedError, match=message.format(name)):
            torch.ops.tilegrad.batch_norm_forward_training(x=x4, bn_scale=torch.ones(1, 3, 1, 1),
                                                           bn_bias=torch.zeros(1, 3, 1, 1), **stats)


def test_writes_bump_version_counters_so_autograd_notices_them():
    x, y, g = bce_inputs()
    w = torch.rand_like(x, requires_grad=True)
    buffer = torch.ones_like(x)
    loss = (w * buffer).sum()  # autograd saves buffer for w's gradient
    torch.ops.tilegrad.binary_cross_entropy_grad(input_x=x, input_y=y, dloss=g, dx=buffer)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):  # not a gradient of the new values
        loss.backward()
    mean, var = torch.zeros(1, 3, 1, 1), torch.ones(1, 3, 1, 1)
    versions = mean._version, var._version
    torch.ops.tilegrad.batch_norm_forward_training(x=torch.randn(4, 3, 2, 2), bn_scale=torch.ones(1, 3, 1, 1),
                                                   bn_bias=torch.zeros(1, 3, 1, 1), running_mean=mean,
                                                   running_variance=var)
    assert mean._version > versions[0] and var._version > versions[1]


# ---- torch.compile: every form traces (functional, .out, updated tensors) ----------------------------
def test_every_schema_declares_what_it_writes_and_torch_can_functionalize_it():
    from torch._higher_order_ops.auto_functionalize import can_auto_functionalize

    for name in library_ops():
        op = tilegrad.get_op(name)
        updated = {n for n, s in op.tensors.items() if s.updated}
        renamed = tt.hidden_names(op, "kernel_target" if "target" in op.tensors else "target")
        public, hidden = getattr(torch.ops.tilegrad, name), getattr(getattr(torch.ops, tt.HIDDEN), name)
        overloads = [(public.default, updated), (public.out, updated | set(op.outputs)),
                     (hidden.out, {renamed[n] for n in updated | set(op.outputs)})]
        if updated:  # a functional call that updates running statistics goes through the hidden overload
            overloads.append((hidden.default, {renamed[n] for n in updated}))
        for overload, written in overloads:
            mutable = {a.name for a in overload._schema.arguments if a.alias_info is not None and a.alias_info.is_write}
            assert mutable == written, overload
        for overload, _ in overloads[2:]:  # what torch.compile functionalizes: no `mode`, no alias returned
            assert can_auto_functionalize(overload), overload
            assert "mode" not in {a.name for a in overload._schema.arguments}
            assert all(r.alias_info is None for r in overload._schema.returns), overload
        assert updated or not public.default._schema.is_mutable  # else a plain op to torch.compile
    renamed = tt.hidden_names(tilegrad.get_op("batch_norm_forward_training"), "target")
    assert renamed["mode"] == "mode_" and renamed["x"] == "x"


def _compile_case(case):
    """(function, arguments) of one traced form; each function runs in place on what it is given."""
    generator = torch.Generator().manual_seed(5)
    x = torch.randn(4, 3, 2, 2, generator=generator)
    dy = torch.randn(4, 3, 2, 2, generator=generator)
    scale, bias = torch.rand(1, 3, 1, 1, generator=generator) + 0.5, torch.randn(1, 3, 1, 1, generator=generator)
    if case == "functional and out, with mode":
        y = torch.softmax(x, 1)

        def f(y, dy, dx):
            torch.ops.tilegrad.softmax_backward(y=y, dy=dy, mode="channel", dx=dx)
            return dx * 2 + torch.ops.tilegrad.softmax_backward(y=y, dy=dy, mode="instance")

        return f, (y, dy, torch.full_like(x, float("nan")))
    if case == "running statistics, functional and out":
        def f(x, scale, bias, mean, var, y, save_mean, save_inv):
            first = torch.ops.tilegrad.batch_norm_forward_training(
                x=x, bn_scale=scale, bn_bias=bias, running_mean=mean, running_variance=var,
                exponential_average_factor=0.5, mode="spatial")
            torch.ops.tilegrad.batch_norm_forward_training(
                x=x * 2, bn_scale=scale, bn_bias=bias, running_mean=mean, running_variance=var,
                exponential_average_factor=0.5, y=y, save_mean=save_mean, save_inv_variance=save_inv)
            return first[0] + y

        stats = (torch.zeros(1, 3, 1, 1), torch.ones(1, 3, 1, 1))
        outputs = (torch.empty_like(x), torch.empty(1, 3, 1, 1), torch.empty(1, 3, 1, 1))
        return f, (x, scale, bias, *stats, *outputs)

    def f(x, dy, scale, bias, dx, dscale, dbias, dz):  # an output the call leaves unwritten (dz) stays as given
        torch.ops.tilegrad.batch_norm_backward_ex(x=x, y=x, dy=dy, bn_scale=scale, bn_bias=bias, bn_ops="bn",
                                                  dx=dx, d_bn_scale=dscale, d_bn_bias=dbias, dz=dz)
        return dx.sum()

    return f, (x, dy, scale, bias, torch.empty_like(x), torch.empty(1, 3, 1, 1), torch.empty(1, 3, 1, 1),
               torch.full_like(x, 7.0))


@pytest.mark.parametrize("case", ["functional and out, with mode", "running statistics, functional and out",
                                  "out, an output left unwritten"])
def test_torch_compile_traces_every_form_and_matches_eager(case):
    f, eager_args = _compile_case(case)
    _, compiled_args = _compile_case(case)
    expected = f(*eager_args)
    got = torch.compile(f, fullgraph=True, backend="aot_eager")(*compiled_args)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    for compiled, eager in zip(compiled_args, eager_args):  # outputs and running statistics written alike
        torch.testing.assert_close(compiled, eager, rtol=1e-5, atol=1e-6, equal_nan=True)
