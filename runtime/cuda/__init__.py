"""``rt.cuda``: whether a GPU is usable here and how many (through CuPy, the optional extra that
runs "cuda" tensors), the current device, synchronizing, the memory cache and the per-GPU
random generators, with ``torch.cuda``'s names and its behaviour with and without a GPU.

Without CuPy this is PyTorch built without CUDA: ``device_count()`` is 0, seeding and
``empty_cache()`` do nothing, and what needs a device (``current_device()``,
``synchronize()``, ``initial_seed()``) raises its AssertionError "Torch not compiled with
CUDA enabled". With CuPy but no GPU (or no driver) those raise PyTorch's RuntimeError "No CUDA
GPUs are available"."""

from __future__ import annotations

import operator
from types import ModuleType
from typing import Any

from ..creation import Generator


def _cupy() -> ModuleType | None:
    try:
        import cupy  # type: ignore[import-not-found]
    except ImportError:
        return None
    return cupy


def device_count() -> int:
    """The CUDA devices CuPy sees; 0 without CuPy, a driver or a GPU."""
    cupy = _cupy()
    if cupy is None:
        return 0
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # no driver, no device: CuPy raises its own error types
        return 0


def is_available() -> bool:
    """Whether "cuda" tensors can be made here."""
    return device_count() > 0


def _lazy_init() -> ModuleType:
    """CuPy, where there is a GPU to use; PyTorch's errors where there is not."""
    cupy = _cupy()
    if cupy is None:
        raise AssertionError("Torch not compiled with CUDA enabled")
    if device_count() == 0:
        raise RuntimeError("No CUDA GPUs are available")
    return cupy


def current_device() -> int:
    """The index of this thread's current GPU."""
    return int(_lazy_init().cuda.runtime.getDevice())


def _device_index(device: Any) -> int:
    """A GPU's index from an int, "cuda[:N]" or an ``rt.device`` (None or "cuda": the
    current one), as PyTorch's ``_get_device_index``."""
    if device is None:
        return current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    from .._device import device as as_device

    dev = as_device(device) if isinstance(device, str) else device
    if not isinstance(dev, as_device):
        return operator.index(dev)
    if dev.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {dev}")
    return current_device() if dev.index is None else dev.index


def synchronize(device: Any = None) -> None:
    """Wait until every kernel queued on ``device`` (default: the current GPU) has run."""
    cupy = _lazy_init()
    with cupy.cuda.Device(_device_index(device)):
        cupy.cuda.runtime.deviceSynchronize()


def empty_cache() -> None:
    """Give the GPU memory CuPy's pools keep for reuse (and their pinned host memory) back
    to the driver, as PyTorch's caching allocator does; nothing without a GPU."""
    cupy = _cupy()
    if cupy is None or not is_available():
        return
    cupy.get_default_memory_pool().free_all_blocks()
    cupy.get_default_pinned_memory_pool().free_all_blocks()


# ------------------------------------------------------------------------ random generators

_generators: list[Generator] = []


def _default_generators() -> tuple[Generator, ...]:
    """One Generator a GPU (none without one), made when first asked for."""
    if not _generators:
        _generators.extend(Generator(f"cuda:{i}") for i in range(device_count()))
    return tuple(_generators)


def __getattr__(name: str) -> Any:
    if name == "default_generators":  # PyTorch's tuple, built lazily: it asks CuPy
        return _default_generators()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def manual_seed(seed: int) -> None:
    """Seed the current GPU's generator; nothing without a GPU (PyTorch defers the seed to a
    CUDA start that never comes)."""
    seed = int(seed)
    if is_available():
        _default_generators()[current_device()].manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seed every GPU's generator; nothing without a GPU."""
    seed = int(seed)
    for g in _default_generators():
        g.manual_seed(seed)


def seed() -> None:
    """Seed the current GPU's generator from fresh entropy; nothing without a GPU."""
    if is_available():
        _default_generators()[current_device()].seed()


def seed_all() -> None:
    """Seed every GPU's generator from fresh entropy (one seed for all, as PyTorch)."""
    gens = _default_generators()
    if gens:
        s = gens[0].seed()
        for g in gens[1:]:
            g.manual_seed(s)


def get_rng_state(device: Any = "cuda") -> Any:
    """That GPU's generator's state (a uint8 tensor on the CPU)."""
    _lazy_init()
    return _default_generators()[_device_index(device)].get_state()


def get_rng_state_all() -> list[Any]:
    """Every GPU's generator's state."""
    return [g.get_state() for g in _default_generators()]


def set_rng_state(new_state: Any, device: Any = "cuda") -> None:
    """Restore that GPU's generator's state from ``get_rng_state``."""
    _lazy_init()
    _default_generators()[_device_index(device)].set_state(new_state)


def set_rng_state_all(new_states: Any) -> None:
    """Restore every GPU's generator's state, in device order."""
    for g, state in zip(_default_generators(), new_states):
        g.set_state(state)


def initial_seed() -> int:
    """The current GPU's generator's seed."""
    _lazy_init()
    return _default_generators()[current_device()].initial_seed()


from . import amp as amp  # noqa: E402 - torch.cuda.amp, there once torch is imported
