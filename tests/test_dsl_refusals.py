"""What the DSL refuses at definition, and that what it accepts still computes the right answer.

A stage that reads the buffer it writes at another element, other than as a scan along one axis
(tests/test_scan.py), would depend on the loop order (cpu, ascend910b and the guard build gave
three answers); a temporary read before any stage writes
it, or a scatter into a buffer nothing filled, would read uninitialised memory. Each is a
DefinitionError naming the op, the source line and the buffer. Also here: authoring mistakes that
used to surface as internal errors (a float reduction extent, a deep chain of operations, numpy's
math on a DSL value), simplified sizes in shape errors, the plan's derived extents, and attribute
values no kernel can hold.
"""

import inspect
import math
import re
import sys

import numpy as np
import pytest

import tilegrad
import tilegrad.dsl as tg
from tilegrad.dsl.bounds import describe
from tilegrad.errors import AttributeValueError, DefinitionError, ShapeError

TARGETS = [("cpu", False), ("ascend910b", False), ("cpu", True)]
"""Where accepted ops are checked: (target, guard build)."""


def line_of(fn, text: str) -> str:
    """`file.py:N` of the line of fn's source that contains `text`."""
    lines, first = inspect.getsourcelines(fn)
    number = next(first + k for k, line in enumerate(lines) if text in line)
    return f"{inspect.getsourcefile(fn)}:{number}"


def refused(op, *, match: str, **arrays) -> str:
    """The DefinitionError message of tracing `op` (its op stage: no compile)."""
    with pytest.raises(DefinitionError) as info:
        tilegrad.compile(op.name, "cpu").ir("op", **arrays)
    message = str(info.value)
    assert message.startswith(f"{op.name}: "), message
    assert re.search(match, message), message
    return message


X = np.arange(12, dtype=np.float32).reshape(3, 4)


# ---- 1. a stage that reads what it writes, at another element ---------------------------------------
@tg.op(outputs={"y": tg.like("x")}, replace=True)
def scan_into_temp(x=tg.tensor("N D")):
    n, d = x.shape
    acc = tg.temp("acc", (n, d))
    acc.assign(lambda i, j: x[i, j] + tg.where(j + 1 < d, acc[i + 1, j + 1], 0.0))  # along two axes: no scan
    return lambda i, j: acc[i, j]


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def scan_into_output(x=tg.tensor("N D")):
    y = tg.output("y")
    y.assign(lambda i, j: x[i, j] + tg.where(j > 0, y[i, j - 1], 0.0) + y[i, j + 1])  # both ways: no scan


def test_a_temp_read_along_two_axes_is_refused_with_the_line_and_buffer():
    message = refused(scan_into_temp, match=r"reads acc\[i0 \+ 1, i1 \+ 1\].*order", x=X)
    assert line_of(scan_into_temp.fn, "acc[i + 1, j + 1]") in message
    assert "writes acc[i0, i1]" in message


def test_an_output_reading_its_elements_on_both_sides_is_refused():
    message = refused(scan_into_output, match=r"reads y\[i0, i1 - 1\].*order", x=X)
    assert line_of(scan_into_output.fn, "y[i, j - 1]") in message


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def scan_array_style(x=tg.tensor("N")):
    t = tg.temp("t", x.shape)
    t.assign(x)
    t.assign(lambda i: t[0] + x[i])  # every element reads the first, which the stage also writes
    return t


def test_a_read_of_a_fixed_element_of_the_buffer_being_written_is_refused():
    refused(scan_array_style, match=r"reads t\[0\]", x=X[0])


@tg.op(outputs={"y": tg.shaped("C", dtype="g")}, replace=True)
def scatter_reading_its_destination(g=tg.tensor("N"), idx=tg.tensor("N", dtype=("int64",)), C=tg.attr(int)):
    y = tg.output("y")
    y.fill(0.0)
    tg.scatter_add(y, (g.shape[0],), index=lambda n: (idx[n],), value=lambda n: g[n] + y[idx[n]])


def test_a_scatter_that_reads_its_destination_is_refused():
    message = refused(scatter_reading_its_destination, match=r"scatter_add into y reads y\[idx\[r0\]\].*order",
                      g=np.ones(5, np.float32), idx=np.arange(5) % 3, C=3)
    assert line_of(scatter_reading_its_destination.fn, "g[n] + y[idx[n]]") in message


@tg.op(outputs={"dx": tg.like("dy")}, in_place={"dx": "dy"}, replace=True)
def in_place_shift(dy=tg.tensor("N")):
    return lambda i: dy[tg.minimum(i + 1, dy.shape[0] - 1)]


@tg.op(outputs={"dx": tg.like("dy")}, in_place={"dx": "dy"}, replace=True)
def in_place_read_after_write(dy=tg.tensor("N")):
    dx = tg.output("dx")
    dx.assign(lambda i: dy[i] * 2.0)
    total = tg.temp("total", (1,))
    total.assign(lambda _: tg.reduce_sum(dy.shape[0], lambda k: dy[k]))
    dx.assign(lambda i: dx[i] + total[0])


def test_an_in_place_output_may_not_read_its_input_at_another_element():
    refused(in_place_shift, match=r"dx is declared in place of dy.*order", dy=X[0])


def test_an_in_place_input_may_not_be_read_after_its_output_is_written():
    message = refused(in_place_read_after_write, match=r"dy is read after a stage wrote dx", dy=X[0])
    assert line_of(in_place_read_after_write.fn, "lambda k: dy[k]") in message


# ---- 2. memory no stage wrote -----------------------------------------------------------------------
@tg.op(outputs={"y": tg.like("x")}, replace=True)
def temp_never_assigned(x=tg.tensor("N")):
    t = tg.temp("t", x.shape)
    return lambda i: x[i] + t[i]


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def temp_assigned_too_late(x=tg.tensor("N")):
    t = tg.temp("t", x.shape)
    y = tg.output("y")
    y.assign(x + t)
    t.assign(x)


@tg.op(outputs={"y": tg.shaped("C", dtype="g")}, replace=True)
def scatter_into_unfilled_temp(g=tg.tensor("N"), idx=tg.tensor("N", dtype=("int64",)), C=tg.attr(int)):
    t = tg.temp("t", (C,))
    tg.scatter_add(t, (g.shape[0],), index=lambda n: (idx[n],), value=lambda n: g[n])
    return lambda c: t[c]


@tg.op(outputs={"y": tg.shaped("C", dtype="g")}, replace=True)
def scatter_into_unfilled_output(g=tg.tensor("N"), idx=tg.tensor("N", dtype=("int64",)), C=tg.attr(int)):
    tg.scatter_add(tg.output("y"), (g.shape[0],), index=lambda n: (idx[n],), value=lambda n: g[n])


def test_a_temp_read_but_never_assigned_is_refused():
    message = refused(temp_never_assigned, match=r"temporary t is read before any stage writes it", x=X[0])
    assert line_of(temp_never_assigned.fn, "x[i] + t[i]") in message


def test_a_temp_read_before_its_assignment_is_refused():
    message = refused(temp_assigned_too_late, match=r"temporary t is read before any stage writes it", x=X[0])
    assert line_of(temp_assigned_too_late.fn, "y.assign(x + t)") in message  # (array style: the line of the use)


@pytest.mark.parametrize("op, spelled", [(scatter_into_unfilled_temp, r"t\.fill\(0\)"),
                                         (scatter_into_unfilled_output, r"tg\.output\('y'\)\.fill\(0\)")])
def test_a_scatter_into_a_buffer_nothing_filled_is_refused(op, spelled):
    message = refused(op, match=f"scatter_add into .* no earlier stage wrote.*{spelled}",
                      g=np.ones(5, np.float32), idx=np.arange(5) % 3, C=3)
    assert line_of(op.fn, "tg.scatter_add(") in message


# ---- what stays allowed computes the right answer -----------------------------------------------------
@tg.op(outputs={"y": tg.like("x"), "counts": tg.shaped("C", dtype="x")}, replace=True)
def accepted_forms(x=tg.tensor("N"), idx=tg.tensor("N", dtype=("int64",)), C=tg.attr(int)):
    """Every form the refusals must leave alone: a read-modify-write of a temp and of an output at
    the element written, a prior output read at its own element (zeros unless out= is given), a
    filled scatter destination."""
    t = tg.temp("t", x.shape)
    t.assign(lambda i: x[i] * 2.0)
    t.assign(lambda i: t[i] + 1.0)
    y = tg.output("y")
    y.assign(lambda i: y[i] + t[i])  # the prior y: zeros
    y.assign(y * 3.0)
    counts = tg.output("counts")
    counts.fill(0.0)
    tg.scatter_add(counts, (x.shape[0],), index=lambda n: (idx[n],), value=lambda n: y[n])


@pytest.mark.parametrize("target, guard", TARGETS)
def test_accepted_forms_match_float64_numpy(target, guard):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000).astype(np.float32)
    idx = rng.integers(0, 7, 1000)
    y, counts = tilegrad.compile("accepted_forms", target, guard=guard)(x=x, idx=idx, C=7)
    want = (x.astype(np.float64) * 2 + 1) * 3
    np.testing.assert_allclose(y, want, rtol=1e-6)
    np.testing.assert_allclose(counts, np.bincount(idx, weights=want, minlength=7), rtol=1e-5, atol=1e-5)


@tg.op(outputs={"dx": tg.like("dy")}, in_place={"dx": "dy"}, replace=True)
def in_place_scale(dy=tg.tensor("N"), x=tg.tensor("N", dtype="dy")):
    total = tg.temp("total", (1,))
    total.assign(lambda _: tg.reduce_sum(dy.shape[0], lambda k: dy[k]))  # read before dx is written
    return lambda i: dy[i] * x[i] + total[0]


@pytest.mark.parametrize("target, guard", TARGETS)
def test_an_in_place_op_still_runs_in_place(target, guard):
    rng = np.random.default_rng(1)
    dy, x = rng.standard_normal((2, 300)).astype(np.float32)
    want = dy.astype(np.float64) * x + dy.astype(np.float64).sum()
    kernel = tilegrad.compile("in_place_scale", target, guard=guard)
    np.testing.assert_allclose(kernel(dy=dy, x=x), want, rtol=1e-5, atol=1e-5)
    same = dy.copy()
    assert kernel(dy=same, x=x, dx=same) is same
    np.testing.assert_allclose(same, want, rtol=1e-5, atol=1e-5)


# ---- 3. authoring mistakes are DefinitionErrors ---------------------------------------------------------
@tg.op(outputs={"y": tg.shaped("N", dtype="x")}, replace=True)
def float_extent(x=tg.tensor("N C")):
    return lambda n: tg.reduce_sum(2.5, lambda k: x[n, k])


@tg.op(outputs={"y": tg.shaped("N", dtype="x")}, replace=True)
def halved_extent(x=tg.tensor("N C")):
    return lambda n: tg.reduce_max(x.shape[1] / 2, lambda k: x[n, k])


def test_a_float_reduction_extent_names_the_line():
    message = refused(float_extent, match=r"extent of a reduce_sum must be an integer.*got 2\.5", x=X)
    assert line_of(float_extent.fn, "reduce_sum(2.5") in message


def test_a_size_divided_with_slash_says_use_floor_division():
    message = refused(halved_extent, match=r"extent of a reduce_max must be an integer.*divide sizes with //", x=X)
    assert line_of(halved_extent.fn, "x.shape[1] / 2") in message


CHAIN = 200


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def long_chain(x=tg.tensor("N")):
    y = x
    for _ in range(CHAIN):  # 400 nested operations: Python's default recursion limit stopped near 330
        y = y * 0.5 + 1.0
    return y


@pytest.mark.skipif(sys.version_info < (3, 11), reason="Python 3.10 keeps its recursion limit (C stack)")
def test_a_long_chain_of_operations_compiles_and_is_right():
    x = np.linspace(-4, 4, 64).astype(np.float32)
    want = x.astype(np.float64)
    for _ in range(CHAIN):
        want = want * 0.5 + 1.0
    np.testing.assert_allclose(tilegrad.compile("long_chain", "cpu")(x=x), want, rtol=1e-6)


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def many_updates(x=tg.tensor("N")):
    t = tg.temp("t", x.shape)
    t.assign(x)
    for _ in range(CHAIN):  # 200 stages, each reading the element it writes
        t.assign(lambda i: t[i] + 1.0)
    return t


def test_two_hundred_successive_updates_trace():
    text = tilegrad.compile("many_updates", "cpu").ir("op", x=X[0])
    assert text.count("tg.compute %t ") == CHAIN + 1 and text.count("tg.compute %y ") == 1


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def too_long_chain(x=tg.tensor("N")):
    def element(i):
        v = x[i]
        for _ in range(12_000):
            v = v + 1.0
        return v

    return element


def test_a_chain_beyond_the_recursion_limit_says_so():
    refused(too_long_chain, match=r"nests too deeply.*recursion limit \(\d+\) allows about \d+ chained.*tg\.temp",
            x=X[0])


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def numpy_math(x=tg.tensor("N")):
    return np.exp(x)


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def numpy_maximum(x=tg.tensor("N")):
    return lambda i: np.maximum(x[i], 0.0)


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def math_module(x=tg.tensor("N")):
    return lambda i: math.exp(x[i])


@pytest.mark.parametrize("op, hint, text", [(numpy_math, "use tg.exp", "np.exp(x)"),
                                            (numpy_maximum, "use tg.maximum", "np.maximum(x[i]"),
                                            (math_module, r"tg\.exp", "math.exp(x[i])")])
def test_numpy_and_math_functions_on_dsl_values_name_the_dsl_function(op, hint, text):
    message = refused(op, match=hint, x=X[0])
    assert line_of(op.fn, text) in message


def test_every_numpy_function_named_like_a_dsl_function_is_hinted():
    """np.sign(x) says "use tg.sign": the DSL's own table of such names (expr.py cannot look in tilegrad.dsl,
    which imports it) lists every numpy ufunc the DSL has a function of that name for, and only those."""
    from tilegrad.dsl.expr import _UFUNC_HINTS, _UFUNC_OPERATORS, DSL_UFUNCS

    ufuncs = {value.__name__ for value in vars(np).values() if isinstance(value, np.ufunc)}
    assert DSL_UFUNCS == (ufuncs & set(tg.__all__)) - set(_UFUNC_OPERATORS) - set(_UFUNC_HINTS)


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def numpy_scalars(x=tg.tensor("N")):
    return lambda i: np.float32(2.0) * x[i] + (np.float64(1.0) > x[i]) - x[0] ** np.int64(2)


def test_numpy_scalars_still_mix_with_dsl_values():
    x = np.arange(-2, 3, dtype=np.float32)
    want = 2.0 * x.astype(np.float64) + (1.0 > x) - float(x[0]) ** 2
    np.testing.assert_allclose(tilegrad.compile("numpy_scalars", "cpu")(x=x), want)


# ---- sizes as a reader writes them ----------------------------------------------------------------------
@pytest.mark.parametrize("form, text", [
    (["add", ["add", 1, ["sub", ["dim", "x", 1], 1]], 1], "x.shape[1] + 1"),
    (["sub", ["dim", "x", 1], ["dim", "x", 1]], "0"),
    (["mul", 2, ["add", ["dim", "x", 1], 3]], "2 * x.shape[1] + 6"),
    (["sub", 0, ["dim", "x", 1]], "-x.shape[1]"),
    (["floordiv", ["sub", ["dim", "x", 2], 2], 2], "(x.shape[2] - 2) // 2"),
    (["floordiv", ["dim", "x", 0], ["mul", ["dim", "x", 1], ["dim", "x", 2]]],
     "x.shape[0] // (x.shape[1] * x.shape[2])"),
    (["max", ["sub", ["dim", "x", 1], 1], 0], "max(x.shape[1] - 1, 0)"),
    (["add", ["mul", ["dim", "y", 0], ["param", "k"]], -1], "y.shape[0] * k - 1"),
])
def test_sizes_print_simplified(form, text):
    assert describe(form) == text


@tg.op(outputs={"y": tg.like("x")}, replace=True)
def window_past_the_end(x=tg.tensor("N W")):
    return lambda i, j: tg.reduce_sum(2, lambda k: x[i, j + k])


def test_a_shape_error_prints_the_simplified_requirement():
    with pytest.raises(ShapeError, match=re.escape("needs x.shape[1] + 1 <= x.shape[1], but they are 5 and 4")):
        tilegrad.compile("window_past_the_end", "cpu")(x=X)


@tg.op(outputs={"y": tg.shaped_by(lambda shape_of, attrs: (shape_of("x")[0] // 2, shape_of("x")[1]), dtype="x")},
       replace=True)
def every_other_row(x=tg.tensor("N W")):
    return lambda i, j: x[2 * i, j]


def test_the_plan_gives_a_derived_extent():
    report = tilegrad.compile("every_other_row", "ascend910b").plan(x=np.zeros((64, 100), np.float32))
    assert report.stages[0]["extent"] == 32 and report.stages[0]["per_core"] == "1-2"
    assert "None" not in str(report).splitlines()[2]


# ---- attribute values no kernel can hold ----------------------------------------------------------------
@pytest.mark.parametrize("window", [math.inf, (math.inf, 2), (math.nan, 2), (2.5, 2), (1e300, 2), ("2", 2)])
def test_a_pooling_window_that_is_no_integer_is_refused(window):
    x = np.zeros((1, 1, 4, 4), np.float32)
    y = np.zeros((1, 1, 2, 2), np.float32)
    with pytest.raises(AttributeValueError, match=r"pooling_backward: attribute window must be a tuple of integers"):
        tilegrad.compile("pooling_backward", "cpu")(y=y, dy=y, x=x, window=window)


@pytest.mark.parametrize("coef", [math.inf, -math.inf, math.nan, 10**400], ids=["inf", "-inf", "nan", "10**400"])
def test_a_float_attribute_must_be_finite(coef):
    x = np.zeros((1, 1, 2, 2), np.float32)
    with pytest.raises(AttributeValueError, match=r"activation_backward: attribute coef must be a finite number"):
        tilegrad.compile("activation_backward", "cpu")(dy=x, x=x, mode="clipped_relu", coef=coef)


# ---- a dtype written as one name -----------------------------------------------------------------------
@tg.op(outputs={"y": tg.shaped("N", dtype="x")}, replace=True)
def scaled_by_counts(x=tg.tensor("N", dtype=("float32",)), k=tg.tensor("N", dtype="int32"),
                     d=tg.tensor("N", dtype="float64")):
    y = tg.output("y")
    y.assign(lambda i: x[i] * tg.cast(k[i], "f") + d[i])


@pytest.mark.parametrize("target,guard", TARGETS)
def test_a_dtype_given_as_one_name_is_that_dtype(target, guard):
    """dtype="int32" means ("int32",), as a user would read it (it was taken for an argument's name and
    refused as a "cycle"); three element types copied in one stage (GM<->UB on ascend910b)."""
    x, k, d = np.arange(100, dtype=np.float32), np.arange(100, dtype=np.int32), np.full(100, 0.5)
    got = tilegrad.compile("scaled_by_counts", target, guard=guard)(x=x, k=k, d=d)
    np.testing.assert_array_equal(got, (x.astype(np.float64) * k + 0.5).astype(np.float32))


def test_a_dtype_naming_nothing_is_refused():
    @tg.op(outputs={"y": tg.like("x")}, replace=True)
    def dtype_of_nothing(x=tg.tensor("N", dtype="xx")):
        return x

    with pytest.raises(DefinitionError, match=r"dtype_of_nothing: argument 'x' has dtype='xx', which names no "
                                              r"argument of the op \(x\) and no dtype"):
        tilegrad.compile("dtype_of_nothing", "cpu")(x=np.zeros(3, np.float32))
