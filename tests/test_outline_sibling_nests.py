"""outline-sibling-nests: a large stage's sibling nests become functions LLVM compiles side by side.

Passes on hand-written IR (the loop split around the nests, the call and the function, what
stays where it was), lower-to-llvm of a part called across modules, and max pooling 2-D (the
library op it changes) bitwise against its untiled build, in the normal and the guard build.
"""

import numpy as np
import pytest
from test_passes import assert_lines_in_order

import tilegrad
from tilegrad.passes.lower_to_llvm import LowerToLLVM
from tilegrad.pipeline import apply_passes, run_passes

SMALL = "outline-sibling-nests{stage_ops=10 nest_ops=6}"

PLANES = """
builtin.module {
  func.func @k(%x: memref<?x?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "P H W"},
               %t: memref<?x?x?xf32> {tg.name = "t", tg.role = "temp", tg.dims = "P H W"},
               %y: memref<?x?x?xf32> {tg.name = "y", tg.role = "output", tg.dims = "P H W"},
               %status: memref<8xi64> {tg.name = "status", tg.role = "status"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %two = arith.constant 2.000000e+00 : f32
    %np = memref.dim %x, %c0 : memref<?x?x?xf32>
    %nh = memref.dim %x, %c1 : memref<?x?x?xf32>
    %nw = memref.dim %x, %c2 : memref<?x?x?xf32>
    scf.for %p = %c0 to %np step %c1 {
      %q = arith.addi %p, %c0 : index
      scf.for %h = %c0 to %nh step %c1 {
        scf.for %w = %c0 to %nw step %c1 {
          %v = memref.load %x[%p, %h, %w] : memref<?x?x?xf32>
          %d = arith.mulf %v, %two : f32
          memref.store %d, %t[%p, %h, %w] : memref<?x?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 2>}
      } {tg.loop = #tg.loop<parallel, axis = 1>}
      scf.for %h2 = %c0 to %nh step %c1 {
        scf.for %w2 = %c0 to %nw step %c1 {
          %u = memref.load %t[%p, %h2, %w2] : memref<?x?x?xf32>
          %e = arith.addf %u, %two : f32
          %f = arith.mulf %e, %e : f32
          memref.store %f, %y[%q, %h2, %w2] : memref<?x?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 2>}
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}
"""
"""Per plane p: t[p] = 2 x[p], then y[p] = (t[p] + 2)^2 (the second stores y at q = p + 0: index
arithmetic of the loop's body)."""


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()]


def test_the_plane_loop_splits_and_the_smaller_nest_becomes_a_called_function():
    """Two loops over the planes, one per nest; the first (the smaller) runs in @k_nest0, called
    once where the loop was, not once per plane."""
    lines = _lines(str(run_passes(PLANES, SMALL)))
    head = next(line for line in lines if line.startswith("func.func private @k_nest0("))
    stage, part = lines[:lines.index(head)], lines[lines.index(head):]
    calls = [k for k, line in enumerate(stage) if line.startswith("func.call @k_nest0(")]
    loops = [k for k, line in enumerate(stage) if line.startswith("scf.for %p = %c0 to %np step %c1")]
    assert len(calls) == 1 and len(loops) == 1 and calls[0] < loops[0]
    assert "memref.store %f, %y[%q, %h2, %w2] : memref<?x?x?xf32>" in stage
    assert sum(line.startswith("scf.for %p = %c0 to %np step %c1") for line in part) == 1
    assert "memref.store %d, %t[%p, %h, %w] : memref<?x?x?xf32>" in part  # the first nest, moved
    assert "%two = arith.constant 2.000000e+00 : f32" in part  # a constant made again inside
    assert 'tg.name = "x", tg.role = "input"' in head and 'tg.name = "t", tg.role = "temp"' in head
    assert 'tg.name = "status", tg.role = "status"' in head  # (the guard build reports through it)


def test_index_arithmetic_of_the_loop_body_stays_with_the_nest_that_uses_it():
    lines = _lines(str(run_passes(PLANES, SMALL)))
    loop = next(k for k, line in enumerate(lines) if line.startswith("scf.for %p = %c0 to %np"))
    assert lines[loop + 1] == "%q = arith.addi %p, %c0 : index"
    assert sum("arith.addi" in line for line in lines) == 1  # (not in the part: only the second used it)


@pytest.mark.parametrize("change, why", [
    (lambda t: t.replace("%q = arith.addi %p, %c0 : index", "%q = arith.addi %p, %c1 : index")
     .replace("memref.load %t[%p, %h2, %w2]", "memref.load %t[%q, %h2, %w2]"),
     "the second nest reads the next plane of what the first writes"),
    (lambda t: t.replace("memref.store %d, %t[%p, %h, %w]", "memref.store %d, %t[%h, %p, %w]"),
     "the first writes t indexed by the plane on another axis"),
    (lambda t: t.replace("scf.for %h2 = %c0 to %nh step %c1 {",
                         "memref.store %two, %t[%c0, %c0, %c0] : memref<?x?x?xf32>\n"
                         "      scf.for %h2 = %c0 to %nh step %c1 {"),
     "a store between the nests to what the first writes, not at the plane"),
    (lambda t: t.replace("} {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage",
                         "memref.store %two, %y[%p, %c0, %c0] : memref<?x?x?xf32>\n"
                         "    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage"),
     "a store after the last nest"),
])
def test_a_loop_that_cannot_be_split_keeps_its_nests(change, why):
    text = str(run_passes(change(PLANES), SMALL))
    assert "func.call" not in text and "private" not in text, why


def test_what_comes_before_a_nest_in_the_loop_moves_with_it():
    """A plane's small reduction and its store (max pooling's flag of a plane of y with a NaN)
    run before the nest that reads it, in the nest's own loop."""
    flagged = PLANES.replace("      scf.for %h2 = %c0 to %nh step %c1 {", """\
      %zero = arith.constant 0.000000e+00 : f32
      %sum = scf.for %r = %c0 to %nw step %c1 iter_args(%acc = %zero) -> (f32) {
        %s = memref.load %x[%p, %c0, %r] : memref<?x?x?xf32>
        %acc2 = arith.addf %acc, %s : f32
        scf.yield %acc2 : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %sum, %t[%p, %c0, %c0] : memref<?x?x?xf32>
      scf.for %h2 = %c0 to %nh step %c1 {""")
    lines = _lines(str(run_passes(flagged, SMALL)))
    head = next(line for line in lines if line.startswith("func.func private @k_nest0("))
    stage = lines[:lines.index(head)]
    assert_lines_in_order("\n".join(stage), [
        "func.call @k_nest0(", "scf.for %p = %c0 to %np step %c1 {",
        "%sum = scf.for %r = %c0 to %nw step %c1 iter_args(%acc = %zero) -> (f32) {",
        "memref.store %sum, %t[%p, %c0, %c0] : memref<?x?x?xf32>", "scf.for %h2 = %c0 to %nh step %c1 {"],
        whole=False)


def test_a_small_stage_is_left_whole():
    assert "func.call" not in str(run_passes(PLANES, "outline-sibling-nests{stage_ops=1000 nest_ops=8}"))


def test_a_part_lowers_to_an_external_function_its_stage_declares_where_it_is_not_defined():
    outlined = run_passes(PLANES, SMALL)
    part = next(op for op in outlined.ops if op.sym_name.data == "k_nest0")
    part.detach()  # (to_llvm compiles each function as a module of its own, unverified: LLVM checks it)
    apply_passes("k", [LowerToLLVM()], outlined, None, verify=False)
    text = str(outlined)
    declared = [line.strip() for line in text.splitlines() if "llvm.func @k_nest0(" in line]
    assert len(declared) == 1 and "{" not in declared[0].split(")")[-1]  # a declaration: no body
    assert "llvm.call @k_nest0(" in text and "llvm.func @k(" in text  # the stage keeps its wrapper
    alone = str(run_passes("builtin.module {\n" + str(part) + "\n}", "lower-to-llvm"))
    assert "llvm.func @k_nest0(" in alone and "_impl" not in alone and "internal" not in alone


@pytest.fixture(scope="module")
def max_pooling():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 13, 11)).astype(np.float32)
    x[0, 1, 2:5, 3:6] = 1.5  # ties: the first cell in window order
    dy = rng.standard_normal((2, 3, 7, 6)).astype(np.float32)
    attrs = dict(mode="max", window=(3, 3), padding=(1, 1), stride=(2, 2))
    y = np.full(dy.shape, -np.inf, np.float32)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    for i in range(7):
        for j in range(6):
            y[:, :, i, j] = padded[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max(axis=(2, 3))
    return dict(y=y, dy=dy, x=x), attrs


@pytest.mark.parametrize("guard", [False, True])
def test_max_pooling_runs_its_scan_as_a_part_and_matches_its_untiled_build_bitwise(max_pooling, guard):
    arrays, attrs = max_pooling
    kernel = tilegrad.compile("pooling_backward", "cpu", guard=guard)
    assert "func.func private @pooling_backward_stage0_nest0(" in kernel.ir("tiled", **arrays, **attrs)
    untiled = tilegrad.compile("pooling_backward", "cpu", untiled=True)
    np.testing.assert_array_equal(kernel(**arrays, **attrs), untiled(**arrays, **attrs))
