"""A GEMM's register tile (chunk-row-sweeps) stays in registers through LLVM: the sweep's
accumulators are loaded once before it and stored once after, not per term. LLVM's LICM keeps a
loop's memory in registers only up to a number of accesses in the loop (jit._initialize raises
that cap); at 4 rows x 32 columns the sweep, before LLVM vectorizes it, makes about 400."""

import platform
import re

import numpy as np
import pytest

import tilegrad
import tilegrad.dsl as tg


@tg.op(outputs={"dx": tg.shaped("B", "H", dtype="g")}, replace=True)
def register_tile_grad_input(g=tg.tensor("B V"), w=tg.tensor("V H", dtype="g")):
    """dx = g @ w: a sum down w's columns, 4 rows of g per sweep."""
    return lambda i, h: tg.reduce_sum(w.shape[0], lambda v: g[i, v] * w[v, h])


def fma_blocks(asm: str) -> list[tuple[int, int]]:
    """(FMAs, FMAs with a stack operand) of each basic block of the assembly."""
    blocks, fmas, on_stack = [], 0, 0
    for line in asm.splitlines():
        if re.match(r"^(\.LBB\w+|\w+):", line):
            blocks.append((fmas, on_stack))
            fmas = on_stack = 0
        if "vfmadd" in line:
            fmas += 1
            on_stack += "(%rsp" in line
    return [*blocks, (fmas, on_stack)]


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="reads x86 assembly")
def test_the_sweep_of_a_register_tile_adds_into_registers():
    rng = np.random.default_rng(0)
    g = rng.standard_normal((64, 500)).astype(np.float32)
    w = rng.standard_normal((500, 256)).astype(np.float32)
    k = tilegrad.compile("register_tile_grad_input", "cpu", guard=False)  # the optimized build's code
    np.testing.assert_allclose(k(g=g, w=w), g.astype(np.float64) @ w, rtol=1e-4, atol=1e-4)
    fmas, on_stack = max(fma_blocks(k.ir("asm", g=g, w=w)))
    assert fmas >= 8  # the tile's sweep: a vector of columns for each of its rows, twice or more
    assert on_stack == 0


def tile_block(asm: str, fmas: int) -> list[str]:
    """The lines of the basic block of the assembly with exactly `fmas` FMAs and the fewest lines:
    the sweep's step of a register tile of that many accumulators."""
    blocks, lines = [], []
    for line in asm.splitlines():
        if re.match(r"^(\.LBB\w+|\w+):", line):
            blocks.append(lines)
            lines = []
        lines.append(line)
        if re.match(r"\s+j\w+\s", line):  # a branch ends the block (its fall-through is another)
            blocks.append(lines)
            lines = []
    found = [b for b in [*blocks, lines] if sum("vfmadd" in x for x in b) == fmas]
    return min(found, key=len) if found else []


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="reads x86 assembly")
@pytest.mark.parametrize("rows", [3, 4, 5])
def test_a_tile_the_host_model_sizes_fits_the_registers(rows):
    """HostModel.chunk_columns' bound, rows x (vectors + 1) + 1 <= vector registers, with the rows
    and columns given as directives: the sweep's step loads each row's broadcast and each vector of
    w once and keeps every vector in a register (a tile past the bound, 6 x 2 vectors on AVX2, spills
    accumulators to the stack and back each step)."""
    from dataclasses import replace

    from tilegrad.schedule import Split, Tail, UnrollJam
    from tilegrad.targets import get_target
    from tilegrad.targets.host import HOST

    columns = replace(HOST, jam_rows=rows).chunk_columns(get_target("cpu").vector_registers)
    vectors = columns // HOST.chunk_lanes
    k = tilegrad.compile("register_tile_grad_input", "cpu", guard=False,
                         schedule=[UnrollJam(stage=0, factor=rows), Split(stage=0, factor=columns, tail=Tail.PEEL)])
    spec = dict(g=tilegrad.Spec((61, 203)), w=tilegrad.Spec((203, 259)))
    block = tile_block(k.ir("asm", **spec), rows * vectors)
    assert sum("vbroadcastss" in x for x in block) == rows, block
    assert sum(bool(re.search(r"vmovups\s+\(", x)) for x in block) == vectors, block
    assert not any("(%rsp" in x and "%ymm" in x for x in block), block


@pytest.mark.parametrize("guard", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_any_tile_gives_the_same_sums(dtype, guard):
    """A jammed, chunked tile adds each row's terms in the same order: the host model's tile, 3 rows
    of 24 columns and 7 of 8 (directives) give bitwise the same dx at sizes off every tile (rows and
    columns left over, strips of the packed panel of whole chunks), and match float64."""
    from tilegrad.schedule import Split, Tail, UnrollJam

    rng = np.random.default_rng(5)
    g, w = rng.standard_normal((61, 203)), rng.standard_normal((203, 259))
    call = dict(g=g.astype(dtype), w=w.astype(dtype))
    planned = tilegrad.compile("register_tile_grad_input", "cpu", guard=guard)(**call)
    np.testing.assert_allclose(planned, g @ w, rtol=1e-4, atol=1e-4)
    for rows, columns in ((3, 24), (7, 8)):
        tiled = tilegrad.compile("register_tile_grad_input", "cpu", guard=guard, schedule=[
            UnrollJam(stage=0, factor=rows), Split(stage=0, factor=columns, tail=Tail.PEEL)])
        assert np.array_equal(tiled(**call), planned), (rows, columns)


@tg.op(outputs={"c": tg.shaped("M", "N", dtype="a")}, replace=True)
def register_tile_gemm(a=tg.tensor("M K"), b=tg.tensor("K N", dtype="a")):
    """c = a @ b as a user writes it."""
    return lambda i, j: tg.reduce_sum(a.shape[1], lambda k: a[i, k] * b[k, j])


@tg.op(outputs={"dx": tg.like("x")}, in_place={"dx": "x"}, replace=True)
def register_tile_add_product(x=tg.tensor("M N"), a=tg.tensor("M K", dtype="x"), b=tg.tensor("K N", dtype="x")):
    """dx = x + a @ b, dx possibly x itself: a row run again would read its own output."""
    return lambda i, j: x[i, j] + tg.reduce_sum(a.shape[1], lambda k: a[i, k] * b[k, j])


def _schedule(kernel, **call) -> list[str]:
    return [entry["directive"] for entry in kernel.plan(**call).schedule]


@pytest.mark.parametrize("guard", [False, True])
@pytest.mark.parametrize("m, k, n", [(23, 40, 37), (6, 19, 133), (61, 203, 259)])
def test_the_edges_of_a_tile_run_in_the_tile(m, k, n, guard):
    """At sizes off every tile (rows not a multiple of 5, columns of 16) the planner clamps the last
    row group (UnrollJam tail='clamp': its copies past the end repeat the last row) and runs the
    columns left over as one more chunk (Split, tail guard): b is read only through its panel, no
    row or column outside the tile. The product is bitwise the peeled schedule's (the same sums in
    the same order) and matches float64; the guard build finds nothing out of bounds."""
    from tilegrad.schedule import Split, Tail, UnrollJam
    from tilegrad.targets.host import HOST

    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    call = dict(a=a.astype(np.float32), b=b.astype(np.float32))
    planned = tilegrad.compile("register_tile_gemm", "cpu", guard=guard)
    schedule = _schedule(planned, **call)
    assert f"UnrollJam(stage=0, factor={HOST.jam_rows}, tail='clamp')" in schedule, schedule
    split = next(d for d in schedule if d.startswith("Split(stage=0, factor="))
    assert "tail" not in split  # guard, Split's default
    got = planned(**call)
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)
    assert planned.ir("tiled", **call).count("memref.load %b[") == 1  # the panel's copy
    peel = split.replace(")", ", tail='peel')")
    peeled = tilegrad.compile("register_tile_gemm", "cpu", guard=guard,
                              schedule=f"UnrollJam(stage=0, factor={HOST.jam_rows})\n{peel}")
    assert f"UnrollJam(stage=0, factor={HOST.jam_rows})" in _schedule(peeled, **call)
    assert peeled.ir("tiled", **call).count("memref.load %b[") > 1  # rows left over read b itself
    assert np.array_equal(peeled(**call), got)
    for rows in (2, 7):  # any factor: clamped where it does not divide the rows
        jammed = tilegrad.compile("register_tile_gemm", "cpu", guard=guard, schedule=[
            UnrollJam(stage=0, factor=rows, tail=Tail.CLAMP), Split(stage=0, factor=8)])
        assert np.array_equal(jammed(**call), got), rows


def test_a_row_that_may_not_run_again_is_not_clamped():
    """dx = x + a @ b with dx in place of x: a row run again would add to its own output, so the rows
    the jam leaves over run in a loop of their own (tail peel, the planner's UnrollJam prints no
    tail); a user's tail='clamp' is refused, naming the rule."""
    from tilegrad.errors import ScheduleError
    from tilegrad.schedule import Tail, UnrollJam
    from tilegrad.targets.host import HOST

    rng = np.random.default_rng(8)
    x, a, b = rng.standard_normal((23, 37)), rng.standard_normal((23, 40)), rng.standard_normal((40, 37))
    call = dict(x=x.astype(np.float32), a=a.astype(np.float32), b=b.astype(np.float32))
    kernel = tilegrad.compile("register_tile_add_product", "cpu")
    assert f"UnrollJam(stage=0, factor={HOST.jam_rows})" in _schedule(kernel, **call)
    np.testing.assert_allclose(kernel(**call), x + a @ b, rtol=1e-4, atol=1e-4)
    inplace = call["x"].copy()
    kernel(**{**call, "x": inplace}, dx=inplace)
    np.testing.assert_allclose(inplace, x + a @ b, rtol=1e-4, atol=1e-4)
    clamped = tilegrad.compile("register_tile_add_product", "cpu",
                               schedule=[UnrollJam(stage=0, factor=HOST.jam_rows, tail=Tail.CLAMP)])
    with pytest.raises(ScheduleError, match="may not run again"):
        clamped(**call)


@tg.op(outputs={"dw": tg.shaped("V", "H", dtype="g")}, replace=True)
def register_tile_grad_weight(g=tg.tensor("B V"), x=tg.tensor("B H", dtype="g")):
    """dw = g.T @ x: each row v reads g down a column."""
    return lambda v, h: tg.reduce_sum(g.shape[0], lambda b: g[b, v] * x[b, h])


@pytest.mark.parametrize("guard", [False, True])
def test_rows_reading_down_a_column_clamped_by_a_user(guard):
    """g.T @ x: the planner keeps the rows left over apart (tail peel: a clamped group's panel of
    g's columns is narrower than the others); a user's tail='clamp' packs the last group's panel up
    to the last row: bitwise the planner's product, nothing out of bounds (guard), with a panel
    packed once per call in the workspace and one per strip."""
    from tilegrad.targets.host import HOST

    rng = np.random.default_rng(9)
    for b, v, h in ((40, 23, 37), (61, 33, 1100)):
        g, x = rng.standard_normal((b, v)), rng.standard_normal((b, h))
        call = dict(g=g.astype(np.float32), x=x.astype(np.float32))
        planned = tilegrad.compile("register_tile_grad_weight", "cpu", guard=guard)
        assert f"UnrollJam(stage=0, factor={HOST.jam_rows})" in _schedule(planned, **call)
        clamped = tilegrad.compile("register_tile_grad_weight", "cpu", guard=guard,
                                   schedule=f"UnrollJam(stage=0, factor={HOST.jam_rows}, tail='clamp')")
        assert "arith.minsi" in clamped.ir("tiled", **call)
        got = clamped(**call)
        np.testing.assert_allclose(got, g.T @ x, rtol=1e-4, atol=1e-4)
        assert np.array_equal(got, planned(**call))
