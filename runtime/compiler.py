"""``rt.compiler``: PyTorch's ``torch.compiler`` over the planner: ``compile``, ``disable``,
``set_stance``, ``reset``, ``is_compiling`` / ``is_dynamo_compiling`` / ``is_exporting``,
``list_backends`` and ``allow_in_graph``.

A compiled step (``rt.compile`` / ``planner.compile``) reads the stance at every call
(``planner.compile.CompiledStep``): "force_eager" runs it as written; "eager_on_recompile"
runs eagerly a call no plan fits (plans made already keep replaying); "fail_on_recompile"
raises there; "eager_then_compile" runs a step's first call eagerly and captures from its
second. A function wrapped by ``disable`` is never captured: a step that calls it runs
eagerly, with the planner's warning (``fullgraph=True``: an error)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .tracing import GraphBreak, is_tracing

__all__ = ["allow_in_graph", "compile", "disable", "is_compiling", "is_dynamo_compiling",
           "is_exporting", "list_backends", "reset", "set_stance"]

STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile",
           "eager_then_compile")


@dataclass(frozen=True)
class Stance:
    stance: str = "default"
    skip_guard_eval_unsafe: bool = False
    backend: Any = None  # force_backend as given (a torch backend name)
    planner_backend: str | None = None  # the planner's backend it maps to


_stance = Stance()


def stance() -> Stance:
    """The compiler's current stance (what ``set_stance`` set)."""
    return _stance


def _set(new: Stance) -> Stance:
    global _stance
    if is_tracing():
        raise RuntimeError("attempted to set_stance in a torch.compile region")
    prior, _stance = _stance, new
    return prior


class set_stance:  # noqa: N801 - PyTorch's name
    """Set the compiler's stance: as a function call (from now on), a context manager (for
    its block) or a decorator (for each call of the function). ``stance``: "default",
    "force_eager", "eager_on_recompile", "fail_on_recompile" or "eager_then_compile";
    ``force_backend`` (a backend name, with the default stance only) compiles every step
    with that backend; ``skip_guard_eval_unsafe`` is refused (the planner checks every
    guard)."""

    def __init__(self, stance: str = "default", *, skip_guard_eval_unsafe: bool = False,
                 force_backend: Any = None) -> None:
        if force_backend is not None and stance != "default":
            raise RuntimeError("non-default stance cannot have force_backend set")
        if stance not in STANCES:
            raise ValueError(f"set_stance: unknown stance {stance!r}; expected one of "
                             f"{', '.join(STANCES)} (aot_eager_then_compile has no "
                             "counterpart here)")
        if skip_guard_eval_unsafe:
            raise NotImplementedError("set_stance(skip_guard_eval_unsafe=True): the planner "
                                      "checks every guard of a plan before replaying it")
        mapped = None
        if force_backend is not None:
            from planner.torch_api import planner_backend

            mapped = planner_backend(force_backend)  # torch's error for a name it lacks
        self.stance = Stance(stance, False, force_backend, mapped)
        self.prev = _set(self.stance)

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        _set(self.prev)  # as a decorator: set for each call, not from now on

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper

    def __enter__(self) -> None:
        _set(self.stance)

    def __exit__(self, *exc: Any) -> None:
        _set(self.prev)

    def clone(self) -> set_stance:
        return type(self)(self.stance.stance, force_backend=self.stance.backend)


def compile(*args: Any, **kwargs: Any) -> Any:  # noqa: A001 - torch's name
    """``torch.compiler.compile``: ``rt.compile``."""
    from . import compile as compile_

    return compile_(*args, **kwargs)


def disable(fn: Callable[..., Any] | None = None, recursive: bool = True, *,
            reason: str | None = None) -> Any:
    """``fn`` never captured (a decorator too, with or without arguments): called within a
    step's capture it stops the capture, so that step runs eagerly (the planner warns, or
    raises with ``fullgraph=True``); called anywhere else it runs as written."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    name = getattr(fn, "__qualname__", None) or type(fn).__name__

    @functools.wraps(fn)
    def disabled(*args: Any, **kwargs: Any) -> Any:
        if is_tracing():
            why = f": {reason}" if reason else ""
            raise GraphBreak(f"{name} is torch.compiler.disable'd{why}")
        return fn(*args, **kwargs)

    disabled._torchdynamo_disable = True  # type: ignore[attr-defined]
    return disabled


def is_compiling() -> bool:
    """Whether the caller runs inside a step's capture (the planner tracing it)."""
    return is_tracing()


def is_dynamo_compiling() -> bool:
    """As ``is_compiling``: the planner's capture is the only tracer here."""
    return is_tracing()


def is_exporting() -> bool:
    """Always False: there is no export tracer here."""
    return False


def reset() -> None:
    """Forget every compiled step's plans (each captures again on its next call), as
    ``torch.compiler.reset`` clears Dynamo's caches; compiled kernels stay in the code
    cache."""
    import sys

    module = sys.modules.get("planner.compile")
    if module is not None:  # nothing was compiled where the planner was never imported
        module.reset_all()


def list_backends(exclude_tags: tuple[str, ...] | None = ("debug", "experimental")
                  ) -> list[str]:
    """The backend names ``rt.compile`` takes: torch's compiling ones, and with
    ``exclude_tags=()`` its debugging ones (eager, aot_eager ...) too."""
    from planner.torch_api import BACKENDS

    debug = {"eager", "aot_eager", "aot_eager_default_partitioner",
             "aot_eager_decomp_partition"}
    if exclude_tags is None or not set(exclude_tags) & {"debug"}:
        return sorted(BACKENDS)
    return sorted(b for b in BACKENDS if b not in debug)


def allow_in_graph(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` as it is: the planner's capture records the tensor ops any function runs (it
    does not need a function marked to keep it in the graph)."""
    return fn
