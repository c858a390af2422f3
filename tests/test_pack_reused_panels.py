"""pack-reused-panels: the columns every row group sweeps, copied once per strip into a stack panel."""

import re

import numpy as np
import pytest
from test_passes import assert_lines_in_order

import tilegrad
from tilegrad.errors import ArgumentError
from tilegrad.pipeline import parse_ir, run_passes

# two rows per group (what jam-row-sweeps makes), a column tile, w[v, h] read by both rows
GROUPS_SWEEPING_W = """
builtin.module {
  func.func @g_times_w(%g: memref<?x?xf32> {tg.name = "g", tg.role = "input"},
                       %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"},
                       %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}) {
    %acc0 = memref.alloca() : memref<512xf32>
    %acc1 = memref.alloca() : memref<512xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %g, %c0 : memref<?x?xf32>
    %v_end = memref.dim %w, %c0 : memref<?x?xf32>
    %h_end = memref.dim %w, %c1 : memref<?x?xf32>
    %c2 = arith.constant 2 : index
    scf.for %i = %c0 to %rows step %c2 {
      %i1 = arith.addi %i, %c1 : index
      %tile = arith.constant 4096 : index
      scf.for %t = %c0 to %h_end step %tile {
        %t_next = arith.addi %t, %tile : index
        %t_end = arith.minsi %t_next, %h_end : index
        scf.for %v = %c0 to %v_end step %c1 {
          scf.for %h = %t to %t_end step %c1 {
            %at = arith.subi %h, %t : index
            %a0 = memref.load %acc0[%at] : memref<512xf32>
            %x0 = memref.load %g[%i, %v] : memref<?x?xf32>
            %y0 = memref.load %w[%v, %h] : memref<?x?xf32>
            %p0 = arith.mulf %x0, %y0 : f32
            %s0 = arith.addf %a0, %p0 : f32
            memref.store %s0, %acc0[%at] : memref<512xf32>
            %a1 = memref.load %acc1[%at] : memref<512xf32>
            %x1 = memref.load %g[%i1, %v] : memref<?x?xf32>
            %y1 = memref.load %w[%v, %h] : memref<?x?xf32>
            %p1 = arith.mulf %x1, %y1 : f32
            %s1 = arith.addf %a1, %p1 : f32
            memref.store %s1, %acc1[%at] : memref<512xf32>
          } {tg.loop = #tg.loop<row, axis = 0>}
        } {tg.loop = #tg.loop<reduce, axis = 0>}
        scf.for %h = %t to %t_end step %c1 {
          %at = arith.subi %h, %t : index
          %a0 = memref.load %acc0[%at] : memref<512xf32>
          memref.store %a0, %out[%i, %h] : memref<?x?xf32>
          %a1 = memref.load %acc1[%at] : memref<512xf32>
          memref.store %a1, %out[%i1, %h] : memref<?x?xf32>
        } {tg.loop = #tg.loop<parallel, axis = 1>}
      } {tg.loop = #tg.loop<tile, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>}
    func.return
  }
}
"""


def test_the_column_tile_moves_outside_the_row_groups_and_reads_a_panel():
    text = str(run_passes(GROUPS_SWEEPING_W, "pack-reused-panels{panel_bytes=1024 columns=8}"))
    # a 256-float stack buffer; strips of whole 8-column chunks as many as fit it (256 / V rows)
    assert "memref.alloca() : memref<256xf32>" in text
    assert_lines_in_order(text, [
        "%panel_columns = arith.select", "scf.for", "tg.panel %w[", "scf.if", "scf.for", "scf.for",
        "memref.load %w[", "memref.store", "} {tg.loop = #tg.loop<copy, axis = 1>}",
        "} {tg.loop = #tg.loop<copy, axis = 0>}",
        "scf.for", "scf.for", "scf.for",  # the row groups, the sweep over v, its columns
        "memref.load %panel[", "memref.load %panel[",
        "} {tg.loop = #tg.loop<parallel, axis = 0>}",
        "} {tg.loop = #tg.loop<tile, axis = 1>}"], whole=False)
    groups = text.split("tg.panel", 1)[1]
    assert "memref.load %w[%" not in groups.split("} {tg.loop = #tg.loop<copy, axis = 0>}", 1)[1]
    assert groups.count("memref.load %g[") == 2  # the rows' own data stays where it is
    # the strip loop is the tile loop now: none is left inside the row groups, whose tile ends
    # where the strip does
    assert text.count("#tg.loop<tile, axis = 1>") == 1 and "%panel_columns : index" in groups


def test_each_row_group_reads_its_own_columns_from_a_panel_too():
    # G.T @ X's form: the group's rows are columns of g, g[v, i + c]
    text = GROUPS_SWEEPING_W.replace("%g[%i, %v]", "%g[%v, %i]").replace("%g[%i1, %v]", "%g[%v, %i1]")
    out = str(run_passes(text, "pack-reused-panels{panel_bytes=1024 columns=8}"))
    assert "memref.alloca() : memref<32xf32>" in out  # an eighth of the strips' panel
    group = out.split("} {tg.loop = #tg.loop<parallel, axis = 0>}", 1)[0].split("%c2 {", 1)[1]
    assert_lines_in_order(group, [
        "tg.panel %g[%i, %c2] in", "scf.if", "memref.load %g[", "memref.store",
        "} {tg.loop = #tg.loop<copy, axis = 0>}", "scf.for",
        "arith.constant 0 : index", "memref.load %panel", "arith.constant 1 : index", "memref.load %panel"],
        whole=False)
    assert group.count("memref.load %g[") == 1  # the copy alone reads g


def test_a_loop_of_one_row_at_a_time_is_left_alone():
    one_row = GROUPS_SWEEPING_W.replace("step %c2 {\n      %i1", "step %c1 {\n      %i1")
    assert "tg.panel" not in str(run_passes(one_row, "pack-reused-panels"))


@pytest.mark.parametrize("bad, rule", [
    ("memref<256xf64>", "the buffer holds the source's element type"),
    ("memref<16x16xf32>", "the buffer is a 1-d memref of static length"),
    ("static source", "the source's rows have a dynamic length"),
])
def test_a_panel_that_cannot_hold_the_columns_does_not_verify(bad, rule):
    text = str(run_passes(GROUPS_SWEEPING_W, "pack-reused-panels{panel_bytes=1024 columns=8}"))
    if bad == "static source":  # a 64 x 64 matrix: a view of its columns would not be 64 x 64
        broken = """
builtin.module {
  func.func @f(%w: memref<64x64xf32>) {
    %buffer = memref.alloca() : memref<256xf32>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %panel, %packed = tg.panel %w[%c0, %c8] in %buffer : memref<64x64xf32>, memref<256xf32> -> memref<64x64xf32>
    func.return
  }
}"""
    else:
        broken = text.replace("memref.alloca() : memref<256xf32>", f"memref.alloca() : {bad}").replace(
            "memref<?x?xf32>, memref<256xf32> ->", f"memref<?x?xf32>, {bad} ->")
    with pytest.raises(ArgumentError, match=rule):
        parse_ir(broken)


@pytest.mark.parametrize("product", ["g @ w", "g.T @ x"])
def test_packed_products_match_the_unpacked_kernel_bitwise(without_pass, product):
    """Strips that fit (several, the last narrower), one chunk that does not fit (W itself), and a
    strip of whole rows (W itself); for G.T @ X the group's own columns of g packed or not (K x 8
    floats beside the 32 KiB group panel): the same sums as without the pass, in the guard build too."""
    import tilegrad.dsl as tg
    from tilegrad.passes.pack_reused_panels import PackReusedPanels

    if product == "g @ w":
        @tg.op(outputs={"out": tg.shaped("R", "H", dtype="a")}, replace=True)
        def test_packed_product(a=tg.tensor("R K"), b=tg.tensor("K H", dtype="a")):
            return lambda r, h: tg.reduce_sum(a.shape[1], lambda k: a[r, k] * b[k, h])
    else:
        @tg.op(outputs={"out": tg.shaped("R", "H", dtype="a")}, replace=True)
        def test_packed_product(a=tg.tensor("K R"), b=tg.tensor("K H", dtype="a")):
            return lambda r, h: tg.reduce_sum(a.shape[0], lambda k: a[k, r] * b[k, h])

    rng = np.random.default_rng(11)
    # (rows, K, H): K x H floats beside the 256 KiB panel (65536 floats)
    shapes = ((37, 3000, 45), (21, 1100, 70), (19, 9000, 20), (40, 200, 64), (50, 500, 300))
    calls = []
    for rows, inner, hidden in shapes:
        a = rng.standard_normal((rows, inner) if product == "g @ w" else (inner, rows)).astype(np.float32)
        calls.append({"a": a, "b": rng.standard_normal((inner, hidden)).astype(np.float32)})
    kernel = tilegrad.compile("test_packed_product", "cpu")
    packed_tensors = set(re.findall(r"tg\.panel %(\w+)\[", kernel.ir("tiled", **calls[0])))
    assert packed_tensors == ({"b"} if product == "g @ w" else {"a", "b"})  # (a's panel in a strip and once per call)
    packed = [kernel(**call) for call in calls]
    guarded = tilegrad.compile("test_packed_product", "cpu", guard=True)
    for call, out in zip(calls, packed):
        np.testing.assert_array_equal(guarded(**call), out)
    plain = without_pass("test_packed_product", PackReusedPanels)
    assert "tg.panel" not in plain.ir("tiled", **calls[0])
    for call, out in zip(calls, packed):
        np.testing.assert_array_equal(out, plain(**call))
