"""Thread-local grad mode: no_grad, enable_grad, set_grad_enabled, inference_mode."""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class _State(threading.local):
    enabled: bool = True


_state = _State()


def is_grad_enabled() -> bool:
    return _state.enabled


def _typename(v: Any) -> str:
    return "Tensor" if type(v).__name__ == "Tensor" else type(v).__name__


def _set(enabled: bool) -> None:
    _state.enabled = enabled


class _GradModeContext:
    """Context manager and decorator; restores the previous mode on exit."""

    _mode: bool

    def __enter__(self) -> None:
        self._prev = _state.enabled
        # nothing is recorded under inference_mode, grad mode or not (as PyTorch's)
        _state.enabled = self._mode and not _inference.enabled

    def __exit__(self, *exc: object) -> None:
        _state.enabled = self._prev

    def clone(self) -> Any:
        return type(self)()

    def __call__(self, fn: F) -> F:
        if inspect.isgeneratorfunction(fn):
            return _wrap_generator(self, fn)
        mode = self._mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            prev = _state.enabled
            _state.enabled = mode and not _inference.enabled
            try:
                return fn(*args, **kwargs)
            finally:
                _state.enabled = prev

        return wrapper  # type: ignore[return-value]


def _wrap_generator(ctx: Any, fn: F) -> F:
    """A decorated generator function runs each of its steps inside a fresh copy of the
    context (``ctx.clone()``), and the caller's code between steps outside it, as PyTorch's."""

    @functools.wraps(fn)
    def generator_context(*args: Any, **kwargs: Any) -> Any:
        gen = fn(*args, **kwargs)
        try:
            with ctx.clone():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with ctx.clone():
                        gen.close()
                    raise
                except BaseException:
                    with ctx.clone():
                        response = gen.throw(*sys.exc_info())
                else:
                    with ctx.clone():
                        response = gen.send(request)
        except StopIteration as e:
            return e.value

    return generator_context  # type: ignore[return-value]


class _NoParamContext(_GradModeContext):
    """A context that takes no argument, so it also decorates bare (``@no_grad``), as
    PyTorch's."""

    def __new__(cls, orig_func: Callable[..., Any] | None = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamContext):  # noqa: N801 - PyTorch's name
    _mode = False


class enable_grad(_NoParamContext):  # noqa: N801
    _mode = True


class set_grad_enabled(_GradModeContext):  # noqa: N801
    """Sets the mode at construction (like torch), and restores it when used as a context."""

    def __init__(self, mode: bool) -> None:
        if type(mode) is not bool:  # PyTorch's argument parser takes a bool only
            raise TypeError("set_grad_enabled(): argument 'enabled' (position 1) must be bool, "
                            f"not {_typename(mode)}")
        self._mode = mode
        self._prev = _state.enabled
        _state.enabled = self._mode and not _inference.enabled

    @property
    def mode(self) -> bool:
        """PyTorch's attribute: the mode it sets."""
        return self._mode

    @property
    def prev(self) -> bool:
        """PyTorch's attribute: the mode before it."""
        return self._prev

    def __enter__(self) -> None:
        pass

    def clone(self) -> set_grad_enabled:
        return set_grad_enabled(self._mode)

    def __call__(self, fn: F) -> F:
        _state.enabled = self._prev  # construction set the mode; a decorator must not
        return super().__call__(fn)


class _InferenceState(threading.local):
    enabled: bool = False


_inference = _InferenceState()

# set when a thread first enters inference_mode(True), never cleared: until then no thread is
# in inference mode, and Tensor._make skips the thread-local read of every new tensor
inference_entered = False


def is_inference_mode_enabled() -> bool:
    return _inference.enabled


class inference_mode(_GradModeContext):  # noqa: N801
    """PyTorch's inference_mode(mode=True): grad mode off and ``is_inference_mode_enabled()``
    true inside; inference_mode(False) turns both back (grad mode on), as PyTorch's. Tensors
    made inside are inference tensors (``is_inference()``): autograd refuses to save them,
    and they take no in-place write and no requires_grad=True outside inference mode. Nothing
    is recorded inside, even under enable_grad (whose is_grad_enabled() is then False here,
    True in PyTorch, which records nothing all the same)."""

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode):  # used bare: @inference_mode
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)

    def __enter__(self) -> None:
        global inference_entered
        self._prev = _state.enabled
        self._prev_inference = _inference.enabled
        _state.enabled = not self.mode
        if self.mode:
            inference_entered = True  # before the thread's mode: Tensor._make reads it first
        _inference.enabled = self.mode

    def __exit__(self, *exc: object) -> None:
        _state.enabled = self._prev
        _inference.enabled = self._prev_inference

    def clone(self) -> inference_mode:
        return inference_mode(self.mode)

    def __call__(self, fn: F) -> F:
        if inspect.isgeneratorfunction(fn):
            return _wrap_generator(self, fn)
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(mode):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class _unsafe_preserve_version_counter(contextlib.ContextDecorator):  # noqa: N801 - PyTorch's
    """PyTorch's context manager and decorator that hides in-place changes from autograd:
    on exit the tensors' version counters go back to what they were on construction."""

    def __init__(self, tensors: Any) -> None:
        from ..tensor import Tensor

        self.tensors = (tensors,) if isinstance(tensors, Tensor) else tensors
        if not isinstance(self.tensors, tuple):
            raise AssertionError("Expected tensors to be a tuple")
        self.prev_versions = tuple(t._version for t in self.tensors)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        for t, version in zip(self.tensors, self.prev_versions, strict=True):
            t._vc.v = version
