"""Which ops autocast and how: a decorator on each op function, as PyTorch registers its ops
with the Autocast dispatch key (``aten/src/ATen/autocast_mode.cpp``, the CPU lists)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from .. import _dtype as D
from . import _state
from ._state import state

Fn = TypeVar("Fn", bound=Callable[..., Any])

# PyTorch's cast policies
LOWER = "lower_precision_fp"  # eligible floating tensors to the autocast dtype (mm, conv)
FP32 = "fp32"  # eligible floating tensors to float32 (losses, prod, cdist)
PROMOTE = "promote"  # eligible floating tensors to the widest among them (cat, stack)
# nothing cast, and nothing inside cast either: an op PyTorch runs as one kernel in its
# inputs' dtype that is built here from a listed op (mv, dot, outer from matmul)
EXCLUDE = "exclude"


def autocast_op(policy: str) -> Callable[[Fn], Fn]:
    """The op ``fn`` under autocast: its tensor arguments cast by ``policy``, then ``fn`` run
    with autocast off for their device type (PyTorch excludes the Autocast key while the op
    runs: what it calls is not cast again). Off in every thread, one global read."""
    if policy not in (LOWER, FP32, PROMOTE, EXCLUDE):
        raise ValueError(f"unknown autocast policy {policy!r}")

    def decorate(fn: Fn) -> Fn:
        @functools.wraps(fn)
        def op(*args: Any, **kwargs: Any) -> Any:
            if not _state.active_threads or not state.on:
                return fn(*args, **kwargs)
            # an out= call is not autocast (PyTorch registers no .out overload for it)
            return _autocast_call(fn, EXCLUDE if "out" in kwargs else policy, args, kwargs)

        return op  # type: ignore[return-value]

    return decorate


# the decorators an op's module applies
autocast_lower = autocast_op(LOWER)
autocast_fp32 = autocast_op(FP32)
autocast_promote = autocast_op(PROMOTE)
autocast_exclude = autocast_op(EXCLUDE)


def _tensors(values: Any) -> Any:
    from ..tensor import Tensor

    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _tensors(v)


def _device_type(device: str) -> str:
    return device.split(":", 1)[0]


def _autocast_call(fn: Callable[..., Any], policy: str, args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> Any:
    first = next(_tensors((*args, *kwargs.values())), None)
    if first is None:
        return fn(*args, **kwargs)
    device_type = _device_type(first.device)
    if not state.enabled.get(device_type, False):
        return fn(*args, **kwargs)
    target = None
    if policy == LOWER:
        target = state.dtype[device_type]
    elif policy == FP32:
        target = D.float32
    elif policy == PROMOTE:
        target = _widest(args, kwargs, device_type)
    if target is not None:
        args = tuple(_cast(a, target, device_type) for a in args)
        kwargs = {k: _cast(v, target, device_type) for k, v in kwargs.items()}
    state.enabled[device_type] = False
    state.refresh()
    try:
        return fn(*args, **kwargs)
    finally:
        state.enabled[device_type] = True
        state.refresh()


def _widest(args: tuple[Any, ...], kwargs: dict[str, Any], device_type: str
            ) -> D.DType | None:
    """The promote policy's dtype, as PyTorch's ``promote_type``: from the autocast dtype,
    float32 once an eligible tensor (floating, on ``device_type``) is float32; float64
    tensors are ignored (and left uncast). Before any float32, two different
    lower-precision dtypes are PyTorch's error; one lower-precision dtype that is not the
    autocast one (bfloat16 tensors alone in a float16 region), which PyTorch refuses too,
    is let through uncast here (None: the op promotes as outside autocast), because the
    runtime's composite ops (pad, ...) call cat and stack with autocast on, where
    PyTorch's kernels do not."""
    lower = state.dtype[device_type]
    current: D.DType | None = lower
    seen: set[D.DType] = set()
    for t in _tensors((*args, *kwargs.values())):
        nxt = t.dtype
        if (not nxt.is_floating_point or nxt is D.float64
                or _device_type(t.device) != device_type):
            continue
        if current is D.float32 or (nxt is D.float32 and current is not None):
            current = D.float32
            continue
        if nxt is D.float32:
            continue
        seen.add(nxt)
        if len(seen) > 1:
            raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
        if nxt is not lower:
            current = None
    return current


def _cast(value: Any, target: D.DType, device_type: str) -> Any:
    """``value`` with its eligible tensors (floating, not float64, on ``device_type``) in
    ``target``; a leaf requiring grad cast to the lower-precision dtype once per autocast
    region (PyTorch's weight cache)."""
    from ..tensor import Tensor

    if isinstance(value, (list, tuple)):
        cast = [_cast(v, target, device_type) for v in value]
        return cast if isinstance(value, list) else type(value)(cast)
    if (not isinstance(value, Tensor) or not value.dtype.is_floating_point
            or value.dtype is D.float64 or value.dtype is target
            or _device_type(value.device) != device_type):
        return value
    from ..autograd.grad_mode import is_grad_enabled
    from ..tracing import is_tracing

    # not while a step is captured: its casts are the plan's (one at every replay), and a
    # capture's shape-only copy kept in the region's cache broke the eager ops after it
    cacheable = (state.cache_enabled and target is state.dtype[device_type]
                 and value.dtype is D.float32 and value.requires_grad and value.is_leaf
                 and value._base is None and is_grad_enabled() and not is_tracing())
    if cacheable:
        hit = state.cache.get(id(value))
        if hit is not None and hit[0] is value and hit[1].dtype is target:
            return hit[1]
    out = value.to(target)
    if cacheable:
        state.cache[id(value)] = (value, out)
    return out
