"""torch.compile's module API on the planner: ``planner.compile(module)`` returns an
``OptimizedModule``, as ``torch.compile(module)`` returns ``torch._dynamo.eval_frame.
OptimizedModule`` (``runtime.compile``, torch.compile's signature: planner.torch_api).

Code written for PyTorch does ``model = torch.compile(model)`` and keeps using ``model`` as a
module: its parameters for the optimizer, ``train()``/``eval()``, ``state_dict()``,
``zero_grad()``, ``.to()``, its own attributes. The wrapper is an ``nn.Module`` holding the
module as its registered submodule ``_orig_mod`` (so the state dict's keys start with
``_orig_mod.``, as torch's), forwarding the attribute reads it lacks to it and its attribute
writes too; its ``forward`` is the compiled step (a ``CompiledStep`` over the module's
``__call__``: the module's own forward hooks run inside the step and are guarded as any
step's are; hooks registered on the wrapper run outside it, as torch's).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sized
from typing import TYPE_CHECKING, Any

from runtime.nn.module import Module, global_hook_ids
from runtime.tracing import is_tracing

if TYPE_CHECKING:
    from .compile import CompiledStep

# the attributes the wrapper keeps as its own; any other is the original module's
_OWN = frozenset({"_orig_mod", "forward", "_step", "_make_step", "_super_module_initialized",
                  "__dict__"})


class OptimizedModule(Module):
    """``module`` compiled: what ``planner.compile(module)`` and ``rt.compile(module)`` return.

    It is an ``nn.Module`` whose one child is the original module, ``_orig_mod``: parameters,
    buffers, modes, ``state_dict()`` (keys prefixed ``_orig_mod.``, as torch's), ``.to()`` and
    ``zero_grad()`` reach the original module's tensors (the same objects). Reading an
    attribute the wrapper lacks reads the original module's (``cm.hidden_size``); setting or
    deleting one sets or deletes the original module's; ``len(cm)`` is the module's.

    Calling it runs ``forward``, the compiled step (``planner.compile.CompiledStep``), whose
    inspection is ``cm.forward.plan``, ``cm.forward.captures``, ``cm.forward.lower(x)``,
    ``cm.forward.wait()``; an attribute neither the wrapper nor the module has is read from
    the step too (``cm.plan``, ``cm.captures``), and ``planner.explain(cm, x)`` explains it.
    """

    _orig_mod: Module
    forward: CompiledStep  # type: ignore[assignment]  # the compiled step, as torch's

    def __init__(self, mod: Module, make_step: Callable[[Module], CompiledStep]) -> None:
        if not isinstance(mod, Module):
            raise TypeError(f"OptimizedModule wraps a runtime.nn.Module, got "
                            f"{type(mod).__name__}")
        # first: attribute reads and writes go through ``_orig_mod`` (torch's order)
        object.__setattr__(self, "_orig_mod", mod)
        self._super_module_initialized = False
        super().__init__()
        self._super_module_initialized = True
        self._orig_mod = mod  # registered: the state dict's ``_orig_mod.`` prefix
        self._make_step = make_step
        self._step = self.forward = make_step(mod)  # ``forward`` may be replaced, as torch's

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(global_hook_ids()) > 3:  # beyond the three separators: a global hook
            warnings.warn(
                "Using `torch.compile(module)` when there are global hooks on modules (e.g., "
                "from `register_module_forward_hook`); this will cause the hooks to fire an "
                "extra time for the `OptimizedModule` created by `torch.compile(module)`. If "
                "this causes undesired behavior, please try using `module.compile()`, or use "
                "the per-module hooks instead", stacklevel=2)
        step = self.forward
        if step is not self._step or self._has_hooks() or is_tracing():
            return super().__call__(*args, **kwargs)  # hooks of the wrapper's, around forward
        # the step's call without Module.__call__'s frame (what it would run is nothing
        # here): the step's warnings, at a fixed depth, point at the caller's line
        with step.lock:
            return step._call(args, kwargs)

    def _has_hooks(self) -> bool:
        """Whether Module.__call__ would run hooks around ``forward`` (this wrapper's or
        global ones)."""
        return bool(self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                    or self._backward_pre_hooks or len(global_hook_ids()) > 3)

    @property  # type: ignore[override]
    def training(self) -> bool:  # the original module's, as torch's
        return self._orig_mod.training

    @training.setter
    def training(self, value: bool) -> None:
        # Module.__init__ sets the default; the flag is the original module's
        if self.__dict__.get("_super_module_initialized", False):
            self._orig_mod.training = value

    def __getattr__(self, name: str) -> Any:
        if name == "_orig_mod":
            return self.__dict__["_modules"]["_orig_mod"]
        try:
            return getattr(self._orig_mod, name)
        except AttributeError:
            step = self.__dict__.get("forward")
            if step is None or name.startswith("__") or not hasattr(step, name):
                raise  # the module's error, as torch's
            return getattr(step, name)  # the step's inspection: plan, captures, lower...

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(type(self), name) or name in _OWN:
            super().__setattr__(name, value)
        else:
            setattr(self._orig_mod, name, value)

    def __delattr__(self, name: str) -> None:
        if hasattr(type(self), name) or name in _OWN:
            super().__delattr__(name)
        else:
            delattr(self._orig_mod, name)

    def __len__(self) -> int:
        if isinstance(self._orig_mod, Sized):
            return len(self._orig_mod)
        raise TypeError(f"{type(self._orig_mod).__name__} does not support len()")

    def __dir__(self) -> list[str]:
        own = self._orig_mod.__dir__()
        return own + [a for a in super().__dir__() if a not in own]

    def __reduce__(self) -> tuple[Any, ...]:
        # a copy compiles its copy of the module anew, with the same options (torch's)
        return (type(self), (self._orig_mod, self._make_step))
