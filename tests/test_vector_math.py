"""exp, log, tanh and erf in float32 and float64 (expand-math's polynomials) against float64 numpy
(Python's math.erf for erf; mpmath at the worst float64 points), in ulp, and in the vectorized loop
itself: no libm call is left in a kernel's assembly."""

import math
import re

import numpy as np
import pytest

import tilegrad
import tilegrad.dsl as tg


@tg.op(outputs={"e": tg.like("x"), "l": tg.like("x"), "t": tg.like("x")}, replace=True)
def test_math_functions(x=tg.tensor("N")):
    return tg.exp(x), tg.log(x), tg.tanh(x)


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def test_erf_function(x=tg.tensor("N")):
    return tg.erf(x)


_erf64 = np.vectorize(math.erf, otypes=[np.float64])


def _ulp_error(got: np.ndarray, exact: np.ndarray, dtype=np.float32) -> np.ndarray:
    """|got - exact| in units of `dtype`'s spacing at the exact value (finite results only)."""
    spacing = np.spacing(np.abs(exact.astype(dtype))).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / spacing


@pytest.fixture(scope="module")
def kernel():
    return tilegrad.compile("test_math_functions", "cpu")


@pytest.fixture(scope="module")
def erf_kernel():
    return tilegrad.compile("test_erf_function", "cpu")


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


def test_erf_is_within_1_ulp_of_float64(erf_kernel):
    """float32: Juffa's erff, both sides of its seam at 475/512 and where erf rounds to 1 (|x| ~ 3.9);
    a denormal result is within one denormal step."""
    rng = np.random.default_rng(1)
    x = np.concatenate([_sweep(), rng.uniform(-6, 6, 100_000), rng.uniform(0.9, 0.95, 50_000)]).astype(np.float32)
    got, exact = erf_kernel(x=x), _erf64(x.astype(np.float64))
    normal = np.abs(exact) >= np.finfo(np.float32).tiny
    assert _ulp_error(got[normal], exact[normal]).max() <= 1.0
    assert np.all(np.abs(got[~normal].astype(np.float64) - exact[~normal]) <= 2.0 ** -149)
    assert np.abs(got).max() == 1.0  # never beyond ±1


def test_float64_erf_is_within_4_ulp(erf_kernel):
    """float64: Cephes' ndtr.c rationals (exp stays libm's)."""
    rng = np.random.default_rng(2)
    octaves = np.exp2(rng.uniform(-1074, 1024, 200_000))
    x = np.concatenate([octaves, -octaves, rng.uniform(-7, 7, 200_000)])
    x = x[np.isfinite(x)]
    got, exact = erf_kernel(x=x), _erf64(x)
    normal = np.abs(exact) >= np.finfo(np.float64).tiny
    assert _ulp_error(got[normal], exact[normal], np.float64).max() <= 4.0
    assert np.all(np.abs(got[~normal] - exact[~normal]) <= 2.0 ** -1074)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erf_special_values(erf_kernel, dtype):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 10.0, -10.0, 1e30, -1e30], dtype)
    got = erf_kernel(x=x)
    np.testing.assert_array_equal(got, [0.0, -0.0, 1.0, -1.0, np.nan, 1.0, -1.0, 1.0, -1.0])
    assert np.signbit(got[1])


def test_float32_erf_calls_no_libm(erf_kernel):
    asm = erf_kernel.ir("asm", x=np.ones(1024, np.float32))
    assert "erf" not in asm.replace("test_erf_function", "") and "exp" not in asm
    if not erf_kernel.guard:
        assert "zmm" in asm or "ymm" in asm


def _float64_sweep() -> np.ndarray:
    """Every float64 octave, both signs, exp's whole range and the seams (tanh's 0.625, log's sqrt(1/2))."""
    rng = np.random.default_rng(3)
    octaves = np.exp2(rng.uniform(-1074, 1024, 200_000))
    seams = np.concatenate([rng.uniform(a, b, 30_000) for a, b in
                            [(-750, 712), (-20, 20), (0.6, 0.65), (0.70, 0.72), (0.99, 1.01)]])
    values = np.concatenate([octaves, -octaves, seams])
    return values[np.isfinite(values)]


def test_float64_exp_log_tanh_are_within_1_ulp(kernel):
    """fdlibm's exp and log, Cephes' tanh: within 2 ulp of numpy everywhere, and within 1 ulp (tanh 1.5)
    of the exact value (mpmath, 120 bits) at the 50 points furthest from numpy."""
    mpmath = pytest.importorskip("mpmath")
    x = _float64_sweep()
    got = dict(zip(("exp", "log", "tanh"), kernel(x=x)))
    with np.errstate(all="ignore"):
        numpy_values = {"exp": np.exp(x), "log": np.log(x), "tanh": np.tanh(x)}
    exact_of = {"exp": mpmath.exp, "log": mpmath.log, "tanh": mpmath.tanh}
    for name, bound in (("exp", 1.0), ("log", 1.0), ("tanh", 1.5)):
        want = numpy_values[name]
        where = np.isfinite(want) & (np.abs(want) >= np.finfo(np.float64).tiny)
        errors = _ulp_error(got[name][where], want[where], np.float64)
        assert errors.max() <= 2.0, name
        with mpmath.workprec(120):
            for j in np.argsort(errors)[-50:]:
                point = float(x[where][j])
                exact = exact_of[name](mpmath.mpf(point))
                assert abs(mpmath.mpf(float(got[name][where][j])) - exact) <= bound * np.spacing(abs(float(exact))), \
                    (name, point)
    exact_e = numpy_values["exp"]
    tiny = exact_e < np.finfo(np.float64).tiny
    assert np.all(np.abs(got["exp"][tiny] - exact_e[tiny]) <= 2.0 ** -1074)
    assert np.all(np.isinf(got["exp"][np.isinf(exact_e)]))


def test_float64_special_values_follow_libm(kernel):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, 710.0, -746.0, 5e-324, 2e-308, 20.0, -20.0])
    e, lg, t = kernel(x=x)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(e, np.exp(x))
        np.testing.assert_array_equal(lg, np.log(x))
        special = ~np.isfinite(np.tanh(x)) | (np.tanh(x) == 0) | (np.abs(np.tanh(x)) == 1)
        np.testing.assert_array_equal(t[special], np.tanh(x)[special])


def test_float64_loops_call_no_libm(kernel, erf_kernel):
    x = np.ones(1024)
    for asm in (kernel.ir("asm", x=x), erf_kernel.ir("asm", x=x)):
        assert not re.search(r"call\w*\s+\*?(exp|log|tanh|erf)\b", asm), "a scalar libm call is left"
        if not kernel.guard:
            assert "ymm" in asm or "zmm" in asm
