"""Anomaly mode: remember each node's forward stack; check backward outputs for NaN."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator
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


_evaluating = threading.local()


def record(node: Any) -> None:
    """Anomaly mode's metadata of a node being made: its forward traceback, and the node whose
    backward is running when it is made (PyTorch's assign_parent), if any."""
    node._trace = forward_trace()
    parent = getattr(_evaluating, "node", None)
    if parent is not None:
        node._anomaly_parent = parent


@contextlib.contextmanager
def evaluating(node: Any) -> Iterator[None]:
    """Marks ``node`` as the node whose backward runs on this thread (the parent of nodes made
    meanwhile)."""
    prev = getattr(_evaluating, "node", None)
    _evaluating.node = node
    try:
        yield
    finally:
        _evaluating.node = prev


def warn_error_in(node: Any) -> None:
    """PyTorch's anomaly-mode warnings for an error raised in a node's backward: the forward
    traceback the node remembered (none: made before anomaly mode was on), then the
    traceback of each node whose backward made it (its parents). A warning that cannot be
    issued (warnings turned into errors) goes to stderr, so the backward's own error is the
    one raised, as PyTorch's."""
    name, trace = node.name(), node._trace
    if trace:
        _warn(f"Error detected in {name}. Traceback of forward call that caused the "
              f"error:\n{trace}")
    else:
        _warn(f"Error detected in {name}. No forward pass information available. Enable "
              "detect anomaly during forward pass for more information.")
    parent = getattr(node, "_anomaly_parent", None)
    while parent is not None:
        if parent._trace:
            _warn(f"\n\nPrevious calculation was induced by {parent.name()}. Traceback of "
                  f"forward call that induced the previous calculation:\n{parent._trace}")
        parent = getattr(parent, "_anomaly_parent", None)


def _warn(msg: str) -> None:
    try:
        warnings.warn(msg, stacklevel=3)
    except Warning as w:
        print(f"{type(w).__name__}: {w}", file=sys.stderr)


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def forward_trace() -> str:
    """The user's stack at the forward call, without this package's own frames."""
    frames = [f for f in traceback.extract_stack() if not f.filename.startswith(_PACKAGE_DIR)]
    return "".join(traceback.format_list(frames))
