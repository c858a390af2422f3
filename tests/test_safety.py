"""Issue 5's eighteen cases: each raises the named error or gives the right answer; none crashes."""

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from conftest import torch

import tilegrad
import tilegrad.dsl as tg
import tilegrad.kernel
from tilegrad.codegen import cache

one = np.ones(1, np.float32)


@tg.op(outputs={"out": tg.like("x")}, replace=True)
def safety_row_center(x=tg.tensor("*M N", collapse=True)):
    rows, n = x.shape
    a = tg.temp("a", (rows,))
    a.assign(lambda m: tg.reduce_sum(n, lambda k: x[m, k]))
    return lambda m, k: x[m, k] - a[m] / n


@tg.op(outputs={"out": tg.like("x")}, replace=True)
def safety_add_rows(x=tg.tensor("N C"), b=tg.tensor("N")):
    return x + b


@tg.op(outputs={"out": tg.shaped("N", dtype="x")}, replace=True)
def safety_column_sum(x=tg.tensor("M N")):
    out = tg.output("out")
    out.fill(0.0)
    m, n = x.shape
    tg.scatter_add(out, (m, n), index=lambda i, k: (k,), value=lambda i, k: x[i, k])


# 1: collapsed input, output like it
@pytest.mark.parametrize("target", ["cpu", "ascend910b"])
def test_collapsed_input_and_its_like_output(target):
    x = np.arange(48, dtype=np.float32).reshape(2, 3, 8)
    out = tilegrad.compile("safety_row_center", target)(x=x)
    assert out.shape == x.shape
    np.testing.assert_allclose(out, x - x.mean(axis=-1, keepdims=True), rtol=1e-5, atol=1e-5)
    given = np.empty_like(x)
    assert tilegrad.compile("safety_row_center", target)(x=x, out=given) is given
    np.testing.assert_allclose(given, out)


# 2: broadcasting checked like numpy
def test_broadcast_mismatch_is_refused_naming_both():
    k = tilegrad.compile("safety_add_rows")
    with pytest.raises(tilegrad.ShapeError, match=r"x\.shape\[1\].*b\.shape\[0\]"):
        k(x=np.ones((2, 1000), np.float32), b=np.ones(2, np.float32))
    huge = np.broadcast_to(np.float32(1), (2, 50_000_000))  # no memory behind it: must not be read
    with pytest.raises(tilegrad.ShapeError):
        k(x=huge, b=np.ones(2, np.float32))
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    np.testing.assert_array_equal(k(x=x, b=np.array([10, 20], np.float32)), x + [10, 20])


# 3: output strides that are not whole elements
def test_output_with_byte_strides_writes_only_its_view():
    raw = np.full(100, 0x5A, np.uint8)
    dx = np.ndarray((3, 2), np.float32, buffer=raw, offset=40, strides=(-9, 4))
    before = raw.copy()
    x = np.full((3, 2), 0.25, np.float32)
    y = np.full((3, 2), 0.5, np.float32)
    tilegrad.compile("binary_cross_entropy_grad")(input_x=x, input_y=y, dloss=one, reduction="sum", dx=dx)
    want = (0.25 - 0.5) / (0.25 * 0.75)
    np.testing.assert_allclose(dx, np.full((3, 2), want, np.float32), rtol=1e-6)
    touched = np.zeros(100, bool)
    for i in range(3):
        for j in range(2):
            start = 40 - 9 * i + 4 * j
            touched[start:start + 4] = True
    np.testing.assert_array_equal(raw[~touched], before[~touched])


# 4: a scatter indexed by an inner domain variable compiles on every target
@pytest.mark.parametrize("target", ["cpu", "ascend910b", "ft78ne", "metax-c500"])
def test_scatter_by_inner_variable_on_every_target(target, rng):
    x = rng.standard_normal((37, 300)).astype(np.float32)
    got = tilegrad.compile("safety_column_sum", target)(x=x)
    np.testing.assert_allclose(got, x.astype(np.float64).sum(0), rtol=1e-4, atol=1e-4)


# 5: the cache key follows helpers in other modules
def test_editing_a_helper_module_recompiles(tmp_path):
    (tmp_path / "helper_mod.py").write_text("def scale(v):\n    return v * 2.0\n")
    (tmp_path / "op_mod.py").write_text(textwrap.dedent("""
        import tilegrad.dsl as tg
        import helper_mod

        @tg.op(outputs={"out": tg.like("x")}, replace=True)
        def safety_helper_op(x=tg.tensor("*S")):
            return helper_mod.scale(x)
    """))
    script = textwrap.dedent("""
        import sys, numpy as np, tilegrad
        sys.path.insert(0, sys.argv[1]); import op_mod
        print(tilegrad.compile("safety_helper_op")(x=np.ones(3, np.float32))[0])
    """)
    env = {**os.environ, "TILEGRAD_CACHE_DIR": str(tmp_path / "cache")}

    def run():
        out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return float(out.stdout.strip())

    assert run() == 2.0
    (tmp_path / "helper_mod.py").write_text("def scale(v):\n    return v * 3.0\n")
    assert run() == 3.0


# 6: authoring errors at definition/compile time, naming the op and the line
def test_wrong_number_of_returned_outputs():
    @tg.op(outputs={"a": tg.like("x"), "b": tg.like("x"), "c": tg.like("x")}, replace=True)
    def safety_three(x=tg.tensor("N")):
        return x, x

    @tg.op(outputs={"a": tg.like("x")}, replace=True)
    def safety_extra(x=tg.tensor("N")):
        return x, x

    @tg.op(outputs={"a": tg.like("x")}, replace=True)
    def safety_no_return(x=tg.tensor("N")):
        x + 1.0

    x = np.ones(4, np.float32)
    with pytest.raises(tilegrad.DefinitionError, match=r"safety_three never writes output\(s\) c.*test_safety.py"):
        tilegrad.compile("safety_three")(x=x)
    with pytest.raises(tilegrad.DefinitionError, match="safety_extra returns 2 values but declares 1"):
        tilegrad.compile("safety_extra")(x=x)
    with pytest.raises(tilegrad.DefinitionError, match="safety_no_return never writes output"):
        tilegrad.compile("safety_no_return")(x=x)


def test_a_body_that_raises_names_its_line():
    @tg.op(outputs={"a": tg.like("x")}, replace=True)
    def safety_raises(x=tg.tensor("N")):
        return x[0, 0]

    with pytest.raises(tilegrad.DefinitionError, match=r"safety_raises: IndexError.*test_safety.py:\d+"):
        tilegrad.compile("safety_raises")(x=np.ones(4, np.float32))


# 7: NaN in a max-pool window is its maximum (torch: the last NaN gets dy), padded windows included:
# their rows and columns outside x read a clamped copy of an edge, which must never be chosen
@pytest.mark.parametrize("target", ["cpu", "ascend910b"])
@pytest.mark.parametrize("size, window, stride, padding", [(6, 2, 2, 0), (7, 3, 2, 1), (9, 3, 1, 1)])
def test_max_pool_nan_is_the_maximum(target, size, window, stride, padding, rng):
    x = rng.standard_normal((2, 3, size, size + 1)).astype(np.float32)
    last_row, last_column = size - 1, size
    x[0, 0, 0, 1] = x[0, 0, 1, 0] = x[1, 2, 3, 3] = np.nan
    x[0, 1, last_row, 2] = x[0, 1, 2, last_column] = x[1, 0, last_row, last_column] = x[1, 1, 0, 0] = np.nan
    x[0, 2, last_row, :] = x[0, 2, :, last_column] = 7.0  # ties along the far edges: the first is chosen
    xt = torch.from_numpy(x)
    args = [[window] * 2, [stride] * 2, [padding] * 2]
    y, idx = torch.ops.aten.max_pool2d_with_indices(xt, *args)
    dy = torch.from_numpy(rng.standard_normal(tuple(y.shape)).astype(np.float32))
    ref = torch.ops.aten.max_pool2d_with_indices_backward(dy, xt, *args, [1, 1], False, idx)
    got = tilegrad.compile("pooling_backward", target)(y=y.numpy(), dy=dy.numpy(), x=x, mode="max",
                                                       window=(window,) * 2, stride=(stride,) * 2,
                                                       padding=(padding,) * 2)
    np.testing.assert_allclose(got, ref.numpy(), rtol=1e-6)


# 8: a read-only running statistic is refused, not written
def test_read_only_updated_tensor_is_refused():
    x = np.ones((2, 3, 2, 2), np.float32)
    p = np.ones((1, 3, 1, 1), np.float32)
    running = np.zeros((1, 3, 1, 1), np.float32)
    running.flags.writeable = False
    with pytest.raises(tilegrad.ShapeError, match="running_mean.*read-only"):
        tilegrad.compile("batch_norm_forward_training")(x=x, bn_scale=p, bn_bias=p, running_mean=running,
                                                        running_variance=np.ones_like(p))
    assert (running == 0).all()


# 9: an empty input read at computed (window) positions is refused
def test_max_pool_of_an_empty_input_with_padding():
    x = np.zeros((1, 1, 0, 2), np.float32)
    y, dy = np.zeros((1, 1, 1, 2), np.float32), np.ones((1, 1, 1, 2), np.float32)
    with pytest.raises(tilegrad.ShapeError, match="x.*must not be empty"):
        tilegrad.compile("pooling_backward")(y=y, dy=dy, x=x, mode="max", window=(2, 2), padding=(1, 1),
                                             stride=(2, 2))


# 10 and 16: see test_cache_integrity.py


# 11: aliasing between outputs (and updated tensors)
def test_aliased_outputs_are_refused():
    x = np.random.default_rng(0).standard_normal((4, 3, 2, 2)).astype(np.float32)
    p = np.ones((1, 3, 1, 1), np.float32)
    k = tilegrad.compile("batch_norm_backward")
    shared = np.zeros((1, 3, 1, 1), np.float32)
    with pytest.raises(tilegrad.ShapeError, match="d_bn_scale.*d_bn_bias.*share memory"):
        k(x=x, dy=x.copy(), bn_scale=p, d_bn_scale=shared, d_bn_bias=shared)
    stats = np.zeros((1, 3, 1, 1), np.float32)
    with pytest.raises(tilegrad.ShapeError, match="share memory"):
        tilegrad.compile("batch_norm_forward_training")(x=x, bn_scale=p, bn_bias=p, running_mean=stats,
                                                        running_variance=stats)
    with pytest.raises(tilegrad.ShapeError, match="overlaps input"):
        k(x=x, dy=x.copy(), bn_scale=p, dx=x)


# 12: a target with no cores is refused
def test_target_with_no_cores():
    with pytest.raises(tilegrad.AttributeValueError, match="cores=0"):
        tilegrad.Target("no-cores", 0, 1 << 16, 32, 32, ("float32",), staged=True)
    with pytest.raises(tilegrad.AttributeValueError, match="ub_reserve_bytes"):
        tilegrad.Target("no-ub", 2, 1024, 32, 32, ("float32",), staged=True, ub_reserve_bytes=1024)


# 13: embedding counts and NaN indices
def test_embedding_count_bound_and_nan_index():
    k = tilegrad.compile("embedding_dense_backward")
    rows = 2**31 + 1
    grad = np.broadcast_to(np.float32(1), (rows, 1))  # stride 0: refused before anything runs
    indices = np.broadcast_to(np.int32(0), (rows,))
    with pytest.raises(tilegrad.ShapeError, match="int64 indices"):
        k(grad=grad, indices=indices, num_weights=1, scale_grad_by_freq=True)
    grad = np.ones((3, 2), np.float32)
    with pytest.raises(tilegrad.IndexOutOfRangeError, match="indices"):
        k(grad=grad, indices=np.array([0, np.nan, 1], np.float32), num_weights=2)
    np.testing.assert_array_equal(k(grad=grad, indices=np.array([0, 1.7, 1], np.float32), num_weights=2),
                                  [[1, 1], [2, 2]])


# 14: argument checks
def test_argument_checks_raise_tilegrad_errors():
    bce = tilegrad.compile("binary_cross_entropy_grad")
    x = np.full(8, 0.5, np.float32)
    with pytest.raises(tilegrad.AttributeValueError, match="reduction"):
        bce(input_x=x, input_y=x, dloss=one, reduction=(7,))
    nll = tilegrad.compile("nll_loss_backward")
    with pytest.raises(tilegrad.DTypeError, match="grad_output.*bool"):
        nll(grad_output=np.ones(1, bool), self=np.zeros((4, 3), np.float32), target=np.zeros(4, np.int64),
            total_weight=one)
    for _ in range(2):  # a Python float where a float32 tensor goes: the same clear error twice
        with pytest.raises(tilegrad.DTypeError, match="dloss.*float64"):
            bce(input_x=x, input_y=x * 0.5, dloss=2.0, reduction="sum")
    for _ in range(2):
        got = bce(input_x=x, input_y=x * 0.5, dloss=np.float32(2.0), reduction="sum")
    np.testing.assert_allclose(got, bce(input_x=x, input_y=x * 0.5, dloss=2 * one, reduction="sum"))
    read_only = np.empty(8, np.float32)
    read_only.flags.writeable = False
    with pytest.raises(tilegrad.ArgumentError, match="read-only"):
        bce(input_x=x, input_y=x, dloss=one, dx=read_only)
    with pytest.raises(tilegrad.ArgumentError, match="numpy array"):
        bce(input_x=x, input_y=x, dloss=one, dx=[0.0] * 8)
    with pytest.raises(tilegrad.ArgumentError, match="unknown argument"):
        bce(input_x=x, input_y=x, dloss=one, wieght=x)
    act = tilegrad.compile("activation_backward")
    for bad in ("x", None, (1.0,)):
        with pytest.raises(tilegrad.AttributeValueError, match="alpha"):
            act(y=x, dy=x, x=x, alpha=bad)
    assert all(issubclass(e, tilegrad.TilegradError) for e in (tilegrad.ArgumentError, tilegrad.DefinitionError))


# 15: planning and showing IR never touch data
def test_plan_of_a_huge_spec_allocates_nothing():
    k = tilegrad.compile("pooling_backward", "ascend910b")
    spec = tilegrad.Spec((1, 65536, 65536, 2), "float32")
    report = k.plan(x=spec, y=tilegrad.Spec((1, 65536, 32768, 1)), dy=tilegrad.Spec((1, 65536, 32768, 1)),
                    window=(2, 2), check=False)
    assert "block" in str(report).lower()
    with pytest.raises(tilegrad.ArgumentError, match="Spec"):
        k(x=spec, y=spec, dy=spec, window=(2, 2))


def test_cli_plan_and_show_of_a_huge_shape():
    from tilegrad.cli import main

    assert main(["plan", "binary_cross_entropy_grad", "--shape", "input_x=100000x100000"]) == 0
    assert main(["show", "binary_cross_entropy_grad", "--stage", "op", "--shape", "input_x=100000x100000"]) == 0


# 17: empty batch and NaN activations follow torch
def test_empty_batch_leaves_running_statistics():
    x = np.zeros((0, 5, 2, 2), np.float32)
    p = np.ones((1, 5, 1, 1), np.float32)
    mean, var = np.full_like(p, 0.5), np.full_like(p, 2.0)
    y, save_mean, save_inv = tilegrad.compile("batch_norm_forward_training")(
        x=x, bn_scale=p, bn_bias=p, running_mean=mean, running_variance=var)
    assert y.shape == x.shape
    assert (mean == 0.5).all() and (var == 2.0).all()
    assert np.isfinite(save_mean).all() and np.isfinite(save_inv).all()


@pytest.mark.parametrize("mode,aten", [
    ("relu", lambda dy, x, y: torch.ops.aten.threshold_backward(dy, x, 0.0)),
    ("clipped_relu", lambda dy, x, y: torch.ops.aten.hardtanh_backward(dy, x, 0.0, 1.0)),
    ("elu", lambda dy, x, y: torch.ops.aten.elu_backward(dy, 1.0, 1.0, 1.0, False, x)),
])
def test_nan_activation_input_passes_dy_like_torch(mode, aten):
    x = np.array([np.nan, -1.0, 0.5, 2.0, np.nan], np.float32).reshape(1, 1, 1, 5)
    y = np.where(x > 0, x, np.expm1(x)).astype(np.float32)
    dy = np.arange(1, 6, dtype=np.float32).reshape(1, 1, 1, 5)
    got = tilegrad.compile("activation_backward")(y=y, dy=dy, x=x, mode=mode)
    ref = aten(torch.from_numpy(dy), torch.from_numpy(x), torch.from_numpy(y)).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-6)


# 18: the command line reports user errors as such
def test_cli_errors(tmp_path, capsys, monkeypatch):
    from tilegrad.cli import main

    raising = tmp_path / "raising.py"
    raising.write_text("raise RuntimeError('boom')\n")
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    for source, words in ((raising, "RuntimeError: boom"), (broken, "SyntaxError"), ("no_such_mod_xyz", "No module")):
        assert main(["ops", "--load", str(source)]) == 1
        assert words in capsys.readouterr().err
    user = tmp_path / "user_ops.py"
    user.write_text("import tilegrad.dsl as tg\n@tg.op(outputs={'o': tg.like('x')}, replace=True)\n"
                    "def safety_cli_op(x=tg.tensor('*S')):\n    raise ValueError('bad body')\n")
    assert main(["ops", "--load", str(user), "--load", str(user)]) == 0  # loading twice is harmless
    assert main(["run", "safety_cli_op", "--load", str(user), "--shape", "x=4"]) == 1
    assert "bad body" in capsys.readouterr().err
    assert main(["run", "nll_loss_backward", "--shape", "self=4x5", "--attr", "ignore_index=" + "9" * 25]) == 1
    assert "ignore_index" in capsys.readouterr().err
    for mask in ("1.5", "true"):
        assert main(["run", "binary_cross_entropy_grad", "--target", "ft78ne", "--shape", "input_x=64",
                     "--attr", f"core_mask={mask}"]) == 1
        assert "core_mask" in capsys.readouterr().err
    monkeypatch.setenv("TILEGRAD_OPS", str(tmp_path / "missing.py"))
    assert main(["targets"]) == 0
    assert "skipped" in capsys.readouterr().err


def test_cli_internal_error_is_reported_as_internal(capsys, monkeypatch):
    from tilegrad import cli

    monkeypatch.setattr(cli, "cmd_targets", lambda args: {}["boom"])  # a bug, not the user's fault
    assert cli.main(["targets"]) == 2
    assert "internal error" in capsys.readouterr().err


def test_cache_warns_once_when_unwritable(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("TILEGRAD_CACHE_DIR", str(blocked / "cache"))
    monkeypatch.setattr(cache, "_warned", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cache.store("k1", {"op": "x"}, {})
        cache.store("k2", {"op": "x"}, {})
    assert len([w for w in caught if "memory only" in str(w.message)]) == 1


@tg.op(outputs={"out": tg.like("x")}, replace=True)
def safety_collapsed_check(x=tg.tensor("*M N", collapse=True), idx=tg.tensor("M2", dtype=tg.INDEX_DTYPES)):
    rows, n = x.shape
    tg.check((idx.shape[0],), lambda r: (tg.cast(idx[r], "i") >= 0) & (tg.cast(idx[r], "i") < n), "idx out of range")
    return lambda m, k: x[m, k] * 2.0


def test_collapsed_op_with_a_check_raises_instead_of_crashing():
    x = np.ones((2, 3, 8), np.float32)
    k = tilegrad.compile("safety_collapsed_check", "ascend910b")
    np.testing.assert_array_equal(k(x=x, idx=np.array([0, 7])), 2 * x)
    with pytest.raises(tilegrad.IndexOutOfRangeError, match="idx out of range"):
        k(x=x, idx=np.array([0, 8]))


def test_guard_mode_from_the_environment(monkeypatch):
    monkeypatch.setenv("TILEGRAD_GUARD", "1")
    assert tilegrad.compile("binary_cross_entropy_grad").guard
    monkeypatch.setenv("TILEGRAD_GUARD", "0")
    assert not tilegrad.compile("binary_cross_entropy_grad").guard
    assert tilegrad.compile("binary_cross_entropy_grad", guard=True).guard


def test_a_compiler_failure_is_internal_and_names_the_pass(monkeypatch, capsys):
    from tilegrad.cli import main
    from tilegrad.passes.fuse_sibling_loops import FuseSiblingLoops

    def broken(self, ctx, module):
        raise KeyError("boom")

    monkeypatch.setattr(FuseSiblingLoops, "apply", broken)
    monkeypatch.setenv("TILEGRAD_CACHE", "0")
    monkeypatch.setattr(tilegrad.kernel, "_SPECIALIZATIONS", {})  # compile for real
    with pytest.raises(tilegrad.InternalError, match="fuse-sibling-loops: KeyError"):
        tilegrad.compile("safety_add_rows", "ft78ne").ir("loops", x=np.ones((2, 2), np.float32),
                                                         b=np.ones(2, np.float32))
    assert main(["show", "dropout_backward", "--target", "mt7004", "--shape", "dy=2x3x4x5"]) == 2
    assert "internal error" in capsys.readouterr().err
