"""The user-written backward ops of examples/09 (MSE, tanh and erf GELU, label-smoothed cross-entropy)
against torch in float64, on cpu and a scratchpad target."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from conftest import torch  # noqa: F401  (skips without torch)

import tilegrad

EXAMPLE = Path(__file__).parent.parent / "examples" / "09_user_backward_ops.py"
_spec = importlib.util.spec_from_file_location("user_backward_ops", EXAMPLE)
user_ops = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(user_ops)
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
