"""The user-written backward ops of examples/09 (MSE, tanh and erf GELU, label-smoothed cross-entropy)
and examples/07 (layer norm) against torch in float64, on cpu and a scratchpad target."""

import importlib.util
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
