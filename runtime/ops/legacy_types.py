"""PyTorch's legacy tensor types: ``FloatTensor``, ``LongTensor`` ... as constructors
(``rt.FloatTensor(2, 3)``, ``rt.LongTensor([1, 2])``: Tensor.new of that dtype), in
``isinstance`` (a CPU tensor of that dtype), in ``Tensor.type(rt.DoubleTensor)``, and the
deprecated ``set_default_tensor_type``."""

from __future__ import annotations

import warnings
from typing import Any

from .. import _dtype as D
from ..tensor import Tensor

_NAMES = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
          "BFloat16Tensor": "bfloat16", "LongTensor": "int64", "IntTensor": "int32",
          "ShortTensor": "int16", "CharTensor": "int8", "ByteTensor": "uint8",
          "BoolTensor": "bool"}


class LegacyTensorType(type):
    """The class of rt.FloatTensor and the others: a dtype on the CPU."""

    dtype: D.DType

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device == "cpu"

    def __call__(cls, *args: Any, device: Any = None) -> Tensor:  # type: ignore[override]
        from .torch_names import legacy_new

        return legacy_new(cls.dtype, "cpu", args, device)

    def __repr__(cls) -> str:
        return f"<class 'runtime.{cls.__name__}'>"


def _legacy_type(name: str, dtype: str) -> LegacyTensorType:
    return LegacyTensorType(name, (), {"dtype": D.as_dtype(dtype), "is_cuda": False,
                                       "__module__": "runtime"})


TYPES = {name: _legacy_type(name, dtype) for name, dtype in _NAMES.items()}


def set_default_tensor_type(t: Any) -> None:
    """Deprecated: the default float dtype from a legacy type or its name."""
    from .more_ops import set_default_dtype

    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    name = t.rsplit(".", 1)[-1] if isinstance(t, str) else getattr(t, "__name__", None)
    if name not in _NAMES:
        raise TypeError(f"invalid type: '{t}'")
    dtype = D.as_dtype(_NAMES[name])
    if not dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    set_default_dtype(dtype)


FUNCTIONS: dict[str, Any] = {**TYPES, "set_default_tensor_type": set_default_tensor_type}
METHODS: dict[str, Any] = {}
