"""An elementwise temporary a contraction reads as an operand stays stored (fuse-elementwise, issue 45):
the planner's `Inline(stage, tensor, inlined=False)`, listed in the plan, which a user turns over; the
outputs against float64 numpy and torch, guarded, at two sizes; the plan given back without the planner
is the same kernel."""

import numpy as np
import pytest
from conftest import torch  # skips without torch

import tilegrad
import tilegrad.dsl as tg
import tilegrad.user_ops  # noqa: F401  (registers user_attention_backward)
from tilegrad.errors import ScheduleError
from tilegrad.schedule import Inline


@tg.op(outputs={"out": tg.shaped("M", "N", dtype="a")}, replace=True)
def inline_operand_gemm(a=tg.tensor("M K"), b=tg.tensor("M K", dtype="a"), c=tg.tensor("M K", dtype="a"),
                        w=tg.tensor("K N", dtype="a")):
    """out = (a b - c) @ w, the product's row operand written as a stage of its own."""
    rows, depth = a.shape
    y = tg.temp("y", (rows, depth))
    y.assign(lambda i, k: a[i, k] * b[i, k] - c[i, k])
    return lambda i, j: tg.reduce_sum(depth, lambda k: y[i, k] * w[k, j])


KEPT = "Inline(stage=0, tensor='y', inlined=False)"
SIZES = [(5, 7, 3), (37, 130, 45)]


def _gemm_call(m, k, n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    call = {name: rng.standard_normal(shape).astype(dtype)
            for name, shape in (("a", (m, k)), ("b", (m, k)), ("c", (m, k)), ("w", (k, n)))}
    f = {name: v.astype(np.float64) for name, v in call.items()}
    return call, (f["a"] * f["b"] - f["c"]) @ f["w"]


def _schedule(kernel, call) -> dict[str, str]:
    return {entry["directive"]: entry["source"] for entry in kernel.plan(**call).schedule}


@pytest.mark.parametrize("m,k,n", SIZES)
@pytest.mark.parametrize("dtype,guard", [("float32", False), ("float64", True)])
def test_an_operand_of_a_contraction_stays_stored(m, k, n, dtype, guard):
    call, want = _gemm_call(m, k, n, dtype)
    kernel = tilegrad.compile("inline_operand_gemm", "cpu", guard=guard)
    assert _schedule(kernel, call)[KEPT] == "planner"
    assert "\"y\"" in kernel.ir("loops", **call)  # the temporary is a stage of its own, stored
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(kernel(**call), want, **tol)


@pytest.mark.parametrize("guard", [False, True])
def test_a_user_inline_turns_the_decision_over(guard):
    """Inline(stage=0, tensor='y') computes y in every term of the product: no temporary, another
    kernel, the same sums (the same values in the same order: the same bits)."""
    call, want = _gemm_call(*SIZES[1], "float32")
    planned = tilegrad.compile("inline_operand_gemm", "cpu", guard=guard)
    inlined = tilegrad.compile("inline_operand_gemm", "cpu", schedule=[Inline(stage=0, tensor="y")], guard=guard)
    assert _schedule(inlined, call)["Inline(stage=0, tensor='y')"] == "user"
    assert KEPT not in _schedule(inlined, call)
    assert "\"y\"" not in inlined.ir("loops", **call)
    got = inlined(**call)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got, planned(**call))


def test_a_temporary_read_once_per_element_is_inlined():
    """The same temporary summed along its rows (every output index in its load): inlined, listed so."""

    @tg.op(outputs={"out": tg.shaped("M", dtype="a")}, replace=True)
    def inline_row_sum(a=tg.tensor("M K"), b=tg.tensor("M K", dtype="a"), c=tg.tensor("M K", dtype="a")):
        rows, depth = a.shape
        y = tg.temp("y", (rows, depth))
        y.assign(lambda i, k: a[i, k] * b[i, k] - c[i, k])
        return lambda i: tg.reduce_sum(depth, lambda k: y[i, k])

    call, _ = _gemm_call(9, 11, 1, "float64")
    del call["w"]
    kernel = tilegrad.compile("inline_row_sum", "cpu")
    assert _schedule(kernel, call)["Inline(stage=0, tensor='y')"] == "planner"
    np.testing.assert_allclose(kernel(**call), (call["a"] * call["b"] - call["c"]).sum(1), rtol=1e-12)


@pytest.mark.parametrize("op,call", [
    ("inline_operand_gemm", _gemm_call(*SIZES[1], "float32")[0]),
    ("user_attention_backward", None),
])
def test_the_printed_plan_holds_the_inline_decisions(op, call):
    call = call or _attention_call(2, 24, 8, np.float32)[0]
    planned = tilegrad.compile(op, "cpu")
    text = "\n".join(_schedule(planned, call))
    assert "Inline(" in text
    exact = tilegrad.compile(op, "cpu", schedule=text, planner=False)
    assert exact.ir("tiled", **call) == planned.ir("tiled", **call)


@pytest.mark.parametrize("directive,rule", [
    (Inline(stage=0, tensor="w"), "names no elementwise temporary"),
    (Inline(stage=3, tensor="y"), "names no elementwise temporary"),
])
def test_an_inline_naming_no_temporary_is_refused(directive, rule):
    call, _ = _gemm_call(*SIZES[0], "float32")
    with pytest.raises(ScheduleError, match=rule) as err:
        tilegrad.compile("inline_operand_gemm", "cpu", schedule=[directive])(**call)
    assert KEPT in str(err.value)  # it lists what it can name


def test_an_inline_without_a_tensor_is_refused():
    with pytest.raises(ScheduleError, match="tensor must name"):
        Inline(stage=0)


def _attention_call(b, length, depth, dtype, seed=1):
    rng = np.random.default_rng(seed)
    q, k, v, do = (rng.standard_normal((b, length, depth)).astype(dtype) for _ in range(4))
    scale = 1 / depth ** 0.5
    tq, tk, tv = (torch.from_numpy(x).double().requires_grad_() for x in (q, k, v))
    p = torch.softmax(scale * tq @ tk.transpose(1, 2), -1)
    (p @ tv).backward(torch.from_numpy(do).double())
    call = dict(do=do, q=q, k=k, v=v, p=p.detach().numpy().astype(dtype), scale=scale)
    return call, (tq.grad.numpy(), tk.grad.numpy(), tv.grad.numpy())


@pytest.mark.parametrize("b,length,depth", [(2, 24, 8), (3, 70, 20)])
@pytest.mark.parametrize("dtype,guard", [(np.float32, False), (np.float64, True)])
def test_attention_keeps_ds_stored(b, length, depth, dtype, guard):
    call, want = _attention_call(b, length, depth, dtype)
    kernel = tilegrad.compile("user_attention_backward", "cpu", guard=guard)
    assert _schedule(kernel, call)["Inline(stage=2, tensor='ds', inlined=False)"] == "planner"
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    for got, expected in zip(kernel(**call), want):
        np.testing.assert_allclose(got, expected, **tol)
