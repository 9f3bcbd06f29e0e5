"""Devices: "cpu" runs on numpy, "cuda[:N]" on CuPy (an optional extra)."""

from __future__ import annotations

import contextlib
from types import ModuleType
from typing import Any

import numpy as np


def canonical_device(device: object) -> str:
    if device is None:
        return "cpu"
    name = str(device)
    if name == "cpu":
        return "cpu"
    if name == "cuda":
        return "cuda:0"
    if name.startswith("cuda:") and name[5:].isdigit():
        return name
    raise ValueError(f"unknown device {device!r}: expected 'cpu', 'cuda' or 'cuda:N'")


def cupy_module() -> ModuleType:
    try:
        import cupy  # type: ignore[import-not-found]
    except ImportError:
        raise RuntimeError(
            "device 'cuda' needs CuPy, which is not installed: "
            "pip install 'backplan[cuda]' on a machine with an NVIDIA GPU"
        ) from None
    return cupy


def array_module(device: str) -> ModuleType:
    return np if device == "cpu" else cupy_module()


def device_guard(device: str) -> Any:
    """A context in which CuPy works on ``device``: its kernels and allocations go there,
    whatever this thread's current device is (PyTorch's device guard); nothing on the CPU."""
    if device == "cpu":
        return contextlib.nullcontext()
    return cupy_module().cuda.Device(int(device[5:]))


def device_of_array(a: object) -> str:
    if isinstance(a, np.ndarray | np.generic):
        return "cpu"
    dev = getattr(a, "device", None)
    if dev is not None and type(a).__module__.startswith("cupy"):
        return f"cuda:{dev.id}"
    raise TypeError(f"unsupported array type {type(a).__name__}")


def move_array(a: object, device: str) -> object:
    src = device_of_array(a)
    if src == device:
        return a
    if device == "cpu":
        return a.get()  # type: ignore[attr-defined]
    with device_guard(device):
        return cupy_module().asarray(a)
