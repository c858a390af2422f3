"""Data types: their numpy form, their storage type in IR and the type they compute in."""

from dataclasses import dataclass
from functools import cache

import numpy as np

from tilegrad.errors import DTypeError


@dataclass(frozen=True)
class DType:
    """A dtype by name; its numpy dtype and IR types are looked up when first used, so importing
    tilegrad loads neither ml_dtypes nor xDSL."""

    name: str
    storage_name: str
    """xDSL's name of the type of an element in memory (bfloat16 is stored as i16, widened with shifts)."""
    compute_name: str
    """xDSL's name of the type the element is computed in: half types compute in float32."""
    is_float: bool
    signed: bool = True

    @property
    def numpy(self) -> np.dtype:
        return _numpy_dtype(self.name)

    @property
    def storage(self):
        return _ir_type(self.storage_name)

    @property
    def compute(self):
        return _ir_type(self.compute_name)

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize


@cache
def _numpy_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


@cache
def _ir_type(name: str):
    from xdsl.dialects import builtin

    return getattr(builtin, name)


_ALL = [
    DType("float64", "f64", "f64", True),
    DType("float32", "f32", "f32", True),
    DType("float16", "f16", "f32", True),
    DType("bfloat16", "i16", "f32", True),
    DType("int64", "i64", "i64", False),
    DType("int32", "i32", "i64", False),
    DType("int16", "i16", "i64", False),
    DType("int8", "i8", "i64", False),
    DType("uint8", "i8", "i64", False, signed=False),
    DType("bool", "i8", "i64", False, signed=False),
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
    dtype = DTYPES.get(np_dtype.name)  # by name first: bfloat16's array means ml_dtypes is loaded
    if dtype is not None and dtype.numpy == np_dtype:
        return dtype
    raise DTypeError(f"dtype {np_dtype} is not supported; tilegrad knows {', '.join(DTYPES)}")

