"""The DSL's operators and math functions against torch in float64 (and float32 within its tolerance):
`**`, tg.power, tg.erf, tg.sigmoid, tg.sign, tg.reduce_min, comparisons, &, |, ~, abs(), .eq()/.ne()."""

import numpy as np
import pytest
from conftest import torch

import tilegrad
import tilegrad.dsl as tg

if torch is None:
    pytest.skip("torch is the oracle here", allow_module_level=True)

SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.9999, 1.0001, -2.0, -3.0]
TOLERANCE = {"float64": dict(rtol=1e-12, atol=1e-300), "float32": dict(rtol=1e-5, atol=1e-6)}


@tg.op(outputs={n: tg.like("x") for n in ("erf", "sigmoid", "sign", "cube", "inverse_square", "root", "pow_y",
                                           "two_to_x", "magnitude")}, replace=True)
def operators_math(x=tg.tensor("*S"), y=tg.tensor("*S", dtype="x")):
    return tg.erf(x), tg.sigmoid(x), tg.sign(x), x ** 3, x ** -2, x ** 0.5, x ** y, 2.0 ** x, abs(x)


def oracle_math(x, y):
    return [torch.erf(x), torch.sigmoid(x), torch.sign(x), x ** 3, x ** -2, x ** 0.5, torch.pow(x, y), 2.0 ** x,
            x.abs()]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_math_functions_match_torch(dtype):
    x = np.concatenate([np.linspace(-7, 7, 1001), SPECIAL]).astype(dtype)
    y = np.resize(np.array([2.0, 3.0, 0.5, -1.0, 0.0, 1.5, -2.0], dtype), x.shape)
    got = tilegrad.compile("operators_math")(x=x, y=y)
    want = oracle_math(torch.from_numpy(x.astype(np.float64)), torch.from_numpy(y.astype(np.float64)))
    for name, g, w in zip(tilegrad.get_op("operators_math").outputs, got, want):
        w = w.numpy()
        tolerance = TOLERANCE[dtype] if name != "pow_y" or dtype == "float64" else dict(rtol=2e-6, atol=1e-6)
        np.testing.assert_allclose(g, w.astype(dtype), equal_nan=True, err_msg=name, **tolerance)


def test_integer_powers_are_exact_for_negative_bases():
    x = np.array([-3.0, -2.0, -1.5, -1.0, 0.0, 2.0], np.float64)
    got = tilegrad.compile("operators_math")(x=x, y=np.full_like(x, 3.0))
    np.testing.assert_array_equal(got[3], x * x * x)  # x ** 3
    np.testing.assert_allclose(got[6], x * x * x, rtol=1e-14)  # an expression exponent: exp/log, signed


@tg.op(outputs={"low": tg.shaped("N", dtype="x"), "low_index": tg.shaped("N", dtype="i")}, replace=True)
def operators_reduce_min(x=tg.tensor("N K"), i=tg.tensor("N K", dtype=("int32", "int64"))):
    rows, columns = x.shape
    low = lambda n: tg.reduce_min(columns, lambda k: x[n, k])  # noqa: E731
    low_index = lambda n: tg.reduce_min(columns, lambda k: i[n, k])  # noqa: E731
    return low, low_index


@pytest.mark.parametrize("target", ["cpu", "ascend910b"])
def test_reduce_min_matches_amin(target, rng):
    x = rng.standard_normal((37, 300)).astype(np.float32)
    x[3, 17] = np.nan
    i = rng.integers(-1000, 1000, (37, 300)).astype(np.int64)
    low, low_index = tilegrad.compile("operators_reduce_min", target)(x=x, i=i)
    np.testing.assert_array_equal(low, torch.amin(torch.from_numpy(x), 1).numpy())
    np.testing.assert_array_equal(low_index, i.min(1))


@tg.op(outputs={"inside": tg.like("x"), "outside": tg.like("x"), "flipped": tg.like("x"), "same": tg.like("x"),
                "differ": tg.like("x")}, replace=True)
def operators_logic(x=tg.tensor("*S"), y=tg.tensor("*S", dtype="x")):
    inside = (abs(x) < 1.0) & (y > 0.0)
    outside = (x <= -1.0) | (x >= 1.0)
    return (tg.where(inside, 1.0, 0.0), tg.where(outside, 1.0, 0.0), tg.where(~inside, 1.0, 0.0),
            tg.where(x.eq(y), 1.0, 0.0), tg.where(x.ne(y), 1.0, 0.0))


def test_logic_on_array_expressions(rng):
    x = np.round(rng.standard_normal(500) * 2, 1)
    y = np.where(rng.random(500) < 0.3, x, np.round(rng.standard_normal(500), 1))
    inside, outside, flipped, same, differ = tilegrad.compile("operators_logic")(x=x, y=y)
    expected_inside = (np.abs(x) < 1) & (y > 0)
    np.testing.assert_array_equal(inside, expected_inside)
    np.testing.assert_array_equal(outside, (x <= -1) | (x >= 1))
    np.testing.assert_array_equal(flipped, ~expected_inside)
    np.testing.assert_array_equal(same, x == y)
    np.testing.assert_array_equal(differ, x != y)


MIXED = ("add", "sub", "mul", "div", "pow", "lt", "le", "gt", "ge", "eq", "ne", "logic", "integer", "where", "maximum")


@tg.op(outputs={n: tg.like("x") for n in MIXED}, replace=True)
def operators_scalar_meets_tensor(x=tg.tensor("N"), s=tg.tensor(tg.ONE, dtype="x"), k=tg.tensor("N", dtype="int64")):
    """A scalar expression on the left of each operator and function, a tensor on the right: the scalar algebra
    (dsl/expr.py) hands the tensor the scalar operation to broadcast."""
    a, b = s.item(), k[0]
    return (a + x, a - x, a * x, a / x, a ** x, (a < x) * 1.0, (a <= x) * 1.0, (a > x) * 1.0, (a >= x) * 1.0,
            a.eq(x) * 1.0, a.ne(x) * 1.0, ((a > 0.0) & (x > 0.0) | (a < x)) * 1.0,
            ((b >> k) + (b << k) + b // k + b % k) * 1.0, tg.where(a > x, x, a), tg.maximum(a, x))


def test_a_scalar_expression_meets_a_tensor(rng):
    x = np.concatenate([np.round(rng.uniform(-3, 3, 20), 1), [1.5, 1.5, 0.0, -1.5]])
    k = np.resize(np.array([1, 2, 3, 5], np.int64), x.shape)
    k[0] = 7
    s = np.array([1.5])
    got = dict(zip(MIXED, tilegrad.compile("operators_scalar_meets_tensor")(x=x, s=s, k=k)))
    tx, tk, a, b = torch.from_numpy(x), torch.from_numpy(k), torch.tensor(1.5, dtype=torch.float64), int(k[0])
    want = dict(add=a + tx, sub=a - tx, mul=a * tx, div=a / tx, pow=a ** tx, lt=a < tx, le=a <= tx, gt=a > tx,
                ge=a >= tx, eq=a == tx, ne=a != tx, logic=(a > 0) & (tx > 0) | (a < tx),
                integer=(b >> tk) + (b << tk) + b // tk + b % tk, where=torch.where(a > tx, tx, a),
                maximum=torch.maximum(a, tx))
    for name in MIXED:
        np.testing.assert_allclose(got[name], want[name].double().numpy(), rtol=1e-14, err_msg=name)


def test_public_dsl_names_have_docstrings():
    missing = [n for n in tg.__all__ if not (getattr(tg, n).__doc__ or "").strip()
               and callable(getattr(tg, n))]
    assert not missing, f"no docstring: {missing}"


def test_python_equality_with_a_number_is_refused_not_a_silent_false():
    """`x == 0.0` would be Python's identity test of two objects: False, a branch silently taken."""
    @tg.op(outputs={"out": tg.like("x")}, replace=True)
    def equality_by_python(x=tg.tensor("N")):
        return tg.where(x == 0.0, 1.0, x)

    @tg.op(outputs={"out": tg.like("x")}, replace=True)
    def element_equality_by_python(x=tg.tensor("N")):
        total = tg.temp("total", (), "float32")
        total.assign(lambda: tg.reduce_sum(x.shape[0], lambda i: tg.where(x[i] != 0.0, x[i], 1.0)))
        return x * total[()]

    for name in ("equality_by_python", "element_equality_by_python"):
        with pytest.raises(tilegrad.DefinitionError, match=rf"{name}: TypeError: .*expr.eq\(v\)"):
            tilegrad.compile(name)(x=np.zeros(4, np.float32))


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def strided_window_sum(x=tg.tensor("N"), stride=tg.attr(1)):
    """y[i] = x[i // stride] where i is a multiple of the stride and the sum of both neighbours
    otherwise: floor division, remainders and a mask built from them, as conv grad_inputs write."""
    n = x.shape[0]

    def tap(i, t):
        at = i + t - 1
        hit = (at >= 0) & (at % stride).eq(0) & (at // stride < n)
        return tg.where(hit, x[tg.minimum(tg.maximum(at // stride, 0), n - 1)], 0.0)

    return lambda i: tg.reduce_sum(3, lambda t: tap(i, t))


@pytest.mark.parametrize("stride", [1, 2, 3])
def test_remainders_and_quotients_by_a_stride_of_one_fold_away(stride):
    x = np.random.default_rng(0).standard_normal(11)
    kernel = tilegrad.compile("strided_window_sum")
    want = [sum(x[(i + t - 1) // stride] for t in range(3)
                if i + t - 1 >= 0 and (i + t - 1) % stride == 0 and (i + t - 1) // stride < 11) for i in range(11)]
    np.testing.assert_allclose(kernel(x=x, stride=stride), want, rtol=1e-12)
    loops = kernel.ir("loops", x=x, stride=stride)
    assert ("remsi" in loops) == (stride != 1) and ("divsi" in loops) == (stride != 1)
