"""Long reductions stay accurate: float sums run in blocks whose partials combine in float64."""

import numpy as np
from xdsl.parser import Parser

import tilegrad
import tilegrad.dsl as tg
from tilegrad.dialect import make_context
from tilegrad.passes.lower_tg_to_loops import REDUCE_BLOCK, LowerTgToLoops

ROW_SUM = """
builtin.module {
  func.func @rowsum(%x: memref<?x?xf32, strided<[?, 1]>> {tg.name = "x", tg.role = "input"},
                    %s: memref<?xf32, strided<[1]>> {tg.name = "s", tg.role = "output"},
                    %status: memref<8xi64> {tg.name = "status", tg.role = "status"}) {
    %0 = arith.constant 0 : index
    %1 = memref.dim %x, %0 : memref<?x?xf32, strided<[?, 1]>>
    %2 = arith.constant 1 : index
    %3 = memref.dim %x, %2 : memref<?x?xf32, strided<[?, 1]>>
    tg.compute %s over(%1) {
    ^bb0(%i0: index):
      %4 = arith.constant 0.000000e+00 : f32
      %5 = tg.reduce "sum" over %3 from %4 {
      ^bb0(%r: index):
        %6 = memref.load %x[%i0, %r] : memref<?x?xf32, strided<[?, 1]>>
        tg.yield %6 : f32
      } : f32 -> f32
      tg.yield %5 : f32
    } : memref<?xf32, strided<[1]>>
    func.return
  }
}
"""


def test_a_sum_over_a_runtime_extent_is_blocked_with_float64_partials():
    ctx = make_context()
    module = Parser(ctx, ROW_SUM).parse_module()
    LowerTgToLoops().apply(ctx, module)
    module.verify()
    text = str(module)
    assert f"arith.constant {REDUCE_BLOCK} : index" in text
    assert '#tg.loop<reduce_part,' in text  # the vectorized block: f32, reassociated
    assert "arith.addf" in text and "fastmath<reassoc>" in text
    assert "arith.extf" in text and ": f32 to f64" in text  # partials combine in float64
    assert "arith.truncf" in text


@tg.op(outputs={"s": tg.shaped(1, dtype="x")}, replace=True)
def accuracy_total(x=tg.tensor("N")):
    return lambda i: tg.reduce_sum(x.shape[0], lambda k: x[k])


def test_softmax_row_of_4m_float32_is_within_1e_5_of_float64(rng):
    n = 1 << 22
    logits = rng.standard_normal(n)
    y = np.exp(logits - logits.max())
    y = (y / y.sum()).astype(np.float32).reshape(1, n, 1, 1)
    dy = rng.standard_normal(n).astype(np.float32).reshape(1, n, 1, 1)
    y64, dy64 = y.astype(np.float64), dy.astype(np.float64)
    ref = y64 * (dy64 - (dy64 * y64).sum())
    for target in ("cpu", "ascend910b"):
        got = tilegrad.compile("softmax_backward", target)(y=y, dy=dy).astype(np.float64)
        assert np.abs(got - ref).max() / np.abs(ref).max() < 1e-5, target


def test_a_sum_of_2_to_the_31_ones_does_not_stall_at_2_to_the_23():
    ones = np.broadcast_to(np.float32(1), (2**31,))  # no memory behind it
    assert tilegrad.compile("accuracy_total", "cpu")(x=ones)[0] == 2.0**31
    want = 3 * 10**7 * float(np.float32(0.1))
    kernel = tilegrad.compile("accuracy_total", "ascend910b")
    # (the guard build is O1: nothing vectorizes, so every block takes the scalar path's bound below)
    bound = 2e-5 if kernel.guard else 1e-6
    assert abs(float(kernel(x=np.full(3 * 10**7, 0.1, np.float32))[0]) - want) / want < bound
    # a stride-0 view takes the scalar (unvectorized) path: blocks of 1024 still bound its error
    assert abs(float(kernel(x=np.broadcast_to(np.float32(0.1), (3 * 10**7,)))[0]) - want) / want < 2e-5


def _lowered_row_sum(length: str) -> str:
    ctx = make_context()
    module = Parser(ctx, ROW_SUM.replace('tg.reduce "sum" over', f'tg.reduce "sum" {length} over')).parse_module()
    LowerTgToLoops().apply(ctx, module)
    module.verify()
    return str(module)


def test_a_sum_marked_long_chooses_its_blocked_form_by_a_constant():
    text = _lowered_row_sum("long")
    assert "arith.cmpi" not in text and "arith.constant true" in text and "reduce_part" in text


def test_a_sum_marked_short_lowers_to_one_plain_loop():
    text = _lowered_row_sum("short")
    assert "reduce_part" not in text and "scf.if" not in text and "arith.extf" not in text
    assert text.count("scf.for") == 2  # the rows and the one plain sum


def test_a_kernel_is_specialized_for_sums_short_or_long_at_the_call_shapes(rng):
    kernel = tilegrad.compile("accuracy_total", "cpu")
    short = rng.standard_normal(REDUCE_BLOCK).astype(np.float32)
    long = rng.standard_normal(REDUCE_BLOCK + 1).astype(np.float32)
    assert 'tg.reduce "sum" short over' in kernel.ir("op", x=short)
    assert 'tg.reduce "sum" long over' in kernel.ir("op", x=long)
    assert "reduce_part" not in kernel.ir("tiled", x=short) and "reduce_part" in kernel.ir("tiled", x=long)
    assert "arith.constant true" in kernel.ir("tiled", x=long)  # the blocked form, by a constant choice
    for x in (short, long, short[:5]):
        want = x.astype(np.float64).sum()
        assert abs(float(kernel(x=x)[0]) - want) <= 1e-5 * np.abs(x).sum()
