"""Names for a plan's slots: parameters and optimizer state by module path (``fc1.weight``,
``exp_avg[fc1.weight]``), inputs by the step's parameter names, other tensors by the variable
the step reaches them through (its globals, closure or arguments)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

from .capture import Slot


def _referenced(fn: Callable[..., Any], args: tuple[Any, ...]) -> Iterator[tuple[str, Any]]:
    """(name, object) the step reaches directly: its arguments, closure cells and the
    globals its code names (a bound method's instance under its own name, ``self``)."""
    params = _parameter_names(fn, len(args))
    yield from zip(params, args, strict=False)
    owner = getattr(fn, "__self__", None)
    if owner is not None:
        yield "self", owner
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return
    for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=True):
        try:
            yield name, cell.cell_contents
        except ValueError:  # a cell not yet filled
            continue
    for name in code.co_names:
        if name in fn.__globals__:
            yield name, fn.__globals__[name]


def _parameter_names(fn: Callable[..., Any], n: int) -> list[str]:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return [f"arg{i}" for i in range(n)]
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = [p.name for p in params if p.kind == p.VAR_POSITIONAL]
    names += [f"{star[0] if star else 'arg'}[{i}]" for i in range(len(names), n)]
    return names[:n]


def tensor_names(fn: Callable[..., Any], args: tuple[Any, ...]) -> dict[int, str]:
    """id(tensor) -> name of every tensor the step reaches: a module's parameters and buffers
    by path (prefixed by the module's variable when the step reaches several modules), and
    tensors held in a variable (or a list or tuple of them) by that variable."""
    from runtime import Tensor
    from runtime.nn import Module
    from runtime.optim import Optimizer

    found = [(name, obj) for name, obj in _referenced(fn, args)
             if isinstance(obj, (Module, Optimizer, Tensor, list, tuple))]
    modules = [(name, obj) for name, obj in found if isinstance(obj, Module)
               and any(True for _ in [*obj.parameters(), *obj.buffers()])]
    # a module inside another the step reaches (a layer of its model) adds no names of its own
    inner = {id(m) for _, top in modules for _, m in top.named_modules() if m is not top}
    modules = [(name, m) for name, m in modules if id(m) not in inner]
    names: dict[int, str] = {}
    for name, module in modules:
        prefix = f"{name}." if len(modules) > 1 else ""
        for path, t in [*module.named_parameters(), *module.named_buffers()]:
            names.setdefault(id(t), prefix + path)
    for name, obj in found:
        if isinstance(obj, Tensor):
            names.setdefault(id(obj), name)
        elif isinstance(obj, (list, tuple)):
            for i, item in enumerate(obj):
                if isinstance(item, Tensor):
                    names.setdefault(id(item), f"{name}[{i}]")
                elif isinstance(item, Module):
                    for path, t in item.named_parameters():
                        names.setdefault(id(t), f"{name}[{i}].{path}")
    # an optimizer's state tensors the plan reads as tensors (Adam's step counts)
    for _, opt in found:
        if isinstance(opt, Optimizer):
            for param, state in opt.state.items():
                for key, value in state.items():
                    if isinstance(value, Tensor):
                        names.setdefault(id(value), f"{key}[{names.get(id(param), 'param')}]")
    return names


def slot_names(slots: list[Slot], fn: Callable[..., Any], args: tuple[Any, ...]) -> list[str]:
    """A name for each slot of a capture of ``fn(*args)``; a slot nothing names keeps the
    capture's description (``tensor[64, 64]``)."""
    tensors = tensor_names(fn, args)
    params = _parameter_names(fn, len(args))

    def of(t: Any, fallback: str) -> str:
        return tensors.get(id(t), fallback)

    out = []
    for slot in slots:
        if slot.kind == "input":
            out.append(params[slot.ref] if slot.ref < len(params) else slot.desc)
        elif slot.kind == "tensor":
            out.append(of(slot.ref, slot.desc))
        elif slot.kind == "grad":
            out.append(f"{of(slot.ref, slot.desc)}.grad")
        elif slot.kind == "hyper":  # (weak optimizer, group index, key, tuple index or None)
            _, group, key, index = slot.ref
            out.append(f"param_groups[{group}][{key!r}]" + ("" if index is None
                                                           else f"[{index}]"))
        else:  # opt_state: (weak reference to the optimizer, parameter, state key)
            _, param, key = slot.ref
            out.append(f"{key}[{of(param, 'param')}]")
    return out


def name_by_writes(names: list[str], slots: list[Slot], writes: list[tuple[int, int]]
                   ) -> list[str]:
    """``names`` with each unnamed tensor slot named after the optimizer state written from
    the same buffer: a state tensor the optimizer made during the captured call (Adam's first
    ``step``) is read as a plain tensor and stored back as that state."""
    state_of = {buf: names[slot] for slot, buf in writes if slots[slot].kind == "opt_state"}
    out = list(names)
    for slot, buf in writes:
        if slots[slot].kind == "tensor" and out[slot] == slots[slot].desc and buf in state_of:
            out[slot] = state_of[buf]
    return out
