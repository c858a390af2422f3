"""forward-stored-values: a load of a temp element the same block just stored is the stored value.

Hand-written IR in, IR out: what is forwarded (a temp, the same indices, nothing between that may
write it) and each reason a load stays; then divisive normalization, whose `spread` temp is stored
and read back at each point, against its untiled build and a float64 torch oracle."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tilegrad
from tilegrad.pipeline import run_passes

KERNEL = """
builtin.module {{
  func.func @k(%x: memref<?xf32> {{tg.name = "x", tg.role = "input"}},
               %t: memref<?xf32> {{tg.name = "t", tg.role = "temp"}},
               %u: memref<?xf32> {{tg.name = "u", tg.role = "temp"}},
               %y: memref<?xf32> {{tg.name = "y", tg.role = "output"}},
               %z: memref<?xf32> {{tg.name = "z", tg.role = "output"}}) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {{
      %v = memref.load %x[%i] : memref<?xf32>
      %s = arith.mulf %v, %v : f32
      memref.store %s, %t[%i] : memref<?xf32>
      {between}
      %w = memref.load %t[{index}] : memref<?xf32>
      %r = arith.addf %w, %v : f32
      memref.store %r, %y[%i] : memref<?xf32>
      %w2 = memref.load %t[{index}] : memref<?xf32>
      memref.store %w2, %z[%i] : memref<?xf32>
    }} {{tg.loop = #tg.loop<parallel, axis = 0>}}
    func.return
  }}
}}
"""


def forward(between: str = "", index: str = "%i") -> str:
    return str(run_passes(KERNEL.format(between=between, index=index), "forward-stored-values"))


def test_a_temp_element_stored_then_loaded_in_the_block_is_the_stored_value():
    out = forward("memref.store %v, %u[%i] : memref<?xf32>")  # (another temp's store is no bar)
    assert "memref.load %t" not in out
    assert "%r = arith.addf %s, %v : f32" in out
    assert "memref.store %s, %z[%i] : memref<?xf32>" in out
    assert "memref.store %s, %t[%i] : memref<?xf32>" in out  # the store itself stays


@pytest.mark.parametrize("between, index, why", [
    ("", "%c0", "another element (index values differ)"),
    ("memref.store %v, %t[%c0] : memref<?xf32>", "%i", "a store to the temp between"),
    ("scf.if %true { memref.store %v, %t[%c0] : memref<?xf32> }", "%i", "a branch that stores to it"),
])
def test_a_load_stays_where_the_value_may_differ(between, index, why):
    if "%true" in between:
        between = "%true = arith.constant true\n" + between
    out = forward(between, index)
    assert f"memref.load %t[{index}] : memref<?xf32>" in out, why


def test_an_input_or_output_is_never_forwarded():
    """Only a temp: an output may be an input in place, so what is read back may be another name's."""
    text = KERNEL.format(between="", index="%i").replace('tg.name = "t", tg.role = "temp"',
                                                          'tg.name = "t", tg.role = "output"')
    assert "%w = memref.load %t[%i]" in str(run_passes(text, "forward-stored-values"))


def test_a_temp_also_reached_through_a_subview_is_left_alone():
    """A store through a subview made before the loop does not name the temp: such a temp is never
    forwarded (forwarding here would give y the square where the subview's store put v)."""
    text = KERNEL.format(between="memref.store %v, %sub[%c0] : memref<1xf32, strided<[1]>>", index="%c0")
    text = text.replace("scf.for %i", "%sub = memref.subview %t[0] [1] [1] : memref<?xf32> to "
                                      "memref<1xf32, strided<[1]>>\n    scf.for %i", 1)
    text = text.replace("memref.store %s, %t[%i]", "memref.store %s, %t[%c0]")
    assert "%w = memref.load %t[%c0]" in str(run_passes(text, "forward-stored-values"))


def divisive_forward(x, means, n, alpha, beta, k):
    d = x - means
    window = F.avg_pool2d(F.pad(d * d, ((n - 1) // 2, n // 2) * 2), n, 1) * n * n
    return x * (k + alpha / n ** 2 * window) ** (-beta)


@pytest.mark.parametrize("shape, n", [((2, 3, 28, 28), 3), ((1, 2, 9, 37), 4)])
def test_divisive_normalization_reads_its_spread_once_and_is_bitwise_its_untiled_build(shape, n):
    rng = np.random.default_rng(n)
    x, dy = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    means = (rng.standard_normal(shape) * 0.3).astype(np.float32)
    kernel = tilegrad.compile("divisive_normalization_backward", "cpu")
    tiled = kernel.ir("tiled", x=x, means=means, dy=dy, lrn_n=n)
    assert "memref.load %spread" not in tiled  # stored and used at each point, never read back
    dx, d_means = kernel(x=x, means=means, dy=dy, lrn_n=n, lrn_alpha=0.5)
    untiled = tilegrad.compile("divisive_normalization_backward", "cpu", untiled=True)
    for got, want in zip((dx, d_means), untiled(x=x, means=means, dy=dy, lrn_n=n, lrn_alpha=0.5)):
        np.testing.assert_array_equal(got, want)
    xt = torch.from_numpy(x).double().requires_grad_()
    mt = torch.from_numpy(means).double().requires_grad_()
    divisive_forward(xt, mt, n, 0.5, 0.75, 2.0).backward(torch.from_numpy(dy).double())
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(d_means, mt.grad.numpy(), rtol=1e-4, atol=1e-5)
