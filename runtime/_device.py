"""Devices: "cpu" runs on numpy, "cuda[:N]" on CuPy (an optional extra)."""

from __future__ import annotations

import builtins
import contextlib
import operator
from types import ModuleType
from typing import Any

import numpy as np


# the device types PyTorch 2.13's parser knows, in the order its error lists them
TORCH_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
                "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                "privateuseone")


class device(str):  # noqa: N801 - PyTorch's name
    """A device by type and index: ``device("cpu")``, ``device("cuda:1")``,
    ``device("cuda", 1)``, with ``.type`` and ``.index``; what ``Tensor.device`` is. It is
    also the string it names ("cpu", "cuda:1"), so it goes wherever a device string does and
    equals that string."""

    __slots__ = ()

    def __new__(cls, type: str | device, index: int | None = None) -> device:  # noqa: A002
        if isinstance(type, device):
            if index is None:
                return type
            type = type.type
        if not isinstance(type, str) and hasattr(builtins.type(type), "__index__") \
                and not isinstance(type, bool) and index is None:
            # an index alone: the accelerator's (PyTorch's ``device(0)``)
            from . import cuda

            if not cuda.is_available():
                raise RuntimeError("Cannot access accelerator device when none is available.")
            type, index = "cuda", operator.index(type)
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments: expected "
                            f"a string, got {builtins.type(type).__name__}")
        if not type:
            raise RuntimeError("Device string must not be empty")
        name, colon, idx = type.partition(":")
        # PyTorch's parse: a type of letters and underscores, then ":N" (no sign, no leading
        # zero); a known type of another backend than these two is refused as unsupported
        if not name or not all(c.isalpha() or c == "_" for c in name) or not name.isascii() \
                or (colon and not (idx.isdigit() and idx.isascii()
                                   and (idx == "0" or idx[0] != "0"))):
            raise RuntimeError(f"Invalid device string: '{type}'")
        if idx:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was "
                                   f"passed explicitly: {type}")
            index = int(idx)
        if name not in TORCH_DEVICE_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(TORCH_DEVICE_TYPES)} device type at start "
                               f"of device string: {type}")
        if name not in ("cpu", "cuda"):
            raise RuntimeError(f"device type '{name}' is not supported here: this runtime runs "
                               f"on 'cpu' and 'cuda' (device string: {type})")
        if index is not None:
            try:
                index = operator.index(index)
            except TypeError:
                raise TypeError(f"device() received an invalid combination of arguments: "
                                f"index must be an int, got {builtins.type(index).__name__}"
                                ) from None
            if index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
        return super().__new__(cls, name if index is None else f"{name}:{index}")

    @property
    def type(self) -> str:  # noqa: A003
        # a plain str: str.partition gives back ``self`` (a device) where there is no ":"
        return str.__str__(self).partition(":")[0]

    @property
    def index(self) -> int | None:
        idx = self.partition(":")[2]
        return int(idx) if idx else None

    def __str__(self) -> str:
        return str.__str__(self)

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return device, (str(self),)

    def __enter__(self) -> device:
        """``with device("cuda"):`` the device factory functions make tensors on (as
        ``set_default_device``), until the block ends."""
        _SAVED.append(_DEFAULT["device"])
        _DEFAULT["device"] = canonical_device(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _DEFAULT["device"] = _SAVED.pop()


# the device factory functions (zeros, tensor, randn, nn layers' parameters ...) make tensors
# on where none is named: PyTorch's default device (set_default_device, ``with device(...)``)
_DEFAULT: dict[str, str] = {"device": "cpu"}
_SAVED: list[str] = []


def default_device() -> str:
    """The canonical name of the default device (see ``_DEFAULT``)."""
    return _DEFAULT["device"]


def set_default(name: Any) -> None:
    """Make ``name`` (None: the CPU) the default device."""
    _DEFAULT["device"] = "cpu" if name is None else canonical_device(device(name))


def factory_device(name: Any) -> str:
    """The canonical device a factory function makes its tensor on: ``name``, or the default
    device where it is None."""
    return canonical_device(_DEFAULT["device"] if name is None else name)


_DEVICES: dict[str, device] = {}


def as_device(name: str) -> device:
    """The one ``device`` object for a canonical device string (tensors share them)."""
    found = _DEVICES.get(name)
    if found is None:
        found = _DEVICES[name] = device(name)
    return found


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
    if not isinstance(device, str):  # an index (the accelerator's), another object
        return canonical_device(globals()["device"](device))
    parsed = globals()["device"](name)  # PyTorch's error for the string, where it has one
    if parsed.type == "cpu":  # "cpu:N": the CPU, as PyTorch's tensors are on
        return "cpu"
    raise ValueError(f"unknown device {name!r}: expected 'cpu', 'cuda' or 'cuda:N'")


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


_NUMPY_TYPES = (np.ndarray, np.generic)  # (a union written in the test is made at each call)


def device_of_array(a: object) -> str:
    if isinstance(a, _NUMPY_TYPES):
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
