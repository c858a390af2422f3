"""Data types: their numpy form, their storage type in IR and the type they compute in."""

from dataclasses import dataclass

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import f16, f32, f64, i8, i16, i32, i64
from xdsl.ir import Attribute

from tilegrad.errors import DTypeError


@dataclass(frozen=True)
class DType:
    name: str
    numpy: np.dtype
    storage: Attribute
    """Type of an element in memory (bfloat16 is stored as i16 and widened with shifts)."""
    compute: Attribute
    """Type the element is computed in: half types compute in float32."""
    is_float: bool
    signed: bool = True

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize


_ALL = [
    DType("float64", np.dtype(np.float64), f64, f64, True),
    DType("float32", np.dtype(np.float32), f32, f32, True),
    DType("float16", np.dtype(np.float16), f16, f32, True),
    DType("bfloat16", np.dtype(ml_dtypes.bfloat16), i16, f32, True),
    DType("int64", np.dtype(np.int64), i64, i64, False),
    DType("int32", np.dtype(np.int32), i32, i64, False),
    DType("int16", np.dtype(np.int16), i16, i64, False),
    DType("int8", np.dtype(np.int8), i8, i64, False),
    DType("uint8", np.dtype(np.uint8), i8, i64, False, signed=False),
    DType("bool", np.dtype(np.bool_), i8, i64, False, signed=False),
]
DTYPES: dict[str, DType] = {d.name: d for d in _ALL}
FLOATS = ("float64", "float32", "float16", "bfloat16")


def dtype_of(name_or_array) -> DType:
    """The DType of a dtype name, numpy dtype or array."""
    if isinstance(name_or_array, DType):
        return name_or_array
    if isinstance(name_or_array, str) and name_or_array in DTYPES:
        return DTYPES[name_or_array]
    np_dtype = getattr(name_or_array, "dtype", None)
    try:
        np_dtype = np.dtype(np_dtype if np_dtype is not None else name_or_array)
    except TypeError as err:
        raise DTypeError(f"unknown dtype {name_or_array!r}") from err
    for dtype in _ALL:
        if dtype.numpy == np_dtype:
            return dtype
    raise DTypeError(f"dtype {np_dtype} is not supported; tilegrad knows {', '.join(DTYPES)}")

