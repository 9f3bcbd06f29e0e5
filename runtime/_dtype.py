"""dtypes and PyTorch's type promotion (Python scalars are weak)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class DType:
    name: str
    np: np.dtype
    rank: int  # promotion order: bool < int64 < float16 < float32 < float64
    is_floating_point: bool = field(init=False)  # a field, not a property: read on hot paths

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_floating_point", self.rank >= 2)

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
    if d is float:
        return float32
    try:
        npd = np.dtype(d)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(f"unsupported dtype {d!r}") from None
    if npd in _BY_NP:
        return _BY_NP[npd]
    if npd in _NP_ALIASES:
        return _NP_ALIASES[npd]
    raise TypeError(f"unsupported dtype {d!r}: expected one of bool, int64, float16, float32, float64")


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


def result_dtype(tensor_dtypes: list[DType], scalars: list[object]) -> DType:
    """PyTorch promotion: tensors decide among themselves, a scalar only lifts the category."""
    best = max(tensor_dtypes, key=lambda d: d.rank)
    if scalars:
        cat = max(scalar_rank(s) for s in scalars)
        if cat > min(best.rank, 2):
            best = _BY_RANK[cat] if cat < 2 else default_float
    return best
