"""separate-strided-load-groups: a strided window's rows read through one name per interleave group.

Passes on hand-written IR (what is rewritten, and what stays as it was); the LLVM stage of the
alias (its own noalias pointer, which the wrapper passes through an empty asm); max pooling's
backward, whose window scan it changes, checked bitwise against the kernel built without it,
and the guard build against torch.
"""

import re

import numpy as np
import pytest

import tilegrad
from tilegrad.pipeline import run_passes

WINDOW = """
builtin.module {
  func.func @k(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "N W"},
               %out: memref<?x?xf32> {tg.name = "out", tg.role = "output", tg.dims = "N O"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %n = memref.dim %out, %c0 : memref<?x?xf32>
    %o = memref.dim %out, %c1 : memref<?x?xf32>
    scf.for %i = %c0 to %n step %c1 {
      scf.for %j = %c1 to %o step %c1 {
        %s = arith.muli %j, %c2 : index
        %left = arith.subi %s, %c1 : index
        %right = arith.addi %s, %c1 : index
        %a = memref.load %x[%i, %left] : memref<?x?xf32>
        %b = memref.load %x[%i, %s] : memref<?x?xf32>
        %c = memref.load %x[%i, %right] : memref<?x?xf32>
        %ab = arith.maximumf %a, %b : f32
        %abc = arith.maximumf %ab, %c : f32
        %nan = arith.cmpf une, %b, %b : f32
        %r = arith.select %nan, %b, %abc : f32
        memref.store %r, %out[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}
"""


def _loads(text: str) -> list[tuple[str, str]]:
    """(tensor, last index) of each load, in order."""
    return re.findall(r"memref.load %(\w+)\[%i, %(\w+)\]", text)


def test_a_window_wider_than_its_stride_reads_one_group_per_name():
    text = str(run_passes(WINDOW, "separate-strided-load-groups"))
    alias = re.search(r"%(\w+) = tg.opaque_alias %x : memref<\?x\?xf32> -> memref<\?x\?xf32>", text)
    assert alias, text
    alias = alias.group(1)
    # 2j - 1 and 2j through x, 2j (again) and 2j + 1 through the alias
    assert sorted(_loads(text)) == sorted([("x", "left"), ("x", "s"), (alias, "s"), (alias, "right")])
    # both loads of 2j are used: the ops that read it are dealt out between them
    b_loads = re.findall(r"(%\w+) = memref.load %\w+\[%i, %s\]", text)
    assert len(b_loads) == 2 and all(text.count(name + " ") + text.count(name + ",") > 1 for name in b_loads)


@pytest.mark.parametrize("change, why", [
    (lambda t: t.replace("%s = arith.muli %j, %c2", "%s = arith.muli %j, %c1"), "stride 1: plain vector loads"),
    (lambda t: t.replace("%right = arith.addi %s, %c1", "%right = arith.addi %s, %c2"), "offsets not consecutive"),
    (lambda t: t.replace('tg.role = "input", tg.dims = "N W"', 'tg.role = "output", tg.dims = "N W"'),
     "a tensor the function writes"),
    (lambda t: t.replace('tg.dims = "N O"}', 'tg.dims = "N O", tg.in_place = "x"}'), "an output that may be x"),
    (lambda t: t.replace("        %nan = arith.cmpf une, %b, %b : f32\n", "")
     .replace("        %r = arith.select %nan, %b, %abc : f32\n", "").replace("memref.store %r,", "memref.store %abc,"),
     "the shared offset has one reader: its second load would be dead"),
])
def test_other_rows_stay_as_they_were(change, why):
    text = str(run_passes(change(WINDOW), "separate-strided-load-groups"))
    assert "tg.opaque_alias" not in text, why


@pytest.mark.parametrize("change, why", [
    (lambda t: t.replace("memref.store %r, %out[%i, %j]", "memref.store %r, %x[%i, %j]"), "writes the source"),
    (lambda t: t.replace("memref.store %r, %out[%i, %j]", "memref.store %r, %x_1[%i, %j]"), "writes the source"),
    (lambda t: t.replace("func.return", "%x_2 = tg.opaque_alias %x_1 : memref<?x?xf32> -> memref<?x?xf32>\n"
                         "    func.return"), "an argument"),
])
def test_an_alias_of_a_buffer_the_function_writes_or_of_no_argument_does_not_verify(change, why):
    from tilegrad.errors import ArgumentError
    from tilegrad.pipeline import parse_ir

    separated = str(run_passes(WINDOW, "separate-strided-load-groups"))
    assert "%x_1 = tg.opaque_alias %x" in separated
    with pytest.raises(ArgumentError, match=why):
        parse_ir(change(separated))


def test_the_alias_is_a_noalias_pointer_the_wrapper_passes_through_an_empty_asm():
    module = run_passes(WINDOW, "separate-strided-load-groups,lower-to-llvm")
    text = str(module)
    impl = re.search(r'llvm.func internal @k_impl\((.*?)\)', text).group(1)
    assert impl.count("!llvm.ptr") == 3  # x, out and the alias
    assert re.search(r'llvm.inline_asm "", "=r,0" %\w+ : \(!llvm.ptr\) -> !llvm.ptr', text)


@pytest.fixture
def without_the_separation(without_pass):
    from tilegrad.passes.separate_strided_load_groups import SeparateStridedLoadGroups

    return lambda op: without_pass(op, SeparateStridedLoadGroups)


def _pool_args(width, rng):
    x = rng.standard_normal((2, 3, 5, width)).astype(np.float32)
    x[0, 0, 0, :4] = x[0, 0, 0, 4]  # ties: the first maximum takes dy
    x[0, 1, 2, 3] = np.nan  # NaN is the maximum
    import torch
    y, _ = torch.ops.aten.max_pool2d_with_indices(torch.from_numpy(x), [3, 3], [2, 2], [1, 1])
    dy = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    return dict(x=x, y=y.numpy(), dy=dy, mode="max", window=(3, 3), stride=(2, 2), padding=(1, 1))


def test_max_pooling_gives_the_same_bits_as_without_the_separation(without_the_separation):
    pytest.importorskip("torch")
    rng = np.random.default_rng(21)
    cases = [_pool_args(w, rng) for w in (14, 33, 56, 140)]
    kernel = tilegrad.compile("pooling_backward", "cpu")
    assert "tg.opaque_alias" in kernel.ir("tiled", **cases[2])
    gathers = kernel.ir("llvm", **cases[2]).count("masked.gather")
    separated = [kernel(**a) for a in cases]
    plain = without_the_separation("pooling_backward")
    plain_gathers = plain.ir("llvm", **cases[2]).count("masked.gather")
    # (the guard build is O1 and vectorizes nothing, and LLVM makes no gathers for a host whose
    # gathers are slow, such as znver1: there neither form gathers)
    assert gathers < plain_gathers or plain_gathers == 0
    for args, got in zip(cases, separated):
        np.testing.assert_array_equal(got, plain(**args))


def test_max_pooling_matches_torch_in_the_guard_build():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(22)
    kernel = tilegrad.compile("pooling_backward", "cpu", guard=True)
    a = _pool_args(56, rng)
    assert "tg.opaque_alias" in kernel.ir("tiled", **a)
    _, index = torch.ops.aten.max_pool2d_with_indices(torch.from_numpy(a["x"]), [3, 3], [2, 2], [1, 1])
    want = torch.ops.aten.max_pool2d_with_indices_backward(torch.from_numpy(a["dy"]), torch.from_numpy(a["x"]),
                                                           [3, 3], [2, 2], [1, 1], [1, 1], False, index)
    np.testing.assert_allclose(kernel(**a), want.numpy(), rtol=1e-6, atol=1e-6)
