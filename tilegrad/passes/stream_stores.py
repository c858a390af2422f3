"""stream-stores: a large output that a stage only writes is stored with non-temporal (streaming)
stores, which skip the read a normal store makes of every cache line it fills.

A write-only output larger than the caches is written to memory and not read again before the
kernel ends; a normal store first reads each line it is about to overwrite (write-allocate), so an
op that reads two arrays and writes one moves four arrays' bytes, not three, and a zero fill moves
twice its size. x86's streaming stores write whole lines without that read, but only as aligned
vector stores. So an innermost loop over [lb, ub) that stores `out[j..., v]` (v its variable, the
last axis unit-stride) runs in two loops:

    p = streaming ? tg.align_peel out[j..., lb] limit (ub - lb) : ub - lb
    for each edge in [lb, lb + p), [end, ub):
      the original body       (up to the first 64-byte aligned element; after the last line)
    [lb + p, end) by lines    tg.assume_aligned out[j..., c]
                              for k in [0, line): the body at c + k, storing into buffer[k]
                              out[j..., c + k] = buffer[k] for each k, side by side, non-temporal

where streaming = the kernel's input and output tensors total at least `min_bytes` (then what it moves
pushes its own output out of the caches before the next op could read it there; smaller, the output
may still be in them) and the run has at least STREAM_MIN_LINES lines. A line is 64 bytes; the
buffer is one line on the stack. LLVM's loop vectorizer makes the line's loop one vector iteration
(a scalar store marked non-temporal it would not vectorize), its SLP vectorizer makes the line's
stores one aligned vector store (`vmovntps`), and the buffer between them disappears: the same
machine code as the body copied once per lane (batch norm forward: the same assembly) from a
sixteenth of the IR. The stores of a stage that also reads the output, of a scatter, or in a loop
that carries values, nests control flow, has a long body (MAX_LINE_OPS) or does at least
`compute_bound_ops` float ops per element it moves (common.arithmetic_bound; the target's
Target.compute_bound_ops: such a loop waits on its arithmetic, not on memory) are left alone.

The lines go from the last to the first when the output sits just ahead of an input the loop walks
beside it (by less than ALIAS_WINDOW bytes, modulo a 4 KiB page; decided at run time from the
addresses, `tg.address_offset`): a load whose page offset matches a streaming store still in flight
waits for it, so walked forward every line's loads would wait on the line stored before them. With
inputs just ahead and just behind, the even lines go first, then the odd ones.

So is a loop that only copies stage-local buffers out (a GEMM's or a column reduction's
accumulators): the nest that filled them read far more than the loop writes, so its stores are not
what the stage waits on, and streaming them doubled the fused linear CE's GEMM stages (0.5 s more
LLVM time each).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import BoolAttr, IntegerAttr, MemRefType, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tilegrad.dialect import tg
from tilegrad.dialect.tg import LoopRole
from tilegrad.dialect.values import element_bytes, static_strides
from tilegrad.passes.applying import chosen
from tilegrad.passes.common import (
    ARITHMETIC_BOUND,
    arg_info,
    arithmetic_bound,
    check_counts,
    constant_index,
    enclosing_func,
    functions,
    loop_axis,
    make_for,
    stage_number,
    tensor_name,
    tensors_by_stage,
)
from tilegrad.passes.loop_affine import INDEX, IndexBuilder
from tilegrad.schedule import Directive, Store

LINE_BYTES = 64
PAGE_BYTES = 4096
STREAM_MIN_LINES = 16
"""A shorter run stays as it was: its scalar first and last partial lines would cost more than the
streaming saves (a swish row of 128 float32: 10.2 ms streamed against 5.8 ms)."""
ALIAS_WINDOW = 256
"""How far (in bytes, modulo a page) a streamed output may run ahead of an input before the lines
are walked backward. Measured on a znver1 host (group norm forward, 32x64x56x56): the output 16 to
112 bytes ahead 4.4 ms instead of 2.3, 128 to 160 ahead 2.9 ms, 192 2.7, 256 and more 2.3-2.6.
Between two inputs (softmax backward 4096x1000, dx 16 ahead of y and 16 behind dy) 2.7-2.9 ms
either way, 2.2 interleaved; interleaved alone is slow with an input 128 behind (4.5 ms)."""
MAX_LINE_OPS = 640
"""A streamed body has at most this many ops per line (40 for float32): a longer body is
compute-bound. Without the limit the windows of 2-D and 3-D pooling streamed and ran 0.87-0.89x
as fast."""


def _write_only(fn: func.FuncOp, out: SSAValue) -> bool:
    for use in out.uses:
        op = use.operation
        if isinstance(op, memref.DimOp):
            continue
        if isinstance(op, memref.CollapseShapeOp):  # a row view: what is stored through it counts
            if not _write_only(fn, op.result):
                return False
            continue
        if not (isinstance(op, memref.StoreOp) and op.memref is out and op.value is not out):
            return False
        if "tg.scatter_store" in op.attributes:
            return False
    return True


def _stores_into(out: SSAValue) -> list[memref.StoreOp]:
    """The stores into a tensor, directly or through its row views."""
    stores = []
    for use in out.uses:
        if isinstance(use.operation, memref.StoreOp):
            stores.append(use.operation)
        elif isinstance(use.operation, memref.CollapseShapeOp):
            stores += _stores_into(use.operation.result)
    return stores


def _streamable(store: memref.StoreOp, compute_bound_ops: int, line_bytes: int, max_line_ops: int) -> scf.ForOp | None:
    """The innermost loop whose every iteration stores one element of the next line, or None."""
    loop = store.parent_op()
    if not isinstance(loop, scf.ForOp) or loop.iter_args or constant_index(loop.step) != 1:
        return None
    body = list(loop.body.block.ops)
    if any(op.regions for op in body):
        return None
    if len(body) * line_bytes // element_bytes(store.memref.type.element_type) > max_line_ops:
        return None
    variable = loop.body.block.args[0]
    *prefix, last = store.indices
    if last is not variable:
        return None
    if not _fixed_in(loop, prefix):
        return None
    if _copies_out(body) or arithmetic_bound(loop, compute_bound_ops):
        return None
    return loop


def _fixed_in(loop: scf.ForOp, values) -> bool:
    """None of the values changes within the loop (its variable included)."""
    return not any(v is loop.body.block.args[0] or isinstance(v.owner, Operation) and loop.is_ancestor(v.owner)
                   for v in values)


def _copies_out(body: list[Operation]) -> bool:
    """The loop reads only stage-local buffers: it writes out what an earlier nest accumulated."""
    loads = [op for op in body if isinstance(op, memref.LoadOp)]
    return bool(loads) and all(isinstance(load.memref.owner, memref.AllocaOp | memref.AllocOp) for load in loads)


def streamable_loops(fn: func.FuncOp, compute_bound_ops: int, line_bytes: int = LINE_BYTES,
                     max_line_ops: int = MAX_LINE_OPS) -> dict[scf.ForOp, list[memref.StoreOp]]:
    """The loops stream-stores rewrites in a stage function, with the stores it makes streaming:
    the decision, taken before anything is rewritten."""
    chosen: dict[scf.ForOp, list[memref.StoreOp]] = {}
    for index, out in enumerate(fn.body.block.args):
        t = out.type
        if arg_info(fn, index).get("tg.role") != "output" or not isinstance(t, MemRefType):
            continue
        size = element_bytes(t.element_type)
        if size not in (1, 2, 4, 8) or static_strides(t)[-1:] != [1] or not _write_only(fn, out):
            continue
        for store in _stores_into(out):
            if (loop := _streamable(store, compute_bound_ops, line_bytes, max_line_ops)) is not None:
                if loop in chosen and chosen[loop][0].memref is not store.memref:
                    continue  # the lines are aligned for one output; another's stores stay normal
                chosen.setdefault(loop, []).append(store)
    return chosen


def _total_bytes(at: IndexBuilder, tensor: SSAValue) -> SSAValue:
    t = tensor.type
    assert isinstance(t, MemRefType)
    total = at.const(element_bytes(t.element_type))
    for axis in range(t.get_num_dims()):
        total = at.emit(arith.MuliOp(total, at.emit(memref.DimOp(tensor, at.const(axis)))))
    return total


def _footprint_bytes(at: IndexBuilder, fn: func.FuncOp) -> SSAValue:
    """The bytes of the kernel's input and output tensors: what a call moves through the caches."""
    total = at.const(0)
    for index, arg in enumerate(fn.body.block.args):
        if arg_info(fn, index).get("tg.role") in ("input", "output") and isinstance(arg.type, MemRefType):
            total = at.emit(arith.AddiOp(total, _total_bytes(at, arg)))
    return total


def _walking_attributes(loop: scf.ForOp) -> dict:
    """What a loop over part of `loop`'s range keeps of its attributes (its role and axis; only the
    stage's outermost loop is its stage)."""
    return {k: v for k, v in loop.attributes.items() if k != "tg.stage"}


def _line_into_buffers(loop: scf.ForOp, buffers: dict[memref.StoreOp, memref.AllocaOp], first: SSAValue,
                       line: int) -> list[Operation]:
    """The loop's iterations first .. first + line - 1, each streamed store going to its lane of a
    one-line buffer instead: an ordinary loop of one line, which LLVM's loop vectorizer makes one
    vector iteration of (its stores, marked non-temporal, it would not vectorize)."""
    bounds = [arith.ConstantOp(IntegerAttr(value, INDEX)) for value in (0, line, 1)]
    body = Block(arg_types=[INDEX])
    lanes = scf.ForOp(*bounds, [], Region([body]))
    lanes.attributes.update(_walking_attributes(loop))
    lane = body.args[0]
    position = arith.AddiOp(first, lane)
    body.add_op(position)
    mapping: dict[SSAValue, SSAValue] = {loop.body.block.args[0]: position.result}
    for op in loop.body.block.ops:
        if op in buffers:
            assert isinstance(op, memref.StoreOp)
            body.add_op(memref.StoreOp.get(mapping.get(op.value, op.value), buffers[op], [lane]))
        else:
            body.add_op(op.clone(value_mapper=mapping))  # (the yield included)
    return [*bounds, lanes]


def _same_walk_loads(loop: scf.ForOp, out: SSAValue) -> list[memref.LoadOp]:
    """The loads of the loop that walk an input beside `out`: the loop's variable as their unit-stride
    last index, the same element size, the rest fixed for the loop (so each keeps one distance)."""
    variable = loop.body.block.args[0]
    size = element_bytes(out.type.element_type)
    found = []
    for op in loop.body.block.ops:
        if not isinstance(op, memref.LoadOp) or not op.indices or op.indices[-1] is not variable:
            continue
        t = op.memref.type
        if (isinstance(op.memref.owner, memref.AllocaOp | memref.AllocOp) or element_bytes(t.element_type) != size
                or static_strides(t)[-1:] != [1]):
            continue
        if _fixed_in(loop, op.indices[:-1]):
            found.append(op)
    return found


def _line_order(at: IndexBuilder, loop: scf.ForOp, out: SSAValue, first: list[SSAValue],
                alias_window: int) -> tuple[SSAValue, SSAValue] | None:
    """Whether the lines go backward and whether they interleave (i1s decided at run time), or
    None when no load could make the order matter. A streaming store delays a later load whose
    address has the same offset in its 4 KiB page until the store has left the core: when `out`
    sits just ahead of an input (by less than alias_window bytes, modulo a page), walked forward
    every line's loads wait on the line stored before them, so the lines go backward; just behind
    one, backward would, so they go forward; between two inputs, neither: the even lines go first,
    then the odd ones, so each line's loads are two lines away from the store before them."""
    loads = _same_walk_loads(loop, out)
    if not loads:
        return None
    stored = at.emit(tg.AddressOffsetOp(out, first, PAGE_BYTES))
    loaded = [at.emit(tg.AddressOffsetOp(load.memref, [*load.indices[:-1], loop.lb], PAGE_BYTES)) for load in loads]

    def near(a: SSAValue, b: SSAValue) -> SSAValue:
        """0 < (a - b) modulo a page < alias_window: a sits just ahead of b."""
        gap = at.emit(arith.AndIOp(at.emit(arith.SubiOp(a, b)), at.const(PAGE_BYTES - 1)))
        return at.emit(arith.AndIOp(at.emit(arith.CmpiOp(gap, at.const(0), "ne")),
                                    at.emit(arith.CmpiOp(gap, at.const(alias_window), "ult"))))

    def any_of(conditions: list[SSAValue]) -> SSAValue:
        return reduce(lambda a, b: at.emit(arith.OrIOp(a, b)), conditions)

    ahead = any_of([near(stored, offset) for offset in loaded])
    behind = any_of([near(offset, stored) for offset in loaded])
    return ahead, at.emit(arith.AndIOp(ahead, behind))


def _line_start(body: Block, at: IndexBuilder, start: SSAValue, lines: SSAValue, line: int,
                order: tuple[SSAValue, SSAValue]) -> SSAValue:
    """The first element of the k-th line walked (k = (iv - start) / line): line k forward,
    lines - 1 - k backward, interleaved 2k for the first half (rounded up) and 2(k - half) + 1 after."""
    backward, interleaved = order
    ops: list[Operation] = []

    def emit(op: Operation) -> SSAValue:
        ops.append(op)
        return op.results[0]

    half = at.emit(arith.DivUIOp(at.emit(arith.AddiOp(lines, at.const(1))), at.const(2)))
    k = emit(arith.DivUIOp(emit(arith.SubiOp(body.args[0], start)), at.const(line)))
    mirrored = emit(arith.SubiOp(emit(arith.SubiOp(lines, at.const(1))), k))
    even, past = emit(arith.MuliOp(k, at.const(2))), emit(arith.SubiOp(k, half))
    odd = emit(arith.AddiOp(emit(arith.MuliOp(past, at.const(2))), at.const(1)))
    spread = emit(arith.SelectOp(emit(arith.CmpiOp(k, half, "ult")), even, odd))
    walked = emit(arith.SelectOp(interleaved, spread, emit(arith.SelectOp(backward, mirrored, k))))
    first = emit(arith.AddiOp(start, emit(arith.MuliOp(walked, at.const(line)))))
    body.add_ops(ops)
    return first


def _stream(loop: scf.ForOp, stores: list[memref.StoreOp], options: StreamStores) -> None:
    out = stores[0].memref
    t = out.type
    assert isinstance(t, MemRefType)
    line_bytes = options.line_bytes
    line = line_bytes // element_bytes(t.element_type)
    at = IndexBuilder(loop)
    *prefix, _ = stores[0].indices
    count = at.emit(arith.SubiOp(loop.ub, loop.lb))
    count = at.emit(arith.MaxSIOp(count, at.const(0)))
    large = at.emit(arith.CmpiOp(_footprint_bytes(at, enclosing_func(loop)), at.const(options.min_bytes), "sge"))
    long = at.emit(arith.CmpiOp(count, at.const(options.min_lines * line), "sge"))
    stream = at.emit(arith.AndIOp(large, long))
    peel = at.emit(tg.AlignPeelOp(out, [*prefix, loop.lb], count, line_bytes))
    start = at.emit(arith.AddiOp(loop.lb, at.emit(arith.SelectOp(stream, peel, count))))
    lines = at.emit(arith.DivUIOp(at.emit(arith.SubiOp(loop.ub, start)), at.const(line)))
    end = at.emit(arith.AddiOp(start, at.emit(arith.MuliOp(lines, at.const(line)))))

    order = _line_order(at, loop, out, [*prefix, loop.lb], options.alias_window)

    body = Block(arg_types=[INDEX])
    by_lines = scf.ForOp(start, end, at.const(line), [], Region([body]))
    by_lines.attributes.update(_walking_attributes(loop))
    first = body.args[0] if order is None else _line_start(body, at, start, lines, line, order)
    body.add_op(tg.AssumeAlignedOp(out, [*prefix, first], line_bytes))
    entry = enclosing_func(loop).body.block
    buffers = {store: memref.AllocaOp.get(store.value.type, shape=[line]) for store in stores}
    for buffer in buffers.values():
        entry.insert_op_before(buffer, entry.first_op)
    body.add_ops(_line_into_buffers(loop, buffers, first, line))
    for lane in range(line):  # the line's stores side by side: LLVM's SLP vectorizer makes them one
        offset = arith.ConstantOp(IntegerAttr(lane, INDEX))
        position = arith.AddiOp(first, offset)
        body.add_ops([offset, position])
        for store, buffer in buffers.items():
            value = memref.LoadOp.get(buffer, [offset])
            streamed = memref.StoreOp.get(value.res, out, [*store.indices[:-1], position.result])
            streamed.properties["nontemporal"] = BoolAttr.from_bool(True)
            body.add_ops([value, streamed])
    body.add_op(scf.YieldOp())

    edges = _over_both_edges(loop, start, end, at)
    edges.parent_block().insert_ops_after([by_lines], edges)


def _over_both_edges(loop: scf.ForOp, start: SSAValue, end: SSAValue, at: IndexBuilder) -> scf.ForOp:
    """The loop, in place, made the body of a loop of two tiles of its axis, [lb, start) then
    [end, ub): one copy of its body for the elements before the first line and after the last (all
    of them when nothing streams). Two copies, each vectorized by LLVM and each given an
    overlapping vector by overlap-vector-tails, made a streamed stage's code twice the size."""
    edges, body = make_for(at.const(0), at.const(2), at.const(1), LoopRole.TILE, loop_axis(loop))
    if "tg.stage" in loop.attributes:
        edges.attributes["tg.stage"] = loop.attributes.pop("tg.stage")
    loop.parent_block().insert_op_before(edges, loop)
    first_edge = arith.CmpiOp(body.args[0], at.const(0), "eq")
    lb = arith.SelectOp(first_edge, loop.lb, end)
    ub = arith.SelectOp(first_edge, start, loop.ub)
    loop.detach()
    loop.operands = (lb.result, ub.result, *loop.operands[2:])
    body.add_ops([first_edge, lb, ub, loop, scf.YieldOp()])
    return edges


@dataclass(frozen=True)
class StreamStores(ModulePass):
    """Store the aligned lines of write-only outputs with streaming stores when the kernel's tensors
    total at least `min_bytes`, in loops doing fewer than `compute_bound_ops` float ops per element
    they move; with `directives` (Store, printed, `;`-separated: passes/applying.py), the outputs they
    name, by stage (`nontemporal=False`: stored as they are)."""

    name = "stream-stores"
    min_bytes: int = 32 << 20
    compute_bound_ops: int = ARITHMETIC_BOUND
    min_lines: int = STREAM_MIN_LINES
    line_bytes: int = LINE_BYTES
    alias_window: int = ALIAS_WINDOW
    max_line_ops: int = MAX_LINE_OPS
    directives: str | None = None
    takes_text: ClassVar[str] = "Store"

    def __post_init__(self):
        check_counts(self, "compute_bound_ops", "min_lines", "line_bytes", "max_line_ops")
        check_counts(self, "min_bytes", "alias_window", least=0)

    @staticmethod
    def takes(directive: Directive) -> bool:
        return isinstance(directive, Store)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        candidates = [(Store(stage=stage_number(fn), tensor=tensor_name(fn, stores[0].memref)), (loop, stores))
                      for fn in functions(op)
                      for loop, stores in streamable_loops(fn, self.compute_bound_ops, self.line_bytes,
                                                           self.max_line_ops).items()]
        for (loop, stores), _ in chosen(self, candidates, "loop storing a write-only output"):
            _stream(loop, stores, self)


def streamed_outputs(module: Operation) -> dict[str, list[int]]:
    """Output name -> the stages that store it with streaming stores (what `tilegrad plan` shows)."""
    return tensors_by_stage(module, lambda op: op.memref if isinstance(op, tg.AssumeAlignedOp) else None)
