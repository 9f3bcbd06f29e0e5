"""``torch.accelerator``: the device-neutral questions pytorch/examples' scripts open with
(``device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else
"cpu"``). The runtime's one accelerator is CUDA through CuPy: "built" when CuPy imports, as
PyTorch's accelerator is the one it was compiled with; without it there is none, and what
needs a device raises PyTorch's RuntimeError."""

from __future__ import annotations

from typing import Any

from . import cuda
from ._device import device

_NONE_AVAILABLE = "Cannot access accelerator device when none is available."


def current_accelerator(check_available: bool = False) -> device | None:
    """``device("cuda")`` where CuPy imports (and, with ``check_available``, a GPU is
    usable); None otherwise."""
    if cuda._cupy() is None or (check_available and not cuda.is_available()):
        return None
    return device("cuda")


def is_available() -> bool:
    return current_accelerator() is not None and cuda.is_available()


def device_count() -> int:
    return 0 if current_accelerator() is None else cuda.device_count()


def _cupy_or_raise() -> Any:
    if current_accelerator() is None:
        raise RuntimeError(_NONE_AVAILABLE)
    return cuda._lazy_init()


def current_device_index() -> int:
    _cupy_or_raise()
    return cuda.current_device()


def _index(dev: Any, optional: bool) -> int:
    if dev is None and optional:
        return current_device_index()
    if dev is None:
        raise ValueError(f"Expected a torch.device with a specified index or an integer, "
                           f"but got:{dev}")
    return cuda._device_index(dev)


def set_device_index(dev: Any, /) -> None:
    """Make ``dev`` (an index, "cuda:N" or a device) this thread's current GPU."""
    cupy = _cupy_or_raise()
    cupy.cuda.runtime.setDevice(_index(dev, optional=False))


def synchronize(dev: Any = None, /) -> None:
    """Wait for the kernels queued on ``dev`` (default: the current GPU)."""
    _cupy_or_raise()
    cuda.synchronize(_index(dev, optional=True))


def empty_cache() -> None:
    _cupy_or_raise()
    cuda.empty_cache()


class device_index:  # noqa: N801 - PyTorch's name
    """``with device_index(i):`` GPU ``i`` is current inside, the previous one after; None
    changes nothing."""

    def __init__(self, dev: int | None, /) -> None:
        self.idx = dev
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc_info: object) -> None:
        if self.idx is not None:
            set_device_index(self.prev_idx)


__all__ = ["current_accelerator", "current_device_index", "device_count", "device_index",
           "empty_cache", "is_available", "set_device_index", "synchronize"]
