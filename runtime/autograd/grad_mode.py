"""Thread-local grad mode: no_grad, enable_grad, set_grad_enabled."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class _State(threading.local):
    enabled: bool = True


_state = _State()


def is_grad_enabled() -> bool:
    return _state.enabled


def _set(enabled: bool) -> None:
    _state.enabled = enabled


class _GradModeContext:
    """Context manager and decorator; restores the previous mode on exit."""

    _mode: bool

    def __enter__(self) -> None:
        self._prev = _state.enabled
        _state.enabled = self._mode

    def __exit__(self, *exc: object) -> None:
        _state.enabled = self._prev

    def __call__(self, fn: F) -> F:
        mode = self._mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            prev = _state.enabled
            _state.enabled = mode
            try:
                return fn(*args, **kwargs)
            finally:
                _state.enabled = prev

        return wrapper  # type: ignore[return-value]


class no_grad(_GradModeContext):  # noqa: N801 - PyTorch's name
    _mode = False


class enable_grad(_GradModeContext):  # noqa: N801
    _mode = True


class set_grad_enabled(_GradModeContext):  # noqa: N801
    """Sets the mode at construction (like torch), and restores it when used as a context."""

    def __init__(self, mode: bool) -> None:
        self._mode = bool(mode)
        self._prev = _state.enabled
        _state.enabled = self._mode

    def __enter__(self) -> None:
        pass

    def __call__(self, fn: F) -> F:
        _state.enabled = self._prev  # construction set the mode; a decorator must not
        return super().__call__(fn)
