"""dtypes and PyTorch's type promotion (Python scalars are weak)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class DType:
    name: str
    np: np.dtype
    rank: int  # promotion order: bool < int64 < float16 < float32 < float64
    is_floating_point: bool = field(init=False)  # a field, not a property: read on hot paths
    itemsize: int = field(init=False)  # bytes of one element, as PyTorch's dtype.itemsize
    is_signed: bool = field(init=False)  # as PyTorch's: all but bool here
    is_complex = False  # PyTorch's attribute; no complex dtype here

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_floating_point", self.rank >= 2)
        object.__setattr__(self, "itemsize", self.np.itemsize)
        object.__setattr__(self, "is_signed", self.rank >= 1)

    @property
    def category(self) -> int:
        """PyTorch's promotion category: 0 bool, 1 integer, 2 floating point."""
        return min(self.rank, 2)

    def __repr__(self) -> str:
        return f"runtime.{self.name}"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        """Unpickled or deep-copied, a dtype is the one object of its name (compared with
        ``is`` throughout the runtime and the planner)."""
        return as_dtype, (self.name,)


bool_ = DType("bool", np.dtype(np.bool_), 0)
int64 = DType("int64", np.dtype(np.int64), 1)
float16 = DType("float16", np.dtype(np.float16), 2)
float32 = DType("float32", np.dtype(np.float32), 3)
float64 = DType("float64", np.dtype(np.float64), 4)

DTYPES = (bool_, int64, float16, float32, float64)
_BY_NP = {d.np: d for d in DTYPES}
_BY_NAME = {d.name: d for d in DTYPES} | {"float": float32, "double": float64, "long": int64,
                                          "half": float16}
_NP_ALIASES = {
    np.dtype(np.int32): int64,
    np.dtype(np.int16): int64,
    np.dtype(np.int8): int64,
    np.dtype(np.uint8): int64,
    np.dtype(np.uint32): int64,
}
_BY_RANK = {d.rank: d for d in DTYPES}
# the dtype of Python floats and of float results of integers (set_default_dtype); read as
# ``D.default_float`` at each use, never imported by value
default_float = float32


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
    if npd in _NP_ALIASES:
        return _NP_ALIASES[npd]
    raise TypeError(f"unsupported dtype {d!r}: expected one of bool, int64, float16, float32, float64")


# PyTorch's two spellings of a dtype in its error texts: its ScalarType ("expected scalar
# type Float but found Double") and its TypeMeta ("but got: float != double")
_SCALAR_TYPE_NAMES = {"bool": "Bool", "int64": "Long", "float16": "Half", "float32": "Float",
                      "float64": "Double"}
_TYPE_META_NAMES = {"bool": "bool", "int64": "long int", "float16": "c10::Half",
                    "float32": "float", "float64": "double"}


def scalar_type_name(d: DType) -> str:
    """PyTorch's ScalarType name of ``d``: Float, Double, Long, Half, Bool."""
    return _SCALAR_TYPE_NAMES[d.name]


def type_meta_name(d: DType) -> str:
    """PyTorch's TypeMeta name of ``d`` (its C++ type): float, double, long int, c10::Half,
    bool."""
    return _TYPE_META_NAMES[d.name]


def scalar_as(value: Any, d: DType) -> Any:
    """A Python scalar as PyTorch converts it into an element of ``d`` (masked_fill's,
    fill_'s value): truncated toward zero for int64, nonzero-ness for bool; a value out of
    ``d``'s range is PyTorch's error."""
    if d is bool_:
        return bool(value)
    if d is int64:
        if not isinstance(value, (int, np.integer)) and not (
                -2.0**63 <= float(value) < 2.0**63):  # nan and inf fail both
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        return int(value)
    if d is float16 and abs(float(value)) > 65504.0 and math.isfinite(float(value)):
        raise RuntimeError("value cannot be converted to type c10::Half without overflow")
    return value


def from_numpy_dtype(npd: np.dtype) -> DType:
    d = _BY_NP.get(npd)
    if d is None:
        raise TypeError(f"unsupported numpy dtype {npd}: expected bool, int64, float16, float32 or "
                        "float64")
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
        wrapped = _BY_RANK[cat] if cat < 2 else default_float
    best = _combine(dim, _combine(zero, wrapped))
    assert best is not None, "result_dtype needs a tensor"
    return best


def _highest(dtypes: list[DType]) -> DType | None:
    best = None
    for d in dtypes:
        if best is None or d.rank > best.rank:
            best = d
    return best


def _combine(higher: DType | None, lower: DType | None) -> DType | None:
    """c10's combine_categories: ``lower`` (a group of lower priority) counts only where it
    is of a higher category than ``higher``."""
    if higher is None or lower is None:
        return lower if higher is None else higher
    if higher.is_floating_point:
        return higher
    if higher is bool_ or lower.is_floating_point:
        return higher if higher.rank >= lower.rank else lower
    return higher
