"""Building scalar arith ops into a block, and converting between storage and compute types.

Both the DSL emitter and the lowering passes use these, so a bfloat16 or int8 element is widened
and narrowed in exactly one way everywhere.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StridedLayoutAttr,
    f32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from tilegrad.errors import UnsupportedError

INDEX = IndexType()


class BlockBuilder:
    """Appends ops to a block (or inserts them before an op) and returns their results."""

    def __init__(self, block: Block, before: Operation | None = None):
        self.block, self.before = block, before

    def add(self, op: Operation) -> SSAValue:
        if self.before is not None:
            self.block.insert_op_before(op, self.before)
        else:
            self.block.add_op(op)
        return op.results[0] if op.results else None

    def const(self, value, type_: Attribute) -> SSAValue:
        if isinstance(type_, (IndexType, IntegerType)):
            return self.add(arith.ConstantOp(IntegerAttr(int(value), type_)))
        return self.add(arith.ConstantOp(FloatAttr(float(value), type_)))

    def index(self, value: int) -> SSAValue:
        return self.const(value, INDEX)


def is_float(t: Attribute) -> bool:
    return isinstance(t, (Float16Type, BFloat16Type, Float32Type, Float64Type))


def element_bytes(t: Attribute) -> int:
    """Bytes of one element of a memref of `t` (an i1 or i4 takes a byte; an index, 8)."""
    if isinstance(t, (BFloat16Type, Float16Type)):
        return 2
    if isinstance(t, Float32Type):
        return 4
    if isinstance(t, Float64Type | IndexType):
        return 8
    if not isinstance(t, IntegerType):
        raise UnsupportedError(f"lower-to-llvm: no memref of {t} (elements are floats and integers)")
    return max(1, t.width.data // 8)


def static_strides(t: MemRefType) -> list[int | None]:
    """The memref type's strides in elements, None where they are dynamic (its layout's, else row-major)."""
    layout = t.layout
    if isinstance(layout, StridedLayoutAttr):
        return [s.data if hasattr(s, "data") else None for s in layout.strides.data]
    shape = t.get_shape()
    strides, acc = [], 1
    for dim in reversed(shape):
        strides.append(acc)
        acc = acc * dim if dim > 0 else None  # type: ignore[operator]
        if acc is None:
            break
    strides = list(reversed(strides))
    return [None] * (len(shape) - len(strides)) + strides



def to_compute(b: BlockBuilder, value: SSAValue, unsigned: bool = False) -> SSAValue:
    t = value.type
    if isinstance(t, (Float16Type, BFloat16Type)):
        return b.add(arith.ExtFOp(value, f32))
    if isinstance(t, IntegerType):
        if t.width.data < 64:
            ext = arith.ExtUIOp if unsigned or t.width.data == 1 else arith.ExtSIOp
            value = b.add(ext(value, i64))
        return b.add(arith.IndexCastOp(value, INDEX))
    return value


def to_storage(b: BlockBuilder, value: SSAValue, storage: Attribute) -> SSAValue:
    t = value.type
    if t == storage:
        return value
    if is_float(storage):
        if is_float(t):
            bits = {Float16Type: 16, BFloat16Type: 16, Float32Type: 32, Float64Type: 64}
            widen = bits[type(storage)] > bits[type(t)]
            return b.add((arith.ExtFOp if widen else arith.TruncFOp)(value, storage))
        value = b.add(arith.IndexCastOp(value, i64)) if isinstance(t, IndexType) else value
        return b.add(arith.SIToFPOp(value, storage))
    assert isinstance(storage, IntegerType)
    if isinstance(t, IndexType):
        value = b.add(arith.IndexCastOp(value, i64))
    if storage.width.data < 64:
        value = b.add(arith.TruncIOp(value, storage))
    return value

