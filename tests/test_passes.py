"""IR-level tests: each pass on input IR, checked for the structure it must produce."""

import re

import numpy as np
import pytest
from xdsl.parser import Parser
from xdsl.utils.arg_spec import parse_pipeline

import tilegrad
from tilegrad.dialect import make_context
from tilegrad.passes.lower_tg_to_loops import LowerTgToLoops
from tilegrad.passes.tile_for_target import TileForTarget, tiling_plan

F32 = tilegrad.Spec((1000,), "float32")
ONE = tilegrad.Spec((1,), "float32")
BCE = dict(input_x=F32, input_y=F32, weight=F32, dloss=ONE)
NLL = dict(grad_output=ONE, self=tilegrad.Spec((64, 1000)), target=tilegrad.Spec((64,), "int64"),
           total_weight=ONE)
EMB = dict(grad=tilegrad.Spec((64, 128)), indices=tilegrad.Spec((64,), "int32"), num_weights=500,
           scale_grad_by_freq=True)
OPS = {"binary_cross_entropy_grad": BCE, "nll_loss_backward": NLL, "embedding_dense_backward": EMB}


def assert_lines_in_order(text: str, checks: list[str], whole: bool = True) -> None:
    """Each check matches a later line than the one before (xDSL's filecheck CHECK lines): the
    whole stripped line, or with `whole=False` a part of it."""
    lines = [line.strip() for line in text.splitlines()]
    at = 0
    for check in checks:
        found = next((k for k in range(at, len(lines)) if (lines[k] == check if whole else check in lines[k])), None)
        assert found is not None, f"not found after line {at}: {check!r}"
        at = found + 1


def parse(text: str):
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("stage", ["op", "loops", "tiled"])
def test_printed_ir_parses_back(op, stage):
    text = tilegrad.compile(op, "ascend910b").ir(stage, **OPS[op])
    assert str(parse(text)) == text


LOOPS_INPUT = """
builtin.module {
  func.func @axpy(%x: memref<?xf32, strided<[1]>> {tg.name = "x", tg.role = "input"},
                  %y: memref<?xf32, strided<[1]>> {tg.name = "y", tg.role = "output"},
                  %status: memref<1xi32> {tg.name = "status", tg.role = "status"}) {
    %c0 = arith.constant 0 : index
    %n = memref.dim %x, %c0 : memref<?xf32, strided<[1]>>
    tg.compute %y over(%n) {
    ^bb0(%i: index):
      %v = memref.load %x[%i] : memref<?xf32, strided<[1]>>
      %two = arith.constant 2.0 : f32
      %w = arith.mulf %v, %two : f32
      %e = math.exp %w : f32
      tg.yield %e : f32
    } : memref<?xf32, strided<[1]>>
    func.return
  }
}
"""


def test_lower_tg_to_loops_makes_one_nest_per_stage():
    module = parse(LOOPS_INPUT)
    LowerTgToLoops().apply(make_context(), module)
    module.verify()
    text = str(module)
    assert "tg.compute" not in text and "tg.yield" not in text
    assert text.count("scf.for") == 1
    assert re.search(r"memref.store %\S+, %y\[%\S+\]", text)
    assert "math.exp" in text and "memref.alloc" not in text
    assert 'tg.stage = 0' in text


def test_elementwise_chain_is_fused_without_temporaries():
    loops = tilegrad.compile("binary_cross_entropy_grad", "cpu").ir("loops", **BCE)
    assert loops.count("scf.for") == 1
    assert "memref.alloc" not in loops
    assert loops.count("memref.store") == 1


def test_scatter_is_range_checked_before_it_writes():
    loops = tilegrad.compile("embedding_dense_backward", "cpu").ir("loops", **EMB)
    assert "tg.in_range" in loops
    assert loops.count("memref.store %") >= 3  # fill, counts, out and the error code
    assert re.search(r"memref.store %\S+, %status\[", loops)


def test_tile_for_target_differs_by_target():
    kernel_ir = {t: tilegrad.compile("binary_cross_entropy_grad", t).ir("tiled", **BCE)
                 for t in ("cpu", "ascend910b", "ft78ne")}
    assert "tg.ub_alloc" not in kernel_ir["cpu"] and "tg.copy" not in kernel_ir["cpu"]
    for target, cores in (("ascend910b", 24), ("ft78ne", 8)):
        text = kernel_ir[target]
        assert text.count("tg.ub_alloc") == 5  # input_x, input_y, weight, dx; dloss's one-element slot
        assert text.count('tg.copy "gm_to_ub"') == 4 and text.count('tg.copy "ub_to_gm"') == 1
        assert f"arith.constant {cores} : index" in text
        assert re.search(r"memref<2x\d+xf32>", text)  # double buffered
    tiles = {t: re.findall(r"memref<2x(\d+)xf32>", kernel_ir[t])[0] for t in ("ascend910b", "ft78ne")}
    assert tiles["ascend910b"] != tiles["ft78ne"]


def test_ub_buffers_fit_and_are_aligned():
    for target in ("ascend910b", "ft78ne", "metax-c500", "ascend310p"):
        t = tilegrad.get_target(target)
        text = tilegrad.compile("binary_cross_entropy_grad", target).ir("tiled", **BCE)
        allocs = re.findall(r'tg.ub_alloc %ub\[(\d+)\] "\w+" : memref<\d+xi8> -> memref<([\dx]+)xf32>', text)
        for offset, shape in allocs:
            size = int(np.prod([int(d) for d in shape.split("x")])) * 4
            assert int(offset) % t.ub_align == 0
            assert int(offset) + size < t.ub_bytes - t.ub_reserve_bytes


def test_tile_pass_on_loops_ir_directly():
    module = parse(LOOPS_INPUT)
    ctx = make_context()
    LowerTgToLoops().apply(ctx, module)
    TileForTarget.from_pass_spec(list(parse_pipeline("tile-for-target{target=ascend910 num_blocks=32}"))[0]).apply(
        ctx, module)
    plan = tiling_plan(module, keep=False)
    module.verify()
    text = str(module)
    assert "func.func @axpy_stage0" in text
    assert "%block_id: index" in text and "%ub: memref<196608xi8>" in text
    assert 'tg.copy "gm_to_ub" %x' in text and 'tg.copy "ub_to_gm"' in text
    assert plan.num_blocks == 32 and plan.target.name == "ascend910"
    assert plan.stages[0].double_buffered
    assert plan.ub_used < plan.capacity


SCALE_ROWS = """
builtin.module {
  func.func @scale_rows(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input", tg.dims = "R C"},
                        %y: memref<?x?xf32> {tg.name = "y", tg.role = "output", tg.dims = "R C"},
                        %status: memref<1xi32> {tg.name = "status", tg.role = "status"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %r = memref.dim %x, %c0 : memref<?x?xf32>
    %c = memref.dim %x, %c1 : memref<?x?xf32>
    tg.compute %y over(%r, %c) {
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<?x?xf32>
      %w = arith.addf %v, %v : f32
      tg.yield %w : f32
    } : memref<?x?xf32>
    func.return
  }
}
"""


def test_a_schedule_tiles_inner_axes_in_general_terms():
    """tile_role / tile_sizes / whole_axes: 4 rows per tile, the C axis whole; the UB buffers are then
    affine in C, so the plan states the bound in C."""
    module = parse(SCALE_ROWS)
    ctx = make_context()
    LowerTgToLoops().apply(ctx, module)
    spec = 'tile-for-target{target=ascend910b num_blocks=4 tile_role="parallel" tile_sizes=4,96 whole_axes=1}'
    TileForTarget.from_pass_spec(list(parse_pipeline(spec))[0]).apply(ctx, module)
    plan = tiling_plan(module, keep=False)
    module.verify()
    assert plan.stages[0].tiles == {0: 4, 1: 96}
    assert {b.name: b.affine for b in plan.stages[0].buffers} == {"x": {"C": 16}, "y": {"C": 16}}
    assert plan.bound() == "32*C < 180224"  # 196608 B less the reserve; two buffers of 4 rows of C float32
    assert [b.shape for b in plan.stages[0].buffers] == [(4, 96), (4, 96)]


@pytest.mark.parametrize("hint, named", [(dict(tile_role="scater", tile_sizes=(4,)), "tile_role"),
                                         (dict(tile_role="parallel", tile_sizes=(0, 96)), "tile_sizes"),
                                         (dict(tile_role="parallel", tile_sizes=(4,), whole_axes=2), "whole_axes")])
def test_a_schedule_outside_the_tilers_terms_is_refused(hint, named):
    from tilegrad.errors import DefinitionError
    from tilegrad.schedule import ScheduleHint

    with pytest.raises(DefinitionError, match=f"schedule: {named}"):
        ScheduleHint(**hint)


def test_llvm_stage_uses_gep_noalias_and_vectorizes():
    kernel = tilegrad.compile("binary_cross_entropy_grad", "cpu", guard=False)  # (a guard build is O1)
    llvm = kernel.ir("llvm", **BCE)
    assert "noalias" in llvm and "getelementptr" in llvm
    assert "inttoptr" not in llvm
    assert re.search(r"<(8|16) x float>", llvm)
    asm = kernel.ir("asm", **BCE)
    assert re.search(r"\b[xyz]mm\d+", asm)


def test_fuse_elementwise_inlines_a_staged_temporary():
    import tilegrad.dsl as tg

    @tg.op(outputs={"dx": tg.like("x")}, replace=True)
    def test_staged_square(x=tg.tensor("N C"), dy=tg.tensor("N C", dtype="x")):
        squared = tg.temp("squared", x.shape, "float32")
        squared.assign(x * x)
        scaled = tg.temp("scaled", x.shape, "float32")
        scaled.assign(lambda n, c: squared[n, c] * 3.0)
        return dy * scaled

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    dy = np.ones((3, 4), np.float32)
    kernel = tilegrad.compile("test_staged_square", "ascend910b")
    assert kernel.ir("op", x=x, dy=dy).count("tg.compute") == 3
    loops = kernel.ir("loops", x=x, dy=dy)
    assert loops.count("scf.for") == 1 and "squared" not in loops and "scaled" not in loops  # one flat stage
    np.testing.assert_array_equal(kernel(x=x, dy=dy), 3 * x * x)
    assert kernel.workspace_size(x=x, dy=dy) == 0


def test_fuse_elementwise_keeps_reductions_materialized():
    import tilegrad.dsl as tg

    @tg.op(outputs={"dx": tg.like("y")}, replace=True)
    def test_row_sum_scale(y=tg.tensor("N C"), dy=tg.tensor("N C", dtype="y")):
        total = tg.temp("total", y.shape[:1], "float32")
        total.assign(lambda n: tg.reduce_sum(y.shape[1], lambda c: dy[n, c]))
        return lambda n, c: y[n, c] * total[n]

    y = tilegrad.Spec((8, 16))
    loops = tilegrad.compile("test_row_sum_scale", "cpu").ir("loops", y=y, dy=y)
    # the row total stays a temporary; fuse-sibling-loops then runs its consumer row by row
    assert "%total" in loops and loops.count("tg.stage") == 1
    row = loops[loops.index('#tg.loop<reduce,'):]
    assert "memref.store" in row and '#tg.loop<parallel, axis = 1>' in row


def test_a_reduction_written_twice_is_emitted_once():
    import tilegrad.dsl as tg

    @tg.op(outputs={"dx": tg.like("y")}, replace=True)
    def test_twice_reduced(y=tg.tensor("N C"), dy=tg.tensor("N C", dtype="y")):
        def row_max(n):  # a fresh reduction variable on each call, the same reduction
            return tg.reduce_max(y.shape[1], lambda c: dy[n, c])

        return lambda n, c: (y[n, c] - row_max(n)) * row_max(n) + tg.reduce_max(y.shape[1], lambda c: y[n, c])

    y = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    dy = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    kernel = tilegrad.compile("test_twice_reduced", "cpu")
    assert kernel.ir("loops", y=y, dy=dy).count('#tg.loop<reduce,') == 2  # dy's row max once, y's once
    m = dy.max(axis=1, keepdims=True)
    np.testing.assert_allclose(kernel(y=y, dy=dy), (y - m) * m + y.max(axis=1, keepdims=True), rtol=1e-6)


def test_fuse_sibling_loops_merges_independent_stages_only():
    import tilegrad.dsl as tg

    @tg.op(outputs={"a": tg.like("x"), "b": tg.like("x")}, replace=True)
    def test_two_siblings(x=tg.tensor("N C")):
        return x * 2.0, x + 1.0  # same domain, independent: one nest

    @tg.op(outputs={"a": tg.like("x"), "b": tg.like("x")}, replace=True)
    def test_shifted_reader(x=tg.tensor("N C")):
        a = tg.output("a")
        a.assign(x * 2.0)
        # b reads a at another row: it must wait for all of a (two nests, a barrier between them)
        tg.output("b").assign(lambda n, c: a[(n + 1) % x.shape[0], c])

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    fused = tilegrad.compile("test_two_siblings", "ascend910b")
    assert fused.ir("loops", x=x).count("tg.stage") == 1
    a, b = fused(x=x)
    np.testing.assert_array_equal(a, x * 2)
    np.testing.assert_array_equal(b, x + 1)
    apart = tilegrad.compile("test_shifted_reader", "ascend910b")
    assert apart.ir("loops", x=x).count("tg.stage") == 2
    np.testing.assert_array_equal(apart(x=x)[1], np.roll(x * 2, -1, axis=0))


def test_core_split_is_balanced_unless_the_schedule_asks_for_the_vendors():
    report = tilegrad.compile("binary_cross_entropy_grad", "ascend910b").plan(
        input_x=tilegrad.Spec((64,)), input_y=tilegrad.Spec((64,)), dloss=ONE)
    stage = report.stages[0]
    assert "(balanced)" in stage["split"] and stage["per_core"] == "2-3"  # 64 = 16*3 + 8*2 on 24 cores
    vendor = tilegrad.compile("embedding_dense_backward", "ascend910").plan(**EMB)
    assert all("vendor" in s["split"] for s in vendor.stages if "rows" in s["split"])
    call = dict(input_x=np.linspace(0.1, 0.9, 64, dtype=np.float32), input_y=np.full(64, 0.5, np.float32),
                dloss=np.ones(1, np.float32))
    got = tilegrad.compile("binary_cross_entropy_grad", "ascend910b")(**call)
    np.testing.assert_array_equal(got, tilegrad.compile("binary_cross_entropy_grad", "cpu", untiled=True)(**call))


ROW_THEN_CONSUMER = """
func.func @rows(%y: memref<?x?xf32>, %dx: memref<?x?xf32>, %total: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %y, %c0 : memref<?x?xf32>
  %m = memref.dim %y, %c1 : memref<?x?xf32>
  %zero = arith.constant 0.000000e+00 : f32
  scf.for %i = %c0 to %n step %c1 {
    %s = scf.for %r = %c0 to %m step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %y[%i, %r] : memref<?x?xf32>
      %a = arith.addf %acc, %v : f32
      scf.yield %a : f32
    } {tg.loop = #tg.loop<reduce, axis = 0>}
    memref.store %s, %total[%i] : memref<?xf32>
  } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
  scf.for %i2 = %c0 to %n step %c1 {
    scf.for %j = %c0 to %m step %c1 {
      %t = memref.load %total[INDEX] : memref<?xf32>
      %w = memref.load %y[%i2, %j] : memref<?x?xf32>
      %p = arith.mulf %w, %t : f32
      memref.store %p, %dx[%i2, %j] : memref<?x?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 1>}
  } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
  func.return
}
"""


@pytest.mark.parametrize("index, fused", [("%i2", True), ("%j", False)])
def test_fuse_sibling_loops_runs_a_row_reduction_and_its_consumer_row_by_row(index, fused):
    """The consumer reads the row total at its own row: one nest, the reduction then the row's loop.
    Read at another point (total[j]), it needs every row's total first: the stages stay apart."""
    from tilegrad.passes.fuse_sibling_loops import FuseSiblingLoops

    module = parse(ROW_THEN_CONSUMER.replace("INDEX", index))
    FuseSiblingLoops().apply(make_context(), module)
    module.verify()
    text = str(module)
    assert text.count("tg.stage") == (1 if fused else 2)
    if fused:
        nest = text[text.index("scf.for %i"):]
        assert nest.index('#tg.loop<reduce,') < nest.index("memref.store %s, %total") < nest.index("scf.for %j")
        assert "memref.load %total[%i]" in text


CHANNEL_SUMS_THEN_DX = """
func.func @channels(%x: memref<?x?x?xf32>, %s: memref<1x?xf32>, %dx: memref<?x?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = memref.dim %x, %c0 : memref<?x?x?xf32>
  %ch = memref.dim %x, %c1 : memref<?x?x?xf32>
  %hw = memref.dim %x, %c2 : memref<?x?x?xf32>
  %zero = arith.constant 0.000000e+00 : f32
  scf.for %u = %c0 to %c1 step %c1 {
    scf.for %c = %c0 to %ch step %c1 {
      %t = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
        %row = scf.for %k = %c0 to %hw step %c1 iter_args(%acc2 = %acc) -> (f32) {
          %v = memref.load %x[%r, %c, %k] : memref<?x?x?xf32>
          %a = arith.addf %acc2, %v : f32
          scf.yield %a : f32
        } {tg.loop = #tg.loop<reduce, axis = 1>}
        scf.yield %row : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %t, %s[%u, %c] : memref<1x?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 1>}
  } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %ch step %c1 {
      scf.for %k2 = %c0 to %hw step %c1 {
        %w = memref.load %x[%i, %j, %k2] : memref<?x?x?xf32>
        %m = memref.load %s[%c0, CHANNEL] : memref<1x?xf32>
        %p = arith.mulf %w, %m : f32
        memref.store %p, %dx[%i, %j, %k2] : memref<?x?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 2>}
    } {tg.loop = #tg.loop<parallel, axis = 1>}
  } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
  func.return
}
"""


@pytest.mark.parametrize("channel, fused", [("%j", True), ("%c0", False)])
def test_fuse_sibling_loops_runs_per_channel_sums_and_their_consumer_channel_by_channel(channel, fused):
    """Sums per channel over (1, C) and dx over (N, C, HW) reading its channel's sum: each brings
    its loop over C to the front, and the two run as one nest, channel by channel (dx then reads the
    channel's x from cache). A consumer that reads another channel's sum needs them all first: the
    stages stay apart, their loops as they were."""
    from tilegrad.passes.fuse_sibling_loops import FuseSiblingLoops

    module = parse(CHANNEL_SUMS_THEN_DX.replace("CHANNEL", channel))
    FuseSiblingLoops(exchange_loops=True).apply(make_context(), module)
    module.verify()
    text = str(module)
    if not fused:
        assert text == str(parse(CHANNEL_SUMS_THEN_DX.replace("CHANNEL", channel)))
        return
    assert text.count("tg.stage") == 1
    expected = [
        "scf.for %c = %c0 to %ch step %c1 {",  # the channel, outermost
        "scf.for %u = %c0 to %c1 step %c1 {",
        "memref.load %x[%r, %c, %k]",  # its sums
        "memref.store %t, %s[%u, %c]",
        "scf.for %i = %c0 to %n step %c1 {",  # then its dx, sample by sample
        "scf.for %k2 = %c0 to %hw step %c1 {",
        "memref.load %s[%c0, %c]",
        "memref.store %p, %dx[%i, %c, %k2]",
    ]
    assert_lines_in_order(text, expected, whole=False)


ROWS_THEN_SWEEP = """
func.func @rows(%x: memref<?x?xf32>, %t: memref<?x?xf32>, %v: memref<?xf32>, %w: memref<?x?xf32>,
                %out: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?x?xf32>
  %m = memref.dim %x, %c1 : memref<?x?xf32>
  %o = memref.dim %out, %c1 : memref<?x?xf32>
  %zero = arith.constant 0.000000e+00 : f32
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %m step %c1 {
      %a = memref.load %x[%i, %j] : memref<?x?xf32>
      %b = arith.addf %a, %a : f32
      memref.store %b, %t[%i, %j] : memref<?x?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 1>}
  } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
  scf.for %i2 = %c0 to %n step %c1 {
    scf.for %j2 = %c0 to %o step %c1 {
      %s = scf.for %k = %c0 to %m step %c1 iter_args(%acc = %zero) -> (f32) {
        %p = memref.load %t[%i2, %k] : memref<?x?xf32>
        %q = memref.load SWEPT : SWEPT_TYPE
        %pq = arith.mulf %p, %q : f32
        %r = arith.addf %acc, %pq : f32
        scf.yield %r : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %s, %out[%i2, %j2] : memref<?x?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 1>}
  } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
  func.return
}
"""


@pytest.mark.parametrize("swept, fused", [("%v[%k] : memref<?xf32>", True), ("%w[%k, %j2] : memref<?x?xf32>", False)])
def test_fuse_sibling_loops_keeps_apart_a_sum_that_sweeps_a_matrix_in_every_row(swept, fused):
    """Row i's sums read row i of t and, in every row, the same swept data. A vector (group norm's
    per-channel scale) stays in cache: the rows fuse. A matrix (G @ W) does not, and on its own the
    rows share each sweep of it: the stages stay apart."""
    from tilegrad.passes.fuse_sibling_loops import FuseSiblingLoops

    where, kind = swept.split(" : ")
    module = parse(ROWS_THEN_SWEEP.replace("SWEPT_TYPE", kind).replace("SWEPT", where))
    FuseSiblingLoops().apply(make_context(), module)
    module.verify()
    assert str(module).count("tg.stage") == (1 if fused else 2)


COLUMN_SUM = """
func.func @column_sum(%x: memref<?x?xf32>, %out: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?x?xf32>
  %m = memref.dim %x, %c1 : memref<?x?xf32>
  %zero = arith.constant 0.000000e+00 : f32
  scf.for %i = %c0 to %c1 step %c1 {
    scf.for %j = %c0 to %m step %c1 {
      %s = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
        %v = memref.load %x[%r, %j] : memref<?x?xf32>
        %a = arith.addf %acc, %v : f32
        scf.yield %a : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %s, %out[%i, %j] : memref<?x?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 1>}
  } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
  func.return
}
"""


def test_interchange_column_reductions_accumulates_a_row():
    """x[r, j] summed over r for each j: the sum moves outside, the j loop inside it (a stack row of
    partial sums), and the parallel loop reads each sum back from the row."""
    from tilegrad.passes.interchange_column_reductions import ROW, InterchangeColumnReductions

    module = parse(COLUMN_SUM)
    InterchangeColumnReductions().apply(make_context(), module)
    module.verify()
    expected = [  # in this order, as xDSL's filecheck tests read (CHECK lines)
        f"%0 = memref.alloca() : memref<{ROW}xf32>",
        "scf.for %i = %c0 to %c1 step %c1 {",
        "scf.for %2 = %c0 to %m step %1 {",  # the tile of sums
        f"memref.store %zero, %0[%7] : memref<{ROW}xf32>",  # row = 0
        "scf.for %8 = %c0 to %n step %c1 {",  # for r
        "scf.for %9 = %2 to %4 step %5 {",  # for j in the tile
        f"%11 = memref.load %0[%10] : memref<{ROW}xf32>",
        "%v = memref.load %x[%8, %9] : memref<?x?xf32>",  # a contiguous row of x
        "%a = arith.addf %11, %v : f32",
        f"memref.store %a, %0[%10] : memref<{ROW}xf32>",
        '} {tg.loop = #tg.loop<reduce, axis = 0>}',
        "scf.for %j = %2 to %4 step %c1 {",
        f"%s = memref.load %0[%12] : memref<{ROW}xf32>",
        "memref.store %s, %out[%i, %j] : memref<?x?xf32>",
    ]
    assert_lines_in_order(str(module), expected)


def test_column_reductions_on_cpu_match_the_plain_loop_bitwise():
    """dγ-style sums over rows: interchanged on cpu, the same sums in the same order as untiled."""
    import tilegrad.dsl as tg

    @tg.op(outputs={"dgamma": tg.shaped("C", dtype="x"), "dx": tg.like("x")}, replace=True)
    def test_column_sums(x=tg.tensor("N C"), dy=tg.tensor("N C", dtype="x")):
        total = lambda c: tg.reduce_sum(x.shape[0], lambda n: dy[n, c] * x[n, c])  # noqa: E731
        return total, lambda n, c: dy[n, c] * tg.reduce_sum(x.shape[0], lambda k: x[k, c])

    rng = np.random.default_rng(3)
    for rows in (7, 1500):  # a plain and a blocked (float64 partials) sum
        x = rng.standard_normal((rows, 1000)).astype(np.float32)
        dy = rng.standard_normal((rows, 1000)).astype(np.float32)
        kernel = tilegrad.compile("test_column_sums", "cpu")
        assert "memref.alloca" in kernel.ir("tiled", x=x, dy=dy)
        got = kernel(x=x, dy=dy)
        want = tilegrad.compile("test_column_sums", "cpu", untiled=True)(x=x, dy=dy)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        np.testing.assert_allclose(got[0], (dy.astype(np.float64) * x).sum(axis=0), rtol=1e-5, atol=1e-4)


ROW_AND_COLUMN = """
builtin.module {
  func.func @row_and_column(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"},
                            %y: memref<?x?xf32> {tg.name = "y", tg.role = "output"},
                            %col: memref<?xf32> {tg.name = "col", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32>
    %m = memref.dim %x, %c1 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %i = %c0 to %n step %c1 {
      scf.for %j = %c0 to %m step %c1 {
        %v = memref.load %x[%i, %j] : memref<?x?xf32>
        %w = arith.addf %v, %v : f32
        memref.store %w, %y[%i, %j] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    scf.for %d = %c0 to %m step %c1 {
      %s = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
        %u = memref.load %x[%r, %d] : memref<?x?xf32>
        %a = arith.addf %acc, %u : f32
        scf.yield %a : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %s, %col[%d] : memref<?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
    func.return
  }
}
"""


def test_split_column_reductions_sums_by_row_chunks():
    """A column sum after a row stage over the same rows: both walk chunks of rows (one per core for
    a plain sum), the sum keeps a partial row per chunk in a workspace, and a combine stage adds
    the chunks in order. fuse-sibling-loops then runs the two chunk nests as one, row by row."""
    from tilegrad.passes.fuse_sibling_loops import FuseSiblingLoops
    from tilegrad.passes.split_column_reductions import SplitColumnReductions

    module = parse(ROW_AND_COLUMN)
    SplitColumnReductions(num_blocks=2).apply(make_context(), module)
    module.verify()
    text = str(module)
    assert ('%column_partials0: memref<2x?xf32, strided<[?, 1]>> {tg.name = "column_partials0", '
            'tg.role = "workspace", tg.shape = "[2, [\\22dim\\22, \\22x\\22, 1]]"}') in text
    assert_lines_in_order(text, [
        "%5 = arith.divui %4, %2 : index",  # ceil(n / 2) rows a chunk
        "%9 = arith.divui %8, %6 : index",  # chunks
        "scf.for %10 = %0 to %9 step %1 {",  # the row stage, by chunks
        "%11 = arith.muli %10, %6 : index",
        "scf.for %i = %11 to %13 step %c1 {",
        '} {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}',
        "scf.for %14 = %0 to %9 step %1 {",  # the partial sums, by the same chunks
        "scf.for %18 = %15 to %17 step %1 {",
        "scf.for %19 = %c0 to %m step %c1 {",
        "%20 = arith.cmpi eq, %18, %15 : index",  # a chunk's first row starts its partial row
        "%22 = arith.select %20, %zero, %21 : f32",
        "%u = memref.load %x[%18, %19] : memref<?x?xf32>",
        "%a = arith.addf %22, %u : f32",
        "memref.store %a, %column_partials0[%14, %19] : memref<2x?xf32, strided<[?, 1]>>",
        '} {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}',
        "scf.for %d = %c0 to %m step %c1 {",  # the combine: chunk 0, then 1
        "%s = scf.for %23 = %0 to %9 step %1 iter_args(%24 = %zero) -> (f32) {",
        "%25 = memref.load %column_partials0[%23, %d] : memref<2x?xf32, strided<[?, 1]>>",
        "memref.store %s, %col[%d] : memref<?xf32>",
    ])
    FuseSiblingLoops().apply(make_context(), module)
    module.verify()
    assert_lines_in_order(str(module), [
        "scf.for %i = %14 to %16 step %c1 {",  # one row loop, one column loop: x read once
        "scf.for %j = %c0 to %m step %c1 {",
        "memref.store %w, %y[%i, %j] : memref<?x?xf32>",
        "%u = memref.load %x[%i, %j] : memref<?x?xf32>",
        "memref.store %a, %column_partials0[%10, %j] : memref<2x?xf32, strided<[?, 1]>>",
        '} {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}',
        '} {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}',
    ])


def test_column_sums_beside_a_row_stage_read_the_rows_once():
    """A layer-norm-style op (row sums, dx by rows, dγ and dβ by columns) on cpu: one stage reads
    each row once and a combine stage adds the chunks' partial rows. Chunks are balanced over the
    cores and no longer than a long sum's float32 blocks (2048 rows on 2 cores: the chunks are the
    blocks, so the sums are bitwise the untiled ones); results repeat bitwise run to run."""
    import tilegrad.dsl as tg

    @tg.op(outputs={"dx": tg.like("x"), "dgamma": tg.shaped("D", dtype="x"), "dbeta": tg.shaped("D", dtype="x")},
           replace=True)
    def test_row_and_column_sums(dy=tg.tensor("N D", dtype="x"), x=tg.tensor("N D")):
        rows, features = x.shape
        row_sum = tg.temp("row_sum", (rows,))
        row_sum.assign(lambda n: tg.reduce_sum(features, lambda d: dy[n, d] * x[n, d]))
        dx = lambda n, d: dy[n, d] - x[n, d] * row_sum[n]  # noqa: E731
        dgamma = lambda d: tg.reduce_sum(rows, lambda n: dy[n, d] * x[n, d])  # noqa: E731
        dbeta = lambda d: tg.reduce_sum(rows, lambda n: dy[n, d])  # noqa: E731
        return dx, dgamma, dbeta

    two, five = (tilegrad.register_target(tilegrad.Target(f"cpu{n}", n, 1 << 20, 64, 64, ("float32",), staged=False),
                                          replace=True) for n in (2, 5))
    rng = np.random.default_rng(5)
    for rows in (0, 1, 3, 7, 1500, 2048, 3100):
        x = rng.standard_normal((rows, 300)).astype(np.float32)
        dy = rng.standard_normal((rows, 300)).astype(np.float32)
        want = tilegrad.compile("test_row_and_column_sums", "cpu", untiled=True)(dy=dy, x=x)
        x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
        exact = (dy64 - x64 * (dy64 * x64).sum(1, keepdims=True), (dy64 * x64).sum(0), dy64.sum(0))
        for target in (two, five):
            kernel = tilegrad.compile("test_row_and_column_sums", target)
            tiled = kernel.ir("tiled", dy=dy, x=x)
            assert "column_partials1" in tiled and tiled.count("tg.stage = ") == 2
            got = kernel(dy=dy, x=x)
            for g, again in zip(got, kernel(dy=dy, x=x)):
                np.testing.assert_array_equal(g, again)
            np.testing.assert_array_equal(got[0], want[0])  # the row stage's order is unchanged
            for g, w, e in zip(got[1:], want[1:], exact[1:]):
                if rows == 2048 and target is two:
                    np.testing.assert_array_equal(g, w)
                np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5 * max(rows, 1) ** 0.5)
            np.testing.assert_allclose(got[0], exact[0], rtol=1e-4, atol=1e-3)


SHORT_AND_LONG = """
func.func @windows(%x: memref<?xf32>, %out: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c100 = arith.constant 100 : index
  %zero = arith.constant 0.000000e+00 : f32
  %short = scf.for %k = %c0 to %c3 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%k] : memref<?xf32>
    %a = arith.addf %acc, %v : f32
    scf.yield %a : f32
  } {tg.loop = #tg.loop<reduce, axis = 0>}
  %long = scf.for %k2 = %c0 to %c100 step %c1 iter_args(%acc2 = %zero) -> (f32) {
    %v2 = memref.load %x[%k2] : memref<?xf32>
    %a2 = arith.addf %acc2, %v2 : f32
    scf.yield %a2 : f32
  } {tg.loop = #tg.loop<reduce, axis = 0>}
  memref.store %short, %out[%c0] : memref<2xf32>
  memref.store %long, %out[%c1] : memref<2xf32>
  func.return
}
"""


def test_unroll_short_reductions_unrolls_a_window_but_not_a_long_sum():
    from tilegrad.passes.unroll_short_reductions import UnrollShortReductions

    module = parse(SHORT_AND_LONG)
    UnrollShortReductions().apply(make_context(), module)
    module.verify()
    text = str(module)
    assert text.count("scf.for") == 1 and "%c100" in text  # the 100-term sum stays a loop
    assert text.count("memref.load %x") == 4  # three unrolled terms + the loop's one


TWO_SUMS = """
func.func @two_sums(%x: memref<?x?xf32>, %dy: memref<?x?xf32>, %db: memref<?xf32>, %dg: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?x?xf32>
  %m = memref.dim %x, %c1 : memref<?x?xf32>
  %zero = arith.constant 0.000000e+00 : f32
  scf.for %c = %c0 to %m step %c1 {
    %s = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %dy[%r, %c] : memref<?x?xf32>
      %a = arith.addf %acc, %v : f32
      scf.yield %a : f32
    } {tg.loop = #tg.loop<reduce, axis = 0>}
    memref.store %s, %db[%c] : memref<?xf32>
    %n2 = memref.dim %x, %c0 : memref<?x?xf32>
    %t = scf.for %r2 = %c0 to %n2 step %c1 iter_args(%acc2 = %zero) -> (f32) {
      %w = memref.load %dy[%r2, %c] : memref<?x?xf32>
      %u = memref.load %x[%r2, %c] : memref<?x?xf32>
      %p = arith.mulf %w, %u : f32
      %b = arith.addf %acc2, %p : f32
      scf.yield %b : f32
    } {tg.loop = #tg.loop<reduce, axis = 0>}
    memref.store %t, %dg[%c] : memref<?xf32>
  } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
  func.return
}
"""


def test_fuse_sibling_reductions_sweeps_once():
    """dβ = Σ dy and dγ = Σ dy·x over the same rows: one loop carries both accumulators, each with
    its own terms in its own order; a reduction that reads what the other's result was stored to
    stays apart."""
    from tilegrad.passes.fuse_sibling_reductions import FuseSiblingReductions

    module = parse(TWO_SUMS)
    FuseSiblingReductions().apply(make_context(), module)
    module.verify()
    text = str(module)
    assert text.count("scf.for") == 2
    expected = [
        "%n2 = memref.dim %x, %c0 : memref<?x?xf32>",  # the second loop's bound moves up with it
        "%s, %t = scf.for %r2 = %c0 to %n step %c1 iter_args(%acc = %zero, %acc2 = %zero) -> (f32, f32) {",
        "%v = memref.load %dy[%r2, %c] : memref<?x?xf32>",
        "%a = arith.addf %acc, %v : f32",
        "%w = memref.load %dy[%r2, %c] : memref<?x?xf32>",
        "%b = arith.addf %acc2, %p : f32",
        "scf.yield %a, %b : f32, f32",
        "memref.store %s, %db[%c] : memref<?xf32>",
        "memref.store %t, %dg[%c] : memref<?xf32>",
    ]
    assert_lines_in_order(text, expected)

    reads_db = "%w = memref.load %db[%r2] : memref<?xf32>"
    dependent = parse(TWO_SUMS.replace("%w = memref.load %dy[%r2, %c] : memref<?x?xf32>", reads_db))
    FuseSiblingReductions().apply(make_context(), dependent)
    assert str(dependent).count("scf.for") == 3


DOT_PRODUCTS = """
func.func @logits(%x: memref<?x?xf32>, %w: memref<?x?xf32>, %out: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %x, %c0 : memref<?x?xf32>
  %k = memref.dim %x, %c1 : memref<?x?xf32>
  %v = memref.dim %w, %c0 : memref<?x?xf32>
  %zero = arith.constant 0.000000e+00 : f32
  scf.for %i = %c0 to %rows step %c1 {
    scf.for %j = %c0 to %v step %c1 {
      %s = scf.for %r = %c0 to %k step %c1 iter_args(%acc = %zero) -> (f32) {
        %a = memref.load %x[%i, %r] : memref<?x?xf32>
        %b = memref.load %w[%j, %r] : memref<?x?xf32>
        %p = arith.mulf %a, %b : f32
        %t = arith.addf %acc, %p : f32
        scf.yield %t : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %s, %out[%i, %j] : memref<?x?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 1>}
  } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
  func.return
}
"""


def test_unroll_reuse_loops_then_fuse_is_a_register_tile():
    """Σ_r x[i, r]·w[j, r] for each j: j runs UNROLL at a time and i JAM_ROWS at a time, with one
    sweep over r feeding UNROLL x JAM_ROWS accumulators (each x[i, r] and w[j, r] read once for
    all). An iteration here may run again (it stores only out[i, j] and reads no out), so the
    copies past the end repeat the last j and the last i (clamped), with no loops for the rest;
    where it may not (it reads what it writes), the leftover js and is run in the original loops.
    A row sum (nothing reused across j) is left alone."""
    from tilegrad.passes.fuse_sibling_reductions import FuseSiblingReductions
    from tilegrad.passes.unroll_reuse_loops import JAM_ROWS, UNROLL, UnrollReuseLoops

    def tiled(text: str) -> tuple[str, list[str]]:
        module = parse(text)
        UnrollReuseLoops().apply(make_context(), module)
        FuseSiblingReductions().apply(make_context(), module)
        module.verify()
        return str(module), [line.strip() for line in str(module).splitlines() if "iter_args" in line]

    text, sweeps = tiled(DOT_PRODUCTS)
    assert [s.count("%zero") for s in sweeps] == [UNROLL * JAM_ROWS]
    assert text.count("memref.store") == UNROLL * JAM_ROWS
    assert re.search(r"scf.for %\w+ = %c0 to %rows step %\w+ {", text)  # the rows, JAM_ROWS at a time
    assert re.search(r"scf.for %\w+ = %c0 to %v step %\w+ {", text)  # the js, UNROLL at a time
    assert text.count("arith.minsi") == UNROLL - 1 + JAM_ROWS - 1  # the copies past the first, clamped

    # a j that stores at 2j: another j's element, as far as the pass can tell, so j may not run
    # again: the leftover js run in the original loop (the rows, still their own, are clamped)
    spread = DOT_PRODUCTS.replace("memref.store %s, %out[%i, %j]", "%jj = arith.addi %j, %j : index\n"
                                  "      memref.store %s, %out[%i, %jj]")
    text, sweeps = tiled(spread)
    assert [s.count("%zero") for s in sweeps] == [UNROLL * JAM_ROWS, JAM_ROWS]
    assert text.count("memref.store") == (UNROLL + 1) * JAM_ROWS and text.count("arith.minsi") == JAM_ROWS - 1

    row_sums = parse(DOT_PRODUCTS.replace("%b = memref.load %w[%j, %r]", "%b = memref.load %w[%i, %r]"))
    UnrollReuseLoops().apply(make_context(), row_sums)
    assert str(row_sums).count("iter_args") == 1

    # 16 vector registers (AVX2): 4 dot products a row, so the accumulators take half of them
    from tilegrad.pipeline import run_passes

    module = run_passes(DOT_PRODUCTS, "unroll-reuse-loops{unroll=4},fuse-sibling-reductions")
    assert [line.count("%zero") for line in str(module).splitlines() if "iter_args" in line] == [4 * JAM_ROWS]


def test_register_tiled_dot_products_match_numpy():
    """The logits form (Σ_k x[i, k]·w[j, k]) through the pipeline, register-tiled on cpu, for a V that
    leaves a remainder: tiled and untiled both match float64 numpy (LLVM reassociates each sum's
    vector lanes as the loop allows, so the two need not agree bitwise)."""
    import tilegrad.dsl as tg

    @tg.op(outputs={"logits": tg.shaped("B V", dtype="x")}, replace=True)
    def test_dot_products(x=tg.tensor("B H"), w=tg.tensor("V H", dtype="x")):
        return lambda i, j: tg.reduce_sum(x.shape[1], lambda k: x[i, k] * w[j, k])

    rng = np.random.default_rng(5)
    from tilegrad.passes.unroll_reuse_loops import JAM_ROWS
    from tilegrad.targets import get_target
    from tilegrad.targets.host import HOST

    unroll = HOST.reuse_unroll(get_target("cpu").vector_registers)  # the host's register tile

    for hidden in (5, 3000):  # a plain and a blocked (float64 partials) sum
        x = rng.standard_normal((7, hidden)).astype(np.float32)
        w = rng.standard_normal((103, hidden)).astype(np.float32)
        kernel = tilegrad.compile("test_dot_products", "cpu")
        sweeps = [line for line in kernel.ir("tiled", x=x, w=w).splitlines() if "iter_args" in line]
        assert max(line.count("%") for line in sweeps) > 2 * unroll * JAM_ROWS  # accumulators and their inits
        want = x.astype(np.float64) @ w.T.astype(np.float64)
        for untiled in (False, True):
            got = tilegrad.compile("test_dot_products", "cpu", untiled=untiled)(x=x, w=w)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.sqrt(hidden))
    # fewer rows and columns than one step takes: every copy past the first repeats the last
    x, w = rng.standard_normal((1, 40)).astype(np.float32), rng.standard_normal((3, 40)).astype(np.float32)
    got = tilegrad.compile("test_dot_products", "cpu")(x=x, w=w)
    np.testing.assert_allclose(got, x.astype(np.float64) @ w.T.astype(np.float64), rtol=1e-5, atol=1e-4)


ROW_LOOP = """    scf.for %j = %c0 to %v step %c1 {"""
TILE_LOOP = """    %c64 = arith.constant 64 : index
    scf.for %t0 = %c0 to %v step %c64 {
    %end = arith.addi %t0, %c64 : index
    %stop = arith.minsi %end, %v : index
    scf.for %j = %t0 to %stop step %c1 {"""
ROW_END = """    } {tg.loop = #tg.loop<parallel, axis = 1>}"""
TILED_DOT_PRODUCTS = DOT_PRODUCTS.replace(ROW_LOOP, TILE_LOOP).replace(
    ROW_END, ROW_END + """
    } {tg.loop = #tg.loop<tile, axis = 1>}""")


def test_reorder_for_reuse_keeps_a_tile_of_w_in_cache():
    """Every row i reads all of w: the tile loop over w's rows moves outside the row loop, with a
    step that keeps tile x K elements within the cache budget, and each i reads the tile from cache."""
    from tilegrad.passes.reorder_for_reuse import ReorderForReuse

    module = parse(TILED_DOT_PRODUCTS)
    ReorderForReuse(cache_bytes=4096).apply(make_context(), module)
    module.verify()
    expected = [
        "%0 = arith.constant 1024 : index",  # the budget in elements
        "%fit = arith.divui %0, %k : index",  # rows of w that fit
        "%reuse_tile = arith.maxsi %fit, %1 : index",
        "scf.for %t0 = %c0 to %v step %reuse_tile {",  # the tile loop, outermost
        "scf.for %i = %c0 to %rows step %c1 {",
        "%end = arith.addi %t0, %reuse_tile : index",
        "scf.for %j = %t0 to %stop step %c1 {",
        "%b = memref.load %w[%j, %r] : memref<?x?xf32>",
        '} {tg.loop = #tg.loop<parallel, axis = 0>}',
        '} {tg.loop = #tg.loop<tile, axis = 1>, tg.stage = 0 : i64}',
    ]
    assert_lines_in_order(str(module), expected)

    per_row = parse(TILED_DOT_PRODUCTS.replace("%b = memref.load %w[%j, %r]", "%b = memref.load %w[%i, %r]"))
    ReorderForReuse(cache_bytes=4096).apply(make_context(), per_row)
    assert str(per_row).count("scf.for") == 4 and "arith.divui" not in str(per_row)


ROW_SUMS_AND_A_COLUMN = """
func.func @scaled_row_sums(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"},
                           %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"},
                           %out: memref<?xf32> {tg.name = "out", tg.role = "output"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?x?xf32>
  %m = memref.dim %x, %c1 : memref<?x?xf32>
  %zero = arith.constant 0.000000e+00 : f32
  scf.for %i = %c0 to %n step %c1 {
    %s = scf.for %r = %c0 to %m step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %x[%i, %r] : memref<?x?xf32>
      %u = memref.load %w[%r, %i] : memref<?x?xf32>
      %p = arith.mulf %v, %u : f32
      %a = arith.addf %acc, %p : f32
      scf.yield %a : f32
    } {tg.loop = #tg.loop<reduce, axis = 0>}
    memref.store %s, %out[%i] : memref<?xf32>
  } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
  func.return
}
"""


def test_tile_for_target_stages_reduction_runs_and_single_elements():
    """On a scratchpad target nothing reads GM directly: the row x[i, :] streams through UB in
    runs (the reduce loop strip-mined, one copy per strip), the column read w[r, i] moves one
    element at a time through a slot, and the plan counts no direct GM access."""
    module = parse("builtin.module {" + ROW_SUMS_AND_A_COLUMN + "}")
    TileForTarget("ascend910b").apply(make_context(), module)
    module.verify()
    plan = tiling_plan(module, keep=False)
    text = str(module)
    assert not re.search(r"memref.load %(x|w)\[", text) and not re.search(r"memref.store \S+ %out\[", text)
    run = next(b for b in plan.stages[0].buffers if b.copies == "run in")
    assert f'"x" : memref<196608xi8> -> memref<{run.shape[0]}xf32>' in text
    assert '"one f32" : memref<196608xi8> -> memref<1xf32>' in text
    expected = [
        "scf.for %i = ",  # the tiled row loop
        "= %zero) -> (f32) {",  # the strip of runs carries the sum
        'tg.copy "gm_to_ub" %x[%i, ',  # one run of the row
        "scf.for %r = ",  # the reduction, within the strip
        'tg.copy "gm_to_ub" %w[%r, %i] to ',  # the column element
        '} {tg.loop = #tg.loop<reduce, axis = 0>}',
        '} {tg.loop = #tg.loop<run, axis = 0>}',
    ]
    assert_lines_in_order(text, expected, whole=False)
    assert plan.direct_gm == {} and plan.num_blocks == 24


def test_staged_reduction_runs_match_the_cpu_kernel_bitwise():
    import tilegrad.dsl as tg

    @tg.op(outputs={"out": tg.shaped("N", dtype="x")}, replace=True)
    def test_scaled_row_sums(x=tg.tensor("N M"), w=tg.tensor("M N", dtype="x")):
        return lambda i: tg.reduce_sum(x.shape[1], lambda r: x[i, r] * w[r, i])

    rng = np.random.default_rng(5)
    for cols in (5, 3000, 9000):  # shorter than a run, several runs, a blocked (float64 partials) sum
        x = rng.standard_normal((30, cols)).astype(np.float32)
        w = rng.standard_normal((cols, 30)).astype(np.float32)
        staged = tilegrad.compile("test_scaled_row_sums", "ascend910b")
        plan = staged.plan(x=x, w=w)
        assert "direct GM accesses: 0" in str(plan) and "run in" in str(plan)
        want = tilegrad.compile("test_scaled_row_sums", "cpu", untiled=True)(x=x, w=w)
        np.testing.assert_array_equal(staged(x=x, w=w), want)
        np.testing.assert_allclose(want, np.einsum("ir,ri->i", x.astype(np.float64), w), rtol=1e-4, atol=1e-4)


FILL_THEN_SCATTER = """
func.func @planes(%dy: memref<?x?x?xf32>, %where: memref<?x?x?xindex>, %dx: memref<?x?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %dx, %c0 : memref<?x?x?xf32>
  %h = memref.dim %dx, %c1 : memref<?x?x?xf32>
  %c2 = arith.constant 2 : index
  %w = memref.dim %dx, %c2 : memref<?x?x?xf32>
  %oh = memref.dim %dy, %c1 : memref<?x?x?xf32>
  %ow = memref.dim %dy, %c2 : memref<?x?x?xf32>
  %zero = arith.constant 0.000000e+00 : f32
  scf.for %i = %c0 to %n step %c1 {
    scf.for %y = %c0 to %h step %c1 {
      scf.for %x = %c0 to %w step %c1 {
        memref.store %zero, %dx[%i, %y, %x] : memref<?x?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 2>}
    } {tg.loop = #tg.loop<parallel, axis = 1>}
  } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
  scf.for %i2 = %c0 to %n step %c1 {
    scf.for %p = %c0 to %oh step %c1 {
      scf.for %q = %c0 to %ow step %c1 {
        %k = memref.load %where[%i2, %p, %q] : memref<?x?x?xindex>
        %g = memref.load %dy[%i2, %p, %q] : memref<?x?x?xf32>
        %old = memref.load %dx[ROW, %k, %q] : memref<?x?x?xf32>
        %new = arith.addf %old, %g : f32
        memref.store %new, %dx[ROW, %k, %q] : memref<?x?x?xf32>
      } {tg.loop = #tg.loop<scatter, axis = 2>}
    } {tg.loop = #tg.loop<scatter, axis = 1>}
  } {tg.loop = #tg.loop<scatter, axis = 0>, tg.stage = 1 : i64}
  func.return
}
"""


@pytest.mark.parametrize("row, fused", [("%i2", True), ("%k", False)])
def test_fuse_sibling_loops_fills_and_scatters_plane_by_plane(row, fused):
    """A zero fill of dx and a scatter into the same plane of dx share their outer loop (the plane):
    one nest, the plane's fill then its scatter. A scatter whose row comes from data may write into
    another plane (which a later fill would zero): the stages stay apart."""
    from tilegrad.passes.fuse_sibling_loops import FuseSiblingLoops

    module = parse(FILL_THEN_SCATTER.replace("ROW", row))
    FuseSiblingLoops().apply(make_context(), module)
    module.verify()
    text = str(module)
    assert text.count("tg.stage") == (1 if fused else 2)
    if fused:
        nest = text[text.index("scf.for %i "):]
        assert nest.index("memref.store %zero, %dx[%i, %y, %x]") < nest.index("scf.for %p") \
            < nest.index("memref.store %new, %dx[%i, %k, %q]")


def test_max_pooling_backward_runs_plane_by_plane():
    """dy's N, C and x's N, C are one symbol each, so one value in the IR: the window choice, dx's
    zero fill and the scatter share the (n, c) loops and run as one stage, plane by plane."""
    call = dict(x=tilegrad.Spec((2, 3, 9, 9)), y=tilegrad.Spec((2, 3, 4, 4)), dy=tilegrad.Spec((2, 3, 4, 4)),
                window=(3, 3), stride=(2, 2))
    loops = tilegrad.compile("pooling_backward", "cpu").ir("loops", **call)
    assert loops.count("tg.stage") == 1
    assert len(re.findall(r"memref.dim %\w+, %0 ", loops)) == 1  # N: one dim op for x, y, dy and dx


CLAMPED_WINDOW = """
func.func @clamped(%x: memref<?xf32>, %y: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.000000e+00 : f32
  %d = memref.dim %x, %c0 : memref<?xf32>
  %n = memref.dim %y, %c0 : memref<?xf32>
  scf.for %o = %c0 to %n step %c1 {
    %twice = arith.muli %o, %c2 : index
    %at = arith.subi %twice, %c1 : index
    %last = arith.subi %d, %c1 : index
    %low = arith.maxsi %at, %c0 : index
    %safe = arith.minsi %low, %last : index
    %v = memref.load %x[%safe] : memref<?xf32>
    %above = arith.cmpi sge, %at, %c0 : index
    %below = arith.cmpi slt, %at, %d : index
    %inside = arith.andi %above, %below : i1
    %w = arith.select %inside, %v, %zero : f32
    memref.store %w, %y[%o] : memref<?xf32>
  } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
  func.return
}
"""


def test_partition_clamped_loops_drops_the_clamps_between_the_edges():
    """y[o] = x[2o - 1] where inside, read through a clamp: three loops; the middle one reads
    x[2o - 1] directly and selects on true, the outer two keep the clamp and the tests."""
    from tilegrad.passes.partition_clamped_loops import PartitionClampedLoops

    module = parse(CLAMPED_WINDOW)
    PartitionClampedLoops().apply(make_context(), module)
    module.verify()
    loops = [o for o in module.walk() if o.name == "scf.for"]
    assert len(loops) == 3
    first, middle, last = (str(loop) for loop in loops)
    for edge in (first, last):
        assert "arith.maxsi" in edge and "arith.minsi" in edge and "arith.cmpi" in edge
    assert "arith.maxsi" not in middle and "arith.minsi" not in middle and "arith.cmpi" not in middle
    load = next(o for o in loops[1].walk() if o.name == "memref.load")
    assert load.indices[0].owner.name == "arith.subi"  # x[2o - 1], no clamp
    assert_lines_in_order(middle, ["%above = arith.constant true", "%twice = arith.muli %o, %c2 : index",
                                   "%at = arith.subi %twice, %c1 : index", "%v = memref.load %x[%at] : memref<?xf32>",
                                   "%inside = arith.andi %above, %above : i1"])
    assert loops[0].lb.owner.name == "arith.constant" and loops[2].ub.owner.name == "memref.dim"
    assert loops[0].ub is loops[1].lb and loops[1].ub is loops[2].lb
    assert "tg.stage" in loops[0].attributes and "tg.stage" not in loops[1].attributes


STRIDED_GATHER = """
func.func @gather(%dy: memref<?xf32>, %dx: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = memref.dim %dx, %c0 : memref<?xf32>
  scf.for %p = %c0 to %n step %c1 {
    %top = arith.addi %p, %c1 : index
    %o = arith.divsi %top, %c2 : index
    %cell = arith.remsi %top, %c2 : index
    %v = memref.load %dy[%o] : memref<?xf32>
    %k = arith.index_cast %cell : index to i64
    %f = arith.sitofp %k : i64 to f32
    %w = arith.mulf %v, %f : f32
    memref.store %w, %dx[%p] : memref<?xf32>
  } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
  func.return
}
"""


def test_split_stride_phases_runs_a_group_of_phases_per_iteration():
    """(p + 1) / 2 and (p + 1) % 2: the main loop walks q and writes dx[2q] and dx[2q + 1], reading
    dy[q + 0] and dy[q + 1] (quotients as q plus a constant, no division inside); the original
    loop runs before and after it."""
    from tilegrad.passes.split_stride_phases import SplitStridePhases

    module = parse(STRIDED_GATHER)
    SplitStridePhases().apply(make_context(), module)
    module.verify()
    loops = [o for o in module.walk() if o.name == "scf.for"]
    assert len(loops) == 3
    main = loops[1]
    body = str(main)
    assert "arith.divsi" not in body and "arith.remsi" not in body
    assert body.count("memref.store") == 2 and body.count("memref.load %dy") == 2
    q = main.body.block.args[0]
    quotients = [o for o in main.body.block.ops if o.name == "arith.addi" and o.operands[0] is q]
    assert len(quotients) == 2  # q + ⌊(0 + 1)/2⌋ and q + ⌊(1 + 1)/2⌋
    assert all("arith.divsi" in str(loop) for loop in (loops[0], loops[2]))
    assert loops[0].ub is not loops[2].lb  # [lb, a) and [b, ub): a and b bound the main loop


def test_strided_padded_windows_match_numpy_at_every_size():
    """A 1-D average-pooling-style gather (window 3, stride 2 or 3, padding 1 or 2) through the
    whole cpu pipeline, where split-stride-phases and partition-clamped-loops split its loop, for
    sizes 0 .. 13 (all empty, edge-only and remainder cases) against float64 numpy."""
    import dataclasses

    import tilegrad.dsl as tg

    # the stores counted are the phase split's (stream-stores would split the loops once more)
    not_streaming = tilegrad.register_target(dataclasses.replace(
        tilegrad.targets.get_target("cpu"), name="test-cpu-not-streaming", stream_store_bytes=0), replace=True)
    for stride, pad in ((2, 1), (3, 2), (2, 0)):
        name = f"test_strided_gather_{stride}_{pad}"

        @tg.op(name=name, outputs={"dx": tg.like("x")}, replace=True)
        def strided(dy=tg.tensor("M"), x=tg.tensor("N", dtype="dy"), s=tg.attr(stride), p=tg.attr(pad)):
            def gathered(i):
                def term(j):
                    top = i + p
                    o = top // s - (-(-3 // s) - 1) + j
                    inside = (o >= 0) & (o < dy.shape[0]) & (top - o * s < 3)
                    return tg.where(inside, dy[o] * tg.cast(top - o * s + 1, "f"), 0.0)
                return tg.reduce_sum(-(-3 // s), term)
            return gathered

        kernel = tilegrad.compile(name, not_streaming)
        tiled = kernel.ir("tiled", dy=np.zeros(7, np.float32), x=np.zeros(13, np.float32))
        phases = [line for line in tiled.splitlines() if "memref.store" in line]
        # the loop before and after the phase loop, which runs in three parts of `stride` phases;
        # the middle part (no clamps, 4 to 6 trips) once more (overlap-vector-tails)
        assert len(phases) == 2 + 3 * stride + stride
        for size in range(14):
            outputs = (size + 2 * pad - 3) // stride + 1 if size + 2 * pad >= 3 else 0
            if size and not outputs:
                continue  # dy would be empty where x is not: refused before the call
            dy = np.arange(1, outputs + 1, dtype=np.float32)
            want = np.zeros(size)
            for o in range(outputs):
                for cell in range(3):
                    i = o * stride - pad + cell
                    if 0 <= i < size:
                        want[i] += dy[o] * (cell + 1)
            got = kernel(dy=dy, x=np.zeros(size, np.float32))
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"stride {stride} pad {pad} size {size}")


ROWS_SWEEPING_W = """
builtin.module {
  func.func @g_times_w(%g: memref<?x?xf32> {tg.name = "g", tg.role = "input"},
                       %w: memref<?x?xf32> {tg.name = "w", tg.role = "input"},
                       %out: memref<?x?xf32> {tg.name = "out", tg.role = "output"}) {
    %acc = memref.alloca() : memref<512xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %g, %c0 : memref<?x?xf32>
    %v_end = memref.dim %w, %c0 : memref<?x?xf32>
    %h_end = memref.dim %w, %c1 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    scf.for %i = %c0 to %rows step %c1 {
      scf.for %h = %c0 to %h_end step %c1 {
        memref.store %zero, %acc[%h] : memref<512xf32>
      } {tg.loop = #tg.loop<row, axis = 0>}
      scf.for %v = %c0 to %v_end step %c1 {
        scf.for %h = %c0 to %h_end step %c1 {
          %a = memref.load %acc[%h] : memref<512xf32>
          %x = memref.load %g[%i, %v] : memref<?x?xf32>
          %y = memref.load %w[%v, %h] : memref<?x?xf32>
          %p = arith.mulf %x, %y : f32
          %s = arith.addf %a, %p fastmath<reassoc> : f32
          memref.store %s, %acc[%h] : memref<512xf32>
        } {tg.loop = #tg.loop<row, axis = 0>}
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      scf.for %h = %c0 to %h_end step %c1 {
        %a = memref.load %acc[%h] : memref<512xf32>
        memref.store %a, %out[%i, %h] : memref<?x?xf32>
      } {tg.loop = #tg.loop<parallel, axis = 1>}
    } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
    func.return
  }
}
"""


def test_jam_row_sweeps_runs_rows_in_one_sweep_of_w():
    from tilegrad.passes.jam_row_sweeps import ROWS
    from tilegrad.pipeline import run_passes

    text = str(run_passes(ROWS_SWEEPING_W, "jam-row-sweeps"))
    assert text.count("memref.alloca()") == ROWS  # a stack row per copy
    # the loop steps by ROWS and sweeps w once: one v loop, one h loop, a product per row in it
    assert text.count("#tg.loop<parallel, axis = 0>") == 1 and f"arith.constant {ROWS} : index" in text
    assert text.count("#tg.loop<reduce,") == 1 and text.count("arith.mulf") == ROWS
    assert text.count("memref.load %w") == ROWS and text.count("memref.dim") == 3
    # no loop for the rows left over: the last group's copies past the end re-run the last row
    # (min(i + k, last): each row overwrites its own output row, so running it again changes nothing)
    assert text.count("arith.minsi") == ROWS - 1 and "tg.stage = 0" in text


@pytest.mark.parametrize("product", ["g @ w", "g.T @ x"])
def test_jammed_column_products_match_the_unjammed_kernel_bitwise(monkeypatch, product):
    """g @ w and g.T @ x on cpu, for row counts with every remainder over 2 cores: jammed and
    chunked, each sum adds the same terms in the same order as without those passes."""
    import tilegrad.dsl as tg
    from tilegrad.kernel import _SPECIALIZATIONS
    from tilegrad.passes.chunk_row_sweeps import ChunkRowSweeps
    from tilegrad.passes.jam_row_sweeps import JamRowSweeps

    if product == "g @ w":
        @tg.op(outputs={"out": tg.shaped("R", "H", dtype="a")}, replace=True)
        def test_column_product(a=tg.tensor("R K"), b=tg.tensor("K H", dtype="a")):
            return lambda r, h: tg.reduce_sum(a.shape[1], lambda k: a[r, k] * b[k, h])
    else:
        @tg.op(outputs={"out": tg.shaped("R", "H", dtype="a")}, replace=True)
        def test_column_product(a=tg.tensor("K R"), b=tg.tensor("K H", dtype="a")):
            return lambda r, h: tg.reduce_sum(a.shape[0], lambda k: a[k, r] * b[k, h])

    rng = np.random.default_rng(5)
    shapes = ((1, 3, 5), (9, 1100, 37), (14, 13, 600), (37, 2, 8), (6, 7, 3), (1500, 10, 20))
    calls = []
    for rows, inner, hidden in shapes:
        g = rng.standard_normal((rows, inner)).astype(np.float32)
        other = rng.standard_normal((inner if product == "g @ w" else rows, hidden)).astype(np.float32)
        calls.append({"a": g, "b": other})
    product_of = (lambda c: c["a"].astype(np.float64) @ c["b"]) if product == "g @ w" else \
        (lambda c: c["a"].T.astype(np.float64) @ c["b"])
    kernel = tilegrad.compile("test_column_product", "cpu")
    jammed = [kernel(**call) for call in calls]
    stack_rows = kernel.ir("tiled", **calls[1]).count("memref.alloca()")  # a stack row (and float64 row) per copy
    for call, out in zip(calls, jammed):
        np.testing.assert_allclose(out, product_of(call), rtol=1e-4, atol=1e-4)
    chunked = kernel.ir("tiled", **calls[1])
    assert "arith.constant 16 : index" in chunked  # a chunk of columns in registers
    monkeypatch.setattr(JamRowSweeps, "apply", lambda self, ctx, module: None)
    monkeypatch.setattr(ChunkRowSweeps, "apply", lambda self, ctx, module: None)
    monkeypatch.setenv("TILEGRAD_CACHE", "0")
    for key in [k for k in _SPECIALIZATIONS if k[0] == "test_column_product"]:
        monkeypatch.delitem(_SPECIALIZATIONS, key)
    plain = tilegrad.compile("test_column_product", "cpu")
    assert plain.ir("tiled", **calls[1]).count("memref.alloca()") < stack_rows
    for call, out in zip(calls, jammed):
        np.testing.assert_array_equal(out, plain(**call))


def test_chunk_row_sweeps_keeps_a_chunk_of_columns_across_the_sweep():
    from tilegrad.passes.jam_row_sweeps import ROWS
    from tilegrad.pipeline import run_passes

    text = str(run_passes(ROWS_SWEEPING_W, "jam-row-sweeps,chunk-row-sweeps"))
    main_loop = text.split("tg.loop = #tg.loop<parallel, axis = 0>}", 1)[0]
    # the chunk loop (step 16) holds the sweep over v, which holds the 16 columns: a product per row
    assert_lines_in_order(main_loop, ["arith.constant 16 : index", "scf.for", "scf.for", "scf.for",
                                      *["arith.mulf"] * ROWS,
                                      '} {tg.loop = #tg.loop<row, axis = 0>}',
                                      '} {tg.loop = #tg.loop<reduce, axis = 0>}',
                                      '} {tg.loop = #tg.loop<tile, axis = 0>}'], whole=False)
    # the columns left over run as one more chunk, its last 16 columns (into stack rows of its own)
    assert main_loop.count('#tg.loop<reduce,') == 3
    # a loop per vector of 8 columns in the chunk (LLVM unrolls each whole and keeps its sums in
    # registers), adding in order: no reassoc for LLVM to vectorize the sweep across v with
    chunk = main_loop[main_loop.index("arith.constant 16 : index"):main_loop.index("#tg.loop<tile, axis = 0>")]
    assert chunk.count("#tg.loop<row, axis = 0>") == 2 and chunk.count("arith.addf") == 2 * ROWS
    assert "reassoc" not in chunk and "reassoc" in main_loop.split("#tg.loop<tile, axis = 0>")[1]  # (left-overs)
    # one row alone (no jam) is not chunked: every chunk would sweep w again
    assert "arith.constant 16 : index" not in str(run_passes(ROWS_SWEEPING_W, "chunk-row-sweeps"))
    # chunks of 8 columns, one vector: one loop
    narrow = str(run_passes(ROWS_SWEEPING_W, "jam-row-sweeps,chunk-row-sweeps{columns=8}"))
    narrow_loop = narrow.split("tg.loop = #tg.loop<parallel, axis = 0>}", 1)[0]
    assert_lines_in_order(narrow_loop, ["arith.constant 8 : index", "scf.for", "scf.for", "scf.for",
                                        *["arith.mulf"] * ROWS, '} {tg.loop = #tg.loop<tile, axis = 0>}'], whole=False)
    assert "arith.constant 16 : index" not in narrow_loop


def test_a_stage_sweeping_the_same_data_for_every_row_is_not_fused_with_its_producer():
    """G row by row, then dx = G @ W: fused, each row would sweep W alone; apart, rows share it."""
    import tilegrad.dsl as tg

    def polynomial(value):  # a body too large to recompute inside the sum (fuse-elementwise keeps g)
        result = value
        for c in range(10):
            result = result * value + float(c)
        return result

    @tg.op(outputs={"dx": tg.shaped("B", "H", dtype="x")}, replace=True)
    def test_scaled_product(x=tg.tensor("B V"), w=tg.tensor("V H", dtype="x")):
        g = tg.temp("g", x.shape)
        g.assign(lambda i, v: polynomial(x[i, v]))
        return lambda i, h: tg.reduce_sum(w.shape[0], lambda v: g[i, v] * w[v, h])

    x, w = tilegrad.Spec((64, 300)), tilegrad.Spec((300, 32))
    loops = tilegrad.compile("test_scaled_product", "cpu").ir("loops", x=x, w=w)
    assert loops.count("tg.stage = ") == 2
    rng = np.random.default_rng(2)
    xs = rng.uniform(-0.5, 0.5, (64, 300)).astype(np.float32)
    ws = rng.standard_normal((300, 32)).astype(np.float32)
    got = tilegrad.compile("test_scaled_product", "cpu")(x=xs, w=ws)
    np.testing.assert_allclose(got, polynomial(xs.astype(np.float64)) @ ws, rtol=1e-4, atol=1e-3)


TWO_SUMS_SWEEPING = """
builtin.module {
  func.func @two_sums(%x: memref<?x?xf32> {tg.name = "x", tg.role = "input"},
                      %dy: memref<?x?xf32> {tg.name = "dy", tg.role = "input"}) {
    %beta = memref.alloca() : memref<512xf32>
    %gamma = memref.alloca() : memref<512xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %h_end = memref.dim %x, %c1 : memref<?x?xf32>
    scf.for %r = %c0 to %rows step %c1 {
      scf.for %h = %c0 to %h_end step %c1 {
        %b = memref.load %beta[%h] : memref<512xf32>
        %d = memref.load %dy[%r, %h] : memref<?x?xf32>
        %b2 = arith.addf %b, %d : f32
        memref.store %b2, %beta[%h] : memref<512xf32>
        %g = memref.load %gamma[%h] : memref<512xf32>
        %v = memref.load %x[OPERAND] : memref<?x?xf32>
        %p = arith.mulf %d, %v : f32
        %g2 = arith.addf %g, %p : f32
        memref.store %g2, %gamma[%h] : memref<512xf32>
      } {tg.loop = #tg.loop<row, axis = 0>}
    } {tg.loop = #tg.loop<reduce, axis = 0>}
    func.return
  }
}
"""


@pytest.mark.parametrize("operand, chunked", [("%r, %h", False), ("%r, %c0", True)])
def test_chunk_row_sweeps_needs_an_operand_every_column_shares(operand, chunked):
    """Two sums sweeping the rows (batch norm's dβ and dγ of x seen as [N, C]) whose terms read only
    their own column are left whole: chunked, each pass would read 64 bytes of every row. With a
    term every column shares (x[r, 0], a GEMM's broadcast operand) the chunk keeps it in registers."""
    from tilegrad.pipeline import run_passes

    source = TWO_SUMS_SWEEPING.replace("OPERAND", operand)
    text = str(run_passes(source, "chunk-row-sweeps"))
    assert ("arith.constant 16 : index" in text) == chunked
    if not chunked:
        assert text == str(parse(source))



def test_jam_sweep_terms_adds_two_terms_per_pass_in_order():
    """Both sums of a sweep add rows r and r + 1 in one pass over their stack rows, r's term first
    (the same order as before), and the original sweep takes the row left over."""
    from tilegrad.pipeline import run_passes

    text = str(run_passes(TWO_SUMS_SWEEPING.replace("OPERAND", "%r, %h"), "jam-sweep-terms{terms=2}"))
    assert_lines_in_order(text, [
        "%0 = arith.constant 2 : index", "%1 = arith.subi %rows, %c0 : index", "%2 = arith.divui %1, %0 : index",
        "%3 = arith.muli %2, %0 : index", "%4 = arith.addi %c0, %3 : index",
        "scf.for %5 = %c0 to %4 step %0 {", "%7 = arith.addi %5, %6 : index",
        "scf.for %8 = %c0 to %h_end step %c1 {",
        "%b = memref.load %beta[%8] : memref<512xf32>", "%d = memref.load %dy[%5, %8] : memref<?x?xf32>",
        "memref.store %b2, %beta[%8] : memref<512xf32>",
        "%v = memref.load %x[%5, %8] : memref<?x?xf32>", "memref.store %g2, %gamma[%8] : memref<512xf32>",
        "%b_1 = memref.load %beta[%8] : memref<512xf32>", "%d_1 = memref.load %dy[%7, %8] : memref<?x?xf32>",
        "memref.store %b2_1, %beta[%8] : memref<512xf32>",
        "%v_1 = memref.load %x[%7, %8] : memref<?x?xf32>", "memref.store %g2_1, %gamma[%8] : memref<512xf32>",
        "} {tg.loop = #tg.loop<row, axis = 0>}", "} {tg.loop = #tg.loop<reduce, axis = 0>}",
        "scf.for %r = %4 to %rows step %c1 {", "} {tg.loop = #tg.loop<reduce, axis = 0>}"])


def test_jam_sweep_terms_adds_eight_terms_per_pass_by_default():
    """Rows r .. r + 7 in one pass, each term's loads and stores after the one before (TERMS)."""
    from tilegrad.passes.jam_sweep_terms import TERMS
    from tilegrad.pipeline import run_passes

    assert TERMS == 8
    text = str(run_passes(TWO_SUMS_SWEEPING.replace("OPERAND", "%r, %h"), "jam-sweep-terms"))
    jammed = text[:text.index("scf.for %r = ")]  # the original sweep takes the rows left over
    assert "arith.constant 8 : index" in jammed
    rows = re.findall(r"memref\.load %x\[(%\w+), ", jammed)
    assert len(rows) == 8 and len(set(rows)) == 8
    stores = re.findall(r"memref\.store %\w+, %beta\[", jammed)
    assert len(stores) == 8


@pytest.mark.parametrize("change", [
    ("%b = memref.load %beta[%h]", "%b = memref.load %beta[%c0]"),  # another column's accumulator
    ("memref.store %b2, %beta[%h]", "memref.store %b2, %beta[%r]"),  # a slot per term
    ("%x[%r, %h]", "%x[%r, %c0]"),  # an operand every column shares: chunk-row-sweeps' (a GEMM)
    ("{tg.loop = #tg.loop<reduce, axis = 0>}", "{tg.loop = #tg.loop<parallel, axis = 0>}")])  # not a sum
def test_jam_sweep_terms_needs_independent_columns_of_a_sum(change):
    from tilegrad.pipeline import run_passes

    source = TWO_SUMS_SWEEPING.replace("OPERAND", "%r, %h").replace(*change)
    assert str(run_passes(source, "jam-sweep-terms")) == str(parse(source))

COLUMN_SUM_THEN = """
func.func @column_sums(%x: memref<?x?xf32>, %var: memref<1x?xf32>, %other: memref<1x?xf32>,
                       %inv: memref<1x?x1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?x?xf32>
  %ch = memref.dim %x, %c1 : memref<?x?xf32>
  %zero = arith.constant 0.000000e+00 : f32
  scf.for %u = %c0 to %c1 step %c1 {
    scf.for %c = %c0 to %ch step %c1 {
      %t = scf.for %r = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
        %v = memref.load %x[%r, %c] : memref<?x?xf32>
        %a = arith.addf %acc, %v : f32
        scf.yield %a : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %t, %var[%u, %c] : memref<1x?xf32>
    } {tg.loop = #tg.loop<parallel, axis = 1>}
  } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 0 : i64}
  scf.for %u2 = %c0 to %c1 step %c1 {
    scf.for %c2 = %c0 to %ch step %c1 {
      SECOND
    } {tg.loop = #tg.loop<parallel, axis = 1>}
  } {tg.loop = #tg.loop<parallel, axis = 0>, tg.stage = 1 : i64}
  func.return
}
"""
A_LOOP_PER_CHANNEL = """
      scf.for %k = %c0 to %c1 step %c1 {
        %s = memref.load %var[%u2, %c2] : memref<1x?xf32>
        memref.store %s, %inv[%u2, %c2, %k] : memref<1x?x1xf32>
      } {tg.loop = #tg.loop<parallel, axis = 2>}"""
ANOTHER_COLUMN_SUM = """
      %t2 = scf.for %r2 = %c0 to %n step %c1 iter_args(%acc2 = %zero) -> (f32) {
        %w = memref.load %x[%r2, %c2] : memref<?x?xf32>
        %sq = arith.mulf %w, %w : f32
        %a2 = arith.addf %acc2, %sq : f32
        scf.yield %a2 : f32
      } {tg.loop = #tg.loop<reduce, axis = 0>}
      memref.store %t2, %other[%u2, %c2] : memref<1x?xf32>"""


@pytest.mark.parametrize("second, fused", [(A_LOOP_PER_CHANNEL, False), (ANOTHER_COLUMN_SUM, True)])
def test_fuse_sibling_loops_leaves_a_column_sum_apart_from_a_loop_beside_it(second, fused):
    """A sum down each column (batch norm's variance of x seen as [N, C]) stays apart from a stage
    that would put a loop beside it in the channel's slab: interchange-column-reductions turns it
    into row sweeps only alone. Two column sums fuse: their rows then share each sweep."""
    from tilegrad.passes.fuse_sibling_loops import FuseSiblingLoops

    source = COLUMN_SUM_THEN.replace("SECOND", second)
    module = parse(source)
    FuseSiblingLoops().apply(make_context(), module)
    module.verify()
    text = str(module)
    assert text.count("tg.stage") == (1 if fused else 2)
    if not fused:
        assert text == str(parse(source))
