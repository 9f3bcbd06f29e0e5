"""dtypes and PyTorch's type promotion (Python scalars are weak)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np


@dataclass(frozen=True, eq=False)  # one object per dtype: identity equality, a fast hash
class DType:
    name: str
    np: np.dtype
    category: int  # PyTorch's promotion category: 0 bool, 1 integer, 2 floating point
    is_floating_point: bool = field(init=False)  # a field, not a property: read on hot paths
    itemsize: int = field(init=False)  # bytes of one element, as PyTorch's dtype.itemsize
    is_signed: bool = field(init=False)  # as PyTorch's: floats and signed integers
    is_complex = False  # PyTorch's attribute; no complex dtype here

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_floating_point", self.category == 2)
        object.__setattr__(self, "itemsize", self.np.itemsize)
        object.__setattr__(self, "is_signed", self.category == 2 or self.np.kind == "i")

    def __repr__(self) -> str:
        return f"runtime.{self.name}"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        """Unpickled or deep-copied, a dtype is the one object of its name (compared with
        ``is`` throughout the runtime and the planner)."""
        return as_dtype, (self.name,)


bool_ = DType("bool", np.dtype(np.bool_), 0)
uint8 = DType("uint8", np.dtype(np.uint8), 1)
int8 = DType("int8", np.dtype(np.int8), 1)
int16 = DType("int16", np.dtype(np.int16), 1)
int32 = DType("int32", np.dtype(np.int32), 1)
int64 = DType("int64", np.dtype(np.int64), 1)
float16 = DType("float16", np.dtype(np.float16), 2)
float32 = DType("float32", np.dtype(np.float32), 2)
float64 = DType("float64", np.dtype(np.float64), 2)
# numpy has no bfloat16: ml_dtypes (JAX's numpy dtypes) gives it, its ufuncs computing each
# element in float32 and rounding the result, as PyTorch's CPU kernels do
bfloat16 = DType("bfloat16", np.dtype(ml_dtypes.bfloat16), 2)
# PyTorch's "shell" unsigned dtypes: storage, casts, copies, and few ops; no promotion with
# other integers
uint16 = DType("uint16", np.dtype(np.uint16), 1)
uint32 = DType("uint32", np.dtype(np.uint32), 1)
uint64 = DType("uint64", np.dtype(np.uint64), 1)

DTYPES = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64, bfloat16,
          uint16, uint32, uint64)
UNSIGNED_SHELL = frozenset((uint16, uint32, uint64))
# the float dtypes PyTorch's CPU kernels compute in float32 (their opmath type)
LOW_FLOATS = frozenset((float16, bfloat16))
_BY_NP = {d.np: d for d in DTYPES}
_BY_NAME = {d.name: d for d in DTYPES} | {"float": float32, "double": float64, "long": int64,
                                          "half": float16, "int": int32, "short": int16}


def _promote_pair(a: DType, b: DType) -> DType | None:
    """PyTorch's promoteTypes: the higher category wins whole (int32 + float16 is float16);
    within one, numpy's promotion agrees with PyTorch's (uint8 + int8 is int16), but for
    float16 with bfloat16 (float32). None: PyTorch refuses the pair (uint16 with int8)."""
    if a is b:
        return a
    if a.category != b.category:
        if (a in UNSIGNED_SHELL and b.category < 2) or (b in UNSIGNED_SHELL and a.category < 2):
            return None
        return a if a.category > b.category else b
    if a in UNSIGNED_SHELL or b in UNSIGNED_SHELL:
        return None
    if {a, b} == LOW_FLOATS:
        return float32
    if bfloat16 in (a, b):
        return a if b is bfloat16 else b
    return _BY_NP[np.promote_types(a.np, b.np)]


_PROMOTE = {(a, b): _promote_pair(a, b) for a in DTYPES for b in DTYPES}
# the dtype of Python floats and of float results of integers (set_default_dtype); read as
# ``D.default_float`` at each use, never imported by value
default_float = float32


def promote(a: DType, b: DType) -> DType:
    """PyTorch's ``promote_types(a, b)``, and its error for a pair it refuses."""
    if a is b:
        return a
    out = _PROMOTE[a, b]
    if out is None:
        raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, "
                           f"attempted to promote {scalar_type_name(a)} and "
                           f"{scalar_type_name(b)}")
    return out


def as_dtype(d: object) -> DType:
    """Accept a DType, a numpy dtype or type, or a name."""
    if isinstance(d, DType):
        return d
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    if d is bool:
        return bool_
    if d is int:
        return int64
    if d is float:  # PyTorch's: a Python float is a C double
        return float64
    try:
        npd = np.dtype(d)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(f"unsupported dtype {d!r}") from None
    if npd in _BY_NP:
        return _BY_NP[npd]
    raise TypeError(f"unsupported dtype {d!r}: expected one of "
                    f"{', '.join(t.name for t in DTYPES)}")


# PyTorch's two spellings of a dtype in its error texts: its ScalarType ("expected scalar
# type Float but found Double") and its TypeMeta ("but got: float != double")
_SCALAR_TYPE_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short",
                      "int32": "Int", "int64": "Long", "float16": "Half", "float32": "Float",
                      "float64": "Double", "bfloat16": "BFloat16", "uint16": "UInt16",
                      "uint32": "UInt32", "uint64": "UInt64"}
_TYPE_META_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char",
                    "int16": "short int", "int32": "int", "int64": "long int",
                    "float16": "c10::Half", "float32": "float", "float64": "double",
                    "bfloat16": "c10::BFloat16", "uint16": "short unsigned int",
                    "uint32": "unsigned int", "uint64": "long unsigned int"}
# PyTorch's C++ type in its "value cannot be converted to type ... without overflow"
_OVERFLOW_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
                   "int64": "int64_t", "uint16": "uint16_t", "uint32": "uint32_t",
                   "uint64": "uint64_t"}
# the largest finite value of each low-precision float: a scalar beyond it overflows
_FLOAT_LIMITS = {float32: (float(np.finfo(np.float32).max), "float"),
                 float16: (65504.0, "c10::Half"),
                 bfloat16: (float(ml_dtypes.finfo(ml_dtypes.bfloat16).max), "c10::BFloat16")}


def scalar_type_name(d: DType) -> str:
    """PyTorch's ScalarType name of ``d``: Float, Double, Long, Int, Byte, Half, Bool..."""
    return _SCALAR_TYPE_NAMES[d.name]


def type_meta_name(d: DType) -> str:
    """PyTorch's TypeMeta name of ``d`` (its C++ type): float, double, long int, c10::Half,
    bool."""
    return _TYPE_META_NAMES[d.name]


def scalar_as(value: Any, d: DType) -> Any:
    """A Python scalar as PyTorch converts it into an element of ``d`` (masked_fill's,
    fill_'s value): truncated toward zero for integers, nonzero-ness for bool; a value out of
    ``d``'s range is PyTorch's error (uint8 takes -255 to 255, the negatives wrapped)."""
    if d is bool_:
        return bool(value)
    if d.category == 1:
        exact = isinstance(value, (int, np.integer))
        low, high = int_bounds(d, exact)
        if not low <= (value if exact else float(value)) <= high:
            raise RuntimeError(f"value cannot be converted to type {_OVERFLOW_NAMES[d.name]} "
                               "without overflow")
        return wrapped_int(int(value), d)
    limit = _FLOAT_LIMITS.get(d)
    if limit is not None and abs(float(value)) > limit[0] and math.isfinite(float(value)):
        raise RuntimeError(f"value cannot be converted to type {limit[1]} without overflow")
    return value


def np_finfo(d: DType) -> Any:
    """numpy's finfo of the float dtype ``d`` (ml_dtypes' for bfloat16, which numpy lacks)."""
    return ml_dtypes.finfo(d.np) if d is bfloat16 else np.finfo(d.np)


def int_bounds(d: DType, exact: bool) -> tuple[Any, Any]:
    """The values c10's checked conversion takes into the integer dtype ``d``: an integer
    (``exact``) in its range, or down to -max for an unsigned d (then wrapped round: uint8's
    -1 is 255); a float in [min, max] (NaN in none)."""
    info = np.iinfo(d.np)
    if exact:
        return (int(info.min) if d.is_signed else -int(info.max)), int(info.max)
    return float(info.min), float(info.max)


def wrapped_int(value: int, d: DType) -> int:
    """A Python int as an element of the integer dtype ``d``, wrapped round (two's
    complement), as PyTorch converts a scalar operand: int8's 200 is -56."""
    if d is int64:
        return value
    bits = 8 * d.itemsize
    value &= (1 << bits) - 1
    return value - (1 << bits) if d.is_signed and value >> (bits - 1) else value


def from_numpy_dtype(npd: np.dtype) -> DType:
    d = _BY_NP.get(npd)
    if d is None:
        raise TypeError(f"unsupported numpy dtype {npd}: expected one of "
                        f"{', '.join(t.name for t in DTYPES)}")
    return d


def scalar_rank(v: object) -> int:
    if isinstance(v, (bool, np.bool_)):
        return 0
    if isinstance(v, (int, np.integer)):
        return 1
    if isinstance(v, (float, np.floating)):
        return 2
    raise TypeError(f"unsupported scalar {v!r} of type {type(v).__name__}")


def result_dtype(tensor_dtypes: list[DType], scalars: list[object],
                 ndims: list[int] | None = None) -> DType:
    """PyTorch's promotion: tensors with dimensions decide among themselves; zero-dim tensors
    (``ndims``, one per dtype, where given) and then scalars only where they are of a higher
    category (bool < integer < floating), a scalar as the default dtype of its category.
    ``ones(2) + tensor(1.0, dtype=float64)`` is float32; ``ones(2, dtype=int64) + 2.5`` float32;
    numpy scalars are scalars (``ones(2) * np.float64(2.5)`` is float32, as in PyTorch)."""
    if ndims is not None and 0 in ndims and any(ndims):
        dim = _highest([d for d, n in zip(tensor_dtypes, ndims) if n])
        zero = _highest([d for d, n in zip(tensor_dtypes, ndims) if not n])
    else:
        dim, zero = _highest(tensor_dtypes), None
        if not scalars:  # the common case: tensors of one kind, no scalar
            assert dim is not None, "result_dtype needs a tensor"
            return dim
    wrapped = None
    if scalars:
        cat = max(scalar_rank(s) for s in scalars)
        wrapped = (bool_, int64)[cat] if cat < 2 else default_float
    best = _combine(dim, _combine(zero, wrapped))
    assert best is not None, "result_dtype needs a tensor"
    return best


def _highest(dtypes: list[DType]) -> DType | None:
    best = None
    for d in dtypes:
        best = d if best is None else promote(best, d)
    return best


def _combine(higher: DType | None, lower: DType | None) -> DType | None:
    """c10's combine_categories: ``lower`` (a group of lower priority) counts only where it
    is of a higher category than ``higher``."""
    if higher is None or lower is None:
        return lower if higher is None else higher
    if higher.is_floating_point:
        return higher
    if higher is bool_ or lower.is_floating_point:
        return promote(higher, lower)
    return higher
