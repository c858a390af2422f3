"""The user-written backward ops of examples/09 (MSE, tanh and erf GELU, label-smoothed cross-entropy)
and examples/07 (layer norm) against torch in float64, on cpu and a scratchpad target."""

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import torch  # skips without torch

import tilegrad

EXAMPLES = Path(__file__).parent.parent / "examples"


def _example(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


user_ops = _example("09_user_backward_ops")
layer_norm = _example("07_layer_norm_backward")
CASES = list(user_ops.cases(np.random.default_rng(0)))


@pytest.mark.parametrize("target", ["cpu", "ascend910b"])
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{'-'.join(map(str, c[2].values())) or 'default'}"
                                             for c in CASES])
def test_user_op_matches_torch(case, target):
    name, inputs, attrs, expected = case
    got = tilegrad.compile(name, target)(**inputs, **attrs)
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-5, atol=1e-6)


def test_ignored_rows_get_zero_gradient():
    name, inputs, attrs, _ = CASES[-1]
    got = tilegrad.compile(name)(**inputs, **attrs)
    ignored = inputs["target"] == -100
    assert ignored.any() and not got[ignored].any()


@pytest.mark.parametrize("target", ["cpu", "ascend910b"])
def test_layer_norm_backward_matches_torch(target):
    a = layer_norm.inputs(64, 300, np.random.default_rng(1))
    t = {k: torch.from_numpy(v).double() for k, v in a.items()}
    expected = torch.ops.aten.native_layer_norm_backward(t["dy"], t["x"], [300], t["mean"][:, None],
                                                         t["rstd"][:, None], t["gamma"], torch.zeros(300).double(),
                                                         [True, True, True])
    got = tilegrad.compile("layer_norm_backward", target)(**a)
    for value, want in zip(got, expected):
        np.testing.assert_allclose(value, want.numpy(), rtol=1e-4, atol=1e-5)


# The user-op benchmark's ops (tilegrad/user_ops.py, issue 45): each at a small shape against torch
# in float64, on cpu in float32 and float64 (the float64 build is the guard build, bounds-checking every
# access: one compile instead of two) and on ascend910b in float32.

from tilegrad import bench, user_ops  # noqa: E402

BENCH_CASES = {c.op: c for c in reversed(user_ops.cases())}  # one case per op (the first of each)
BUILDS = [("cpu", "float32", False), ("cpu", "float64", True), ("ascend910b", "float32", False)]
TOLERANCES = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-10, atol=1e-10)}


def _check(case, target, dtype, guard):
    inputs = user_ops.arrays(case, "small", np.random.default_rng(0), dtype)
    attrs = case.attrs(case.dims["small"])
    got = tilegrad.compile(case.op, target, guard=guard)(**inputs, **attrs)
    got = got if isinstance(got, tuple) else (got,)
    want = user_ops.oracle(case, inputs, attrs)
    assert len(got) == len(want) == len(tilegrad.get_op(case.op).outputs)
    for name, value, expected in zip(tilegrad.get_op(case.op).outputs, got, want):
        assert value.dtype == inputs[next(iter(inputs))].dtype and value.shape == expected.shape, name
        scale = max(float(np.max(np.abs(expected))), 1.0)  # sums of many terms: relative to the largest
        np.testing.assert_allclose(value.astype(np.float64) / scale, expected / scale, err_msg=name,
                                   **TOLERANCES[dtype])


@pytest.mark.parametrize("target, dtype, guard", BUILDS, ids=[f"{t}-{d}{'-guard' * g}" for t, d, g in BUILDS])
@pytest.mark.parametrize("op", sorted(BENCH_CASES))
def test_benchmark_user_op_matches_torch(op, target, dtype, guard):
    _check(BENCH_CASES[op], target, dtype, guard)


def test_linear_backward_in_bfloat16_rounds_once_on_store():
    """The benchmark's bfloat16 GEMMs: float32 sums of the bfloat16 inputs, each output rounded once
    (to within bfloat16's half ulp, 2^-9, of the float64 product of the same values)."""
    case = next(c for c in user_ops.cases() if c.op == "user_linear_backward" and c.dtype == "bfloat16")
    inputs = user_ops.arrays(case, "small", np.random.default_rng(1))
    got = tilegrad.compile(case.op, "cpu")(**inputs)
    for value, expected in zip(got, user_ops.oracle(case, inputs, {})):
        assert value.dtype == inputs["dy"].dtype
        np.testing.assert_allclose(value.astype(np.float64), expected, rtol=2.0 ** -8, atol=1e-5)


def test_every_case_of_the_issue_is_in_the_table():
    """Issue 45's list: linear at three sizes (one not a multiple of 16) in float32 and bfloat16,
    and one case for each other op."""
    table = user_ops.cases()
    linear = [(c.dtype, c.dims["full"]) for c in table if c.op == "user_linear_backward"]
    assert sorted({d for d, _ in linear}) == ["bfloat16", "float32"] and len(linear) == 6
    assert any(any(n % 16 for n in dims) for _, dims in linear)
    convs = {c.dims["full"][4:] for c in table if c.op == "user_conv2d_backward"}
    assert convs == {(3, 1, 1, 1), (1, 1, 0, 1), (3, 2, 1, 1), (5, 1, 4, 2)}  # (taps, stride, padding, dilation)
    assert len({c.op for c in table}) == 15 and len({c.label + str(c.dims["full"]) + c.dtype for c in table}) == 23


def test_the_user_table_runs_and_reports_failures_and_plans(monkeypatch):
    """The runner times a case against torch, measures the FMA peak beside it, keeps a failing
    case's row with its error, and lists the ascend910b plan's cores and element copies."""
    monkeypatch.setattr(bench, "fma_peak_gflops", lambda: 100.0)
    refused = user_ops.UserCase("refused", "user_cumsum_backward", {"small": (3, 4)},
                                lambda rng, d: {"dy": np.zeros(d), "extra": np.zeros(d)}, {})
    monkeypatch.setattr(user_ops, "cases", lambda: [BENCH_CASES["user_bmm_backward"], refused])
    rows = bench.run_user_benchmarks("small", repeat=1, table=False)
    good, bad = rows
    assert not good["error"] and good["tilegrad_ms"] > 0 and good["vs_torch"] > 0 and good["gflops"] > 0
    assert good["error_vs_torch"] < 1e-5 and good["torch_form"] == "bmm out="
    assert bad["error"].startswith("ArgumentError") and "extra" in bad["error"], bad["error"]
    plans = bench.user_plans([BENCH_CASES["user_bmm_backward"]], "small", np.random.default_rng(0))
    assert re.fullmatch(r"\| bmm backward \| 3x9x7x11 float32 \| 0: 3/24 busy, \d+ element copies"
                        r"(; \d: \d+/24 busy, \d+ element copies)* \|", plans[-1]), plans[-1]


def test_the_fma_peak_is_measured():
    """At least one vector FMA per cycle at 1 GHz: a loop the compiler did not fold away."""
    assert bench.fma_peak_gflops(threads=1, seconds=0.05) > 8


def test_the_cli_refuses_plans_without_user_and_names_the_cases(capsys):
    from tilegrad.cli import main

    assert main(["bench", "--plans"]) != 0
    assert "--plans goes with --user" in capsys.readouterr().err
    assert main(["bench", "--user", "no such case"]) != 0
    err = capsys.readouterr().err
    assert "no user-op case matches no such case" in err and "conv2d backward 5x5 d2" in err
