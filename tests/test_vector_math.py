"""float32 exp, log and tanh (expand-math's polynomials) against float64 numpy, in ulp, and in the
vectorized loop itself: no libm call is left in a float32 kernel's assembly."""

import numpy as np
import pytest

import tilegrad
import tilegrad.dsl as tg


@tg.op(outputs={"e": tg.like("x"), "l": tg.like("x"), "t": tg.like("x")}, replace=True)
def test_math_functions(x=tg.tensor("N")):
    return tg.exp(x), tg.log(x), tg.tanh(x)


def _ulp_error(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in units of float32's spacing at the exact value (finite results only)."""
    exact32 = exact.astype(np.float32)
    spacing = np.spacing(np.abs(exact32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / spacing


@pytest.fixture(scope="module")
def kernel():
    return tilegrad.compile("test_math_functions", "cpu")


def _sweep() -> np.ndarray:
    """Every float32 octave from denormals to the largest, both signs, with dense samples around
    the polynomials' seams (0.625 for tanh, sqrt(1/2) and 1 for log, exp's overflow edge)."""
    rng = np.random.default_rng(0)
    octaves = np.exp2(rng.uniform(-149, 128, 400_000)).astype(np.float32)
    seams = np.concatenate([rng.uniform(a, b, 50_000) for a, b in
                            [(-20, 20), (0.6, 0.65), (0.70, 0.72), (0.99, 1.01), (85, 89), (-104, -80)]])
    values = np.concatenate([octaves, -octaves, seams.astype(np.float32)])
    return values[np.isfinite(values)].astype(np.float32)


def test_exp_log_tanh_are_within_2_ulp_of_float64(kernel):
    x = _sweep()
    e, lg, t = kernel(x=x)
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        exact_e, exact_l, exact_t = np.exp(x64), np.log(x64), np.tanh(x64)
    normal = np.abs(exact_e) > np.finfo(np.float32).tiny  # denormal results have absolute spacing
    finite = np.abs(exact_e) < np.finfo(np.float32).max
    assert _ulp_error(e[normal & finite], exact_e[normal & finite]).max() <= 1.0
    assert np.all(np.abs(e[~normal].astype(np.float64) - exact_e[~normal]) <= 2.0 ** -149)
    assert np.all(np.isinf(e[exact_e > np.finfo(np.float32).max]))
    positive = x > 0
    assert _ulp_error(lg[positive], exact_l[positive]).max() <= 1.0
    assert _ulp_error(t, exact_t).max() <= 2.0


def test_special_values_follow_libm(kernel):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, 89.0, -110.0, 1e-45, 20.0, -20.0], np.float32)
    e, lg, t = kernel(x=x)
    with np.errstate(all="ignore"):
        exact = {"exp": (e, np.exp(x)), "log": (lg, np.log(x)), "tanh": (t, np.tanh(x))}
    for name, (got, want) in exact.items():
        special = ~np.isfinite(want) | (want == 0) | (np.abs(want) == 1)
        np.testing.assert_array_equal(got[special], want[special], err_msg=name)
    assert lg[8] == np.float32(np.log(np.float64(x[8])))  # a denormal input is scaled first


def test_float32_loops_call_no_libm(kernel):
    x = np.ones(1024, np.float32)
    asm = kernel.ir("asm", x=x)
    assert not any(name in asm for name in ("expf", "logf", "tanhf")), "a scalar libm call is left"
    if not kernel.guard:  # the guard build compiles at O1, unvectorized
        assert "zmm" in asm or "ymm" in asm
