"""stream-stores: write-only outputs stored with streaming stores.

The pass is checked on hand-written IR; the kernels it makes are checked bit for bit against the
same op on a target that never streams, with outputs at every alignment a line can start at and
at an address that is not a multiple of the element size (where no line can be aligned).
"""

import dataclasses
import platform
import re

import numpy as np
import pytest
from conftest import torch

import tilegrad
from tilegrad.pipeline import run_passes
from tilegrad.targets import get_target

CPU = get_target("cpu")
# streams every output of at least one byte (the host target streams from its last-level cache size)
STREAMING = tilegrad.register_target(dataclasses.replace(CPU, name="test-streaming", stream_store_bytes=1),
                                     replace=True)
PLAIN = tilegrad.register_target(dataclasses.replace(CPU, name="test-not-streaming", stream_store_bytes=0),
                                 replace=True)
x86 = pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="streaming stores are x86's")

KERNEL = """
builtin.module {
  func.func @k(%x: memref<?x?xf32, strided<[?, 1]>> {tg.name = "x", tg.role = "input"},
               %y: memref<?x?xf32, strided<[?, 1]>> {tg.name = "y", tg.role = "output"},
               %z: memref<?x?xf32, strided<[?, 1]>> {tg.name = "z", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %x, %c0 : memref<?x?xf32, strided<[?, 1]>>
    %m = memref.dim %x, %c1 : memref<?x?xf32, strided<[?, 1]>>
    scf.for %i = %c0 to %n step %c1 {
      scf.for %j = %c0 to %m step %c1 {
        %v = memref.load %x[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
        %w = arith.mulf %v, %v : f32
        memref.store %w, %y[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
        %old = memref.load %z[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
        %sum = arith.addf %old, %w : f32
        memref.store %sum, %z[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
      }
    }
    func.return
  }
}
"""


def test_the_pass_streams_the_aligned_lines_of_a_write_only_output():
    out = str(run_passes(KERNEL, "stream-stores{min_bytes=4096}"))
    assert out.count("tg.align_peel %y[%i, %") == 1
    assert out.count("tg.assume_aligned %y[%i, ") == 1
    # a line's 16 float32 are computed by a loop of 16 into a one-line buffer, then stored side by
    # side from it, each store non-temporal
    buffer = out.split(" = memref.alloca() : memref<16xf32>")[0].split()[-1]
    assert out.count(f"memref.store %w_1, {buffer}[") == 1 and out.count(f"memref.load {buffer}[") == 16
    assert out.count("nontemporal = true") == 16
    assert all("%y[" in line for line in out.splitlines() if "nontemporal = true" in line)
    # z is read as well as written: its stores stay as they were, in both loops
    z_stores = [line for line in out.splitlines() if "memref.store" in line and "%z[" in line]
    assert len(z_stores) == 1 + 1 and not any("nontemporal" in line for line in z_stores)
    # one copy of the body walks both edges: [lb, first line) and [after the last line, ub)
    edges = re.search(r"scf\.for (%\w+) = %\w+ to %\w+ step %\w+ \{\n\s*(%\w+) = arith\.cmpi eq, \1, %\w+", out)
    assert edges, out
    first = edges.group(2)
    lb, ub = re.findall(rf"= arith\.select {first}, (%\w+), (%\w+) : index", out)
    assert lb[0] == "%c0" and ub[1] == "%m"  # the loop's own bounds on the outer side of each edge
    assert out.index("tg.assume_aligned") > out.index(edges.group(0))  # the lines after the edges
    assert "arith.constant 4096 : index" in out  # the size below which nothing streams
    # ... compared with the bytes of all the kernel's tensors, not the streamed output's alone
    before = out[:out.index("arith.constant 4096 : index")]
    assert all(f"memref.dim %{t}, %" in before for t in "xyz")


def test_a_loop_that_carries_a_value_or_branches_is_left_alone():
    text = KERNEL.replace("memref.store %w, %y[%i, %j]", "scf.if %b { memref.store %w, %y[%i, %j] : "
                          "memref<?x?xf32, strided<[?, 1]>> }\n        memref.store %w, %y[%i, %j]")
    text = text.replace("%w = arith.mulf %v, %v : f32", "%w = arith.mulf %v, %v : f32\n        "
                        "%b = arith.cmpf ogt, %v, %v : f32")
    out = str(run_passes(text, "stream-stores{min_bytes=1}"))
    assert "tg.align_peel" not in out and "nontemporal" not in out



def test_the_line_order_comes_from_where_the_output_sits_beside_its_inputs_in_a_page():
    """A load whose address shares its page offset with an earlier streaming store waits for
    that store: the order of the lines (forward, backward, interleaved) is chosen at run time from
    the page offsets of y and of x (the loop's other same-walk load, of z, counts too)."""
    out = str(run_passes(KERNEL, "stream-stores{min_bytes=1}"))
    assert out.count("tg.address_offset %y[%i, %") == 1
    assert out.count("tg.address_offset %x[%i, %") == 1 and out.count("tg.address_offset %z[%i, %") == 1
    assert out.count("modulo 4096") == 3
    assert "arith.constant 256 : index" in out  # the window: just ahead means by less than 256 bytes
    lines = out[out.index("tg.assume_aligned %y") - 600:out.index("tg.assume_aligned %y")]
    assert lines.count("arith.select") == 3  # a line's start: interleaved, mirrored or as counted
    # a loop with no load walking beside the output has no direction to choose
    fill = KERNEL.replace("%v = memref.load %x[%i, %j] : memref<?x?xf32, strided<[?, 1]>>",
                          "%v = arith.constant 2.0 : f32")
    fill = fill.replace("%old = memref.load %z[%i, %j] : memref<?x?xf32, strided<[?, 1]>>\n", "")
    fill = fill.replace("%sum = arith.addf %old, %w : f32", "%sum = arith.addf %w, %w : f32")
    fill = fill.replace("memref.store %sum, %z[%i, %j] : memref<?x?xf32, strided<[?, 1]>>\n", "")
    out = str(run_passes(fill, "stream-stores{min_bytes=1}"))
    assert "nontemporal = true" in out and "tg.address_offset" not in out


def test_a_loop_that_only_copies_a_local_buffer_out_is_left_alone():
    """A reduction's accumulators written out: the nest that filled them did the stage's work."""
    copy_out = """
builtin.module {
  func.func @k(%x: memref<?x?xf32, strided<[?, 1]>> {tg.name = "x", tg.role = "input"},
               %y: memref<?x?xf32, strided<[?, 1]>> {tg.name = "y", tg.role = "output"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %acc = memref.alloca() : memref<64xf32>
    %n = memref.dim %x, %c0 : memref<?x?xf32, strided<[?, 1]>>
    scf.for %i = %c0 to %n step %c1 {
      scf.for %j = %c0 to %c64 step %c1 {
        %v = memref.load %acc[%j] : memref<64xf32>
        memref.store %v, %y[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
      }
    }
    func.return
  }
}
""".replace("%c1 = arith.constant 1 : index", "%c1 = arith.constant 1 : index\n    %c64 = arith.constant 64 : index")
    out = str(run_passes(copy_out, "stream-stores{min_bytes=1}"))
    assert "tg.align_peel" not in out and "nontemporal" not in out
    # the same loop reading the input beside the buffer streams
    reads_x = copy_out.replace("memref.store %v,", "%u = memref.load %x[%i, %j] : memref<?x?xf32, strided<[?, 1]>>\n"
                               "        %w = arith.addf %v, %u : f32\n        memref.store %w,")
    assert str(run_passes(reads_x, "stream-stores{min_bytes=1}")).count("nontemporal = true") == 16

CASES = {
    "bce": ("binary_cross_entropy_grad", lambda rng: dict(
        input_x=rng.uniform(0.05, 0.95, 5003).astype(np.float32),
        input_y=rng.uniform(0, 1, 5003).astype(np.float32), dloss=np.array([0.5], np.float32)), "dx", (5003,)),
    "relu": ("activation_backward", lambda rng: dict(
        x=rng.standard_normal((2, 3, 5, 333)).astype(np.float32),
        y=rng.standard_normal((2, 3, 5, 333)).astype(np.float32),
        dy=rng.standard_normal((2, 3, 5, 333)).astype(np.float32), mode="relu"), "dx", (2, 3, 5, 333)),
    "nll": ("nll_loss_backward", lambda rng: dict(
        grad_output=np.array([1.5], np.float32), self=np.empty((7, 1001), np.float32),
        target=np.array([0, 1000, 5, -100, 17, 999, 3], np.int64),
        weight=rng.uniform(0.5, 2, 1001).astype(np.float32), total_weight=np.array([3.0], np.float32)),
        "out", (7, 1001)),
    "float64": ("binary_cross_entropy_grad", lambda rng: dict(
        input_x=rng.uniform(0.05, 0.95, 3001), input_y=rng.uniform(0, 1, 3001),
        dloss=np.array([2.0])), "dx", (3001,)),
}


def _placed(shape, dtype, byte_offset: int) -> np.ndarray:
    """An empty array whose data starts `byte_offset` bytes past a 64-byte boundary."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.empty(size + 192, np.uint8)
    start = (-raw.ctypes.data) % 64 + byte_offset
    return raw[start:start + size].view(dtype).reshape(shape)


@x86
@pytest.mark.parametrize("case", sorted(CASES))
def test_streamed_kernels_match_the_plain_ones_bit_for_bit_at_every_alignment(case):
    op, make, output, shape = CASES[case]
    args = make(np.random.default_rng(3))
    dtype = next(a.dtype for a in args.values() if isinstance(a, np.ndarray) and a.dtype.kind == "f")
    want = tilegrad.compile(op, PLAIN)(**args)
    streamed = tilegrad.compile(op, STREAMING)
    assert output in streamed.plan(**args).streamed
    if not streamed.guard:  # the guard build checks every store and streams none
        asm = streamed.ir("asm", **args)
        assert "movnt" in asm and "sfence" in asm
    for offset in range(0, 64, dtype.itemsize):
        out = _placed(shape, dtype, offset)
        out[...] = 7.0
        got = streamed(**args, **{output: out})
        assert got is out
        np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))


def _page_placed(values: np.ndarray, page_offset: int) -> np.ndarray:
    """A copy of `values` starting `page_offset` bytes into a 4 KiB page."""
    raw = np.empty(values.nbytes + 2 * 4096, np.uint8)
    start = (-raw.ctypes.data) % 4096 + page_offset
    placed = raw[start:start + values.nbytes].view(values.dtype).reshape(values.shape)
    placed[...] = values
    return placed


@x86
@pytest.mark.parametrize("page_offsets", [(64, 2048), (4096 - 64, 2048), (16, 2048), (0, 2048), (64, 64)])
def test_an_output_just_ahead_of_or_behind_its_inputs_in_a_page_gets_the_same_bits(page_offsets):
    """The lines walk backward when dx sits 16 to 255 bytes ahead of input_x modulo a page,
    forward otherwise, and interleaved (even lines, then odd) when input_y sits just ahead of dx as
    well: every element is written, with the plain kernel's bits."""
    page_offset, y_offset = page_offsets
    op, make, output, shape = CASES["bce"]
    args = make(np.random.default_rng(6))
    want = tilegrad.compile(op, PLAIN)(**args)
    size = 4 * 5003
    args["input_y"] = _page_placed(args["input_y"], (page_offset + y_offset) % 4096)
    raw = np.zeros(2 * size + 5 * 4096, np.uint8)
    start = (-raw.ctypes.data) % 4096
    x = raw[start:start + size].view(np.float32)
    x[...] = args["input_x"]
    at = start + 2 * 4096 + size // 4096 * 4096 + page_offset  # past x, page_offset into a page
    dx = raw[at:at + size].view(np.float32)
    dx[...] = 7.0
    got = tilegrad.compile(op, STREAMING)(**{**args, "input_x": x}, dx=dx)
    assert got is dx
    np.testing.assert_array_equal(dx.view(np.uint8), want.view(np.uint8))
    assert np.all(raw[start + size:at] == 0) and np.all(raw[at + size:] == 0)  # nothing written beside it


@x86
def test_an_output_not_on_an_element_boundary_is_written_whole_without_streaming():
    """numpy allows a float32 array at an odd address: no element of it is 64-byte aligned, so
    every element takes the plain path (an aligned streaming store there would fault)."""
    op, make, output, shape = CASES["bce"]
    args = make(np.random.default_rng(4))
    want = tilegrad.compile(op, PLAIN)(**args)
    raw = np.zeros(4 * 5003 + 64, np.uint8)
    odd = np.ndarray((5003,), np.float32, raw.data, offset=1)
    assert not odd.flags.aligned
    try:
        tilegrad.compile(op, STREAMING)(**args, dx=odd)
    except tilegrad.TilegradError as refused:  # a misaligned output may be refused; it must not crash
        assert "dx" in str(refused)
        return
    np.testing.assert_array_equal(odd, want)


@x86
def test_the_host_target_streams_only_kernels_whose_tensors_outgrow_its_last_level_cache():
    assert CPU.stream_store_bytes >= 1 << 20
    k = tilegrad.compile("binary_cross_entropy_grad", "cpu")
    plan = k.plan(input_x=np.full(64, 0.5, np.float32), input_y=np.zeros(64, np.float32),
                  dloss=np.ones(1, np.float32))
    assert "dx" in plan.streamed
    assert f"when the tensors total at least {CPU.stream_store_bytes} B" in str(plan)


@x86
@pytest.mark.skipif(torch is None, reason="needs torch")
def test_streamed_nll_matches_aten():
    rng = np.random.default_rng(5)
    n, c = 6, 2048
    x = rng.standard_normal((n, c)).astype(np.float32)
    t = np.array([0, 2047, -100, 5, 100, 7], np.int64)
    w = rng.uniform(0.5, 2, c).astype(np.float32)
    got = tilegrad.compile("nll_loss_backward", STREAMING)(grad_output=np.array([2.0], np.float32), self=x, target=t,
                                                          weight=w, total_weight=np.array([4.0], np.float32))
    want = torch.ops.aten.nll_loss_backward(torch.tensor(2.0), torch.from_numpy(x), torch.from_numpy(t),
                                            torch.from_numpy(w), 1, -100, torch.tensor(4.0))
    np.testing.assert_array_equal(got, want.numpy())


def test_a_loop_that_writes_two_outputs_streams_the_one_its_lines_are_aligned_for():
    text = KERNEL.replace("%old = memref.load %z[%i, %j] : memref<?x?xf32, strided<[?, 1]>>\n", "")
    text = text.replace("%sum = arith.addf %old, %w : f32", "%sum = arith.addf %w, %w : f32")
    out = str(run_passes(text, "stream-stores{min_bytes=1}"))
    streamed = [line for line in out.splitlines() if "nontemporal = true" in line]
    assert len(streamed) == 16 and all("%y[" in line for line in streamed)
    assert out.count("tg.align_peel") == 1
