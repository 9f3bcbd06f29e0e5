"""``rt.cuda``: whether a GPU is usable here, and how many (through CuPy, the optional
extra that runs "cuda" tensors)."""

from __future__ import annotations


def device_count() -> int:
    """The CUDA devices CuPy sees; 0 without CuPy, a driver or a GPU."""
    try:
        import cupy  # type: ignore[import-not-found]

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # no CuPy, no driver, no device: CuPy raises its own error types
        return 0


def is_available() -> bool:
    """Whether "cuda" tensors can be made here."""
    return device_count() > 0
