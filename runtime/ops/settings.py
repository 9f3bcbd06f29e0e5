"""PyTorch's global settings the runtime lacked: print options, the default device (the CPU
here), float32 matmul precision, warn-always, the deterministic debug mode, interop threads,
flush-denormal, and small queries (typename, is_storage, get_device)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

from .. import _tensor_str
from .._device import device as Device
from ..tensor import Tensor

_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80),
             "full": (4, math.inf, 3, 80)}


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """How tensors print: digits after the point, the element count past which they are
    summarized (by ``edgeitems`` at each end), the line width, and scientific notation
    forced on or off (None: chosen per tensor). ``profile``: "default", "short" or "full"
    sets the first four first (another name is ignored, as PyTorch's)."""
    if profile in _PROFILES:
        (_tensor_str.PRECISION, _tensor_str.THRESHOLD, _tensor_str.EDGE_ITEMS,
         _tensor_str.LINE_WIDTH) = _PROFILES[profile]
    if precision is not None:
        _tensor_str.PRECISION = precision
    if threshold is not None:
        _tensor_str.THRESHOLD = threshold
    if edgeitems is not None:
        _tensor_str.EDGE_ITEMS = edgeitems
    if linewidth is not None:
        _tensor_str.LINE_WIDTH = linewidth
    _tensor_str.SCI_MODE = sci_mode


def get_default_device() -> Device:
    from .._device import default_device

    return Device(default_device())


def set_default_device(device: Any) -> None:
    """The device factory functions make tensors on where none is named (None: the CPU);
    ``with rt.device(...)`` sets it for a block."""
    from .._device import set_default

    set_default(device)


_MATMUL_PRECISIONS = ("highest", "high", "medium")
_state: dict[str, Any] = {"matmul_precision": "highest", "warn_always": False,
                          "interop_threads": 1}


def get_float32_matmul_precision() -> str:
    return _state["matmul_precision"]


def set_float32_matmul_precision(precision: str) -> None:
    """Kept and reported: float32 products here are always computed in full float32
    ("highest"), which the other settings permit."""
    if precision not in _MATMUL_PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _state["matmul_precision"] = precision


def set_warn_always(b: bool) -> None:
    _state["warn_always"] = bool(b)


def is_warn_always_enabled() -> bool:
    return _state["warn_always"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """0/"default": off, 1/"warn", 2/"error": use_deterministic_algorithms on (warn_only for
    1)."""
    from .._determinism import use_deterministic_algorithms

    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    from .._determinism import (are_deterministic_algorithms_enabled,
                                is_deterministic_algorithms_warn_only_enabled)

    if not are_deterministic_algorithms_enabled():
        return 0
    return 1 if is_deterministic_algorithms_warn_only_enabled() else 2


def get_num_interop_threads() -> int:
    return _state["interop_threads"]


def set_num_interop_threads(n: int, /) -> None:
    """Kept and reported: the runtime runs no inter-op thread pool (its executor's threads
    follow set_num_threads)."""
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        raise RuntimeError("Expected positive number of threads")
    _state["interop_threads"] = n


def set_flush_denormal(mode: bool) -> bool:
    """Whether flushing denormals could be set: False, numpy's kernels keep them."""
    return False


def typename(obj: Any) -> str:
    """A tensor's type name (its ``type()``), else the object's class name."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(type(obj), "__module__", "")
    name = type(obj).__qualname__
    return name if module in ("builtins", "__builtin__", None) else f"{module}.{name}"


def is_storage(obj: Any) -> bool:
    """False: the runtime has no storage objects (a tensor's storage is its array)."""
    return False


def get_device(input: Tensor) -> int:  # noqa: A002 - PyTorch's name
    """The GPU ordinal of input (-1: the CPU)."""
    return input.get_device()


def is_vulkan_available() -> bool:
    return False


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Anomaly mode on or off (autograd.set_detect_anomaly without its context)."""
    from ..autograd.anomaly import _set

    _set(enabled, check_nan)


def init_num_threads() -> None:
    """Nothing to do: the runtime's thread pools start on first use."""


def is_distributed(input: Tensor) -> bool:  # noqa: A002
    return False


def _volatile(self: Tensor) -> bool:
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                  stacklevel=2)
    return False


def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Whether both tensors are the same memory with the same shape and strides."""
    return self.data_ptr() == tensor.data_ptr() and tuple(self.shape) == tuple(tensor.shape) \
        and self.stride() == tensor.stride() and self.dtype is tensor.dtype \
        and self.device == tensor.device


def reinforce(self: Tensor, reward: Any) -> None:
    raise RuntimeError("reinforce() was removed.\nUse torch.distributions instead.\nSee "
                       "https://pytorch.org/docs/main/distributions.html")


# --- autocast at torch level (the legacy per-device names deprecated, as PyTorch's) ----------


def set_autocast_enabled(device_type: Any, enabled: bool | None = None) -> None:
    """Autocast on or off for ``device_type``; the legacy one-argument form sets CUDA's."""
    from ..amp import autocast_mode

    if enabled is None:
        device_type, enabled = "cuda", device_type
    autocast_mode.set_autocast_enabled(device_type, enabled)


def _deprecated_autocast(old: str, new: str, call: Callable[..., Any]) -> Callable[..., Any]:
    def fn(*args: Any) -> Any:
        warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.",
                      DeprecationWarning, stacklevel=2)
        return call(*args)

    fn.__name__ = fn.__qualname__ = old.split("(")[0]
    return fn


def _autocast_functions() -> dict[str, Callable[..., Any]]:
    from ..amp import autocast_mode as A

    legacy = {
        "get_autocast_cpu_dtype": ("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')",
                                   lambda: A.get_autocast_dtype("cpu")),
        "get_autocast_gpu_dtype": ("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')",
                                   lambda: A.get_autocast_dtype("cuda")),
        "is_autocast_cpu_enabled": ("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')",
                                    lambda: A.is_autocast_enabled("cpu")),
        "set_autocast_cpu_enabled": ("set_autocast_cpu_enabled(enabled)",
                                     "set_autocast_enabled('cpu', enabled)",
                                     lambda enabled: A.set_autocast_enabled("cpu", enabled)),
        "set_autocast_cpu_dtype": ("set_autocast_cpu_dtype(dtype)",
                                   "set_autocast_dtype('cpu', dtype)",
                                   lambda dtype: A.set_autocast_dtype("cpu", dtype)),
        "set_autocast_gpu_dtype": ("set_autocast_gpu_dtype(dtype)",
                                   "set_autocast_dtype('cuda', dtype)",
                                   lambda dtype: A.set_autocast_dtype("cuda", dtype)),
    }
    found: dict[str, Callable[..., Any]] = {
        name: _deprecated_autocast(old, new, call) for name, (old, new, call) in legacy.items()}
    found.update(set_autocast_enabled=set_autocast_enabled,
                 set_autocast_dtype=A.set_autocast_dtype,
                 is_autocast_cache_enabled=A.is_autocast_cache_enabled,
                 set_autocast_cache_enabled=A.set_autocast_cache_enabled,
                 clear_autocast_cache=A.clear_autocast_cache)
    return found


FUNCTIONS: dict[str, Callable[..., Any]] = {fn.__name__: fn for fn in (
    set_printoptions, get_default_device, set_default_device, get_float32_matmul_precision,
    set_float32_matmul_precision, set_warn_always, is_warn_always_enabled,
    set_deterministic_debug_mode, get_deterministic_debug_mode, get_num_interop_threads,
    set_num_interop_threads, set_flush_denormal, typename, is_storage, get_device,
    set_anomaly_enabled, init_num_threads, is_distributed, is_vulkan_available)}
FUNCTIONS.update(_autocast_functions())
METHODS: dict[str, Any] = {"is_distributed": is_distributed, "volatile": property(_volatile),
                           "is_set_to": is_set_to, "reinforce": reinforce}
