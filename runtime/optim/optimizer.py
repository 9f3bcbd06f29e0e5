"""`Optimizer`: parameter groups, per-parameter state and state dicts, as in `torch.optim`."""

from __future__ import annotations

import functools
import warnings
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from copy import deepcopy
from itertools import chain
from typing import Any

from runtime import _dtype as D
from runtime.autograd import enable_grad, no_grad
from runtime.autograd.node import RemovableHandle, _HookDict
from runtime.nn.module import zero_grads
from runtime.tensor import Tensor
from runtime.tracing import GraphBreak
from runtime.tracing import _state as _trace_state
from runtime.tracing import set_tracer


Params = Iterable[Tensor] | Iterable[dict[str, Any]]

# every optimizer alive: a capture (planner.capture) compares their parameter groups before
# and after the step it traces, to replay what the step assigns there
# (by id: an optimizer of the user's may define __eq__ without __hash__)
_LIVE: weakref.WeakValueDictionary[int, Optimizer] = weakref.WeakValueDictionary()


def check_tensor_lr(lr: Any, foreach: bool | None = None, capturable: bool | None = None
                    ) -> None:
    """PyTorch's checks of a Tensor lr, before its value's: one element, and (Adam and AdamW,
    which pass ``capturable``) not with foreach unless capturable."""
    if not isinstance(lr, Tensor):
        return
    if capturable is not None and foreach and not capturable:
        raise ValueError("lr as a Tensor is not supported for capturable=False and "
                         "foreach=True")
    if lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")


# what torch's capturable updates name in their device assertion, by optimizer
_CAPTURABLE_STATE = {"NAdam": "params, mu_products and state_steps",
                     "ASGD": "params, mus, etas, and state_steps"}


def _check_capturable(optimizer: Any) -> None:
    """torch's capturable updates run on accelerators only: its assertion for a group with
    capturable=True whose parameters with gradients are elsewhere."""
    for group in optimizer.param_groups:
        if not group.get("capturable"):
            continue
        if all(p.grad is None or str(p.device).startswith("cuda") for p in group["params"]):
            continue
        name = type(optimizer).__name__
        devices = ["cuda", "xpu", "hpu", "privateuseone"] + ([] if name == "Adadelta" else ["xla"])
        raise AssertionError(f"If capturable=True, "
                             f"{_CAPTURABLE_STATE.get(name, 'params and state_steps')} must be "
                             f"on supported devices: {devices}.")


def to_scalar(value: Any) -> Any:
    """torch's _to_scalar: a one-element tensor setting of any shape (an lr of shape (1,),
    Adam's betas of shape (1, 1)) as a 0-d view of it, which acts as a scalar rather than
    broadcasting an update; anything else as it is."""
    if isinstance(value, Tensor) and value.dim() != 0:
        return value.squeeze()
    return value


class _RequiredParameter:
    """Singleton class representing a required parameter for an Optimizer."""

    def __repr__(self) -> str:
        return "<required parameter>"


# torch.optim.optimizer.required: a default no group may leave unset (older optimizers'
# ``lr=required``)
required = _RequiredParameter()


def live_optimizers() -> list[Optimizer]:
    return list(_LIVE.values())

# hooks around every optimizer's step (register_optimizer_step_pre_hook / _post_hook)
_global_optimizer_pre_hooks: dict[int, Callable[..., Any]] = _HookDict()
_global_optimizer_post_hooks: dict[int, Callable[..., Any]] = _HookDict()


def _add_hook(hooks: dict[int, Callable[..., Any]], hook: Callable[..., Any],
              prepend: bool = False) -> RemovableHandle:
    handle = RemovableHandle(hooks)
    later = list(hooks.items()) if prepend else []
    for key, _ in later:
        del hooks[key]
    hooks[handle.id] = hook
    hooks.update(later)
    return handle


def register_optimizer_step_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """``hook(optimizer, args, kwargs)`` before every optimizer's step (as torch's: it may
    return new ``(args, kwargs)``)."""
    return _add_hook(_global_optimizer_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """``hook(optimizer, args, kwargs)`` after every optimizer's step."""
    return _add_hook(_global_optimizer_post_hooks, hook)


def has_step_hooks(opt: Any) -> bool:
    """Whether a step of ``opt`` runs hooks, its own or every optimizer's (a plan captured
    without them is guarded on it: planner.compile)."""
    return bool(_global_optimizer_pre_hooks or _global_optimizer_post_hooks
                or opt._optimizer_step_pre_hooks or opt._optimizer_step_post_hooks)


def _with_step_hooks(step: Callable[..., Any]) -> Callable[..., Any]:
    """``step`` running the step hooks, global and the optimizer's, as torch's wrapper:
    pre-hooks get ``(optimizer, args, kwargs)``, ``args`` starting with the optimizer."""
    @functools.wraps(step)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        self = args[0]
        self._opt_called = True  # what torch's schedulers' wrapper of step records
        tracer = _trace_state.tracer
        if tracer is not None:
            if has_step_hooks(self):
                # a plan replays tensor ops only: a hook's Python would run at capture alone
                raise GraphBreak(f"{type(self).__name__}.step() has step hooks")
            # a compiled step guards on, and plans, this optimizer's settings and state: a
            # user's step (its own, not Optimizer.step) too
            tracer.on_optimizer(self)
        for hook in chain(_global_optimizer_pre_hooks.values(),
                          self._optimizer_step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{step} must return None or a tuple of (new_args, "
                                       f"new_kwargs), but got {result}.")
                args, kwargs = result
        _check_capturable(self)
        out = step(*args, **kwargs)
        for hook in chain(self._optimizer_step_post_hooks.values(),
                          _global_optimizer_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    # torch's schedulers wrap an optimizer's step to record its calls, and warn when the
    # step they find lacks this mark (it was overridden after them); ours records already
    wrapper._wrapped_by_lr_sched = True  # type: ignore[attr-defined]
    return wrapper



def own_float(value: Any) -> Any:
    """A float setting as a float object of its own (an equal copy; anything else as it is).
    A group's float settings are their own objects, not the number the optimizer was made
    with (``lr=BASE_LR``, its defaults), nor each other (a scheduler's ``initial_lr``): a
    compiled step tells a returned float that is a group's setting, read at each replay, by
    its identity (planner.capture: ``Tracer._returned_setting``), where that number returned
    is a constant, and ``initial_lr`` is not the ``lr`` a schedule changes."""
    return value * 1.0 if type(value) is float else value

class Optimizer:
    """Subclasses implement `_step_group(group)`; `step` runs it for each group under `no_grad`
    (the step of an optimizer's class, its own or not, runs the step hooks:
    ``_patch_step_function``)."""

    def __init__(self, params: Params, defaults: dict[str, Any]) -> None:
        _patch_step_function(type(self))
        _check_flags(defaults)
        self.defaults = defaults
        self._optimizer_step_pre_hooks: dict[int, Callable[..., Any]] = _HookDict()
        self._optimizer_step_post_hooks: dict[int, Callable[..., Any]] = _HookDict()
        self._optimizer_state_dict_pre_hooks: dict[int, Callable[..., Any]] = _HookDict()
        self._optimizer_state_dict_post_hooks: dict[int, Callable[..., Any]] = _HookDict()
        self._optimizer_load_state_dict_pre_hooks: dict[int, Callable[..., Any]] = _HookDict()
        self._optimizer_load_state_dict_post_hooks: dict[int, Callable[..., Any]] = _HookDict()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, "
                f"but got {params.type()}"
            )
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        _LIVE[id(self)] = self
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        """torch's: each group after a newline, its settings sorted (a blank line between
        groups)."""
        out = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            out += f"\nParameter Group {i}\n"
            out += "".join(f"    {key}: {group[key]}\n" for key in sorted(group)
                           if key != "params")
        return out + ")"

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list instead."
            )
        _split_names(param_group, list(params))
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, but one of the params is "
                    + type(p).__name__
                )
            if not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        for name, value in param_group.items():
            param_group[name] = own_float(value)
        if len({id(p) for p in param_group["params"]}) != len(param_group["params"]):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        for group in self.param_groups:
            if ("param_names" in param_group) != ("param_names" in group):
                raise ValueError(
                    "all optimizer param groups should be with/without names. cannot add param "
                    "group " + ("with" if "param_names" in param_group else "without")
                    + " names to the optimizer")
        existing = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in existing for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        zero_grads((p for group in self.param_groups for p in group["params"]), set_to_none)

    def register_step_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` before each step; it may return new
        ``(args, kwargs)``."""
        return _add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` after each step."""
        return _add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable[..., Any],
                                     prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` before ``state_dict()`` builds the state dict."""
        return _add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable[..., Any],
                                      prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` after ``state_dict()``; it may return a new one."""
        return _add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable[..., Any],
                                          prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` before loading; it may return the one to load."""
        return _add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable[..., Any],
                                           prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` after ``load_state_dict``."""
        return _add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; `closure` re-evaluates the loss first."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                self._step_group(group)
        return loss

    def _step_group(self, group: dict[str, Any]) -> None:
        raise NotImplementedError

    def _steps_make_state(self, group: dict[str, Any]) -> bool:
        """Whether stepping ``group`` makes per-parameter state inside a captured step where
        a parameter has none yet: planner.compile runs the first call of a step whose
        optimizer has none yet eagerly, without capturing it first. The built-in optimizers
        make theirs outside the capture (``_lazy_state``), so theirs is False; an optimizer
        of the user's that makes its state as it steps may (the default)."""
        return not self._state_made_lazily

    # whether every state entry a step makes is made by ``_lazy_state`` (the built-ins)
    _state_made_lazily = False

    def _lazy_state(self, p: Tensor, make: Callable[[], Mapping[str, Any]]) -> dict[str, Any]:
        """``p``'s state, made by ``make()`` where it has none (PyTorch's lazy init at a
        parameter's first step). Within a captured step (planner.compile) it is made for real,
        outside the trace, as torch.compile's optimizer support makes it: the plan then reads
        and updates it as the state it is, so the call that makes it runs compiled and its
        plan fits every later call (unless the step's own code reaches ``self.state``:
        ``may_make_state``). ``make`` reads no tensor the step computes (the parameter's
        shape and dtype, the group's settings): the state it makes is the same in both modes.
        A capture that fails takes it back (``Tracer.restore_optimizers``)."""
        state = self.state[p]
        if state:
            return state
        tracer = _trace_state.tracer
        if tracer is None or not tracer.may_make_state(self):
            state.update(make())
            return state
        prev = set_tracer(None)
        try:
            made = make()
        finally:
            set_tracer(prev)
        state.update(made)
        tracer.on_state_made(self, p)
        return state

    @staticmethod
    def _grads(group: dict[str, Any]) -> Iterator[tuple[Tensor, Tensor]]:
        """(parameter, gradient) of each parameter of the group that has one, the gradient
        negated where the group maximizes."""
        maximize = group["maximize"]
        for p in group["params"]:
            if p.grad is not None:
                yield p, -p.grad if maximize else p.grad

    def _hyper(self, group: dict[str, Any], key: str, index: int | None = None) -> Any:
        """``group[key]`` (its element ``index``) for the update's arithmetic: the number
        itself, or while a step is captured a float64 scalar tensor that the compiled plan
        reads at each replay, so that changing it (a schedule) never recompiles. Arithmetic
        among hyperparameters is float64 either way (Python floats are doubles); `scalar`
        rounds a result to the parameters' dtype, as a Python number meeting a tensor is."""
        value = to_scalar(group[key] if index is None else group[key][index])
        tracer = _trace_state.tracer
        if tracer is None or type(value) not in (int, float):
            return value
        at = next(i for i, g in enumerate(self.param_groups) if g is group)
        return tracer.hyper(self, at, key, index, group["params"][0].device)

    def state_dict(self) -> dict[str, Any]:
        """{"state": {index: state}, "param_groups": [groups, params as indices]}; no copies."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        index: dict[int, int] = {}
        start = 0

        def pack(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                index.setdefault(id(p), i)
            packed["params"] = [index[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": state, "param_groups": groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a `state_dict()`; state tensors are copied to their parameter's dtype and device."""
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(self.param_groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(
            len(g["params"]) != len(s["params"]) for g, s in zip(self.param_groups, saved_groups)
        ):
            raise ValueError(
                "loaded state dict contains a parameter group "
                "that doesn't match the size of optimizer's group"
            )
        id_map = dict(
            zip(
                chain.from_iterable(s["params"] for s in saved_groups),
                chain.from_iterable(g["params"] for g in self.param_groups),
            )
        )
        # torch's _process_value_according_to_param_policy: a step of a group saved fused or
        # capturable is made float32 (those updates keep it so); any other step as it is
        step_float32 = {i for s in state_dict["param_groups"] for i in s["params"]
                        if s.get("fused") or s.get("capturable")}
        state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = {k: _cast(param, v, k, key in step_float32)
                                for k, v in value.items()}
            else:
                state[key] = value
        for group, saved in zip(self.param_groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group:  # kept where the loaded groups have none
                saved.setdefault("param_names", group["param_names"])
        self.state = state
        self.param_groups = saved_groups
        self._fill_loaded()
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # torch's __setstate__ (which its load_state_dict ends with): the settings a loaded group
    # lacks (a state dict of an older torch) set to these, and these state entries saved as
    # numbers made float32 tensors (float64 under a float64 default dtype), on the
    # parameter's device where capturable or fused (always: _loaded_on_device)
    _loaded_defaults: dict[str, Any] = {}
    _loaded_tensors: tuple[str, ...] = ()
    _loaded_on_device = False
    # the settings ``_step_group`` reads as Python numbers rather than through ``_hyper``
    # (constants of a compiled step's plan, which guards them by value:
    # planner.compile._plan_constants)
    _plan_constants: tuple[str, ...] = ()

    def _fill_loaded(self) -> None:
        from runtime.creation import tensor

        self.defaults.setdefault("differentiable", False)
        dtype = D.float64 if D.default_float is D.float64 else D.float32
        for group in self.param_groups:
            for key, value in self._loaded_defaults.items():
                group.setdefault(key, value)
            for p in group["params"]:
                entries = self.state.get(p)
                if not entries:
                    continue
                on_device = (self._loaded_on_device or group.get("capturable")
                             or group.get("fused"))
                for key in self._loaded_tensors:
                    if key in entries and not isinstance(entries[key], Tensor):
                        entries[key] = tensor(float(entries[key]), dtype=dtype,
                                              device=p.device if on_device else None)


def _patch_step_function(cls: type) -> None:
    """torch's _patch_step_function: the step of the class of an optimizer being made, unless
    already so, runs the step hooks (``_with_step_hooks``). Patched when an optimizer is made,
    as torch's, so that a subclass's step calling ``super().step()`` runs the hooks once
    where its base was never made itself (twice where it was, as torch's)."""
    if not getattr(cls.step, "hooked", False):
        cls.step = _with_step_hooks(cls.step)  # type: ignore[attr-defined]
        cls.step.hooked = True  # type: ignore[attr-defined]


def step_function(opt: Any) -> Callable[..., Any]:
    """The step ``opt``'s class runs, without the hooks' wrapper."""
    step = type(opt).step
    return getattr(step, "__wrapped__", step)




def _check_flags(defaults: dict[str, Any]) -> None:
    """torch's implementation flags (foreach, fused, capturable, differentiable) are kept in
    the groups as torch's, but one implementation serves them all: torch's single-tensor
    update, written as its capturable form (no tensor data read in Python). Rejected: what
    torch rejects, and differentiable=True."""
    if defaults.get("fused") and defaults.get("foreach"):
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if defaults.get("fused") and defaults.get("differentiable"):
        raise RuntimeError("`fused` does not support `differentiable`")
    if defaults.get("differentiable"):
        raise NotImplementedError("differentiable=True is not supported: an optimizer step "
                                  "here runs under no_grad")


def _split_names(param_group: dict[str, Any], params: list[Any]) -> None:
    """``param_group["params"]`` from ``params``: tensors, or (name, tensor) pairs (as
    ``named_parameters()`` yields), whose names go to ``param_group["param_names"]``."""
    names = [p[0] for p in params if isinstance(p, tuple)]
    param_group["params"] = [p[1] if isinstance(p, tuple) else p for p in params]
    if names:
        if len(names) != len(params):
            raise ValueError("all optimizer params should be with/without names. Some param "
                             "names are missing")
        param_group["param_names"] = names


def _cast(param: Tensor, value: Any, key: Any, step_float32: bool = False) -> Any:
    """A copy of a state value on `param`'s device (and its float dtype, except for "step",
    which keeps its own, or is made float32 where ``step_float32``): tensors in dicts, lists
    and tuples too (LBFGS's history), as torch's."""
    if isinstance(value, dict):
        return {k: _cast(param, v, k, step_float32) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(param, v, None) for v in value)
    if not isinstance(value, Tensor):
        return deepcopy(value)
    value = value.detach().to(param.device)
    if key == "step":
        if step_float32:
            value = value.to(D.float32)
    elif param.dtype.is_floating_point:
        value = value.to(param.dtype)
    return value.clone()


class Scalars:
    """Hyperparameter expressions (``Optimizer._hyper``) to combine with a parameter: a
    number as it is; a captured float64 scalar cast to the parameter's dtype (the rounding a
    Python number meeting a tensor gets; float32 for a half one, which computes in float32),
    once per expression and dtype, so that a captured update holds one cast per group rather
    than one per parameter."""

    def __init__(self) -> None:
        self._cast: dict[tuple[int, Any], tuple[Tensor, Tensor]] = {}

    def __call__(self, value: Any, like: Tensor) -> Any:
        if not isinstance(value, Tensor):
            return value
        # a half parameter meets a number in float32, as eager's ops compute half (their
        # opmath): the captured scalar is cast to float32 for it, not rounded to its dtype
        dtype = D.float32 if like.dtype in D.LOW_FLOATS else like.dtype
        key = (id(value), dtype)
        found = self._cast.get(key)
        if found is None:  # the value is kept with its cast: its id stays its own
            found = self._cast[key] = (value, value.to(dtype))
        return found[1]


# torch's single-tensor updates call add(alpha=), addcmul_ and addcdiv_ with Python numbers,
# whose CPU kernels round once where a product meets a sum (an fma: add's alpha, addcmul);
# eagerly the same calls give the same bits, and so do a compiled step's kernels (the kernel
# IR's Fma). A captured hyperparameter is a tensor (read at each replay), which those
# arguments do not take: it is applied as a factor of addcmul, the same fma (alpha * other
# + t and other * alpha + t round alike), so a compiled step keeps eager's bits. A half
# parameter takes plain ops in both modes: its captured ops round to the half dtype at each
# op, as its eager ones.


def _plain(t: Tensor) -> bool:
    """Whether ``t``'s update takes plain ops, rounded at each: a half parameter's, in both
    modes, so that its compiled step keeps eager's bits. Others round as PyTorch's kernels
    in both modes, addcdiv's product before its quotient too (a capture took the quotient
    first, which fused the head's update of a clipped Adam step into one kernel where the
    product first makes two; it rounded differently)."""
    return t.dtype in D.LOW_FLOATS


def lerp_(t: Tensor, end: Tensor, weight: Any, number: bool) -> Tensor:
    """``t.lerp_(end, weight)``. ``number``: the weight is a Python number of the group (a
    captured hyperparameter: a float32 tensor for a half ``t``, see Scalars), which PyTorch's
    lerp weighs in float32 where a tensor weight is rounded to t's dtype first: so its
    capture computes in float32 and rounds once, eager's bits (a bfloat16 Adam's exp_avg
    took 1 - beta1 as 0.10009765625 compiled, 0.1 eagerly)."""
    return t.copy_(lerp(t, end, weight, number)) if _widened(t, weight, number) \
        else t.lerp_(end, weight)


def lerp(t: Tensor, end: Tensor, weight: Any, number: bool) -> Tensor:
    """``t.lerp(end, weight)``, a number's weight kept as ``lerp_``'s."""
    if _widened(t, weight, number):
        return t.to(weight.dtype).lerp(end.to(weight.dtype), weight).to(t.dtype)
    return t.lerp(end, weight)


def _widened(t: Tensor, weight: Any, number: bool) -> bool:
    return number and isinstance(weight, Tensor) and weight.dtype is not t.dtype


def add_scaled(t: Tensor, other: Tensor, alpha: Any) -> Tensor:
    """``t.add(other, alpha=alpha)``."""
    if _plain(t):
        return t.add(other * alpha)
    return t.addcmul(other, alpha) if isinstance(alpha, Tensor) else t.add(other, alpha=alpha)


def add_scaled_(t: Tensor, other: Tensor, alpha: Any) -> Tensor:
    """``t.add_(other, alpha=alpha)``."""
    if _plain(t):
        return t.add_(other * alpha)
    return t.addcmul_(other, alpha) if isinstance(alpha, Tensor) \
        else t.add_(other, alpha=alpha)


def sub_scaled_(t: Tensor, other: Tensor, alpha: Any) -> Tensor:
    """``t.add_(other, alpha=-alpha)`` (a step against the gradient: the same bits, negation
    being exact, and no op negating a captured hyperparameter)."""
    if _plain(t):
        return t.sub_(other * alpha)
    return t.addcmul_(other, alpha, value=-1) if isinstance(alpha, Tensor) \
        else t.add_(other, alpha=-alpha)


def addcmul(t: Tensor, tensor1: Tensor, tensor2: Tensor, value: Any) -> Tensor:
    """``t.addcmul(tensor1, tensor2, value=value)``: t + value * tensor1 * tensor2, the
    product by value rounded first."""
    if _plain(t):
        return t.add(tensor1 * value * tensor2)
    if isinstance(value, Tensor):
        return t.addcmul(tensor1 * value, tensor2)
    return t.addcmul(tensor1, tensor2, value=value)


def addcmul_(t: Tensor, tensor1: Tensor, tensor2: Tensor, value: Any) -> Tensor:
    """``t.addcmul_(tensor1, tensor2, value=value)``."""
    if _plain(t):
        return t.add_(tensor1 * value * tensor2)
    if isinstance(value, Tensor):
        return t.addcmul_(tensor1 * value, tensor2)
    return t.addcmul_(tensor1, tensor2, value=value)


def addcdiv_(t: Tensor, tensor1: Tensor, tensor2: Tensor, value: Any) -> Tensor:
    """``t.addcdiv_(tensor1, tensor2, value=value)``: t + value * tensor1 / tensor2 in the
    kernel's order and rounding, eagerly and captured (the product first; a 0-d tensor value
    of t's dtype gives its bits); a half parameter's as the quotient scaled (``_plain``)."""
    if _plain(t):
        return t.add_((tensor1 / tensor2).mul_(value))
    return t.add_(tensor1 * value / tensor2)


def subcdiv_(t: Tensor, tensor1: Tensor, tensor2: Tensor, value: Any) -> Tensor:
    """``t.addcdiv_(tensor1, tensor2, value=-value)`` (the same bits, negation being exact,
    and no op negating a captured hyperparameter)."""
    if _plain(t):
        return t.sub_((tensor1 / tensor2).mul_(value))
    return t.sub_(tensor1 * value / tensor2)
