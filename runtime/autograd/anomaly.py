"""Anomaly mode: remember each node's forward stack; check backward outputs for NaN."""

from __future__ import annotations

import functools
import os
import traceback
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_global_enabled = False
_check_nan = True


def is_anomaly_enabled() -> bool:
    return _global_enabled


def is_anomaly_check_nan_enabled() -> bool:
    return _check_nan


def _set(mode: bool, check_nan: bool) -> None:
    """PyTorch's torch.set_anomaly_enabled, whose argument parser takes bools only."""
    global _global_enabled, _check_nan
    for i, (name, v) in enumerate((("enabled", mode), ("check_nan", check_nan))):
        if type(v) is not bool:
            raise TypeError(f"set_anomaly_enabled(): argument '{name}' (position {i + 1}) must "
                            f"be bool, not {type(v).__name__}")
    _global_enabled, _check_nan = mode, check_nan


class detect_anomaly:  # noqa: N801 - PyTorch's name
    """Context manager and decorator: each node remembers its forward traceback, an error in
    a backward warns with it, and (check_nan) a NaN in a node's gradients raises."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self.prev = _global_enabled
        self.prev_check_nan = _check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self) -> None:
        _set(True, self.check_nan)

    def __exit__(self, *exc: object) -> None:
        _set(self.prev, self.prev_check_nan)

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class set_detect_anomaly:  # noqa: N801 - PyTorch's name
    """Sets anomaly mode at construction; as a context manager, restores the previous mode on
    exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = _global_enabled
        self.prev_check_nan = _check_nan
        _set(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _set(self.prev, self.prev_check_nan)


def warn_error_in(name: str, trace: str | None) -> None:
    """PyTorch's anomaly-mode warning for an error raised in a node's backward, with the
    forward traceback the node remembered (none: made before anomaly mode was on)."""
    if trace:
        warnings.warn(f"Error detected in {name}. Traceback of forward call that caused the "
                      f"error:\n{trace}", stacklevel=2)
    else:
        warnings.warn(f"Error detected in {name}. No forward pass information available. Enable "
                      "detect anomaly during forward pass for more information.", stacklevel=2)


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def forward_trace() -> str:
    """The user's stack at the forward call, without this package's own frames."""
    frames = [f for f in traceback.extract_stack() if not f.filename.startswith(_PACKAGE_DIR)]
    return "".join(traceback.format_list(frames))
