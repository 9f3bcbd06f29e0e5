"""``autocast``: a region where the ops of ``policy``'s lists run in a lower precision, as
PyTorch's ``torch.autocast`` (state per device type and thread, nesting, a weight cache)."""

from __future__ import annotations

import functools
import warnings
from collections import abc
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from .. import _dtype as D
from .._device import TORCH_DEVICE_TYPES as _DEVICE_TYPES
from ._state import DEFAULT_DTYPES, state

Fn = TypeVar("Fn", bound=Callable[..., Any])



def _check_type(func: str, arg: str, position: int, value: Any, kind: type,
                kind_name: str) -> None:
    """PyTorch's argument-parser error for a C++ function's argument of the wrong type."""
    from .._device import device

    if not isinstance(value, kind) or (kind is str and isinstance(value, device)):
        raise TypeError(f"{func}(): argument '{arg}' (position {position}) must be {kind_name}, "
                        f"not {type(value).__name__}")


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast keeps a state for ``device_type`` (PyTorch's error for a string that
    names no device type)."""
    name = str(device_type)
    kind = name.split(":", 1)[0]
    if kind not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start "
                           f"of device string: {name}")
    return kind in DEFAULT_DTYPES


def _check_device_type_arg(device_type: Any) -> None:
    from .._device import device

    if not isinstance(device_type, str) or isinstance(device_type, device):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def _device_type(device_type: Any) -> str:
    """A device type autocast keeps a state for; PyTorch's errors for others."""
    name = str(device_type)
    kind = name.split(":", 1)[0]
    if kind not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start "
                           f"of device string: {name}")
    if kind not in DEFAULT_DTYPES:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{kind}'")
    return kind


def is_autocast_enabled(device_type: Any = None) -> bool:
    """Whether autocast is on for ``device_type`` in this thread (no argument: CUDA's, as
    PyTorch's legacy form)."""
    if device_type is None:
        return state.enabled["cuda"]
    _check_type("is_autocast_enabled", "device_type", 1, device_type, str, "str")
    return state.enabled[_device_type(device_type)]


def set_autocast_enabled(device_type: Any, enabled: Any = None) -> None:
    """``set_autocast_enabled(device_type, enabled)``, or PyTorch's legacy
    ``set_autocast_enabled(enabled)`` for CUDA."""
    if enabled is None and isinstance(device_type, bool):
        device_type, enabled = "cuda", device_type
    _check_type("set_autocast_enabled", "device_type", 1, device_type, str, "str")
    _check_type("set_autocast_enabled", "enabled", 2, enabled, bool, "bool")
    state.enabled[_device_type(device_type)] = enabled
    state.refresh()


def get_autocast_dtype(device_type: Any) -> D.DType:
    """The lower-precision dtype of autocast on ``device_type`` (cpu: bfloat16)."""
    _check_type("get_autocast_dtype", "device_type", 1, device_type, str, "str")
    return state.dtype[_device_type(device_type)]


def set_autocast_dtype(device_type: Any, dtype: Any) -> None:
    _check_type("set_autocast_dtype", "device_type", 1, device_type, str, "str")
    _check_type("set_autocast_dtype", "dtype", 2, dtype, D.DType, "runtime.dtype")
    state.dtype[_device_type(device_type)] = dtype


def is_autocast_cache_enabled() -> bool:
    return state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool (got {type(enabled).__name__})")
    state.cache_enabled = enabled


def clear_autocast_cache() -> None:
    state.cache.clear()


class autocast:  # noqa: N801 - PyTorch's name
    """``with autocast("cpu"):`` or ``@autocast("cpu")``: matrix products and convolutions in
    ``dtype`` (bfloat16 on the CPU), losses and a few others in float32, inputs of cat and
    stack promoted to the widest; leaves requiring grad cast once per region (cleared when
    the outermost region exits). Gradients come back in the parameters' dtype."""

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        _check_device_type_arg(device_type)
        self.device = _device_type(device_type)
        self.fast_dtype = state.dtype[self.device] if dtype is None else dtype
        self._cache_enabled = state.cache_enabled if cache_enabled is None else cache_enabled
        if enabled and self.device == "cuda":
            from .. import cuda

            if not cuda.is_available():
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                              "autocast.", stacklevel=2)
                enabled = False
        if enabled and self.fast_dtype not in D.LOW_FLOATS:
            name = self.device.upper()
            warnings.warn(f"In {name} autocast, but the target dtype is not supported. "
                          f"Disabling autocast.\n{name} Autocast only supports dtypes of "
                          "runtime.bfloat16, runtime.float16 currently.", stacklevel=2)
            enabled = False
        self._enabled = enabled

    def __enter__(self) -> autocast:
        # PyTorch's argument errors, raised on entry as its setters raise them
        _check_type("set_autocast_enabled", "enabled", 2, self._enabled, bool, "bool")
        _check_type("set_autocast_dtype", "dtype", 2, self.fast_dtype, D.DType, "runtime.dtype")
        if not isinstance(self._cache_enabled, bool):
            raise TypeError(f"enabled must be a bool (got {type(self._cache_enabled).__name__})")
        self.prev_cache_enabled = state.cache_enabled
        self.prev = state.enabled[self.device]
        self.prev_fastdtype = state.dtype[self.device]
        state.enabled[self.device] = self._enabled
        state.dtype[self.device] = self.fast_dtype
        state.nesting += 1
        state.cache_enabled = self._cache_enabled
        state.refresh()
        return self

    def __exit__(self, *exc: object) -> None:
        state.nesting -= 1
        if state.nesting == 0:  # leaving the outermost region: drop the weight cache
            state.cache.clear()
        state.enabled[self.device] = self.prev
        state.dtype[self.device] = self.prev_fastdtype
        state.cache_enabled = self.prev_cache_enabled
        state.refresh()

    def __call__(self, func: Fn) -> Fn:
        @functools.wraps(func)
        def decorated(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return decorated  # type: ignore[return-value]


def _cast(value: Any, device_type: str, dtype: D.DType) -> Any:
    """``value``'s floating tensors on ``device_type`` (but float64) in ``dtype``, through
    mappings and iterables, as PyTorch's ``torch.amp.autocast_mode._cast``."""
    from ..tensor import Tensor

    if isinstance(value, Tensor):
        eligible = (value.is_floating_point() and value.device.split(":", 1)[0] == device_type
                    and value.dtype is not D.float64)
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, abc.Iterable):
        iterable = (_cast(v, device_type, dtype) for v in value)
        return type(value)(iterable) if isinstance(value, (list, tuple)) else iterable
    return value


def custom_fwd(fwd: Any = None, *, device_type: str, cast_inputs: Any = None) -> Any:
    """For an ``autograd.Function``'s ``forward``: with ``cast_inputs``, its floating tensor
    inputs cast to it and autocast off inside where autocast is on; without, it runs as
    called. Either way the region's state is kept on ctx for ``custom_bwd``."""
    _check_device_type_arg(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        args[0]._fwd_used_autocast = False
        if not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        dtype = D.as_dtype(cast_inputs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast(args, device_type, dtype), **_cast(kwargs, device_type, dtype))

    return decorate_fwd


def custom_bwd(bwd: Any = None, *, device_type: str) -> Any:
    """For an ``autograd.Function``'s ``backward``: run in the autocast state its forward
    ran in (see ``custom_fwd``)."""
    _check_device_type_arg(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast,
                      dtype=args[0]._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
