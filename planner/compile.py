"""planner.compile: capture a training step once per guard, plan it, and replay the plan.

Semantics follow eager mode exactly: a compiled call leaves parameters, ``.grad``, optimizer
state and returned values as eager would, and writes state back only after every step of the
plan succeeded. What cannot be captured runs eagerly, with one warning naming the line (or,
with ``fullgraph=True``, raises).

A call is all or nothing: one that fails or is interrupted (Ctrl-C) before its write-back
leaves every piece of state as it was, the random generators included, and a Ctrl-C that
arrives during the write-back is raised once it is complete (``_Replayer``). Calls of one
compiled step run one at a time, from whatever threads (``CompiledStep.lock``).
"""

from __future__ import annotations

import _signal
import contextlib
import functools
import gc
import inspect
import logging
import os
import math
import threading
import time
import types
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from runtime import _dtype as D
from runtime import _profiling
from runtime import compiler as _compiler
from runtime.amp import _state as _amp_state
from runtime._device import canonical_device, cupy_module, device_of_array
from runtime._threads import intra_op
from runtime.autograd.anomaly import is_anomaly_enabled
from runtime.autograd.grad_mode import is_grad_enabled
from runtime.autograd.node import leaf_hooks_version, saved_tensors_hooks_state
from runtime.nn.module import (Module, _global_buffer_registration_hooks, global_hook_ids,
                               structure_version)
from runtime.optim.optimizer import has_step_hooks
from runtime.ops.dispatch import INT_INPUT_BOUND
from runtime.ops.registry import without_generated_code
from runtime.tensor import Tensor, _InferenceVersionCounter, _VersionCounter
from runtime.tracing import GraphBreak, WarmUpNeeded, is_tracing

from . import background as bg
from . import aot, cuda_graph, guards, plan_cache, returned_graphs
from .optimized_module import OptimizedModule
from .capture import Capture, Slot, capture
from .guards import ASSIGNED, MISSING, exact_setting_key, is_exact, setting_key
from .number_guards import NumberGuards
from .parallel import Execution, check_options
from .plan import COMMITS, Plan, build_plan
from .program import code_of
from .tree import flatten, freeze, unflatten, with_namedtuples

log = logging.getLogger("planner")

# "auto" fuses elementwise segments into kernels of the plan's device (codegen/: LLVM on the
# CPU, measured faster than the interpreter on every workload by benchmarks/run.py; CUDA C on a
# GPU) and falls back to the reference interpreter, with a warning, where they fail to build;
# "llvm" and "cuda" ask for that device's kernels (a failure raises); "interpreter" never fuses
BACKENDS = ("auto", "interpreter", "llvm", "cuda", "eager")
# backend -> the device type its kernels run on
KERNEL_BACKENDS = {"llvm": "cpu", "cuda": "cuda"}
KERNEL_BACKENDS_CPU = ("auto", "llvm")  # the backends that build LLVM kernels for a CPU plan
CACHE_SIZE = 8
# captures a step makes before new arguments run eagerly (torch.compile's recompile_limit, 8):
# a step that specializes on a Python number that changes every call (a batch index that
# slices numpy data) would otherwise capture and plan anew at every call, slower than eager
RECOMPILE_LIMIT = 8


class CompileError(RuntimeError):
    """A step cannot be compiled and ``fullgraph=True`` forbids falling back to eager."""


@dataclass
class Binding:
    """A plan with the live objects its slots stand for, and the guards that keep it valid."""

    plan: Plan
    slots: list[Slot]
    generators: list[Any]
    modules: list[tuple[Any, tuple[Any, ...]]]
    optimizers: list[tuple[Any, Any]]
    grad_none: list[tuple[Any, bool, int | None]]
    # values the step reads through names, attributes and items (planner.guards.Guard)
    python_values: list[guards.Guard] = field(default_factory=list)
    # Python calls replayed around the plan (Capture.effects: lr schedulers' steps)
    effects: list[tuple[str, Callable[[], Any]]] = field(default_factory=list)
    module_version: int = -1  # the modules' structure version when last found unchanged
    # the train()/eval() calls the step begins with (Capture.modes), made before the guards:
    # (module, its modules as captured, mode)
    modes: list[tuple[Any, tuple[Any, ...], bool]] = field(default_factory=list)
    # (id(module), name) of module settings the step increments itself (``self.n += 1``):
    # added to after each replay (an effect), so not guarded by value (_counters)
    counters: frozenset[tuple[int, str]] = frozenset()
    # (id(module), name) of the buffers the step assigns a tensor it computes (Capture.stored):
    # a replay stores a new one there, so not guarded by identity (``_module_params``)
    stored_buffers: frozenset[tuple[int, str]] = frozenset()
    # the slots failed_guard checks, in slot order, each with its kind decided once: a tensor
    # (shape, dtype, requires_grad) or an in-place .grad (shape and dtype)
    guarded: list[tuple[bool, Slot]] = field(init=False, repr=False)
    replayer: _Replayer | None = field(default=None, init=False, repr=False)  # on first replay
    # the replayer's written-out call where ``_replay`` calls nothing else (no aot backward,
    # no inference tensors to make): what a steady-state call runs straight from _call_flat
    direct: Callable[[tuple[Any, ...]], Any] | None = field(default=None, init=False,
                                                             repr=False)
    # failed_guard's test written out (planner.guards), made on first use
    quick: Callable[[tuple[Any, ...]], bool] | None = field(default=None, init=False,
                                                             repr=False)
    # the fused plan whose kernels compile in the background (planner.background), replayed
    # from the first call that finds them built; ``plan`` is the unfused plan until then
    pending: bg.Pending | None = None
    # positions of the int and float arguments the plan reads as inputs (int64 and float64
    # scalars made from the call's numbers at every replay: CompiledStep._changed_numbers)
    scalar_inputs: frozenset[int] = frozenset()
    # a step returning tensors that require grad: its backward plan (planner.aot); ``plan``
    # is the forward's
    aot: Any = None
    # the returned tensors that required grad when captured (Capture.returned_graphs)
    returned_graphs: tuple[Any, ...] = ()
    # the step returned inference tensors only (Capture.inference_returns): so does a replay
    inference_returns: bool = False
    # the conditions on number arguments the step branched on when captured (a call whose
    # numbers give one of them another truth takes another plan: planner.number_guards)
    numbers: NumberGuards | None = None
    # the leaves among the tensors the plan reads that require grad, each with the hooks it
    # had when captured (``_leaf_hooks``: the plan ran them), re-checked where any leaf's
    # hooks changed since (runtime.autograd.node.leaf_hooks_version)
    leaf_hooks: list[tuple[Tensor, Any]] = field(init=False, repr=False)
    hooks_version: int = field(init=False, repr=False)
    other_roots: frozenset[int] = field(init=False, repr=False)  # (__post_init__)
    written_args: tuple[int, ...] = field(init=False, repr=False)
    # the forward of each class of the user's among the captured modules, as it was (a class
    # whose forward is rebound, ``Net.forward = other``, changes no module: checked per call)
    forwards: tuple[tuple[type, Any], ...] = field(init=False, repr=False)
    # the memory (ids of numpy's base, else of the array) of the tensors from outside the step
    # the plan reads and writes (Capture.outside), the positions of the tensor arguments, and
    # those of them that shared it when captured: a plan reads an argument as a value of its
    # own, which eager mode's reads after an optimizer's update of a parameter it shares
    # memory with do not (``shared_memory``)
    outside_roots: frozenset[int] = frozenset()
    # the namedtuples the step returns (Capture.namedtuples), rebuilt around a replay's result
    namedtuples: Any = None
    tensor_args: tuple[int, ...] = ()
    sharing: tuple[int, ...] = ()
    # the tensors the step leaves at paths (Capture.stored), stored there after each replay
    # (those it computed the plan returns after the step's own value)
    stored: tuple[returned_graphs.StoredTensor, ...] = ()

    def __post_init__(self) -> None:
        self.guarded = [(slot.kind == "tensor", slot) for slot in self.slots
                        if slot.kind == "tensor" or (slot.kind == "grad"
                                                     and slot.mode == "inplace")]
        self.leaf_hooks = [(slot.ref, _leaf_hooks(slot.ref)) for slot in self.slots
                           if slot.kind == "tensor" and slot.ref._rg
                           and slot.ref._grad_fn is None]
        self.hooks_version = leaf_hooks_version()
        # the memory of the tensors from outside the step but those it carries by path
        # (Slot.path): a carried tensor found sharing it is read apart (guards.carried_misfit)
        carried = {guards.memory_root(slot.ref._data) for slot in self.slots
                   if slot.kind == "tensor" and slot.path is not None}
        self.other_roots = self.outside_roots - carried
        # and the positions of the arguments the plan writes in place, where it carries any
        written = {slot for slot, _ in self.plan.writes} if carried else set()
        self.written_args = tuple(slot.ref for i, slot in enumerate(self.slots)
                                  if slot.kind == "input" and i in written)
        classes = {type(sub) for m, _ in self.modules for sub in m.modules()}
        self.forwards = tuple((cls, cls.forward) for cls in classes
                              if guards.users_function(cls.forward))

    def check(self, args: tuple[Any, ...]) -> str | None:
        """``failed_guard``, asked only where the generated guards (``planner.guards``) do
        not pass."""
        for module, modules, mode in self.modes:  # as the step's first lines would
            if any(m.training is not mode for m in modules):
                module.train(mode)
        quick = self.quick
        if quick is None:
            quick = self.quick = guards.build(self)
        return None if quick(args) else self.failed_guard(args)

    def failed_guard(self, args: tuple[Any, ...]) -> str | None:
        """Why this plan does not fit the current state (None: it fits)."""
        if self.numbers is not None:
            why = self.numbers.failed(args)
            if why is not None:
                return why
        for guard in self.python_values:
            why = guard.failed()
            if why is not None:
                return why
        for is_tensor, slot in self.guarded:
            if is_tensor:
                t = slot.ref if slot.path is None else guards.found_at(slot.path)
                misfit = None if slot.path is None else guards.carried_misfit(
                    t, slot.ref.device, self.other_roots, args, self.written_args)
                if misfit is not None:
                    return (f"{slot.path} {misfit} (the step carries a tensor there from call "
                            "to call)")
                if tuple(t.shape) != slot.shape or t.dtype is not slot.dtype:
                    return f"{slot.desc} changed to {list(t.shape)} {t.dtype.name}"
                if slot.requires_grad is not None and t._rg != slot.requires_grad:
                    return f"{slot.desc} now has requires_grad={t._rg}"
            else:
                g = (slot.ref if slot.owner_input is None else args[slot.owner_input])._grad
                if g is not None and (tuple(g.shape) != slot.shape or g.dtype is not slot.dtype):
                    return f"{slot.desc} changed shape or dtype"
        if self.hooks_version != leaf_hooks_version():
            for t, hooks in self.leaf_hooks:
                if _leaf_hooks(t) != hooks:
                    return f"a hook of tensor{list(t.shape)} was registered or removed"
            self.hooks_version = leaf_hooks_version()
        for ref, was_none, index in self.grad_none:
            owner = ref if index is None else args[index]
            if (owner._grad is None) != was_none:
                return (f"the .grad of tensor{list(owner.shape)} is "
                        f"{'None' if owner._grad is None else 'set'} (it was "
                        f"{'None' if was_none else 'set'} when the step was captured)")
        now = guards.shared_memory(args, self.tensor_args, self.outside_roots)
        if now != self.sharing:
            return (f"the arguments sharing memory with a parameter or state the step reads: "
                    f"{list(now)} (was {list(self.sharing)})")
        for cls, forward in self.forwards:
            if cls.forward is not forward:
                return f"{cls.__name__}.forward is another function"
        version = structure_version()
        for module, params in self.modules if version != self.module_version else ():
            now = _module_params(module, None, self.counters, self.stored_buffers)
            if now[0] != params[0]:
                return f"the parameters or buffers of {type(module).__name__} were replaced"
            if now[1] != params[1]:
                return f"{type(module).__name__} switched between train() and eval()"
            if now[2] != params[2]:
                return f"a forward or backward hook of {type(module).__name__} was added or removed"
            if now[3] != params[3]:
                return _setting_change(params[3], now[3])
            if now[4] != params[4]:
                return _forward_change(module, params[4], now[4])

        for opt, key in self.optimizers:
            if has_step_hooks(opt):  # captured without: a capture with them runs eagerly
                return f"{type(opt).__name__}: a step hook was registered"
            if not _optimizer_matches(opt, key):
                return f"{type(opt).__name__}: {_optimizer_change(opt, key)}"
        self.module_version = version
        return None

    def _replayer(self) -> _Replayer:
        found = self.replayer
        if found is None:
            found = self.replayer = _Replayer(self)
            self.direct = found.fast if self.aot is None and not self.inference_returns \
                and self.namedtuples is None else None
        return found


def _leaf_hooks(t: Tensor) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ids of a leaf's gradient hooks and post-accumulate hooks."""
    return (tuple(t._hooks or ()), tuple(t.__dict__.get("_post_accumulate_grad_hooks") or ()))


def _module_params(module: Any, found: dict[int, tuple[Any, bool]] | None = None,
                   counters: frozenset[tuple[int, str]] = frozenset(),
                   stored: frozenset[tuple[int, str]] = frozenset()) -> tuple[Any, ...]:
    """What a captured module's forward was traced with: its parameters and buffers (not
    those ``stored``, which a replay assigns anew: only their names), train/eval modes
    (those in ``found`` as found there: Capture.found_modes), forward and backward hooks (a
    backward hook registered after the capture was skipped by the plan, silently) and
    settings (``_settings``), and forwards bound to a module itself (``m.forward = f``,
    which its calls run instead of its class's)."""
    modules = list(module.modules())
    found = found or {}
    buffers = ((f"{prefix}.{name}" if prefix else name,
                None if (id(m), name) in stored else id(b))
               for prefix, m in module.named_modules() for name, b in m._buffers.items()
               if b is not None)
    return (tuple((name, id(p)) for name, p in module.named_parameters()) + tuple(buffers),
            tuple(found.get(id(m), (m, m.training))[1] for m in modules),
            (global_hook_ids(), *((*m._forward_pre_hooks, -1, *m._forward_hooks, -2,
                                   *m._backward_pre_hooks, -3, *m._backward_hooks)
                                  for m in modules)),
            tuple((m, _settings(m, counters)) for m in modules),
            tuple(vars(m).get("forward") for m in modules))


_SETTING_TYPES = (bool, int, float, str, type(None))


def _settings(module: Any, counters: frozenset[tuple[int, str]] = frozenset()
              ) -> tuple[tuple[str, Any], ...]:
    """A module's plain settings, which its forward reads as constants (Dropout's p, a loss's
    reduction, ignore_index and label_smoothing, a norm's eps): its public attributes that
    are numbers, strings, None, or tuples of them; not the ``counters`` the step increments
    itself (a replay adds to them: their type is guarded as a path, planner.guards.Guard)."""
    return tuple((name, value) for name, value in vars(module).items()
                 if not name.startswith("_") and name != "training"
                 and (id(module), name) not in counters and all(
                     type(v) in _SETTING_TYPES
                     for v in (value if type(value) in (tuple, list) else (value,))))


def _forward_change(module: Any, was: tuple[Any, ...], now: tuple[Any, ...]) -> str:
    """Which module's own forward was bound or rebound, for the recompile log."""
    for sub, before, after in zip(module.modules(), was, now):
        if before != after:
            return f"the forward of {type(sub).__name__} (in {type(module).__name__}) was rebound"
    return f"the forward of a module in {type(module).__name__} was rebound"


def _setting_change(was: tuple[Any, ...], now: tuple[Any, ...]) -> str:
    """Which module setting changed, for the recompile log."""
    for (module, old), (other, new) in zip(was, now):
        if other is not module:  # a submodule replaced by one without parameters (ReLU)
            return f"{type(module).__name__} was replaced by {type(other).__name__}"
        before, after = dict(old), dict(new)
        for name in before.keys() | after.keys():
            if before.get(name, MISSING) != after.get(name, MISSING):
                return (f"{type(module).__name__}.{name} is {after.get(name, MISSING)!r} "
                        f"(it was {before.get(name, MISSING)!r})")
    return "a module setting changed"


def _outermost(modules: list[Any]) -> list[Any]:
    """The captured modules that no other captured module contains (their guards cover all)."""
    inner = {id(sub) for m in modules for sub in m.modules() if sub is not m}
    return [m for m in modules if id(m) not in inner]


def _optimizer_key(opt: Any, assigned: Any = frozenset(), replayed: Any = None) -> Any:
    """What a plan depends on in ``opt``: its groups' parameters and settings
    (``setting_key``; those in ``assigned``, (group, key) pairs the step assigns before its
    update reads them, not at all: ASSIGNED; a number the update reads as a constant of the
    plan, by value: ``exact_setting_key``, see ``_setting_key``) and its state entries.
    ``replayed``: the (group, key, index) settings the plan reads at each replay
    (Tracer.hyper); None: as if every number were."""
    constants = _plan_constants(opt)
    groups = tuple(
        (tuple(id(p) for p in g["params"]),
         tuple(sorted((k, ASSIGNED if (i, k) in assigned
                       else _setting_key(i, k, v, replayed, constants))
                      for k, v in g.items() if k != "params")))
        for i, g in enumerate(opt.param_groups))
    state = tuple(
        (id(p), tuple(sorted((k, id(v) if isinstance(v, Tensor) else v) for k, v in st.items())))
        for p, st in opt.state.items())
    return groups, state


def _plan_constants(opt: Any) -> Any:
    """The settings ``opt``'s update reads as Python numbers (constants of a plan): those
    its class names (``Optimizer._plan_constants``: Muon's eps and Newton-Schulz
    coefficients) where the update is the library's (``Optimizer.step`` over
    ``_step_group``, which reads every other number through ``_hyper``, or only whether it
    is zero); None, any, where the class has a step of its own (a user's optimizer reading
    ``group["lr"]``)."""
    from runtime.optim.optimizer import Optimizer, step_function

    if step_function(opt) is not Optimizer.step:
        return None
    return frozenset(type(opt)._plan_constants)


def _setting_key(group: int, key: str, value: Any, replayed: Any, constants: Any) -> Any:
    """``exact_setting_key`` of a setting the update may read as a constant (``constants``
    None or naming it) unless the plan reads each of its numbers at every replay
    (``replayed``); else ``setting_key``."""
    if replayed is None or (constants is not None and key not in constants):
        return setting_key(value, key)
    if type(value) in (int, float):
        numbers = [None]
    elif isinstance(value, (list, tuple)):
        numbers = [j for j, v in enumerate(value) if type(v) in (int, float)]
    else:
        numbers = []
    if all((group, key, j) in replayed for j in numbers):
        return setting_key(value, key)
    return exact_setting_key(value)


def _setting_now(group: dict[str, Any], key: str, was: Any) -> Any:
    """The key of ``group[key]`` now, made as ``was`` (its key at capture) was made."""
    value = group.get(key, MISSING)
    return exact_setting_key(value) if is_exact(was) else setting_key(value, key)


def _optimizer_matches(opt: Any, key: Any) -> bool:
    """``_optimizer_key(opt) == key``, decided without building the key (it runs every call):
    the same parameters by identity, the same settings and state entries by equality (as in a
    tuple comparison: identical objects are equal, nan included)."""
    groups, state = key
    if len(opt.param_groups) != len(groups):
        return False
    for g, (ids, settings) in zip(opt.param_groups, groups):
        params = g["params"]
        if len(params) != len(ids) or any(id(p) != i for p, i in zip(params, ids)):
            return False
        if len(g) - 1 != len(settings):  # "params" is not among the settings
            return False
        for k, v in settings:
            if v is ASSIGNED:
                continue
            now = _setting_now(g, k, v)
            if now is not v and (now is MISSING or not now == v):
                return False
    if len(opt.state) != len(state):
        return False
    for (p, st), (pid, entries) in zip(opt.state.items(), state):
        if id(p) != pid or len(st) != len(entries):
            return False
        for k, v in entries:
            now = st.get(k, MISSING)
            if isinstance(now, Tensor):
                now = id(now)
            if now is not v and (now is MISSING or not now == v):
                return False
    return True


def _optimizer_change(opt: Any, key: Any) -> str:
    """What differs between ``opt`` and the ``_optimizer_key`` it was captured with."""
    groups, state = _optimizer_key(opt)
    old_groups, old_state = key
    if len(groups) != len(old_groups):
        return f"{len(groups)} parameter groups (was {len(old_groups)})"
    for i, ((ids, settings), (old_ids, old_settings)) in enumerate(zip(groups, old_groups)):
        if ids != old_ids:
            return f"the parameters of param_groups[{i}] changed"
        was = dict(old_settings)
        now = {k: _setting_now(opt.param_groups[i], k, was[k]) if k in was else v
               for k, v in settings}
        for name in sorted(now.keys() | was.keys()):
            if was.get(name) is not ASSIGNED and now.get(name, MISSING) != was.get(name, MISSING):
                value = opt.param_groups[i].get(name, "missing")
                return f"param_groups[{i}][{name!r}] is {value!r} ({_was(was.get(name))})"
    if len(state) != len(old_state):
        return f"state for {len(state)} parameters (was {len(old_state)})"
    return "its state entries changed"


def _was(setting: Any) -> str:
    if isinstance(setting, tuple) and setting[:1] == ("number",):
        return f"was {'zero' if setting[2] else 'non-zero'}: the update branches on that"
    return f"was {setting!r}"


# a number argument's value in a key where the plan reads it as an input; a string
# argument's where the step does not read it at all (a batch's file names, as a DataLoader
# collates them): a tuple, which no string argument's value is
DYNAMIC = "dynamic"
_UNREAD = ("unread",)
_MARKERS = {"int": DYNAMIC, "float": DYNAMIC, "str": _UNREAD}


def _with_dynamic(key: tuple[Any, ...], dynamic: frozenset[int]) -> tuple[Any, ...]:
    """``key`` with the values of the number and string arguments at ``dynamic`` left out."""
    entries = list(key)
    for i in dynamic:
        if 2 + i < len(entries) and _plannable(entries[2 + i]):
            entries[2 + i] = ("P", entries[2 + i][1], _MARKERS[entries[2 + i][1]])
    return tuple(entries)


def _plannable(entry: tuple[Any, ...]) -> bool:
    """Whether a key's entry is an argument a plan can leave out of its key: a float or an
    int of magnitude up to 2 ** 48 (a larger one stays a constant: what the step computes
    from it may pass int64's range, runtime.ops.dispatch.INT_INPUT_BOUND), read as an input
    (automatic dynamic; a bool, an int too, stays a constant, as torch.compile specializes
    it), or a string, which the plan must not read."""
    return entry[0] == "P" and (entry[1] in ("float", "str") or entry[1] == "int" and (
        entry[2] == DYNAMIC or -INT_INPUT_BOUND <= entry[2] <= INT_INPUT_BOUND))


def _dynamic_positions(key: tuple[Any, ...]) -> frozenset[int]:
    return frozenset(i for i, e in enumerate(key[2:])
                     if e[0] == "P" and e[1] in _MARKERS and e[2] == _MARKERS[e[1]])


def _take_back_made_state(cap: Capture) -> None:
    """The optimizer state a capture made for its plan (``Capture.made_state``), removed
    where a call runs eagerly instead: the eager step makes its own, and one that fails
    leaves the optimizer as it was, as in eager mode."""
    for opt, p, made in cap.made_state:
        st = opt.state.get(p)
        if st is not None and st.keys() == made.keys() and all(
                st[k] is v for k, v in made.items()):
            del opt.state[p]


def _autocast_key() -> tuple[tuple[str, str], ...] | None:
    """The autocast regions the calling thread is in (device type, dtype), as a capture's ops
    cast under them; None where none is."""
    if not _amp_state.state.on:
        return None
    st = _amp_state.state
    return tuple((device, st.dtype[device].name) for device, on in st.enabled.items() if on)


def _arg_key(args: tuple[Any, ...]) -> tuple[Any, ...]:
    # the modes a capture depends on: grad mode, the dtype Python floats take, autocast
    key: list[Any] = [(is_grad_enabled(), D.default_float.name,
                       _autocast_key() if _amp_state.active_threads else None)]
    first, arrays = None, None  # the tensor arguments' arrays, listed from the second on
    for a in args:
        if isinstance(a, Tensor):
            data = a._data
            if first is None:
                first = data
            elif arrays is None:
                arrays = [first, data]
            else:
                arrays.append(data)
            key.append(("T", data.shape, a.dtype.name, a.device, a._rg, a._vc.inference,
                        None if data.flags.c_contiguous else _layout(data)))
        elif a is None or isinstance(a, _BY_VALUE):
            # a number or string, a numpy scalar (np.int64(3), np.float32(0.5)): by its value,
            # a constant of the plan (an id, which a new scalar may take over from a freed
            # one, replayed another value's plan)
            if a == 0 and isinstance(a, (float, np.floating)) and math.copysign(1.0, a) < 0:
                key.append(("P", type(a).__name__, a, "-0"))  # -0.0 == 0.0, another constant
            else:
                key.append(("P", type(a).__name__, a))
        else:
            key.append(("O", type(a).__name__, id(a)))
    if arrays is not None:  # tensor arguments sharing storage (a base) are captured apart
        roots = [id(d if getattr(d, "base", None) is None else d.base) for d in arrays]
        if len(set(roots)) != len(roots):
            key.append(("alias", tuple(roots.index(r) for r in roots)))
    return tuple(key)


# the arguments keyed by value: immutable, hashable, equal where they compute the same
_BY_VALUE = (bool, int, float, complex, str, bytes, np.generic)


def _layout(data: Any) -> tuple[int, ...]:
    """A non-contiguous array's strides, in elements, 0 along axes of one element (whose
    stride is any): what eager mode's view() and layout checks read, so the capture's too
    (torch.compile guards strides as well)."""
    size = data.itemsize
    return tuple(s // size if n > 1 else 0 for n, s in zip(data.shape, data.strides))


def _describe_key_change(old: tuple[Any, ...], new: tuple[Any, ...]) -> str:
    if old[0] != new[0]:
        return "the structure of the arguments changed"
    old, new = old[1:], new[1:]
    (grad_was, float_was, cast_was), (grad_now, float_now, cast_now) = old[0], new[0]
    if grad_was != grad_now:
        return f"grad mode is {'on' if grad_now else 'off'} (was {'on' if grad_was else 'off'})"
    if float_was != float_now:
        return f"the default dtype is {float_now} (was {float_was})"
    if cast_was != cast_now:
        return f"autocast is {_autocast_text(cast_now)} (was {_autocast_text(cast_was)})"
    aliases = [k[-1][1] if k[-1][0] == "alias" else None for k in (old, new)]
    old, new = (k[:-1] if a is not None else k for k, a in zip((old, new), aliases))
    if aliases[0] != aliases[1] and len(old) == len(new):
        return (f"tensor arguments sharing storage: {_sharing(aliases[1])} (was "
                f"{_sharing(aliases[0])})")
    if len(old) != len(new):
        return f"{len(new) - 1} arguments (was {len(old) - 1})"
    names = {"T": ("shape", "dtype", "device", "requires_grad", "inference tensor",
                   "strides (None: contiguous)")}
    for i, (a, b) in enumerate(zip(old[1:], new[1:])):
        if a == b:
            continue
        if a[0] == b[0] == "T":
            for name, x, y in zip(names["T"], a[1:], b[1:]):
                if x != y:
                    return f"argument {i}: {name} {y!r} (was {x!r})"
        return f"argument {i}: {b[1:]!r} (was {a[1:]!r})"
    # the same key, no plan for it: the last call's capture raised (the step's own error)
    return "the last capture, for the same arguments, raised before a plan was made"


def _autocast_text(key: tuple[tuple[str, str], ...] | None) -> str:
    return "off" if not key else ", ".join(f"on for {d} ({t})" for d, t in key)


def _sharing(pattern: tuple[int, ...] | None) -> str:
    """_arg_key's alias pattern (each tensor argument's first one sharing its storage) in
    words: the groups of tensor arguments (counted among tensors) that share storage."""
    if pattern is None:
        return "none"
    groups: dict[int, list[int]] = {}
    for i, first in enumerate(pattern):
        groups.setdefault(first, []).append(i)
    return ", ".join(str(g) for g in groups.values() if len(g) > 1)


_CONTAINERS = (tuple, list, dict)  # what flatten descends into (namedtuples too)
_POSITIONAL: dict[int, tuple[Any, Any]] = {}


def _positional_spec(n: int) -> tuple[Any, Any]:
    """flatten's spec of ``(args, {})`` for n leaf arguments, and its frozen form."""
    found = _POSITIONAL.get(n)
    if found is None:
        spec = flatten((tuple(range(n)), {}))[1]
        found = _POSITIONAL[n] = (spec, freeze(spec))
    return found


def _parameter_names(fn: Any) -> tuple[str | None, ...]:
    """The names of a Python function's leading parameters that a call may pass by position
    (None for a positional-only one), up to its first ``*args``, keyword-only or ``**kwargs``
    parameter; () for any other callable (a module, a wrapper taking ``*args, **kwargs``)."""
    if not isinstance(fn, (types.FunctionType, types.MethodType)):
        return ()
    try:
        parameters = inspect.signature(fn, follow_wrapped=False).parameters.values()
    except (TypeError, ValueError):
        return ()
    names: list[str | None] = []
    for p in parameters:
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            names.append(None)
        elif p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD:
            names.append(p.name)
        else:
            break
    return tuple(names)


@dataclass
class _EagerBranch:
    """Where a step's conditions on its number arguments (planner.number_guards) have these
    truths, it cannot be captured (``reason``: a ``loss.item()`` logged every k-th call): such
    calls run eagerly, where the step's other branches replay their plans."""

    numbers: NumberGuards
    reason: str
    pending: None = None

    def check(self, args: tuple[Any, ...]) -> str | None:
        return self.numbers.failed(args)

    failed_guard = check


@dataclass
class _Entry:
    bindings: list[Binding | _EagerBranch] = field(default_factory=list)
    eager_reason: str | None = None
    warmed: bool = False  # a call ran eagerly because it created state (Capture.created_state)


class _WarmUp(Exception):  # noqa: N818 (a signal, not an error)
    """The capture created state its plan depends on: run this call eagerly, then capture
    again."""

    def __init__(self, created: list[str]) -> None:
        super().__init__(created[0] + (f" and {len(created) - 1} more entries"
                                       if len(created) > 1 else ""))


class _StateMadeEarly(Exception):  # noqa: N818 (a signal, not an error)
    """A capture made after the call ran eagerly made optimizer state for real
    (Capture.made_state), taken back: no replay of this call steps it, and eager mode makes
    it at the next step that finds a gradient, from the hyperparameters of then (Rprop's
    step sizes are its lr); the next call captures with it made then."""


# every compiled step alive (runtime.compiler.reset forgets their plans)
_LIVE: weakref.WeakSet[CompiledStep] = weakref.WeakSet()


def reset_all() -> None:
    """``CompiledStep.reset`` of every compiled step alive."""
    for step in list(_LIVE):
        step.reset()


class CompiledStep:
    """What ``planner.compile(fn)`` returns: call it like ``fn``."""

    def __init__(self, fn: Callable[..., Any], backend: str = "auto", device: str | None = None,
                 workers: int | None = None, cache_dir: str | os.PathLike[str] | None = None,
                 fullgraph: bool = False, lock: AbstractContextManager[Any] | None = None,
                 executor: str = "auto", recompile_limit: int | None = RECOMPILE_LIMIT,
                 background: bool | None = None, dynamic: bool | None = None,
                 cuda_graphs: bool | None = None) -> None:
        if dynamic not in (None, True, False):
            raise TypeError(f"planner.compile: dynamic must be None, True or False, got "
                            f"{dynamic!r}")
        if backend not in BACKENDS:
            raise ValueError(f"planner.compile: unknown backend {backend!r}; expected one of "
                             f"{', '.join(BACKENDS)}")
        check_options(workers, executor, "planner.compile")
        if cache_dir is not None and not isinstance(cache_dir, (str, os.PathLike)):
            raise TypeError(f"planner.compile: cache_dir must be a path, got "
                            f"{type(cache_dir).__name__}")
        if lock is not None and not (hasattr(lock, "__enter__") and hasattr(lock, "__exit__")):
            raise TypeError(f"planner.compile: lock must be a lock such as threading.RLock(), "
                            f"got {type(lock).__name__}")
        if recompile_limit is not None and (type(recompile_limit) is not int
                                            or recompile_limit < 1):
            raise ValueError(f"planner.compile: recompile_limit must be a positive int or None, "
                             f"got {recompile_limit!r}")
        if background is not None and type(background) is not bool:
            raise TypeError(f"planner.compile: background must be True, False or None, got "
                            f"{background!r}")
        if cuda_graphs is not None and type(cuda_graphs) is not bool:
            raise TypeError(f"planner.compile: cuda_graphs must be True, False or None, got "
                            f"{cuda_graphs!r}")
        self.recompile_limit = recompile_limit
        self.background = background
        self.cuda_graphs = cuda_graph.enabled(cuda_graphs)
        self.fn = fn
        # the code its plans were captured from: a step whose ``__code__`` is rebound
        # (``step.__code__ = other.__code__``) is another function, captured anew
        # (``_code_rebound``), as torch.compile's guard on the frame's code object makes it
        func = getattr(fn, "__func__", fn)  # a bound method's function
        self._code_of = func if isinstance(func, types.FunctionType) else None
        self._code = None if self._code_of is None else self._code_of.__code__
        self.backend = backend
        self.device = canonical_device(device) if device is not None else None
        self.workers = workers
        self.executor = executor
        self.cache_dir = cache_dir
        self.fullgraph = fullgraph
        self.plan: Plan | None = None
        self._cache: OrderedDict[tuple[Any, ...], _Entry] = OrderedDict()
        # per argument structure: the positions of number arguments read as plan inputs
        # (``_changed_numbers``), and those found read as values (constants for good)
        self._dynamic: dict[Any, frozenset[int]] = {}
        self.dynamic = dynamic
        self.name: str | None = None  # what warnings and logs call it (default: fn's name)
        self._static: dict[Any, set[int]] = {}
        self._last_key: tuple[Any, ...] | None = None
        self._names: tuple[str | None, ...] | None = None  # fn's parameters (_by_position)
        self.captures = 0  # how many times the step was captured and planned
        self.plans_loaded = 0  # of those, how many found their plan kept (planner.plan_cache)
        # calls run eagerly because their capture created state (Adam's moments, SGD's
        # momentum buffers are made by the first step; a first backward makes the .grads that
        # zero_grad(set_to_none=False) found None): a plan captured then would make them
        # anew at every replay, or not fit the next call: such a call runs eagerly and the
        # step is captured right after it, with that state in place (Capture.created_state)
        self.warmups = 0
        self._limit_warned = False
        self._saved_hooks_warned = False  # _with_saved_tensors_hooks's warning given
        self._ran_eagerly_first = False  # the "eager_then_compile" stance's first call
        self._forced: dict[str, CompiledStep] = {}  # set_stance(force_backend=...)'s steps
        _LIVE.add(self)
        # held by every call from its guards to its write-back, so that calls from several
        # threads run one at a time: they share the parameters and optimizer state they
        # update (and this step's plan cache). Steps given one lock share it.
        self.lock: AbstractContextManager[Any] = threading.RLock() if lock is None else lock
        # a module's attributes are not copied: one named ``fn``, ``device`` or ``plan``
        # would replace the step's own (the step called the module's ``fn``, silently)
        functools.update_wrapper(self, fn, updated=() if isinstance(fn, Module)
                                 else functools.WRAPPER_UPDATES)

    # --- calling ----------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            recorder = _profiling.ACTIVE
            if recorder is None:
                return self._call(args, kwargs)
            # runtime.profiler: the call is one event (its plan runs no op by op)
            with recorder.range(f"backplan::compiled_step: {self._name}", "compiled"):
                return self._call(args, kwargs)

    def _call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        stance = _compiler._stance
        if stance.stance == "force_eager":
            return self.fn(*args, **kwargs)
        if stance.planner_backend is not None and (
                forced := self._forced_step(stance.planner_backend)):
            return forced._call(args, kwargs)
        if self.backend == "eager" or is_anomaly_enabled():
            return self.fn(*args, **kwargs)  # anomaly mode checks every backward op: eager
        if is_tracing():  # called within another step's capture: inlined into it
            return self.fn(*args, **kwargs)
        if saved_tensors_hooks_state.stack:
            return self._with_saved_tensors_hooks(args, kwargs)
        if kwargs:
            args, kwargs = self._by_position(args, kwargs)
        if not kwargs:
            for a in args:
                if isinstance(a, _CONTAINERS):
                    break
            else:  # plain positional leaves: the spec flatten would give, made once per arity
                spec, frozen = _positional_spec(len(args))
                return self._call_flat(args, spec, frozen)
        leaves, spec = flatten((args, kwargs))
        return self._call_flat(tuple(leaves), spec, freeze(spec))

    def _with_saved_tensors_hooks(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A call made inside ``saved_tensors_hooks`` (``save_on_cpu``): eager mode runs their
        pack and unpack on each tensor the step saves, which no plan does (a replay ignored
        them, silently: a pack that scales changed the gradients): the call runs eagerly,
        with a warning the first time."""
        if not self._saved_hooks_warned:
            self._saved_hooks_warned = True
            warnings.warn(f"planner: {self._name} runs eagerly: it is called inside "
                          "saved_tensors_hooks (save_on_cpu), whose pack and unpack hooks a "
                          "replayed plan would not run", RuntimeWarning, stacklevel=4)
        return self.fn(*args, **kwargs)

    def _by_position(self, args: tuple[Any, ...], kwargs: dict[str, Any]
                     ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Keyword arguments naming the parameters that follow ``args`` passed by position,
        as Python binds them: ``step(x, y=y)`` and ``step(x, y)`` are one call structure (one
        capture, as torch.compile's, which guards the frame's bound arguments), not two."""
        names = self._names
        if names is None:
            names = self._names = _parameter_names(self.fn)
        n = len(args)
        if n >= len(names) or names[n] not in kwargs:
            return args, kwargs
        kwargs = dict(kwargs)
        moved = []
        while n < len(names) and names[n] in kwargs:
            moved.append(kwargs.pop(names[n]))  # type: ignore[arg-type]
            n += 1
        return (*args, *moved), kwargs

    def _call_flat(self, args: tuple[Any, ...], spec: Any, frozen: Any) -> Any:
        code_of = self._code_of
        if code_of is not None and code_of.__code__ is not self._code:
            self._code_rebound()
        key = (frozen, *_arg_key(args))
        dynamic = self._dynamic.get(frozen)
        if dynamic:
            key = _with_dynamic(key, dynamic)
        entry = self._cache.get(key)
        if entry is None and (more := self._changed_numbers(key, args)):
            # a number argument met with a second value: an input of the plan from now on,
            # as torch.compile's automatic dynamic makes it (not a capture per value)
            dynamic = self._dynamic[frozen] = (dynamic or frozenset()) | more
            key = _with_dynamic(key, dynamic)
            entry = self._cache.get(key)
        if entry is not None:
            self._cache.move_to_end(key)
            reasons = []
            # a plan whose guards pass replays, even where a later capture for these
            # arguments fell back (an optimizer's step hook since removed, a flag set back):
            # what it was guarded on holds again
            for i, binding in enumerate(entry.bindings):
                reason = binding.check(args)
                if reason is None:
                    if i:  # most recently used first: steady-state steps check one binding
                        entry.bindings.insert(0, entry.bindings.pop(i))
                    if type(binding) is _EagerBranch:
                        self._last_key = key
                        return self._flat_fn(spec)(*args)
                    if binding.pending is not None:
                        self._take_compiled(binding)
                    self.plan = binding.plan
                    self._last_key = key
                    direct = binding.direct  # the steady state, without _replay's calls
                    if direct is not None and binding.pending is None:
                        return direct(args)
                    return _replay(binding, args)
                reasons.append(reason)
            if entry.eager_reason is not None:
                return self._flat_fn(spec)(*args)
            why = reasons[0] if reasons else None
            if why is not None:
                log.info("recompiling %s: %s", self._name, why)  # the last plan used
        else:
            why = None if self._last_key is None else _describe_key_change(self._last_key, key)
            if why is not None:
                log.info("recompiling %s: %s", self._name, why)
        self._last_key = key
        fn = self._flat_fn(spec)
        stance = _compiler._stance.stance
        if stance != "default":  # runtime.compiler.set_stance: where no plan fits the call
            if stance == "eager_on_recompile":
                return fn(*args)
            if stance == "fail_on_recompile":
                raise RuntimeError(
                    "Detected recompile when torch.compile stance is 'fail_on_recompile'. "
                    f"function name: '{self._name}'" + (f"\n    triggered by: {why}" if why
                                                         else ""))
            if stance == "eager_then_compile" and not self._ran_eagerly_first:
                self._ran_eagerly_first = True
                return fn(*args)
        limit = self.recompile_limit
        if limit is not None and self.captures >= limit and why is not None:
            return self._over_limit(key, entry, why, fn, args)
        warm_up = entry is None or not entry.warmed
        ran_eagerly, result = False, None
        marker = plan_cache.warm_up_key(self.fn, key) if warm_up else None
        # a call known to create state runs eagerly now, without the capture that would learn
        # it: an earlier process found this step creating state on its first call, or an
        # optimizer it steps holds none yet (gpt's cold first call captured twice; with
        # fullgraph=True the capture comes first: a step it cannot hold raises before
        # running anything)
        eager_why = None
        if marker is not None and plan_cache.warms_up(marker, self.cache_dir):
            eager_why = "it created state on its first call in an earlier process"
        elif warm_up and entry is None and not self.fullgraph and (
                fresh := _fresh_optimizer(self.fn)) is not None:
            eager_why = f"{type(fresh).__name__} holds no state yet (its first step makes it)"
        eager_writes: frozenset[guards.Path] = frozenset()
        if eager_why is not None:
            self._warm_up(key, eager_why)
            ran_eagerly, warm_up = True, False
            result, eager_writes = _eager_run(fn, args)
        # planning and the first replay (its program built: gpt's made 4 collections, one
        # of them of the older generation) as one burst of allocations, the collector held
        # off across both (``_collector_paused``)
        with _collector_paused():
            while True:
                scalars = _dynamic_positions(key)
                try:
                    binding = self._plan(fn, args, warm_up=warm_up, scalars=scalars,
                                         ran_eagerly=ran_eagerly, eager_writes=eager_writes)
                except _StateMadeEarly:
                    return result
                except _WarmUp as w:
                    # run this call eagerly, then capture with the state it made in place: the
                    # plan fits the next call (and this one's .plan is there to inspect)
                    self._warm_up(key, f"it creates {w}")
                    if marker is not None:
                        plan_cache.remember_warm_up(marker, self.cache_dir)
                    ran_eagerly, warm_up = True, False
                    result, eager_writes = _eager_run(fn, args)
                    continue
                except Exception as e:
                    if not scalars and not isinstance(e, GraphBreak):
                        raise
                    if scalars:  # an argument is read as a value: a constant, for good
                        # (any error: an op taking only a Python number there; a capture with the
                        # number meets the step's own errors again)
                        log.info("%s reads its arguments %s as values (%s): capturing them "
                                 "as constants", self._name, sorted(scalars),
                                 getattr(e, "reason", f"{type(e).__name__}: {e}"))
                        self._static.setdefault(frozen, set()).update(scalars)
                        self._dynamic[frozen] -= scalars
                        if ran_eagerly:
                            return result
                        return self._with_constants(args, spec, frozen, key, scalars, e)
                    if self.fullgraph:
                        raise CompileError(f"{self._name} cannot be captured: {e.reason} at "
                                           f"{e.where}") from e
                    warnings.warn(f"planner: {self._name} runs eagerly: {e.reason} at {e.where}",
                                  RuntimeWarning, stacklevel=4)  # the user's call
                    self._entry(key).eager_reason = f"{e.reason} at {e.where}"
                    return result if ran_eagerly else fn(*args)
                break
            self._entry(key).bindings.insert(0, binding)  # most recently used first
            self.plan = binding.plan
            pending = binding.pending
            if not ran_eagerly and (pending is None or pending.started):
                return _replay(binding, args)
        # a plan whose kernels compile in the background runs its first call eagerly, without
        # the generated code that would compile on first use: the step as written takes less
        # than building its unfused plan's program, and the children fork after it, leaving
        # it every core (planner.background)
        try:
            if ran_eagerly:
                return result
            with without_generated_code():
                return fn(*args)
        finally:
            if pending is not None:
                pending.start()

    def _code_rebound(self) -> None:
        """The step's ``__code__`` was rebound since its plans were captured: they are another
        function's, dropped (the next call captures the new code)."""
        log.info("recompiling %s: its __code__ was rebound", self._name)
        self._code = self._code_of.__code__  # type: ignore[union-attr]
        self._cache.clear()
        self._dynamic.clear()
        self._static.clear()
        self._names = None  # its parameters may be others
        self._last_key = None

    def _with_constants(self, args: tuple[Any, ...], spec: Any, frozen: Any,
                        key: tuple[Any, ...], scalars: frozenset[int], error: Exception) -> Any:
        """The call again, its number arguments at ``scalars`` constants now (the capture
        with them as inputs, for ``key``, stopped on ``error``). Where that capture stops on
        the same GraphBreak (``loss.item()`` read in the step, whatever its numbers), they
        were not the cause: inputs again, and ``key`` runs eagerly, as every call whose
        numbers are new would capture and run eagerly."""
        result = self._call_flat(args, spec, frozen)
        if not isinstance(error, GraphBreak):
            return result
        dynamic = self._dynamic.get(frozen)
        retried = (frozen, *_arg_key(args))
        entry = self._cache.get(_with_dynamic(retried, dynamic) if dynamic else retried)
        why = f"{error.reason} at {error.where}"
        if entry is not None and entry.eager_reason == why:
            self._static[frozen] -= scalars
            self._dynamic[frozen] = (dynamic or frozenset()) | scalars
            branch = getattr(error, "number_guards", ())
            if branch:  # only where the step's numbers take this branch (planner.number_guards)
                self._entry(key).bindings.append(_EagerBranch(NumberGuards(branch), why))
            else:
                self._entry(key).eager_reason = why
        return result

    def _changed_numbers(self, key: tuple[Any, ...], args: tuple[Any, ...]) -> frozenset[int]:
        """The positions of the int and float arguments in which ``key`` differs from a key
        this step was called with before, where nothing else differs (an lr, a loss weight,
        a temperature, a step counter passed per call): made inputs of the plan, as
        torch.compile's automatic dynamic makes them; and of the string arguments (a batch's
        file names, which a DataLoader collates into a list of strings): left out of the
        plan, which must not read them (torch.compile guards only what the frame reads).
        Numbers not on a GPU (a plan's number inputs are CPU scalars); none where such a
        capture found them read as values (``_static``)."""
        frozen, modes = key[0], key[1]
        static = self._static.get(frozen, ())
        if self.dynamic is False:
            return frozenset()
        kinds = {"int", "float", "str"}
        if self.device not in (None, "cpu") or any(
                isinstance(a, Tensor) and a.device != "cpu" for a in args):
            kinds = {"str"}
        if self.dynamic and kinds != {"str"}:  # every number argument from the first call
            found = frozenset(i for i, e in enumerate(key[2:])
                              if _plannable(e) and e[1] != "str" and e[2] != DYNAMIC
                              and i not in static)
            if found:
                return found
        for other in reversed(self._cache):
            if len(other) != len(key) or other[0] != frozen or other[1] != modes:
                continue
            differ = [i for i, (a, b) in enumerate(zip(other[2:], key[2:])) if a != b]
            if differ and all(i not in static and _plannable(key[2 + i])
                              and key[2 + i][1] in kinds
                              and other[2 + i][:2] == key[2 + i][:2] for i in differ):
                return frozenset(differ)
        return frozenset()

    def _over_limit(self, key: tuple[Any, ...], entry: _Entry | None, why: str,
                    fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        """A call that would capture once more than ``recompile_limit`` allows: eager (its
        arguments' key from now on: plans made already keep replaying), with a warning the
        first time; ``fullgraph=True`` raises instead."""
        message = (f"{self._name} was captured {self.captures} times (recompile_limit), the "
                   f"last change: {why}; pass values that change between calls as tensors")
        if self.fullgraph:
            raise CompileError(f"{message} (fullgraph=True: not running it eagerly)")
        if not self._limit_warned:
            self._limit_warned = True
            warnings.warn(f"planner: {message}; calls needing another capture run eagerly",
                          RuntimeWarning, stacklevel=5)  # the user's call
        if entry is None:
            self._entry(key).eager_reason = f"recompile_limit ({self.recompile_limit}) reached"
        return fn(*args)

    def reset(self) -> None:
        """Forget every plan and what the calls so far taught (``runtime.compiler.reset``):
        the next call captures again; compiled kernels stay in the code cache."""
        with self.lock:
            self._cache.clear()
            self._dynamic.clear()
            self._static.clear()
            self._last_key = None
            self.plan = None
            self.captures = self.warmups = 0
            self._limit_warned = self._ran_eagerly_first = False
            for step in self._forced.values():
                step.reset()

    def _forced_step(self, wanted: str) -> CompiledStep | None:
        """This step compiled with the planner's backend ``wanted`` that
        ``set_stance(force_backend=...)`` maps to (made once a backend, sharing this step's
        lock), or None where it is this step's own."""
        if wanted == self.backend:
            return None
        step = self._forced.get(wanted)
        if step is None:
            step = self._forced[wanted] = CompiledStep(
                self.fn, backend=wanted, device=self.device, workers=self.workers,
                cache_dir=self.cache_dir, fullgraph=self.fullgraph, lock=self.lock,
                executor=self.executor, recompile_limit=self.recompile_limit,
                background=self.background, dynamic=self.dynamic)
            step.name = self._name
        return step

    def lower(self, *args: Any, **kwargs: Any) -> Plan:
        """Capture and plan for these arguments without running anything (like jax's lower)."""
        leaves, spec = flatten((args, kwargs))
        try:
            with self.lock:  # a capture sets optimizer state aside while it runs
                return self._plan(self._flat_fn(spec), tuple(leaves), build=False).plan
        except GraphBreak as e:
            raise CompileError(f"{self._name} cannot be captured: {e.reason} at "
                               f"{e.where}") from e

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the kernels of this step's plans that compile in the background
        (planner.background) are built and in use by the next call, waiting at most
        ``timeout`` seconds (None: as long as it takes); whether none is left compiling. A
        build that failed warns and leaves the plan on the interpreter, as at a first call
        (backend "llvm": raises, here and at every call of that plan)."""
        with self.lock:
            waiting = [b for entry in self._cache.values() for b in entry.bindings
                       if b.pending is not None and type(b) is not _EagerBranch]
        end = None if timeout is None else time.monotonic() + timeout
        for binding in waiting:
            pending = binding.pending
            left = None if end is None else max(0.0, end - time.monotonic())
            if pending is not None and not pending.wait(left):
                return False
        with self.lock:
            for binding in waiting:
                if binding.pending is not None:
                    self._take_compiled(binding)
        return True

    def _take_compiled(self, binding: Binding) -> None:
        """Replay ``binding``'s fused plan from now on where its background build finished
        (the caller holds ``self.lock``)."""
        pending = binding.pending
        if pending is None or not pending.done.is_set():
            return
        if pending.error is not None:
            if self.backend in KERNEL_BACKENDS:
                raise pending.error
            binding.pending = None
            self._warn_unfused(pending.error, stacklevel=6)
            return
        binding.pending = None
        fused = pending.plan  # configured, its program built (``_build_and_keep``)
        self._install_allocator(fused)
        if self.plan is binding.plan:
            self.plan = fused
        binding.plan, binding.replayer, binding.direct = fused, None, None

    @property
    def execution(self) -> Execution | None:
        """How the last plan run (``self.plan``) executes, and why (planner.parallel)."""
        return None if self.plan is None else self.plan.execution

    # --- internals --------------------------------------------------------------------------
    @property
    def _name(self) -> str:
        if self.name is not None:  # given (rt.compile's name=)
            return self.name
        if isinstance(self.fn, Module):  # its class, not its repr (a line per layer)
            return type(self.fn).__qualname__
        return getattr(self.fn, "__qualname__", repr(self.fn))

    def _warm_up(self, key: tuple[Any, ...], why: str) -> None:
        """Note that the call of ``key`` runs eagerly this once (``why``) and is captured
        after it."""
        self._entry(key).warmed = True
        self.warmups += 1
        log.info("%s runs eagerly this once and is captured after: %s", self._name, why)

    def _entry(self, key: tuple[Any, ...]) -> _Entry:
        entry = self._cache.get(key)
        if entry is None:
            entry = self._cache[key] = _Entry()
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return entry

    def _flat_fn(self, spec: Any) -> Callable[..., Any]:
        """The step as a function of its flattened argument leaves."""
        def call(*leaves: Any) -> Any:
            args, kwargs = unflatten(spec, list(leaves))
            return self.fn(*args, **kwargs)

        # what planner.guards.call_accesses binds the step's parameters with
        call.step, call.spec = self.fn, spec  # type: ignore[attr-defined]
        return call

    def _plan(self, fn: Callable[..., Any], args: tuple[Any, ...], build: bool = True,
              warm_up: bool = False, scalars: frozenset[int] = frozenset(),
              ran_eagerly: bool = False, eager_writes: frozenset[Any] = frozenset()) -> Binding:
        """Capture and plan ``fn`` for ``args``; ``build``: compile the kernels now (a GPU
        plan lowered for inspection renders its CUDA C but needs no CuPy to be planned).
        ``warm_up``: raise _WarmUp instead of planning a capture that created state the plan
        depends on (the capture is a trace on shape-only tensors: planning and code generation
        are what it saves). ``scalars``: the positions of number arguments that are inputs of
        the plan (``_changed_numbers``). ``ran_eagerly``: the call ran eagerly already, so
        a capture making optimizer state raises _StateMadeEarly; ``eager_writes``: the paths
        that run left holding an argument (``_eager_run``). Python's garbage collector is held
        off meanwhile."""
        with _collector_paused():
            try:
                return self._capture_and_plan(fn, args, build, warm_up, scalars, ran_eagerly,
                                              eager_writes)
            except WarmUpNeeded as e:  # an eager run makes what the capture lacks
                if warm_up:
                    raise _WarmUp([e.reason]) from e
                raise

    def _capture_and_plan(self, fn: Callable[..., Any], args: tuple[Any, ...], build: bool,
                          warm_up: bool, scalars: frozenset[int] = frozenset(),
                          ran_eagerly: bool = False,
                          eager_writes: frozenset[Any] = frozenset()) -> Binding:
        from .distributed import data_parallel, ddp_modules
        from .passes import hoist_source_views, run_default_passes
        from .remat import rematerialize

        device = self.device
        cap: Capture = capture(fn, args, target_device=device, scalars=scalars,
                               eager_writes=eager_writes)
        stored = [s.path for s in cap.stored]
        increments = self._changed_by_capture(cap.watch, warm_up, build, stored)
        if warm_up and cap.created_state:
            _take_back_made_state(cap)  # the eager call makes it, or fails leaving none
            cap.take_back_hooks()
            raise _WarmUp(cap.created_state)
        if ran_eagerly:  # the eager run registered the step's hooks already
            cap.take_back_hooks()
            if cap.made_state:
                _take_back_made_state(cap)
                raise _StateMadeEarly
        plan_device = device or _plan_device(cap)
        wanted = KERNEL_BACKENDS.get(self.backend)
        if wanted is not None and plan_device.split(":")[0] != wanted:
            raise ValueError(f"planner.compile({self._name}): backend {self.backend!r} builds "
                             f"{wanted} kernels, but the plan runs on {plan_device}: use "
                             f"backend='auto' (or "
                             f"{[b for b, d in KERNEL_BACKENDS.items() if d != wanted][0]!r})")
        if build and plan_device != "cpu":
            cupy_module()  # a plan to run on a GPU needs CuPy, fused or not: say how to install
        slots = [s.describe() for s in cap.slots]
        aot_plans = None if cap.aot is None else aot.plan(self, cap, slots, plan_device, build)
        plan_key = None if aot_plans is not None or ddp_modules(cap.modules) else plan_cache.key(
            cap.graph, slots, plan_device, self.backend)
        plan = aot_plans[0] if aot_plans is not None else None if plan_key is None else \
            self._stored(plan_key, cap, build or plan_device == "cpu")
        pending: bg.Pending | None = None
        if plan is None:
            if build and plan_device == "cpu" and self.backend in KERNEL_BACKENDS_CPU:
                _prefetch_support(cap, self.cache_dir)
            captured = cap.graph.number_of_nodes()
            run_default_passes(cap.graph)
            if self.backend != "interpreter":  # fused kernels recompute cheap saved values
                rematerialize(cap.graph)
                hoist_source_views(cap.graph)  # and read views of state from their start
            plan = build_plan(cap.graph, slots, plan_device, captured)
            plan = data_parallel(plan, cap.slots, cap.modules)  # DDP: gradients averaged in-plan
            if self.backend != "interpreter":
                # kernels left to a thread where it pays (planner.background): DDP plans
                # (no plan_key) and GPU plans are built now
                later = (build and plan_device == "cpu" and plan_key is not None
                         and bg.enabled(self.background))
                fused = self._fused(plan, (build or plan_device == "cpu") and not later)
                if later and fused is not plan:
                    if bg.worth_it(fused, self.cache_dir):
                        pending = bg.Pending(fused, functools.partial(
                            self._build_and_keep, fused, plan_key), self._name,
                            start=False)  # after the first call's run (_replay_plan)
                        plan.executable.native_code = False  # run meanwhile: no native code
                    else:
                        fused = self._built(plan, fused)
                if pending is None:
                    if fused is plan:  # code generation failed: a warning said so; not kept
                        plan_key = None
                    plan = fused
            if plan_key is not None and pending is None:
                plan_cache.store(plan_key, plan, self.cache_dir)
        # a plan run while its fused plan compiles runs in order: the executor's step
        # functions take the fast paths that native code would wait for
        plan.configure(self.workers, self.executor if pending is None else "program")
        plan.executable.use_cuda_graphs(self.cuda_graphs)
        self.captures += 1
        found = cap.found_modes  # modes a train()/eval() after a forward changed: as found
        counters = _counters(increments)
        buffers = _stored_buffers(cap.stored)
        called = {id(m) for m in cap.modules}
        roots = frozenset(guards.memory_root(t._data) for t in cap.outside)
        tensor_args = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
        modules = cap.modules + [m for m in cap.watch.escaped_modules() if id(m) not in called]
        return Binding(plan, cap.slots, cap.generators,
                       [(m, _module_params(m, found, counters, buffers))
                        for m in _outermost(modules)],
                       [(o, _optimizer_key(o, cap.assigned_settings.get(id(o), ()),
                                           cap.replayed_settings.get(id(o), set())))
                        for o in cap.optimizers], cap.grad_none,
                       cap.watch.guards([path for path, _ in increments]
                                        + cap.watch.appended_paths() + stored), cap.effects + [
                           ("after", functools.partial(m.train, mode))
                           for m, mode in cap.late_modes] + [
                           ("after", functools.partial(guards.add_constants, path, deltas))
                           for path, deltas in increments] + [
                           ("after", functools.partial(guards.append_items, path, items))
                           for path, items in cap.watch.appended],
                       modes=[(m, tuple(m.modules()), mode) for m, mode in cap.modes],
                       outside_roots=roots, tensor_args=tensor_args,
                       namedtuples=cap.namedtuples,
                       sharing=guards.shared_memory(args, tensor_args, roots),
                       counters=counters, stored_buffers=buffers, pending=pending,
                       aot=None if aot_plans is None else aot_plans[1],
                       scalar_inputs=frozenset(i for i in scalars if not isinstance(args[i], str)),
                       returned_graphs=cap.returned_graphs,
                       inference_returns=cap.inference_returns, stored=cap.stored,
                       numbers=NumberGuards(cap.number_guards) if cap.number_guards else None)

    def _changed_by_capture(self, watch: guards.Watch, warm_up: bool, build: bool,
                            stored: list[Any]) -> list[tuple[Any, list[Any]]]:
        """What the capture changed among the values the step reads and writes by path (put
        back as it was by ``capture``: Watch.settle). A replay runs none of the step's Python,
        so: a number the step only adds constants to (``self.n += 1``) has them added after
        each replay (returned: its path and constants), unless it is an nn.Module's attribute
        that the module's own code also reads (``_read_by_its_module``); a list it only
        appends constants to (``events.append("step")``) has them appended after each replay
        (Watch.appended, the Binding's effects); a path it leaves holding a tensor it computed
        (``stored``: planner.capture.stored_tensors) has the plan's value of it stored after
        each replay (``_Replayer``); anything else it
        changes makes the call run eagerly, and be captured again after it where ``warm_up``
        (a value the step sets once, ``self.ready = True``, is in place then); a capture that
        still changes it cannot be replayed. A plan only lowered for inspection (not
        ``build``) is planned all the same."""
        changed = watch.settled
        if not changed:
            return []
        increments = [(path, deltas) for path, deltas in watch.counted
                      if not _read_by_its_module(path, self.fn)]
        counted = {path for path, _ in increments} | set(watch.appended_paths()) | set(stored)
        # a dict changed only by the tensors stored at its items (``state["h"] = h``)
        counted |= {path for path, items in watch.computed_items.items()
                    if items and set(items) <= counted}
        others = [path for path in changed if path not in counted]
        if not others or not build:
            return increments
        if warm_up:
            raise _WarmUp([f"a new value at {path}" for path in others])
        raise GraphBreak(f"the step changes {others[0]}, which a replayed plan would not do "
                         f"(its Python does not run)")

    def _stored(self, plan_key: str, cap: Capture, build: bool) -> Plan | None:
        """The plan kept under ``plan_key`` by an earlier process (planner.plan_cache), its
        code built as ``_fused`` builds it; None where there is none, where it does not load
        (a RuntimeWarning says why) or where its code does not build (planning again meets
        the same failure and reports it as it always did). The step is then planned again."""
        try:
            plan = plan_cache.load(plan_key, cap.graph, self.cache_dir)
        except Exception as exc:
            warnings.warn(f"planner.compile({self._name}): the plan kept for this capture is "
                          f"not used ({type(exc).__name__}: {exc}); planning again",
                          RuntimeWarning, stacklevel=4)
            return None
        if plan is None:
            return None
        try:
            if build:
                self._build(plan)
        except Exception:
            return None
        self.plans_loaded += 1
        return plan

    def _build(self, plan: Plan) -> None:
        """Compile the plan's kernels and generated products now, from and into the cache;
        where there are any (on the CPU), numpy's arrays of this thread start on 64-byte
        boundaries from now on (``codegen.allocator``: the program's outputs, which its
        kernels and products write and read)."""
        self._compile_code(plan)
        self._install_allocator(plan)

    def _compile_code(self, plan: Plan) -> None:
        """The plan's kernels and generated products compiled, from and into the cache."""
        if plan.kernels:
            plan.executable.module(self.cache_dir)
        plan.executable.products(self.cache_dir)

    @staticmethod
    def _install_allocator(plan: Plan) -> None:
        """Aligned numpy arrays on the calling thread where the plan runs kernels or
        products on the CPU (``_build``); the code is compiled already."""
        if plan.device == "cpu" and (plan.kernels or plan.executable.products()):
            from codegen import allocator

            allocator.install()

    def _build_and_keep(self, plan: Plan, plan_key: str) -> None:
        """What a background build runs (planner.background): the plan's code, how it runs
        (``Plan.configure``) and what it runs (its program or its runner: the native code of
        its fast paths compiled here, not in the call that switches), then the plan kept for
        later processes as a plan built in the call is."""
        self._compile_code(plan)
        execution = plan.configure(self.workers, self.executor)
        if execution.executor == "parallel":
            plan.executable.runner(execution.workers)
        else:
            plan.executable.program(False, True)
        plan_cache.store(plan_key, plan, self.cache_dir)

    def _fused(self, plan: Plan, build: bool) -> Plan:
        """The plan with its segments fused, and compiled now (``build``: not on the first
        replay). Under "auto", code generation failing for any reason leaves the unfused plan,
        with a warning naming why; "llvm" and "cuda" asked for kernels, so they raise."""
        from .fusion import fuse

        try:
            fused = fuse(plan)
        except Exception as exc:
            return self._unfused(plan, exc)
        return self._built(plan, fused) if build else fused

    def _built(self, plan: Plan, fused: Plan) -> Plan:
        """``fused`` with its code compiled now; ``plan`` (unfused) where that fails under
        "auto" (``_fused``)."""
        try:
            self._build(fused)
        except Exception as exc:
            return self._unfused(plan, exc)
        return fused

    def _unfused(self, plan: Plan, exc: Exception) -> Plan:
        if self.backend in KERNEL_BACKENDS:
            raise exc
        self._warn_unfused(exc, stacklevel=6)
        return plan

    def _warn_unfused(self, exc: BaseException, stacklevel: int) -> None:
        warnings.warn(f"planner.compile({self._name}): fused kernels failed to build "
                      f"({type(exc).__name__}: {exc}); running the plan on the "
                      f"interpreter instead", RuntimeWarning, stacklevel=stacklevel)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector held off while a step is captured and planned (and
    first replayed, its program built: ``_call_flat``): all make tens of thousands of objects
    that live on (graph nodes, steps, the program's names), and each allocation
    burst set off collections of every object the process holds (the model, its state, the
    plans): 40 % of gpt's capture (165 -> 98 ms). Whatever became garbage meanwhile is
    collected by the next collection after it. A collector that was off stays off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _eager_run(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, frozenset[Any]]:
    """``fn(*args)`` run eagerly before the capture of the same call (a warm-up), and the
    paths it left holding one of the call's tensor arguments (``self.last_input = x``): the
    capture after it finds them holding that argument already, unchanged, and without this
    would not store the next call's argument there (planner.capture.stored_tensors)."""
    watch = guards.Watch(guards.call_accesses(fn, args))
    result = fn(*args)
    return result, frozenset(watch.holding(args))


def _fresh_optimizer(step: Callable[..., Any]) -> Any:
    """An optimizer the step reaches directly (``plan_cache.reached_optimizers``) that holds
    no state yet for a parameter that requires grad, where its step makes some
    (``Optimizer._steps_make_state``), or None: the capture would find the
    call creating that state and run it eagerly, as ``_call_flat`` then does without
    capturing. A guess: an optimizer the step does not step makes its first call eager, as
    harmlessly."""
    for opt in plan_cache.reached_optimizers(getattr(step, "__func__", step)):
        for group in opt.param_groups:
            if opt._steps_make_state(group) and any(
                    p.requires_grad and not opt.state.get(p) for p in group["params"]):
                return opt
    return None


def _read_by_its_module(path: Any, step: Callable[..., Any]) -> bool:
    """Whether ``path`` is an nn.Module's attribute that code of the module's class other
    than the step (its forward, a helper) reads: a setting the forward may read as a constant,
    guarded by value as module settings are (``_settings``), so not a counter."""
    owner = path.owner()
    if not isinstance(owner, Module):
        return False
    name, own = path.steps[-1][1], getattr(step, "__func__", step)
    for klass in type(owner).__mro__:
        if klass is Module or klass is object:
            continue
        for value in vars(klass).values():
            fn = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
            code = getattr(fn, "__code__", None)
            if code is not None and fn is not own and _loads_attribute(code, name):
                return True
    return False


def _loads_attribute(code: Any, name: str) -> bool:
    """Whether ``code`` or the code nested in it loads an attribute ``name`` (stores, as in
    ``__init__``, do not count)."""
    if name not in code.co_names and not any(isinstance(c, types.CodeType)
                                             for c in code.co_consts):
        return False
    if any(ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval == name
           for ins in guards._instructions(code)):  # decoded once, by its 3.11 decoder
        return True
    return any(_loads_attribute(c, name) for c in code.co_consts
               if isinstance(c, types.CodeType))


def _stored_buffers(stored: tuple[returned_graphs.StoredTensor, ...]
                    ) -> frozenset[tuple[int, str]]:
    """(id(module), name) of the module buffers among the paths the step stores tensors at."""
    found = set()
    for entry in stored:
        owner = entry.path.owner()
        if isinstance(owner, Module) and entry.path.steps[-1][1] in owner._buffers:
            found.add((id(owner), entry.path.steps[-1][1]))
    return frozenset(found)


def _counters(increments: list[tuple[Any, list[Any]]]) -> frozenset[tuple[int, str]]:
    """(id(module), name) of the module attributes among the paths the step increments."""
    found = set()
    for path, _ in increments:
        owner = path.owner()
        if isinstance(owner, Module):
            found.add((id(owner), path.steps[-1][1]))
    return frozenset(found)


# a captured graph of fewer nodes is planned in less time than a fork takes (one_op: 7 nodes,
# planned and compiled in 12 ms, 20 with the child), and its plan makes few native calls
PREFETCH_MIN_NODES = 32


def _prefetch_support(cap: Capture, cache_dir: Any) -> None:
    """Planning takes a while: the support modules the plan's first run will need, where the
    cache lacks them, are emitted by another process meanwhile (codegen.cache): the products
    where the step multiplies float32 matrices, the native runs' trampolines."""
    graph = cap.graph
    if graph.number_of_nodes() < PREFETCH_MIN_NODES:
        return
    from codegen import cache, gemm, pyentry

    modules: list[tuple[Any, Any]] = []
    if pyentry.available() and not pyentry.loaded():
        modules.append((cache.trampolines(), None))  # in the default store, as pyentry reads
    if not gemm.loaded("float32") and any(d["op"] == "matmul" and d["dtype"] is D.float32
                                          for _, d in graph.nodes(data=True)):
        modules.append((gemm.support_module("float32"), cache_dir))
    cache.prefetch_support(modules)


def _plan_device(cap: Capture) -> str:
    """The one accelerator the step's tensors are on, if any. CPU scalars beside it (an
    optimizer's step count, as PyTorch keeps it) run as CPU steps of a device plan."""
    devices = {s.device for s in cap.slots} - {"cpu"}
    return devices.pop() if len(devices) == 1 else "cpu"


def _number_input(value: float | int) -> np.ndarray:
    """A number argument as the plan reads it (Binding.scalar_inputs): a float64 scalar for
    a float, an int64 one for an int (the argument's kind is in the plan's key; an int past
    int64 is a constant, ``_plannable``)."""
    return np.array(value, np.int64 if type(value) is int else np.float64)


def _replay(binding: Binding, args: tuple[Any, ...]) -> Any:
    # a case added here that wraps _replay_plan keeps Binding.direct None (Binding._replayer)
    if binding.aot is not None:  # outputs given a CompiledFunctionBackward (planner.aot)
        out = binding.aot.replay(binding, args, _replay_plan)
    elif binding.inference_returns:  # made under the step's inference_mode: inference tensors
        out = _as_inference(_replay_plan(binding, args))
    else:
        out = _replay_plan(binding, args)
    return with_namedtuples(out, binding.namedtuples)


def _as_inference(value: Any) -> Any:
    """``value``'s new tensors made inference tensors, as the step's inference_mode made
    them in eager mode (its region does not run at a replay)."""
    if isinstance(value, Tensor):
        if not value._vc.inference and value._grad_fn is None and not value._rg:
            value._vc = _InferenceVersionCounter()
        return value
    if isinstance(value, (tuple, list)) and not hasattr(value, "_fields"):
        return type(value)(_as_inference(v) for v in value)
    if isinstance(value, dict):
        return {k: _as_inference(v) for k, v in value.items()}
    return value


def _replay_plan(binding: Binding, args: tuple[Any, ...]) -> Any:
    if binding.pending is not None:  # the unfused plan, beside the children compiling
        with intra_op(bg.threads_beside_compile()):
            return binding._replayer()(args)
    return binding._replayer()(args)


class _Replayer:
    """One binding's replay: read its state slots, run the plan, write state back, rebuild
    the returned values. What each slot needs is decided once, not on every call.

    The write-back is all or nothing. Whatever can fail (a copy that runs out of memory) is
    done first, in ``stage``, before anything is written; the stores that follow only assign
    and run in-place updates, with SIGINT held back (``_hold_sigint``) so that a Ctrl-C landing
    among them is raised once the last one is done. Random draws come from copies of the
    generators, swapped in with the stores: a call that fails or is interrupted before its
    write-back leaves the generators where they were too."""

    def __init__(self, binding: Binding) -> None:
        self.binding = binding
        self.plan = binding.plan
        self.reads = [(slot, _reader(binding.slots[slot])) for slot, _ in self.plan.reads]
        self.writers = {i: _writeback(slot) for i, slot in enumerate(binding.slots)}
        # a .grad assigned a buffer the plan makes new on every call, and writes nowhere
        # else, needs no check against the call's inputs and state (``_fresh``): staged
        # straight; where every write is stored as it is or staged so, the call builds no
        # set of its sources at all
        straight = set()
        for slot_index in self.plan.fresh_writes():
            slot = binding.slots[slot_index]
            if slot.kind == "grad" and slot.mode == "assign":
                stage = functools.partial(_stage_fresh_grad, slot.ref, slot.dtype, slot.device) \
                    if slot.owner_input is None else functools.partial(
                        _stage_fresh_input_grad, slot.owner_input, slot.dtype, slot.device)
                self.writers[slot_index] = (stage, None, None)
                straight.add(slot_index)
        self.no_sources = all(self.writers[slot][0] is None or slot in straight
                              for slot, _ in self.plan.writes)
        self.draws = [_Draws(g) for g in binding.generators] if self.plan.rands else []
        # what the step's modules do eagerly at the start of their forward that the plan does
        # not hold (DistributedDataParallel's buffer broadcast), run before the plan
        self.before = [m._before_replay for m, _ in binding.modules
                       if callable(getattr(m, "_before_replay", None))]
        # and the step's own Python calls (lr schedulers' steps): before the plan reads the
        # hyperparameters they set, or after its write-back
        self.before += [call for when, call in binding.effects if when == "before"]
        self.after = [call for when, call in binding.effects if when == "after"]
        # the returned tensors given requires_grad and a grad_fn, as eager mode's (by path)
        self.marks = dict(binding.returned_graphs)
        self.stored = binding.stored  # the tensors stored at paths (_stage_stored)
        # a native run may store parameter updates into their arrays as it goes
        # (planner.native: its commits): SIGINT is then held from the run on, not only
        # across the stores, so that an interrupted call still writes all or nothing
        self.hold_run = self.plan.executable.commits
        # the common call (no draws, no effects around it, every write stored as it is or
        # staged straight), written out: what ``__call__`` does, without its loops
        self.fast = self._written_out() if (
            self.no_sources and not self.draws and not self.before and not self.after) else None

    def _written_out(self) -> Callable[[tuple[Any, ...]], Any]:
        """``__call__`` for this binding as straight-line code: the reads, the run, each write
        staged then stored (in plan.writes' order, the order every program returns them in)
        with SIGINT held, the result rebuilt. Mlp_small's write-back of 6 parameters and 6
        grads, through the loops, cost as much as its guards and call together."""
        names: dict[str, Any] = {"_Tensor": Tensor, "_make": Tensor._make,
                                 "_set_grad": _set_grad, "_run": self.plan.run,
                                 "_generators": self.binding.generators, "_hold": _hold_sigint,
                                 "_release": _release_sigint, "_rebuild": _rebuild,
                                 "_attach": returned_graphs.attach, "_marks": self.marks,
                                 "_stage_stored": _stage_stored, "_stored": self.stored,
                                 "_store_all": _store_all}

        def name(prefix: str, value: Any) -> str:
            key = f"_{prefix}{len(names)}"
            names[key] = value
            return key

        slots = self.binding.slots
        reads = ", ".join(  # a tensor's array read in place, other slots through their reader
            f"{slot}: {name('t', slots[slot].ref)}._data"
            if slots[slot].kind == "tensor" and slots[slot].path is None
            else f"{slot}: {name('read', read)}(args)" for slot, read in self.reads)
        # the run, then each value staged (what can fail), then the stores with SIGINT held;
        # where the run itself stores into state (``hold_run``), all of it with SIGINT held
        work = [f"result, writes = _run(arrays, {{{reads}}}, _generators, True)"]
        if self.stored:  # the stored tensors' stage checks their arrays against the state's
            work = [f"state = {{{reads}}}",
                    "result, writes = _run(arrays, state, _generators, True)"]
        values = [f"v{k}" for k in range(len(self.plan.writes))]
        if values:
            work.append(f"({', '.join(f'(_, {v})' for v in values)},) = writes")
        stores = []
        if self.stored:
            work.append("result, stored = _stage_stored(_stored, result, args, arrays, state, "
                        "writes)")
        grad_stores = set()  # the stores that are one assignment of a .grad slot (see below)
        for v, (slot, _) in zip(values, self.plan.writes, strict=True):
            stage, store, target = self.writers[slot]
            if stage is None and store is _write_into:
                # a native run's commit stored it already: only the version counted, inline
                # (_write_into's own test); else the store (mlp_small: 6 calls a replay)
                t = name("target", target)
                stores.append(f"if {v} is {t}._data:\n    {t}._vc.v += 1\n"
                              f"else:\n    {name('store', store)}({t}, {v})")
            elif stage is None:
                stores.append(f"{name('store', store)}({name('target', target)}, {v})")
            elif getattr(stage, "func", None) in (_stage_fresh_grad, _stage_fresh_input_grad):
                # the new .grad, inline: of a tensor known now, or of an argument
                owner, dtype, device = stage.args  # type: ignore[attr-defined]
                work.append(f"g{v} = None if {v} is None else _make({v}, "
                            f"{name('dtype', dtype)}, {name('device', device)})")
                stores.append(_grad_store(name, owner, stage.func is _stage_fresh_grad, v))
                grad_stores.add(stores[-1])
            else:  # staged straight (no sources to check against)
                work.append(f"s{v} = {name('stage', stage)}({v}, args, None)")
                stores.append(f"s{v}[0](s{v}[1], s{v}[2])")
        if self.stored:  # after the others: a live object stored is one they make
            stores.append("_store_all(stored)")
        held = [*stores] if not self.hold_run else [*work, *stores]
        if len(held) == 1 and held[0] in grad_stores:
            # one .grad assigned: a single store (the slot's setter), which a signal lands
            # before or after, so nothing to hold (the chain workload's x.grad: the handler's
            # swap and back took 5,200 instructions and two system calls a call)
            work.append(held.pop())
        made = "result" if self.stored else "_rebuild(result)"  # (rebuilt by _stage_stored)
        scalars = [f"    arrays[{int(i)}] = _number(args[{int(i)}])"
                   for i in sorted(self.binding.scalar_inputs)]
        names["_number"] = _number_input
        # a step that writes nothing (a gradient returned) has no stores to keep together
        guarded = ["    held = _hold()", "    try:", *(_indented(line, 8) for line in held),
                   "    finally:", "        _release(held)"] if held else []
        lines = ["def replay(args):",
                 "    arrays = [a._data if isinstance(a, _Tensor) else None for a in args]",
                 *scalars,
                 *([] if self.hold_run else [_indented(line, 4) for line in work]),
                 *guarded,
                 f"    return {made}" if not self.marks else
                 f"    return _attach({made}, _marks, args)"]
        namespace = dict(names)
        # from the compiled-code cache where it is long (gpt's 11 KB took 3 ms to compile)
        code = code_of("\n".join(lines) + "\n", "<replay>", self.plan.executable.code_cache)
        exec(code, namespace)  # noqa: S102 - our own source: names and int literals only
        fn = namespace["replay"]
        fn.source = "\n".join(lines)
        return fn  # type: ignore[no-any-return]

    def __call__(self, args: tuple[Any, ...]) -> Any:
        if self.fast is not None:
            return self.fast(args)
        for before in self.before:
            before(args) if getattr(before, "takes_args", False) else before()
        arrays = [a._data if isinstance(a, Tensor) else None for a in args]
        for i in self.binding.scalar_inputs:
            arrays[i] = _number_input(args[i])
        state = {slot: read(args) for slot, read in self.reads}
        for draws in self.draws:
            draws.start()
        held = _hold_sigint() if self.hold_run else None
        try:
            result, writes = self.plan.run(arrays, state, self.draws or self.binding.generators,
                                           True)
            stored: list[_Staged] = []
            if self.stored:
                result, stored = _stage_stored(self.stored, result, args, arrays, state, writes)
            if writes or self.draws or stored:  # else nothing to store (a pure function)
                # every step succeeded: stage what the stores need, then store it all at once
                staged = self._staged(writes, args, arrays, state) + stored
                if not self.hold_run:
                    held = _hold_sigint()
                for store, target, value in staged:
                    store(target, value)
                for draws in self.draws:
                    draws.commit()
        finally:
            if held is not None:
                _release_sigint(held)
        for after in self.after:
            after(args) if getattr(after, "takes_args", False) else after()
        value = result if self.stored else _rebuild(result)  # (rebuilt by _stage_stored)
        return returned_graphs.attach(value, self.marks, args) if self.marks else value

    def _staged(self, writes: list[tuple[int, Any]], args: tuple[Any, ...], arrays: list[Any],
                state: dict[int, Any]) -> list[_Staged]:
        """What each write's store needs (copies made here: whatever can fail)."""
        writers = self.writers
        staged: list[_Staged] = []
        if self.no_sources:
            for slot_index, value in writes:
                stage, store, target = writers[slot_index]
                staged.append((store, target, value) if stage is None
                              else stage(value, args, None))
            return staged
        sources = {id(a) for a in arrays if a is not None}
        sources.update(map(id, state.values()))
        for slot_index, value in writes:
            stage, store, target = writers[slot_index]
            staged.append((store, target, value) if stage is None
                          else stage(value, args, sources))
            if value is not None:
                sources.add(id(value))  # a second slot given the same array: a copy
        return staged


def _indented(line: str, by: int) -> str:
    """A line of the written-out replay (possibly several: an if/else) indented ``by``."""
    return "\n".join(" " * by + part for part in line.split("\n"))


def _grad_store(name: Callable[[str, Any], str], owner: Any, known: bool, v: str) -> str:
    """The statement assigning the new .grad ``g<v>``: to a tensor known now (``known``) or
    to the argument at ``owner``. One store either way, which a signal lands before or
    after. A known tensor whose class sets ``_grad`` as Tensor does (its slot, no
    ``__setattr__`` of its own) takes a plain attribute assignment, a bytecode, in place of a
    call of the slot's setter (a method-wrapper: about 1,000 instructions each)."""
    if known and type(owner).__setattr__ is object.__setattr__ \
            and type(owner)._grad is Tensor._grad:  # type: ignore[attr-defined]
        return f"{name('owner', owner)}._grad = g{v}"
    target = name("owner", owner) if known else f"args[{int(owner)}]"
    return f"_set_grad({target}, g{v})"


class _Draws:
    """What a plan draws from in place of a generator: a copy of its bit generator's state at
    the start of the call, made the generator's own by ``commit`` at write-back."""

    def __init__(self, generator: Any) -> None:
        self.generator = generator
        self._rng = _spare_like(generator._rng)

    def start(self) -> None:
        rng = self.generator._rng
        if type(self._rng.bit_generator) is not type(rng.bit_generator):
            self._rng = _spare_like(rng)  # the generator was given another kind of source
        self._rng.bit_generator.state = rng.bit_generator.state
        # Box-Muller's kept sample (runtime._torch_rng: small randn draws use it first)
        self._normal_cache = getattr(self.generator, "_normal_cache", None)

    def commit(self) -> None:
        """Swap: the generator takes the advanced copy, and its old source is the next copy."""
        self.generator._rng, self._rng = self._rng, self.generator._rng
        if hasattr(self.generator, "_normal_cache"):
            self.generator._normal_cache = self._normal_cache


def _spare_like(rng: Any) -> Any:
    return type(rng)(type(rng.bit_generator)())


def _hold_sigint() -> tuple[Any, list[int]] | None:
    """Hold SIGINT back until ``_release_sigint``: a handler that only records it replaces the
    current one. Only the main thread runs signal handlers, so a KeyboardInterrupt can reach
    nothing else, and only there can the handler be changed; None (nothing held) elsewhere,
    and where the handler was set outside Python (it could not be put back).

    Once the recording handler is in, no SIGINT can raise, whichever bytecode it lands on: a
    signal that lands earlier raises before anything is written. ``_signal`` is the C module
    under ``signal``, whose wrappers turn handlers into enums through a caught ValueError:
    signal.getsignal and signal.signal took 2.0 and 3.1 us here, _signal's 0.04 and 0.3 us.
    Elsewhere than the main thread (of the main interpreter) ``_signal.signal`` itself refuses
    with a ValueError before changing anything: asked of it, and of ``threading`` only then
    (current_thread and main_thread were two Python calls on every replay)."""
    previous = _signal.getsignal(_signal.SIGINT)
    if previous is None:
        return None
    caught: list[int] = []
    try:
        _signal.signal(_signal.SIGINT, lambda signum, frame: caught.append(signum))
    except ValueError:  # not the main thread: no handler runs here, nothing to hold
        if threading.current_thread() is not threading.main_thread():
            return None
        raise  # a pending signal's handler raised it (checked before the handler changes)
    return previous, caught


def _release_sigint(held: tuple[Any, list[int]] | None) -> None:
    """Put the SIGINT handler back, and raise a SIGINT caught meanwhile again, now: the handler
    put back takes it (the default one raises KeyboardInterrupt here)."""
    if held is None:
        return
    previous, caught = held
    _signal.signal(_signal.SIGINT, previous)
    if caught:
        _signal.raise_signal(_signal.SIGINT)


# a write ready to store: ``store(target, value)`` only assigns or updates in place
_Staged = tuple[Callable[[Any, Any], None], Any, Any]
_Stage = Callable[[Any, tuple[Any, ...], set[int]], _Staged]
_set_grad = Tensor._grad.__set__  # type: ignore[attr-defined]  # (owner, value): a slot


def _reader(slot: Slot) -> Callable[[tuple[Any, ...]], Any]:
    """_read_slot for one slot, its kind decided now."""
    if slot.kind == "tensor" and slot.path is not None:  # carried: the tensor there now
        path = slot.path
        return lambda args: path.follow()[0]._data
    if slot.kind == "tensor":
        t = slot.ref
        return lambda args: t._data
    if slot.kind == "grad":
        if slot.owner_input is None:
            owner = slot.ref
            return lambda args: owner._grad._data
        index = slot.owner_input
        return lambda args: args[index]._grad._data
    if slot.kind == "hyper":
        return _hyper_reader(slot)
    return lambda args: _read_slot(slot, args)  # raises, as it always did


def _hyper_reader(slot: Slot) -> Callable[[tuple[Any, ...]], Any]:
    """A hyperparameter's current value in its optimizer's param_groups, as the float64
    scalar array the plan reads (the guard has checked that the group is still there)."""
    opt_ref, group, key, index = slot.ref
    xp = cupy_module() if slot.device != "cpu" else np

    def read(args: tuple[Any, ...]) -> Any:
        value = opt_ref().param_groups[group][key]
        return xp.asarray(value if index is None else value[index], dtype=np.float64)

    return read


def _writeback(slot: Slot) -> tuple[_Stage | None, Any, Any]:
    """How a value the plan returns for this slot is written back, in two parts: ``stage``
    makes what the store needs and writes nothing, ``store(target, value)`` writes it and
    cannot fail short of a bug. Either (stage, None, None), or (None, store, target) where
    the value is stored as it is into a target known now."""
    if slot.kind == "tensor":
        return None, _write_into, slot.ref
    if slot.kind == "input":
        index = slot.ref
        return (lambda value, args, sources: (_write_into, args[index], value)), None, None
    if slot.kind == "grad":
        if slot.mode == "assign" and slot.owner_input is None:  # the common case, made quick
            return functools.partial(_stage_new_grad, slot.ref, slot.dtype, slot.device), None, None
        return functools.partial(_stage_grad, slot), None, None
    if slot.kind == "opt_state":
        return functools.partial(_stage_opt_state, slot), None, None
    if slot.kind == "hyper":
        return None, None, None  # only read: a capture that writes one breaks the graph
    raise AssertionError(f"unknown slot kind {slot.kind}")


def _stage_grad(slot: Slot, value: Any, args: tuple[Any, ...], sources: set[int]) -> _Staged:
    """A .grad written in place into its storage where the slot says so and there is one,
    else assigned anew (or set to None)."""
    owner = _owner(slot, args)
    if value is None:
        return _set_grad, owner, None
    if slot.mode == "inplace" and owner._grad is not None:
        return _write_into, owner._grad, value
    return _set_grad, owner, Tensor._make(_fresh(value, sources), slot.dtype, slot.device)


def _stage_new_grad(owner: Tensor, dtype: D.DType, device: str, value: Any,
                    args: tuple[Any, ...], sources: set[int]) -> _Staged:
    """_stage_grad of a .grad assigned anew whose owner is not an argument."""
    return _set_grad, owner, (None if value is None else
                              Tensor._make(_fresh(value, sources), dtype, device))


def _stage_fresh_grad(owner: Tensor, dtype: D.DType, device: str, value: Any,
                      args: tuple[Any, ...], sources: set[int] | None) -> _Staged:
    """_stage_new_grad of a buffer the plan made new in this call and writes nowhere else
    (``Plan.fresh_writes``): the array itself becomes the .grad."""
    return _set_grad, owner, (None if value is None else Tensor._make(value, dtype, device))


def _stage_fresh_input_grad(index: int, dtype: D.DType, device: str, value: Any,
                            args: tuple[Any, ...], sources: set[int] | None) -> _Staged:
    """_stage_fresh_grad of the .grad of the argument at ``index`` (the chain workload's x)."""
    return _set_grad, args[index], (None if value is None else
                                    Tensor._make(value, dtype, device))


def _stage_stored(stored: tuple[returned_graphs.StoredTensor, ...], filled: Any,
                  args: tuple[Any, ...], arrays: list[Any], state: dict[int, Any],
                  writes: list[tuple[int, Any]]) -> tuple[Any, list[_Staged]]:
    """The step's own returned value rebuilt (its autograd flags not yet attached), and the
    stores of the tensors it leaves at paths (the plan returns those it computed after that
    value: planner.capture.Tracer.finish): an argument itself; a tensor living outside the
    step (a .grad) itself, once the stores before it are made; the returned tensor itself
    where the step returns it too; else a new tensor, its array copied where it is an
    input's, a state's or a write's (``_fresh``), with its autograd flags as eager mode's
    (``returned_graphs.attach``). One array at two paths is one tensor at both, as the
    step's one tensor is."""
    _, (user, (_, items)) = filled
    result = _rebuild(user)
    sources = {id(a) for a in arrays if a is not None}
    sources.update(map(id, state.values()))
    sources.update(id(value) for _, value in writes if value is not None)
    made: dict[int, Tensor] = {}
    staged: list[_Staged] = []
    outputs = iter(items)
    for entry in stored:
        if entry.argument is not None:  # the call's own argument, as the step stores it
            staged.append(_store_at(entry.path, args[entry.argument]))
            continue
        if entry.live is not None:  # found once the other stores made it (a .grad assigned)
            staged.append((_store_live, (entry, args), None))
            continue
        kind, body = next(outputs)
        t = made.get(id(body))
        if t is None:
            t = returned_graphs.at_path(result, entry.returned) if entry.returned is not None \
                else _rebuild((kind, _fresh(body, sources) if kind == "array" else body))
            if entry.mark is not None:
                t = returned_graphs.attach(t, {(): entry.mark}, args)
            if entry.version:  # written in place after the step made it
                t._vc.v = entry.version
            made[id(body)] = t
        staged.append(_store_at(entry.path, t))
    return result, staged


def _store_live(where: tuple[returned_graphs.StoredTensor, tuple[Any, ...]], _: Any) -> None:
    """Store the live object a stored tensor is (``StoredTensor.live``) as it is now."""
    entry, args = where
    value = returned_graphs.attach(None, {(): entry.live}, args)
    if value is not None:
        store, target, value = _store_at(entry.path, value)
        store(target, value)


def _store_at(path: guards.Path, value: Tensor) -> _Staged:
    """How ``value`` is stored at ``path`` (found now: the guards passed, and a plan runs no
    Python that could move it). A module's plain attribute goes into its ``__dict__`` as
    ``Module.__setattr__`` puts it, without the structure version's bump: a tensor attribute
    is none of what the modules' guards hold (``_module_params``), and the bump made every
    later call check them all again."""
    owner = path.owner()
    name = path.steps[-1][1] if path.steps else None
    if isinstance(owner, Module) and type(owner).__setattr__ is Module.__setattr__:
        if name in owner.__dict__:
            return _put, (owner.__dict__, name), value
        if name in owner._buffers and not _global_buffer_registration_hooks:
            # a buffer stays one, persistent or not as it was (what register_buffer does
            # for the tensor assigned it, its registration hooks aside: with one, it runs)
            return _put, (owner._buffers, name), value
    return _assign, path, value


def _put(where: tuple[dict[str, Any], str], value: Any) -> None:
    where[0][where[1]] = value


def _assign(path: guards.Path, value: Any) -> None:
    path.assign(value)


def _store_all(staged: list[_Staged]) -> None:
    for store, target, value in staged:
        store(target, value)


def _stage_opt_state(slot: Slot, value: Any, args: tuple[Any, ...], sources: set[int]
                     ) -> _Staged:
    opt_ref, p, key = slot.ref
    return _store_opt_state, (opt_ref, p, key), Tensor._make(_fresh(value, sources),
                                                              slot.dtype, slot.device)


def _store_opt_state(where: tuple[Any, Any, str], value: Tensor) -> None:
    opt_ref, p, key = where
    opt = opt_ref()
    if opt is not None:
        opt.state[p][key] = value


def _owner(slot: Slot, args: tuple[Any, ...]) -> Any:
    """The tensor whose .grad a grad slot stands for, in this call."""
    return slot.ref if slot.owner_input is None else args[slot.owner_input]


def _read_slot(slot: Slot, args: tuple[Any, ...]) -> Any:
    if slot.kind == "tensor":
        return _reader(slot)(args)
    if slot.kind == "grad":
        return _owner(slot, args)._grad._data
    if slot.kind == "hyper":
        return _hyper_reader(slot)(args)
    raise AssertionError(f"slot of kind {slot.kind} is not read")


def _fresh(value: Any, sources: set[int]) -> Any:
    """A value safe to keep as a new tensor: copied if it is, or views, an input or state
    array (which later writes or the caller may change), or is a read-only or partial view
    (a broadcast, say) that later in-place updates could not write."""
    base = getattr(value, "base", None)
    if id(value) in sources or (base is not None and id(base) in sources):
        return value.copy()
    flags = value.flags
    # CuPy's flags have no writeable (device arrays are always writeable)
    if not getattr(flags, "writeable", True) or (base is not None and not (
            flags.c_contiguous and getattr(base, "size", -1) == value.size)):
        return value.copy()
    return value


def _write_into(t: Tensor, value: Any) -> None:
    if isinstance(value, COMMITS):  # a state update run in place now (plan.Commit)
        value.apply(t._data)
        t._vc.v += 1
        return
    if value is not t._data:  # else stored already (a native run's commit, planner.native)
        t._data[...] = value
    t._vc.v += 1


def _rebuild(template: Any) -> Any:
    kind, body = template
    if kind == "array":  # a numpy array is on the CPU, without a call of device_of_array
        # for every replay's result
        return Tensor._make(body, D.from_numpy_dtype(body.dtype),
                            "cpu" if type(body) is np.ndarray else device_of_array(body), None,
                            0, _VersionCounter())
    if kind == "item":  # Tensor.item() the step returns: its Python number, as eager mode's
        return body[1].reshape(()).item()
    if kind == "tuple":
        return tuple(_rebuild(t) for t in body)
    if kind == "list":
        return [_rebuild(t) for t in body]
    if kind == "dict":
        return {k: _rebuild(t) for k, t in body}
    return body


def compile(fn: Callable[..., Any] | None = None, *, backend: str = "auto",  # noqa: A001
            device: str | None = None, workers: int | None = None,
            cache_dir: str | os.PathLike[str] | None = None,
            fullgraph: bool = False, lock: AbstractContextManager[Any] | None = None,
            executor: str = "auto", recompile_limit: int | None = RECOMPILE_LIMIT,
            background: bool | None = None, dynamic: bool | None = None,
            cuda_graphs: bool | None = None) -> Any:
    """Compile a training step; usable as ``@planner.compile`` or ``@planner.compile(...)``.

    A function gives a ``CompiledStep``, called as the function. An ``nn.Module`` gives a
    ``planner.optimized_module.OptimizedModule`` (as torch.compile's): a module holding it as
    ``_orig_mod`` (its parameters, modes, state dict and attributes reached through it), whose
    calls run a ``CompiledStep`` over the module's ``__call__`` (``cm.forward``: its ``.plan``,
    ``.captures``, ``.lower(x)``).

    ``device``: where the plan runs ("cpu", "cuda" or "cuda:N"; default: the device of the
    step's tensors); a plan on a GPU renders its fused segments as CUDA C, launched through
    CuPy (``pip install 'backplan[cuda]'``), and ``compiled.lower(*args)`` renders them on any
    machine. ``backend``: "auto" (fused kernels of the plan's device, the interpreter where they
    fail to build, with a warning), "llvm" / "cuda" (that device's kernels, or an error),
    "interpreter" (never fuses) or "eager" (runs ``fn`` as written).

    ``cache_dir``: where compiled kernels are looked up and stored on disk (default
    ``$BACKPLAN_CACHE_DIR``, else ``~/.cache/backplan``; see codegen.cache).

    ``workers``: CPU threads a plan's independent steps may run on at once (the calling thread
    included; None: one per core the process may use). While they do, each step gets
    ``cores // workers`` intra-op threads (BLAS, split kernels; at most
    ``runtime.get_num_threads()``), so that workers and their threads never oversubscribe the
    cores. ``executor``: "auto" lets a cost model choose per plan between the straight-line
    program (one generated function on the calling thread: tiny plans) and the runtime's
    executor (planner.parallel); "program" or "parallel" asks for one. ``step.execution`` and
    ``step.plan.summary()`` say which a plan uses and why.

    Calls of one compiled step run one at a time, whatever thread makes them (``step.lock``).
    Different steps that update or read the same parameters or optimizer from several
    threads must share a lock: ``planner.compile(evaluate, lock=train.lock)``.

    ``recompile_limit``: captures after which a call that would capture again (new argument
    shapes or Python values, a failed guard) runs eagerly instead, with one RuntimeWarning
    naming the last change (torch.compile's limit, 8; None: no limit). Plans made before keep
    replaying. With ``fullgraph=True`` such a call raises CompileError.

    ``background``: whether a CPU plan's kernels that are not cached compile in a thread while
    the calls replay the unfused plan (planner.background: the first calls do not wait for
    LLVM, and the first call that finds the kernels built switches to them); False compiles
    them in the first call, so every call from the first runs the same code (the same bits
    from one run to the next); None: ``$BACKPLAN_BACKGROUND_COMPILE`` (1, the default, or 0).
    ``step.wait()`` blocks until they are in use.

    ``dynamic``: how Python int and float arguments are planned (torch.compile's option;
    shapes are always specialized, and a bool is a constant). None: as a constant at the first
    value, as an input of the plan (read at every replay) from the second value on; True: as
    an input from the first call; False: as a constant per value. A number the step reads as
    a value in Python (``if lr > 0``, ``range(n)``, ``x[:n]``, a shape) is a constant whatever
    this says.

    ``cuda_graphs``: whether a plan on a GPU replays as a CUDA graph from its second call
    (planner.cuda_graph: torch.compile's ``mode="reduce-overhead"``): its launches recorded
    once, each later call copying its arguments in and its results out around one graph
    launch. None: ``$BACKPLAN_CUDA_GRAPHS`` (1, the default, or 0). A plan that draws random
    numbers runs its launches one by one whatever this says; ``step.plan.summary()`` says
    which a plan does."""
    # a partial, not a closure: an OptimizedModule pickles with it (its copy compiles anew)
    wrap = functools.partial(CompiledStep, backend=backend, device=device, workers=workers,
                             cache_dir=cache_dir, fullgraph=fullgraph, lock=lock,
                             executor=executor, recompile_limit=recompile_limit,
                             background=background, dynamic=dynamic, cuda_graphs=cuda_graphs)

    def compiled(f: Callable[..., Any]) -> Any:
        if isinstance(f, Module):  # the module API kept, as torch.compile's
            return OptimizedModule(f, wrap)
        return wrap(f)

    return compiled if fn is None else compiled(fn)

