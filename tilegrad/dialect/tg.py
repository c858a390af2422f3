"""The `tg` dialect: an op's math as stages over memrefs, and the tiled form's UB buffers and copies.

Op level (what the DSL emits, one per stage):
- `tg.compute`: every element of `dest` equals what the body yields for its index;
- `tg.scatter_add`: for every point of a domain, add a value at the index the body picks;
- `tg.check`: the body's condition must hold at every point, else the kernel reports an error;
- `tg.reduce`: a sum or max over an axis, inside any of the above (`short` / `long`: a sum the
  kernel was specialized for at most / more than REDUCE_BLOCK terms of).
Tiled level (what `tile-for-target` adds on scratchpad targets):
- `tg.ub_alloc`: a buffer at a fixed offset of a core's unified buffer;
- `tg.copy`: a GM<->UB copy of `length` consecutive elements along the last axis.
Streaming stores (what `stream-stores` adds on the cpu target):
- `tg.align_peel`: how many elements from an element's address to the next aligned one;
- `tg.assume_aligned`: an element's address is aligned (the peel made it so).
Loop roles (on every `scf.for` the loops stage builds, and on the passes' loops):
- `#tg.loop<role, axis = k>`: what a loop walks (`LoopRole`) and which axis of its stage's domain.
Packed panels (what `pack-reused-panels` adds on the cpu target):
- `tg.panel`: columns of a matrix as a matrix of their own, in a stack buffer when they fit.
Strided loads (what `separate-strided-load-groups` adds on the cpu target):
- `tg.opaque_alias`: a read-only buffer under a second name the code generator cannot relate to
  the first.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import auto

from xdsl.dialects import memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    BFloat16Type,
    Float16Type,
    Float32Type,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Block, BlockArgument, Dialect, Operation, ParametrizedAttribute, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, MemoryWriteEffect, Pure, RecursiveMemoryEffect
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from tilegrad.dialect.values import element_bytes
from tilegrad.errors import UnsupportedError

_INDEX = IndexType()


def _check_domain(op: IRDLOperation, extents: Sequence[SSAValue], body: Region) -> None:
    block = body.block
    if len(block.args) != len(extents):
        raise VerifyException(f"{op.name}: body takes {len(block.args)} indices for a {len(extents)}-d domain")
    if any(arg.type != _INDEX for arg in block.args):
        raise VerifyException(f"{op.name}: body arguments must be of index type")
    if not isinstance(block.last_op, YieldOp):
        raise VerifyException(f"{op.name}: body must end with tg.yield")


@irdl_op_definition
class ComputeOp(IRDLOperation):
    """Every element of `dest` becomes what the body yields for its index.

    Example: `tg.compute %dx over (%n) { ^bb0(%i : index): ... tg.yield %v : f32 } : memref<?xf32>`
    """

    name = "tg.compute"
    dest = operand_def(MemRefType)
    extents = var_operand_def(IndexType)
    body = region_def("single_block")
    traits = traits_def(MemoryWriteEffect(), RecursiveMemoryEffect())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = "$dest `over` `(` $extents `)` $body attr-dict `:` type($dest)"

    def __init__(self, dest: SSAValue, extents: Sequence[SSAValue], body: Region):
        super().__init__(operands=[dest, extents], regions=[body])

    def verify_(self) -> None:
        _check_domain(self, self.extents, self.body)
        assert isinstance(self.dest.type, MemRefType)
        if self.dest.type.get_num_dims() != len(self.extents):
            raise VerifyException("tg.compute: domain rank must equal the rank of dest")
        if len(self.body.block.last_op.operands) != 1:
            raise VerifyException("tg.compute: body must yield exactly one value")


@irdl_op_definition
class ScatterAddOp(IRDLOperation):
    """For every point of the domain, `dest[i...] += v` where the body yields `i..., v, when`.

    Indices the body computes are range-checked: an out-of-range index writes nothing and sets
    the kernel's error code to `code` (or, with code 0, the point is skipped silently).
    """

    name = "tg.scatter_add"
    dest = operand_def(MemRefType)
    extents = var_operand_def(IndexType)
    code = prop_def(IntegerAttr[I64])
    body = region_def("single_block")
    traits = traits_def(MemoryWriteEffect(), RecursiveMemoryEffect())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = "$dest `over` `(` $extents `)` `code` $code $body attr-dict `:` type($dest)"

    def __init__(self, dest: SSAValue, extents: Sequence[SSAValue], body: Region, code: int):
        super().__init__(operands=[dest, extents], regions=[body],
                         properties={"code": IntegerAttr(code, i64)})

    def verify_(self) -> None:
        _check_domain(self, self.extents, self.body)
        assert isinstance(self.dest.type, MemRefType)
        rank = self.dest.type.get_num_dims()
        if len(self.body.block.last_op.operands) != rank + 2:
            raise VerifyException(f"tg.scatter_add: body must yield {rank} indices, a value and a predicate")


@irdl_op_definition
class CheckOp(IRDLOperation):
    """The body's i1 must hold at every point of the domain, else the kernel reports `code`."""

    name = "tg.check"
    extents = var_operand_def(IndexType)
    code = prop_def(IntegerAttr[I64])
    body = region_def("single_block")
    traits = traits_def(MemoryWriteEffect(), RecursiveMemoryEffect())
    assembly_format = "`over` `(` $extents `)` `code` $code $body attr-dict"

    def __init__(self, extents: Sequence[SSAValue], body: Region, code: int):
        super().__init__(operands=[extents], regions=[body], properties={"code": IntegerAttr(code, i64)})

    def verify_(self) -> None:
        _check_domain(self, self.extents, self.body)


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """`combine` ("sum", "max", "min" or "prod") of what the body yields over [0, extent), starting from `init`.
    `short` / `long`: the extent is at most / more than REDUCE_BLOCK (dsl/bounds) at the shapes the
    kernel is specialized for, so a sum needs only its plain / blocked form."""

    name = "tg.reduce"
    extent = operand_def(IndexType)
    init = operand_def()
    combine = prop_def(StringAttr)
    short = opt_prop_def(UnitAttr)
    long = opt_prop_def(UnitAttr)
    result = result_def()
    body = region_def("single_block")
    traits = traits_def(RecursiveMemoryEffect())
    assembly_format = ("$combine (`short` $short^)? (`long` $long^)? `over` $extent `from` $init $body attr-dict "
                       "`:` type($init) `->` type($result)")

    def __init__(self, combine: str, extent: SSAValue, init: SSAValue, body: Region, length: str | None = None):
        properties: dict[str, Attribute] = {"combine": StringAttr(combine)}
        if length is not None:
            properties[length] = UnitAttr()
        super().__init__(operands=[extent, init], regions=[body], result_types=[init.type], properties=properties)

    def verify_(self) -> None:
        if self.combine.data not in ("sum", "max", "min", "prod"):
            raise VerifyException(f"tg.reduce: unknown combine {self.combine.data!r}")
        if self.short is not None and self.long is not None:
            raise VerifyException("tg.reduce: a sum is short or long, not both")
        _check_domain(self, [self.extent], self.body)


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminates the body of a tg op with the values it defines."""

    name = "tg.yield"
    arguments = var_operand_def()
    traits = traits_def(IsTerminator(), HasParent(ComputeOp, ScatterAddOp, CheckOp, ReduceOp), Pure())
    assembly_format = "attr-dict ($arguments^ `:` type($arguments))?"

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[values])


@irdl_op_definition
class UBAllocOp(IRDLOperation):
    """A buffer at byte `offset` of a core's unified buffer `ub` (the tiled form only)."""

    name = "tg.ub_alloc"
    ub = operand_def(MemRefType)
    offset = prop_def(IntegerAttr[I64])
    label = prop_def(StringAttr)
    result = result_def(MemRefType)
    traits = traits_def(Pure())
    assembly_format = "$ub `[` $offset `]` $label attr-dict `:` type($ub) `->` type($result)"

    def __init__(self, ub: SSAValue, offset: int, label: str, result_type: MemRefType):
        super().__init__(operands=[ub], result_types=[result_type],
                         properties={"offset": IntegerAttr(offset, i64), "label": StringAttr(label)})

    def verify_(self) -> None:
        offset = self.offset.value.data
        if offset < 0:
            raise VerifyException("tg.ub_alloc: negative offset")
        ub, result = self.ub.type, self.result.type
        if isinstance(ub, MemRefType) and isinstance(result, MemRefType) and ub.has_static_shape() \
                and result.has_static_shape():
            try:
                capacity = ub.element_count() * element_bytes(ub.element_type)
                end = offset + result.element_count() * element_bytes(result.element_type)
            except UnsupportedError:
                raise VerifyException(f"tg.ub_alloc: {ub} or {result} has elements of no byte width") from None
            if end > capacity:  # a hand-edited tiled stage must not reach past the core's buffer
                raise VerifyException(f"tg.ub_alloc: buffer {self.label.data!r} spans bytes [{offset}, {end}) "
                                      f"of a {capacity}-byte unified buffer")


@irdl_op_definition
class CopyOp(IRDLOperation):
    """Copy `length` consecutive elements along the last axis from src[...] to dst[...] (GM<->UB)."""

    name = "tg.copy"
    src = operand_def(MemRefType)
    src_indices = var_operand_def(IndexType)
    dst = operand_def(MemRefType)
    dst_indices = var_operand_def(IndexType)
    length = operand_def(IndexType)
    direction = prop_def(StringAttr)
    traits = traits_def(MemoryWriteEffect())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$direction $src `[` $src_indices `]` `to` $dst `[` $dst_indices `]` `len` $length "
        "attr-dict `:` type($src) `,` type($dst)"
    )

    def __init__(self, direction: str, src: SSAValue, src_indices: Sequence[SSAValue],
                 dst: SSAValue, dst_indices: Sequence[SSAValue], length: SSAValue):
        super().__init__(operands=[src, src_indices, dst, dst_indices, length],
                         properties={"direction": StringAttr(direction)})

    def verify_(self) -> None:
        if self.direction.data not in ("gm_to_ub", "ub_to_gm"):
            raise VerifyException(f"tg.copy: unknown direction {self.direction.data!r}")
        for mem, idx in ((self.src, self.src_indices), (self.dst, self.dst_indices)):
            assert isinstance(mem.type, MemRefType)
            if mem.type.get_num_dims() != len(idx):
                raise VerifyException("tg.copy: one index per memref dimension")


def _check_alignment(op: IRDLOperation, memref: SSAValue, indices: Sequence[SSAValue], alignment: int,
                     what: str = "alignment") -> None:
    assert isinstance(memref.type, MemRefType)
    if memref.type.get_num_dims() != len(indices):
        raise VerifyException(f"{op.name}: one index per memref dimension")
    if alignment <= 0 or alignment & (alignment - 1):
        raise VerifyException(f"{op.name}: {what} {alignment} must be a power of two")


@irdl_op_definition
class AlignPeelOp(IRDLOperation):
    """min(`limit`, the number of elements from memref[indices] along the last axis to the first
    whose address is a multiple of `alignment` bytes); `limit` when no element's is (an address
    that is not a multiple of the element size)."""

    name = "tg.align_peel"
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    limit = operand_def(IndexType)
    alignment = prop_def(IntegerAttr[I64])
    result = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "$memref `[` $indices `]` `limit` $limit `alignment` $alignment attr-dict `:` type($memref)"

    def __init__(self, memref: SSAValue, indices: Sequence[SSAValue], limit: SSAValue, alignment: int):
        super().__init__(operands=[memref, indices, limit], result_types=[_INDEX],
                         properties={"alignment": IntegerAttr(alignment, i64)})

    def verify_(self) -> None:
        _check_alignment(self, self.memref, self.indices, self.alignment.value.data)


@irdl_op_definition
class AddressOffsetOp(IRDLOperation):
    """The byte address of memref[indices] modulo `modulus` (a power of two): where two arrays sit
    relative to each other within a page, which decides whether a store to one delays the loads
    of the other that follow it (the hardware compares only an address's page offset)."""

    name = "tg.address_offset"
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    modulus = prop_def(IntegerAttr[I64])
    result = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "$memref `[` $indices `]` `modulo` $modulus attr-dict `:` type($memref)"

    def __init__(self, memref: SSAValue, indices: Sequence[SSAValue], modulus: int):
        super().__init__(operands=[memref, indices], result_types=[_INDEX],
                         properties={"modulus": IntegerAttr(modulus, i64)})

    def verify_(self) -> None:
        _check_alignment(self, self.memref, self.indices, self.modulus.value.data, "modulus")


@irdl_op_definition
class AssumeAlignedOp(IRDLOperation):
    """The address of memref[indices] is a multiple of `alignment` bytes: a promise the code
    generator may act on (aligned vector stores), so only a pass that made it true may emit it."""

    name = "tg.assume_aligned"
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    alignment = prop_def(IntegerAttr[I64])
    assembly_format = "$memref `[` $indices `]` `alignment` $alignment attr-dict `:` type($memref)"

    def __init__(self, memref: SSAValue, indices: Sequence[SSAValue], alignment: int):
        super().__init__(operands=[memref, indices], properties={"alignment": IntegerAttr(alignment, i64)})

    def verify_(self) -> None:
        _check_alignment(self, self.memref, self.indices, self.alignment.value.data)


@irdl_op_definition
class PanelOp(IRDLOperation):
    """Columns [start, start + width) of the matrix `source` as a [rows, width] matrix of their
    own: the stack `buffer`, rows `width` apart, when they fit in it and are not already whole
    rows (width < the source's row length), else a view of `source` itself. `packed` says which;
    copying the columns in is the caller's, under `scf.if %packed`. A GEMM's packed panel: the
    columns every row group sweeps, read in order from the core's cache instead of a strided walk.
    A source of more than two axes is indexed first by `at`, one index per leading axis
    (`tg.panel %w at(%b) [%t, %width]`: the matrix w[b] of a batched product).

    The buffer may also be a workspace (a 1-d memref of dynamic length, an argument the call
    allocates) and the panel start `offset` elements into it (`in %ws offset %o`): there it packs
    when offset + rows x width elements fit, so one call can keep many panels (a row group's
    columns packed once per call, read by every column strip).

    A workspace of float32 for a half source (bfloat16, float16) holds the columns widened: the
    panel is float32 and always the buffer (there is no view of the source in float32), packed
    wherever offset + rows x width fit (the pass sizes the workspace so they do)."""

    name = "tg.panel"
    source = operand_def(MemRefType)
    at = var_operand_def(IndexType)
    start = operand_def(IndexType)
    width = operand_def(IndexType)
    buffer = operand_def(MemRefType)
    offset = var_operand_def(IndexType)
    panel = result_def(MemRefType)
    packed = result_def(IntegerType(1))
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = ("$source (`at` `(` $at^ `)`)? `[` $start `,` $width `]` `in` $buffer "
                       "(`offset` $offset^)? attr-dict `:` type($source) `,` type($buffer) `->` type($panel)")

    def __init__(self, source: SSAValue, start: SSAValue, width: SSAValue, buffer: SSAValue,
                 at: Sequence[SSAValue] = (), offset: SSAValue | None = None):
        source_type = source.type
        assert isinstance(source_type, MemRefType)
        element = buffer.type.element_type
        panel_type = source_type if not at and element == source_type.element_type \
            else MemRefType(element, [DYNAMIC_INDEX] * 2)
        super().__init__(operands=[source, list(at), start, width, buffer, [offset] if offset is not None else []],
                         result_types=[panel_type, IntegerType(1)])

    @property
    def widens(self) -> bool:
        """Whether the buffer holds the half source's elements widened to float32 (see above)."""
        return isinstance(self.source.type.element_type, (BFloat16Type, Float16Type)) and bool(self.offset) \
            and self.buffer.type.element_type == Float32Type()

    def verify_(self) -> None:
        source, buffer, panel = self.source.type, self.buffer.type, self.panel.type
        assert isinstance(source, MemRefType) and isinstance(buffer, MemRefType) and isinstance(panel, MemRefType)
        if source.get_num_dims() != 2 + len(self.at):
            raise VerifyException("tg.panel: the source is a matrix after its `at` indices (2 axes left)")
        if buffer.get_num_dims() != 1 or (not buffer.has_static_shape() and not self.offset):
            raise VerifyException("tg.panel: the buffer is a 1-d memref of static length, or a workspace at an "
                                  "offset")
        if len(self.offset) > 1:
            raise VerifyException("tg.panel: one offset at most")
        if buffer.element_type != source.element_type and not self.widens:
            raise VerifyException("tg.panel: the buffer holds the source's element type, or float32 in a workspace "
                                  "(at an offset) for a bfloat16 or float16 source")
        if (self.at or self.widens) and (panel.get_num_dims() != 2 or panel.element_type != buffer.element_type):
            raise VerifyException("tg.panel: the panel is a matrix of its buffer's element type")
        if not self.at and not self.widens and panel != source:
            raise VerifyException("tg.panel: the panel has its source's type")
        if source.get_shape()[-1] != DYNAMIC_INDEX:
            raise VerifyException("tg.panel: the source's rows have a dynamic length (a panel's are its width)")


@irdl_op_definition
class OpaqueAliasOp(IRDLOperation):
    """`source` (a kernel argument the function only reads) under a name of its own: the code
    generator passes it as a separate `noalias` pointer that LLVM cannot trace back to `source`,
    so its loads form interleave groups apart from the source's (the same memory, read twice)."""

    name = "tg.opaque_alias"
    source = operand_def(MemRefType)
    result = result_def(MemRefType)
    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue):
        super().__init__(operands=[source], result_types=[source.type])

    def verify_(self) -> None:
        if self.result.type != self.source.type:
            raise VerifyException("tg.opaque_alias: the alias has its source's type")
        function = self.parent_op()
        if not isinstance(self.source, BlockArgument) or function is None or \
                self.source.owner is not function.regions[0].blocks.first:
            raise VerifyException("tg.opaque_alias: the source must be an argument of the enclosing function")
        # two noalias names of one buffer are sound only while nothing writes it
        if any(_writes(op) in (self.source, self.result) for op in function.walk()):
            raise VerifyException("tg.opaque_alias: the function writes the source, which two names may not share")


def _writes(op: Operation) -> SSAValue | None:
    """The buffer a memref.store or tg.copy writes (through a row view: its tensor); None for others."""
    if isinstance(op, memref.StoreOp):
        written = op.memref
    elif isinstance(op, CopyOp):
        written = op.dst
    else:
        return None
    while isinstance(written.owner, memref.CollapseShapeOp):
        written = written.owner.src
    return written


class LoopRole(StrEnum):
    """What a loop walks; the passes choose what to rewrite by it."""

    PARALLEL = auto()  # points of a stage's domain, each computed on its own
    SCATTER = auto()  # points of a scatter_add's domain: iterations may add to one element
    CHECK = auto()  # points a tg.check tests
    REDUCE = auto()  # a tg.reduce's axis, carrying the partial result
    REDUCE_PART = auto()  # one block of a reduction split in blocks (pairwise combining)
    TILE = auto()  # a tile of a parallel axis (tile-for-target, chunk-row-sweeps)
    ROW = auto()  # the rows a column reduction streams (interchange-column-reductions)
    RUN = auto()  # a run of consecutive elements staged in the UB at once (ub-run-staging)
    COPY = auto()  # the rows of a GM<->UB copy (ub-staging)
    SCAN = auto()  # an axis walked in order, carrying a running result to the next element (scan-reductions)


class LoopRoleAttr(EnumAttribute[LoopRole]):
    name = "tg.loop_role"


@irdl_attr_definition
class LoopAttr(ParametrizedAttribute):
    """`#tg.loop<parallel, axis = 2>`: an scf.for (or the scf.if choosing between two forms of one
    reduction) is a loop of this role over axis `axis` of its stage's domain."""

    name = "tg.loop"
    role: LoopRoleAttr
    axis: IntAttr

    def __init__(self, role: LoopRole | str, axis: int = 0):
        super().__init__(LoopRoleAttr(LoopRole(role)), IntAttr(axis))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.role.data.value}, axis = {self.axis.data}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            role = LoopRoleAttr(LoopRoleAttr.parse_parameter(parser))
            parser.parse_punctuation(",")
            parser.parse_keyword("axis")
            parser.parse_punctuation("=")
            axis = IntAttr(parser.parse_integer(allow_boolean=False, allow_negative=False))
        return [role, axis]


TG = Dialect("tg", [ComputeOp, ScatterAddOp, CheckOp, ReduceOp, YieldOp, UBAllocOp, CopyOp, AlignPeelOp,
                    AddressOffsetOp, AssumeAlignedOp, OpaqueAliasOp, PanelOp], [LoopAttr, LoopRoleAttr])


def body_region(arg_count: int) -> tuple[Region, Block]:
    block = Block(arg_types=[_INDEX] * arg_count)
    return Region([block]), block


__all__ = ["TG", "LoopAttr", "LoopRole", "ComputeOp", "ScatterAddOp", "CheckOp", "ReduceOp", "YieldOp", "UBAllocOp",
           "CopyOp", "AlignPeelOp", "AddressOffsetOp", "AssumeAlignedOp", "OpaqueAliasOp", "body_region"]
