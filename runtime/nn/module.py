"""`Module`: the container of parameters, buffers and submodules, as in `torch.nn.Module`."""

from __future__ import annotations

import functools
import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from runtime.autograd import no_grad
from runtime.autograd.node import _HookDict
from runtime.tracing import GraphBreak
from runtime.tracing import _state as _trace_state
from runtime.nn.parameter import Buffer, Parameter, is_lazy
from runtime.tensor import Tensor

if TYPE_CHECKING:
    from typing_extensions import Self


class _IncompatibleKeys(NamedTuple):
    """What ``load_state_dict`` returns, with PyTorch's name and repr."""

    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (f"_IncompatibleKeys(missing_keys={self.missing_keys!r}, "
                f"unexpected_keys={self.unexpected_keys!r})")

    __str__ = __repr__


_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


def _addindent(s: str, num_spaces: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * num_spaces + line for line in lines[1:])


def zero_grads(params: Iterable[Tensor], set_to_none: bool) -> None:
    """Drop (`set_to_none`) or zero in place, detached, the gradients of `params`."""
    for p in params:
        if set_to_none:
            p.grad = None  # unread: a compiled step need not guard on whether it was set
            continue
        if p.grad is None:
            continue
        if p.grad.grad_fn is not None:
            p.grad.detach_()
        else:
            p.grad.requires_grad_(False)
        p.grad.zero_()


_structure_version = 0  # bumped by every change to any module's attributes, children or mode


def structure_version() -> int:
    """Compiled steps skip re-checking their modules while this is unchanged."""
    return _structure_version


def _changed() -> None:
    global _structure_version
    _structure_version += 1


class RemovableHandle:
    """Removes the hook it was returned for (``handle.remove()``, or leaving a ``with``), and
    its id from the sets that mark how to call it (``flags``: with kwargs, always called).
    It holds its hooks' dict weakly, as torch's (``hooks_dict_ref()``: None once the
    dict is gone)."""

    _next_id = 0

    def __init__(self, hooks: dict[int, Any], *flags: set[int]) -> None:
        self.hooks_dict_ref = weakref.ref(hooks)
        self.flags = flags
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1
        if _trace_state.tracer is not None:  # registered by a step being captured
            _trace_state.tracer.on_hook(self)

    def remove(self) -> None:
        hooks = self.hooks_dict_ref()
        if hooks is not None and hooks.pop(self.id, None) is not None:
            _changed()
        for flag in self.flags:
            flag.discard(self.id)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


# hooks of every module (torch.nn.modules.module.register_module_*_hook), run before each
# module's own
_global_forward_pre_hooks: dict[int, Callable[..., Any]] = _HookDict()
_global_forward_hooks: dict[int, Callable[..., Any]] = _HookDict()
_global_backward_pre_hooks: dict[int, Callable[..., Any]] = _HookDict()
_global_backward_hooks: dict[int, Callable[..., Any]] = _HookDict()
_global_hooks_with_kwargs: set[int] = set()
_global_forward_hooks_always_called: set[int] = set()


def _add_global_hook(hooks: dict[int, Callable[..., Any]], hook: Callable[..., Any]
                     ) -> RemovableHandle:
    handle = RemovableHandle(hooks, _global_hooks_with_kwargs,
                             _global_forward_hooks_always_called)
    hooks[handle.id] = hook
    _changed()  # a compiled step re-captures: the hook's effects are part of the step
    return handle


def global_hook_ids() -> tuple[int, ...]:
    """The ids of the module-wide hooks, by kind (what a compiled step's module guard reads)."""
    return (*_global_forward_pre_hooks, -1, *_global_forward_hooks, -2,
            *_global_backward_pre_hooks, -3, *_global_backward_hooks)


def register_module_forward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """hook(module, args) -> None or new args, run before every module's forward."""
    return _add_global_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook: Callable[..., Any], *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """hook(module, args, output) -> None or a new output, run after every module's
    forward (hook(module, args, kwargs, output) with with_kwargs)."""
    handle = _add_global_hook(_global_forward_hooks, hook)
    if with_kwargs:
        _global_hooks_with_kwargs.add(handle.id)
    if always_call:
        _global_forward_hooks_always_called.add(handle.id)
    return handle


# hooks of every module's registrations (torch.nn.modules.module.register_module_*_
# registration_hook): hook(module, name, value) -> None or the value registered instead
_global_parameter_registration_hooks: dict[int, Callable[..., Any]] = _HookDict()
_global_buffer_registration_hooks: dict[int, Callable[..., Any]] = _HookDict()
_global_module_registration_hooks: dict[int, Callable[..., Any]] = _HookDict()


def register_module_parameter_registration_hook(hook: Callable[..., Any]
                                                ) -> RemovableHandle:
    """hook(module, name, param) -> None or a new param, run by every register_parameter of
    a parameter (not of None)."""
    return _add_global_hook(_global_parameter_registration_hooks, hook)


def register_module_buffer_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """hook(module, name, buffer) -> None or a new buffer, run by every register_buffer."""
    return _add_global_hook(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """hook(module, name, submodule) -> None or a new submodule, run by every add_module
    and every assignment of a submodule (or None in place of one)."""
    return _add_global_hook(_global_module_registration_hooks, hook)


def _registered(hooks: dict[int, Callable[..., Any]], module: Module, name: str, value: Any
                ) -> Any:
    """value, as the registration hooks replace it, in order."""
    for hook in list(hooks.values()):
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value


# whether the module-wide backward hooks are full ones (None: none registered yet)
_global_is_full_backward_hook: bool | None = None


def _mixed_hooks_error(scope: str) -> RuntimeError:
    return RuntimeError(f"Cannot use both regular backward hooks and full backward hooks "
                        f"{scope}. Please use only one of them.")


def register_module_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """PyTorch's deprecated Module.register_backward_hook for every module."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise _mixed_hooks_error("as a global Module hook")
    _global_is_full_backward_hook = False
    return _add_global_hook(_global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Module.register_full_backward_pre_hook for every module."""
    return _add_global_hook(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Module.register_full_backward_hook for every module."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise _mixed_hooks_error("as a global Module hook")
    _global_is_full_backward_hook = True
    return _add_global_hook(_global_backward_hooks, hook)


class _WithModule:
    """hook(module, *args) for a hook the module keeps: the module held weakly, as torch's
    _WrappedHook, so that keeping the hook does not keep the module alive (no cycle)."""

    def __init__(self, hook: Callable[..., Any], module: Module) -> None:
        functools.update_wrapper(self, hook)
        self.hook, self.module = hook, weakref.ref(module)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        module = self.module()
        if module is None:
            raise RuntimeError("You are trying to call the hook of a dead Module!")
        return self.hook(module, *args, **kwargs)

    def __getstate__(self) -> dict[str, Any]:  # a copy's hook calls the copied module
        return {"hook": self.hook, "module": self.module()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["hook"], state["module"])  # type: ignore[misc]


def _first_tensor(value: Any) -> Tensor:
    """PyTorch's walk to the output a non-full backward hook goes on: the first value of a
    dict, the first item of anything else, until a tensor."""
    while not isinstance(value, Tensor):
        value = next(v for v in value.values() if isinstance(v, Tensor)) \
            if isinstance(value, dict) else value[0]
    return value


def _put_older_backward_hooks(module: Module, hooks: list[Callable[..., Any]], args: Any,
                              output: Any) -> None:
    """The non-full backward hooks go on the node of the first output, as torch's."""
    first = _first_tensor(output)
    grad_fn = first.grad_fn
    if grad_fn is None:
        return
    from runtime.nn.older_hooks import older_hooks

    for hook in older_hooks(hooks, module, grad_fn, args, first):
        grad_fn.register_hook(hook)
    _warn_older_backward_hook(args, output, grad_fn)


def _older_hook_warning(text: str) -> None:
    warnings.warn(text + " Please use register_full_backward_hook to get the documented "
                  "behavior.", FutureWarning, stacklevel=5)


def _warn_older_backward_hook(inputs: Any, result: Any, grad_fn: Any) -> None:
    """PyTorch's warnings of what a non-full backward hook misses."""
    def tensors(value: Any) -> tuple[Tensor, ...] | None:
        if isinstance(value, Tensor):
            return (value,)
        if isinstance(value, tuple) and all(isinstance(v, Tensor) for v in value):
            return value
        return None

    deprecated = " is deprecated and will be removed in future versions."
    outs = tensors(result)
    if outs is None:
        _older_hook_warning("Using non-full backward hooks on a Module that does not return "
                            "a single Tensor or a tuple of Tensors" + deprecated + " This "
                            "hook will be missing some of the grad_output.")
        return
    ins = tensors(inputs)
    if ins is None:
        _older_hook_warning("Using non-full backward hooks on a Module that does not take as "
                            "input a single Tensor or a tuple of Tensors" + deprecated +
                            " This hook will be missing some of the grad_input.")
        return
    out_fns = {r.grad_fn for r in outs if r.grad_fn is not None}
    if not out_fns or (len(out_fns) == 1 and grad_fn not in out_fns):
        warnings.warn("Using a non-full backward hook when outputs are nested in python data "
                      "structure" + deprecated + " This hook will be missing some "
                      "grad_output.", FutureWarning, stacklevel=4)
    elif len(out_fns) > 1:
        _older_hook_warning("Using a non-full backward hook when outputs are generated by "
                            "different autograd Nodes" + deprecated + " This hook will be "
                            "missing some grad_output.")
    elif {i.grad_fn for i in ins if i.grad_fn is not None} != \
            {n[0] for n in grad_fn.next_functions}:
        _older_hook_warning("Using a non-full backward hook when the forward contains "
                            "multiple autograd Nodes" + deprecated + " This hook will be "
                            "missing some grad_input.")


class _Uncompiled(threading.local):
    module: Any = None  # the module whose _call_impl runs: its __call__ skips its compiled one


_uncompiled = _Uncompiled()


class Module:
    """Base class of all layers; subclasses define `forward`."""

    _version: int = 1  # a state dict's metadata records it; _load_from_state_dict reads it
    dump_patches: bool = False  # PyTorch's class flags, read by code written for it
    # whether this module's backward hooks are full ones (None: none registered yet)
    _is_full_backward_hook: bool | None = None
    call_super_init: bool = False
    # Module.compile's compiled call (torch's attribute; None: the module is called as written)
    _compiled_call_impl: Any = None
    T_destination = TypeVar("T_destination", bound=dict[str, Any])
    training: bool
    _parameters: dict[str, Parameter | None]
    _buffers: dict[str, Tensor | None]
    _modules: dict[str, Module | None]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # arguments are for the next class in the MRO, passed on where call_super_init is set
        if not self.call_super_init and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword "
                            f"argument '{next(iter(kwargs))}'")
        if not self.call_super_init and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_forward_pre_hooks", _HookDict())
        object.__setattr__(self, "_forward_hooks", _HookDict())
        object.__setattr__(self, "_hooks_with_kwargs", set())
        object.__setattr__(self, "_forward_hooks_always_called", set())
        object.__setattr__(self, "_backward_hooks", _HookDict())
        object.__setattr__(self, "_backward_pre_hooks", _HookDict())
        object.__setattr__(self, "_state_dict_pre_hooks", _HookDict())
        object.__setattr__(self, "_state_dict_hooks", _HookDict())
        object.__setattr__(self, "_load_state_dict_pre_hooks", _HookDict())
        object.__setattr__(self, "_load_state_dict_post_hooks", _HookDict())
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f'Module [{self._get_name()}] is missing the required "forward" function'
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        tracer = _trace_state.tracer
        compiled = self._compiled_call_impl
        if compiled is not None and tracer is None and _uncompiled.module is not self:
            return compiled(*args, **kwargs)  # Module.compile's (a capture inlines it)
        if tracer is not None:
            tracer.on_module(self)  # a compiled step guards on this module's parameters
            if self._backward_hooks or self._backward_pre_hooks or _global_backward_hooks \
                    or _global_backward_pre_hooks:
                # a plan replays tensor ops only: the hooks would run once, at capture
                full = self._backward_hook_lists()[0]
                kind = "full backward (pre-)hook" if full or self._backward_pre_hooks \
                    or _global_backward_pre_hooks else "backward hook"
                raise GraphBreak(f"{self._get_name()} has a {kind}, which runs Python during "
                                 "backward")
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks or _global_forward_pre_hooks
                or _global_forward_hooks or _global_backward_hooks
                or _global_backward_pre_hooks):
            return self.forward(*args, **kwargs)
        called: set[int] = set()  # the always-called forward hooks that ran
        state: dict[str, Any] = {"args": args, "kwargs": kwargs, "result": None}
        try:
            return self._call_with_hooks(state, called)
        except Exception:
            self._call_always_called_hooks(state, called)
            raise

    def _call_impl(self, *args: Any, **kwargs: Any) -> Any:
        """The module's call as written, hooks included, not its compiled one: what
        ``compile`` compiles (torch's name)."""
        previous = _uncompiled.module
        _uncompiled.module = self
        try:
            return self(*args, **kwargs)
        finally:
            _uncompiled.module = previous

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """torch's ``Module.compile``: this module's calls compiled from now on by
        ``runtime.compile`` (torch.compile's arguments, passed as they are) of its
        ``_call_impl``; its parameters, state dict and attributes stay its own (unlike
        ``runtime.compile(module)``, no wrapper). A capture that calls the module inlines it."""
        from runtime import compile as compile_

        self._compiled_call_impl = compile_(self._call_impl, *args, **kwargs)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_compiled_call_impl", None)  # a copy or a pickle is not compiled (torch's)
        return state

    def _call_always_called_hooks(self, state: dict[str, Any], called: set[int]) -> None:
        """After forward (or a hook) raised: the forward hooks registered with always_call
        that have not run, run with the output so far (None if forward raised), as torch's;
        an error of theirs is a warning, the first error is the one raised."""
        always = self._forward_hooks_always_called | _global_forward_hooks_always_called
        with_kwargs = self._hooks_with_kwargs | _global_hooks_with_kwargs
        for hook_id, hook in list({**_global_forward_hooks, **self._forward_hooks}.items()):
            if hook_id not in always or hook_id in called:
                continue
            try:
                if hook_id in with_kwargs:
                    result = hook(self, state["args"], state["kwargs"], state["result"])
                else:
                    result = hook(self, state["args"], state["result"])
                if result is not None:
                    state["result"] = result
            except Exception as e:  # noqa: BLE001 - silenced, as torch: forward's error wins
                warnings.warn("module forward hook with ``always_call=True`` raised an "
                              "exception that was silenced as another error was raised in "
                              f"forward: {e!s}", stacklevel=3)

    def _call_with_hooks(self, state: dict[str, Any], called: set[int]) -> Any:
        """forward between its hooks, as torch's: a pre-hook may replace the arguments (a
        non-tuple result is the one argument), a forward hook the output; with backward
        hooks, the positional tensors in and the tensors out pass through the nodes that
        run them (``backward_hooks.BackwardHook``). ``state`` keeps the arguments and the
        output for the always-called hooks should anything raise."""
        args, kwargs = state["args"], state["kwargs"]
        with_kwargs = self._hooks_with_kwargs | _global_hooks_with_kwargs
        always = self._forward_hooks_always_called | _global_forward_hooks_always_called
        for hook_id, hook in list({**_global_forward_pre_hooks,
                                   **self._forward_pre_hooks}.items()):
            if hook_id in with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {result}.")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
            state["args"], state["kwargs"] = args, kwargs
        bw_hook = None
        backward, older_backward = self._backward_hook_lists()
        backward_pre = [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]
        if backward or backward_pre:
            from runtime.nn.backward_hooks import BackwardHook

            bw_hook = BackwardHook(self, backward, backward_pre)
            args = state["args"] = bw_hook.setup_input_hook(args)
        output = state["result"] = self.forward(*args, **kwargs)
        for hook_id, hook in list({**_global_forward_hooks, **self._forward_hooks}.items()):
            if hook_id in always:
                called.add(hook_id)
            if hook_id in with_kwargs:
                result = hook(self, args, kwargs, output)
            else:
                result = hook(self, args, output)
            if result is not None:
                output = state["result"] = result
        if bw_hook is not None:
            if not isinstance(output, (Tensor, tuple)):
                warnings.warn("For backward hooks to be called, module output should be a "
                              f"Tensor or a tuple of Tensors but received {type(output)}",
                              stacklevel=3)
            output = bw_hook.setup_output_hook(output)
        if older_backward:
            _put_older_backward_hooks(self, older_backward, args, output)
        return output

    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """hook(module, args) -> None or new args (hook(module, args, kwargs) -> None or
        (args, kwargs) with with_kwargs), run before forward; first with prepend."""
        return self._add_hook(self._forward_pre_hooks, hook, prepend, with_kwargs)

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                              with_kwargs: bool = False, always_call: bool = False
                              ) -> RemovableHandle:
        """hook(module, args, output) -> None or a new output (hook(module, args, kwargs,
        output) with with_kwargs), run after forward; first with prepend; with always_call
        also when forward (or a hook before it) raises, then with the output so far."""
        handle = self._add_hook(self._forward_hooks, hook, prepend, with_kwargs)
        if always_call:
            self._forward_hooks_always_called.add(handle.id)
        return handle

    def register_full_backward_pre_hook(self, hook: Callable[..., Any],
                                        prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_output) -> None or a new grad_output, run when the gradients
        w.r.t. the module's outputs are computed, before those w.r.t. its inputs."""
        return self._add_hook(self._backward_pre_hooks, hook, prepend, False)

    def register_full_backward_hook(self, hook: Callable[..., Any],
                                    prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_input, grad_output) -> None or a new grad_input, run when the
        gradients w.r.t. the module's inputs are computed: ``grad_input`` has one entry per
        positional argument of forward (None for one that is not a tensor needing a
        gradient), ``grad_output`` one per output."""
        if self._is_full_backward_hook is False:
            raise _mixed_hooks_error("on a single Module")
        object.__setattr__(self, "_is_full_backward_hook", True)
        return self._add_hook(self._backward_hooks, hook, prepend, False)

    def register_backward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """PyTorch's deprecated backward hook: hook(module, grad_input, grad_output) -> None
        or a new grad_input, put on the autograd node that made the (first) output, so
        ``grad_input`` is that node's gradients w.r.t. its own inputs (which may not be the
        module's); a FutureWarning says when it misses some."""
        if self._is_full_backward_hook is True:
            raise _mixed_hooks_error("on a single Module")
        object.__setattr__(self, "_is_full_backward_hook", False)
        return self._add_hook(self._backward_hooks, hook, False, False)

    def _backward_hook_lists(self) -> tuple[list[Callable[..., Any]], list[Callable[..., Any]]]:
        """The full backward hooks and the older (non-full) ones, module-wide ones first."""
        full: list[Callable[..., Any]] = []
        older: list[Callable[..., Any]] = []
        for flag, hooks in ((_global_is_full_backward_hook, _global_backward_hooks),
                            (self._is_full_backward_hook, self._backward_hooks)):
            if flag is not None:
                (full if flag else older).extend(hooks.values())
        return full, older

    def _add_hook(self, hooks: dict[int, Callable[..., Any]], hook: Callable[..., Any],
                  prepend: bool, with_kwargs: bool) -> RemovableHandle:
        handle = RemovableHandle(hooks, self._hooks_with_kwargs,
                                 self._forward_hooks_always_called)
        hooks[handle.id] = hook
        if prepend:
            for key in [k for k in hooks if k != handle.id]:
                hooks[key] = hooks.pop(key)  # dicts keep insertion order: move the rest behind
        if with_kwargs:
            self._hooks_with_kwargs.add(handle.id)
        _changed()  # a compiled step re-captures: the hook's effects are part of the step
        return handle

    # ---- attribute registration -------------------------------------------------------------

    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            _refuse_before_init(value)
            object.__setattr__(self, name, value)
            return
        _changed()
        params, buffers, modules = self._parameters, self._buffers, self._modules
        if isinstance(value, Parameter):
            self._discard(name, keep=params)
            self.register_parameter(name, value)
        elif name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{typename(value)}' as parameter '{name}' "
                    "(runtime.nn.Parameter or None expected)"
                )
            params[name] = None
        elif isinstance(value, Module):
            self._discard(name, keep=modules)
            modules[name] = _registered(_global_module_registration_hooks, self, name, value)
        elif name in modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{typename(value)}' as child module '{name}' "
                    "(runtime.nn.Module or None expected)"
                )
            modules[name] = _registered(_global_module_registration_hooks, self, name, None)
        elif isinstance(value, Buffer) or name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{typename(value)}' as buffer '{name}' "
                    "(runtime.nn.Buffer, runtime.Tensor or None expected)"
                )
            persistent = (value.persistent if isinstance(value, Buffer)
                          else name not in self._non_persistent_buffers)
            self.register_buffer(name, value, persistent)
        else:
            object.__setattr__(self, name, value)

    def _discard(self, name: str, keep: dict[str, Any]) -> None:
        self.__dict__.pop(name, None)
        for d in (self._parameters, self._buffers, self._modules):
            if d is not keep:
                d.pop(name, None)
        self._non_persistent_buffers.discard(name)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        _changed()
        for d in (self._parameters, self._buffers, self._modules):
            if name in d:
                del d[name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        keys = [*super().__dir__(), *self._parameters, *self._buffers, *self._modules]
        return sorted(set(keys))

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        self._check_name(name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{typename(param)}' object to parameter '{name}' "
                "(runtime.nn.Parameter or None required)"
            )
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                f"created explicitly. To express '{name}' as a function of another Tensor, "
                "compute the value in the forward() method."
            )
        if param is not None:
            param = _registered(_global_parameter_registration_hooks, self, name, param)
        self._parameters[name] = param
        _changed()

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        self._check_name(name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
                "(runtime Tensor or None required)"
            )
        self._buffers[name] = _registered(_global_buffer_registration_hooks, self, name, tensor)
        _changed()
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{typename(module)} is not a Module subclass")
        self._check_name(name, "module")
        self._modules[name] = _registered(_global_module_registration_hooks, self, name, module)
        _changed()

    register_module = add_module

    def _check_name(self, name: str, kind: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."'
                           + (f", got: {name}" if kind == "module" else ""))
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        store = {"parameter": self._parameters, "buffer": self._buffers, "module": self._modules}[
            kind
        ]
        if hasattr(self, name) and name not in store:
            raise KeyError(f"attribute '{name}' already exists")

    # ---- traversal ----------------------------------------------------------------------------

    def named_modules(
        self, memo: set[int] | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def get_submodule(self, target: str) -> Module:
        """The submodule at the dotted path ``target`` ("" is this module), with PyTorch's
        AttributeError where a step of the path is missing or not a Module."""
        if target == "":
            return self
        mod: Module = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Replace (or, unless ``strict``, add) the submodule at the dotted path ``target``."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(parent._get_name() + " has no attribute `" + name + "`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError("`" + name + "` is not an nn.Module")
        setattr(parent, name, module)

    def _get_member(self, target: str, kind: str) -> Any:
        """The parameter or buffer at the dotted path ``target``, PyTorch's errors."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        value = getattr(mod, name)
        if kind == "parameter" and not isinstance(value, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        if kind == "buffer" and name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return value

    def get_parameter(self, target: str) -> Parameter:
        return self._get_member(target, "parameter")  # type: ignore[no-any-return]

    def get_buffer(self, target: str) -> Tensor:
        return self._get_member(target, "buffer")  # type: ignore[no-any-return]

    def modules(self, remove_duplicate: bool = True) -> Iterator[Module]:
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def _named_members(
        self, store: str, prefix: str, recurse: bool, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        seen: set[int] = set()
        mods = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for mod_prefix, module in mods:
            for name, value in getattr(module, store).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield mod_prefix + ("." if mod_prefix else "") + name, value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        members = self._named_members("_parameters", prefix, recurse, remove_duplicate)
        yield from members  # type: ignore[misc]

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    # ---- modes and bulk operations ------------------------------------------------------------

    def train(self, mode: bool = True) -> Self:
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")  # noqa: TRY004 - as torch
        tracer = _trace_state.tracer
        if tracer is not None:
            tracer.on_mode(self, mode)  # a compiled step makes it again at each replay
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        _changed()
        return self

    def eval(self) -> Self:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Self:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        zero_grads(self.parameters(), set_to_none)

    def apply(self, fn: Callable[[Module], None]) -> Self:
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def share_memory(self) -> Self:
        """PyTorch's ``share_memory``: each parameter's and buffer's storage moved into shared
        memory (``Tensor.share_memory_``), which processes forked afterwards write through."""
        for t in (*self.parameters(), *self.buffers()):
            t.share_memory_()
        return self

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Self:
        """Set every parameter's (and gradient's) data to `fn` of it, and replace buffers by `fn`
        (this module's only, without ``recurse``).

        Parameters stay the same objects, as in torch, so an optimizer built before `.to()` still
        updates them.
        """
        replaced = False
        for module in self.modules() if recurse else (self,):
            for p in module._parameters.values():
                if p is None:
                    continue
                with no_grad():
                    p.data = fn(p)
                    if p.grad is not None:
                        p.grad.data = fn(p.grad)
            for name, b in module._buffers.items():
                if b is not None:
                    new = fn(b)
                    if is_lazy(b) and not is_lazy(new):  # stays uninitialized, as torch's
                        new = type(b)(b.requires_grad, device=new.device, dtype=new.dtype)
                    if new is not b:
                        module._buffers[name] = new
                        replaced = True
        if replaced:
            _changed()  # a compiled step guards its buffers by identity: it re-checks them
        return self

    def to(self, *args: Any, **kwargs: Any) -> Self:
        """Move parameters and buffers to a device and cast the floating-point ones to a
        dtype: PyTorch's forms ``to(device=None, dtype=None, non_blocking=False)``,
        ``to(dtype, non_blocking=False)``, ``to(tensor, non_blocking=False)``."""
        from runtime import _dtype as D
        from runtime.ops.to_arguments import parse_to

        # non_blocking: every copy completes before it returns; memory_format: row-major
        device, dtype, _, copy, _ = parse_to(args, kwargs)
        if copy:
            raise RuntimeError(".to() does not accept copy argument")
        if dtype is not None:
            dtype = D.as_dtype(dtype)
            if not dtype.is_floating_point:
                raise TypeError("nn.Module.to only accepts floating point or complex dtypes, "
                                f"but got desired dtype={dtype}")

        def move(t: Tensor) -> Tensor:
            return t.to(device=device, dtype=dtype if t.dtype.is_floating_point else None)

        return self._apply(move)

    def cpu(self) -> Self:
        return self.to("cpu")

    def cuda(self, device: int | None = None) -> Self:
        return self.to("cuda" if device is None else f"cuda:{device}")

    def float(self) -> Self:
        from runtime import float32

        return self.to(float32)

    def double(self) -> Self:
        from runtime import float64

        return self.to(float64)

    def to_empty(self, *, device: Any, recurse: bool = True) -> Self:
        """Parameters and buffers replaced by uninitialized tensors on ``device``."""
        from runtime import empty_like

        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def type(self, dst_type: Any) -> Self:
        """Every parameter and buffer cast to ``dst_type`` (a dtype or a type name)."""
        return self._apply(lambda t: t.type(dst_type))

    def half(self) -> Self:
        from runtime import float16

        return self.to(float16)

    def bfloat16(self) -> Self:
        from runtime import bfloat16

        return self.to(bfloat16)

    # ---- state dict ---------------------------------------------------------------------------

    def get_extra_state(self) -> Any:
        """A subclass that overrides this (and ``set_extra_state``) saves what it returns in
        its state dict under ``_extra_state``."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template="
            "bug-report.yml to report this bug.")

    def set_extra_state(self, state: Any) -> None:
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template="
            "bug-report.yml to report this bug.")

    def register_state_dict_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """hook(module, prefix, keep_vars), run before ``state_dict`` saves this module."""
        return self._add_hook(self._state_dict_pre_hooks, hook, False, False)

    def _register_state_dict_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """hook(module, state_dict, prefix, local_metadata) -> None or a new state dict, run
        after ``state_dict`` saved this module and its children."""
        return self._add_hook(self._state_dict_hooks, hook, False, False)

    def register_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``_register_state_dict_hook``'s public form: the hook edits the dict in place."""

        def checked(*args: Any) -> None:
            if hook(*args) is not None:
                raise RuntimeError("state_dict post-hook must return None")

        return self._register_state_dict_hook(checked)

    def _register_load_state_dict_pre_hook(self, hook: Callable[..., Any],
                                           with_module: bool = False) -> RemovableHandle:
        """hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs) (the module first with ``with_module``), run before this module loads
        its entries; it may edit the (local) state dict."""
        if with_module:
            hook = _WithModule(hook, self)
        return self._add_hook(self._load_state_dict_pre_hooks, hook, False, False)

    def register_load_state_dict_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs), run before this module loads its entries."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """hook(module, incompatible_keys), run after this module and its children loaded;
        it may edit the missing and unexpected keys in place, before strict checks them."""
        return self._add_hook(self._load_state_dict_post_hooks, hook, False, False)

    def _has_extra_state(self, method: str) -> bool:
        return getattr(type(self), method) is not getattr(Module, method)

    def _save_to_state_dict(self, destination: dict[str, Any], prefix: str,
                            keep_vars: bool) -> None:
        for name, value in self._local_state().items():
            destination[prefix + name] = value if keep_vars else value.detach()
        if self._has_extra_state("get_extra_state"):
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(
        self,
        *args: Any,
        destination: OrderedDict[str, Tensor] | None = None,
        prefix: str = "",
        keep_vars: bool = False,
    ) -> OrderedDict[str, Tensor]:
        """Parameters and persistent buffers (and extra state) by dotted name; as PyTorch's,
        the dict's ``_metadata`` keeps each module's ``_version``. Positional arguments
        (destination, prefix, keep_vars) are taken with PyTorch's deprecation warning."""
        if args:
            warnings.warn(
                "Positional args are being deprecated, use kwargs instead. Refer to "
                "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module."
                "state_dict for details.", FutureWarning, stacklevel=2)
            destination = args[0] if destination is None else destination
            prefix = args[1] if len(args) > 1 and prefix == "" else prefix
            keep_vars = args[2] if len(args) > 2 and keep_vars is False else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()  # type: ignore[attr-defined]
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                destination = result
        return destination

    def _local_state(self) -> dict[str, Tensor]:
        state: dict[str, Tensor] = {k: v for k, v in self._parameters.items() if v is not None}
        for k, b in self._buffers.items():
            if b is not None and k not in self._non_persistent_buffers:
                state[k] = b
        return state

    def _load_from_state_dict(  # noqa: C901 - PyTorch's steps, in its order
        self,
        state_dict: Mapping[str, Any],
        prefix: str,
        local_metadata: dict[str, Any],
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        """PyTorch's: copy (or, with ``assign_to_params_buffers`` in the metadata, assign)
        this module's own entries of ``state_dict``, noting what is missing, unexpected or
        does not fit."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        local_state = self._local_state()
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(
                    f'While copying the parameter named "{key}", expected torch.Tensor or '
                    f"Tensor-like object from checkpoint but received {type(value)}"
                )
                continue
            if len(param.shape) == 0 and value.shape == (1,):
                value = value[0]
            if value.shape != param.shape:
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {value.shape} "
                    "from checkpoint, "
                    f"the shape in current model is {param.shape}."
                )
                continue
            try:
                with no_grad():
                    if assign:
                        self._assign(name, param, value)
                    else:
                        param.copy_(value)
            except Exception as ex:  # noqa: BLE001 - reported like torch, with the cause
                error_msgs.append(
                    f'While copying the parameter named "{key}", whose dimensions in the model are '
                    f"{param.shape} and whose dimensions in the checkpoint are {value.shape}, "
                    f"an exception occurred : {ex.args}."
                )
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if self._has_extra_state("set_extra_state"):
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if not strict:
            return
        for key in state_dict:
            if not key.startswith(prefix) or key == extra_key:
                continue
            head = key[len(prefix):].split(".", 1)
            if (len(head) > 1 and head[0] not in self._modules) or (
                len(head) == 1 and head[0] not in local_state
            ):
                unexpected_keys.append(key)

    def _assign(self, name: str, param: Tensor, value: Tensor) -> None:
        """load_state_dict(assign=True): the checkpoint's tensor becomes the attribute (a
        Parameter where the module had one), with the module's requires_grad."""
        if isinstance(param, Parameter):
            if isinstance(value, Parameter):
                value.requires_grad_(param.requires_grad)
            else:
                value = Parameter(value, requires_grad=param.requires_grad)
        setattr(self, name, value)

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> _IncompatibleKeys:
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        metadata = getattr(state_dict, "_metadata", None)

        def load(module: Module, local: Mapping[str, Any], prefix: str) -> None:
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local, prefix, local_metadata, True, missing,
                                         unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(
                        child,
                        {k: v for k, v in local.items() if k.startswith(child_prefix)},
                        child_prefix,
                    )
            incompatible = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible) is not None:
                    raise RuntimeError("Hooks registered with "
                                       "``register_load_state_dict_post_hook`` are not expected "
                                       "to return new values, if incompatible_keys need to be "
                                       "modified, it should be done inplace.")

        try:
            load(self, OrderedDict(state_dict), "")
        finally:
            # the recursive closure refers to itself: a cycle for the collector (torch's fix)
            load = None  # type: ignore[assignment]
        if strict:
            if unexpected:
                errors.insert(
                    0,
                    "Unexpected key(s) in state_dict: {}. ".format(
                        ", ".join(f'"{k}"' for k in unexpected)
                    ),
                )
            if missing:
                errors.insert(
                    0,
                    "Missing key(s) in state_dict: {}. ".format(
                        ", ".join(f'"{k}"' for k in missing)
                    ),
                )
        if errors:
            raise RuntimeError(
                "Error(s) in loading state_dict for {}:\n\t{}".format(
                    type(self).__name__, "\n\t".join(errors)
                )
            )
        return _IncompatibleKeys(missing, unexpected)

    # ---- repr ---------------------------------------------------------------------------------

    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [
            f"({key}): " + _addindent(repr(module), 2) for key, module in self._modules.items()
        ]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _refuse_before_init(value: Any) -> None:
    """An attribute set before Module.__init__: a parameter, module or buffer is refused with
    PyTorch's text; a plain value (a tensor too) is kept, as PyTorch keeps it (a subclass may
    set one before calling super().__init__())."""
    for kind, what in ((Parameter, "parameters"), (Module, "module"), (Buffer, "buffer")):
        if isinstance(value, kind):
            raise AttributeError(f"cannot assign {what} before Module.__init__() call")


def typename(obj: Any) -> str:
    """``torch.typename``: a tensor's type() (runtime.FloatTensor), else the object's or its
    class's module-qualified name (builtins bare: int, str)."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = type(obj).__module__ or ""
        qualname = type(obj).__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"
