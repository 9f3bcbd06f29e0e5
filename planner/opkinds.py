"""Op-kind questions about plan steps, asked in one place: whether a step's output is a view
of its first argument, and which numpy ufunc (if any) a primitive's impl is."""

from __future__ import annotations

from typing import Any

import numpy as np

from runtime.ops import prims
from runtime.ops.registry import REGISTRY, Primitive

from .steps import PrimitiveStep, Step


def _ufunc_ref(fn: Any) -> tuple[Any, Any]:
    return (lambda xp, x: fn(x)), (lambda xp, a, b: fn(a, b))


_UNARY_REF, _BINARY_REF = (f.__code__ for f in _ufunc_ref(None))


def same_code(fn: Any, ref: Any) -> bool:
    """Whether function fn's body is ref's, instruction for instruction (names of its locals
    and free variables aside): then it computes what ref computes."""
    code = getattr(fn, "__code__", None)
    return code is not None and all(
        getattr(code, a) == getattr(ref, a)
        for a in ("co_code", "co_consts", "co_names", "co_argcount", "co_kwonlyargcount",
                  "co_flags"))


def ufunc_of(prim: Primitive) -> np.ufunc | None:
    """The numpy ufunc a primitive's impl calls and returns, unchanged (``fn(a, b)``)."""
    impl = prim.impl
    for ref in (_UNARY_REF, _BINARY_REF):
        if same_code(impl, ref) and impl.__closure__ and len(impl.__closure__) == 1:
            fn = impl.__closure__[0].cell_contents
            if isinstance(fn, np.ufunc) and fn.nin == ref.co_argcount - 1 and fn.nout == 1:
                return fn
    return None


def step_ufunc(step: Step) -> np.ufunc | None:
    """The ufunc a primitive step is, on the CPU; None for any other step."""
    if not isinstance(step, PrimitiveStep) or step.name not in REGISTRY:
        return None
    return ufunc_of(step.prim)


def is_view(step: Step) -> bool:
    """Whether the step's output shares its first argument's storage: a view primitive
    (reshape, permute, expand) or basic indexing; an advanced-indexing gather copies."""
    if not isinstance(step, PrimitiveStep) or not step.args or step.args[0][0] != "buf":
        return False
    prim = REGISTRY.get(step.name)
    if prim is None or not prim.view:
        return False
    if step.name == "getitem":
        return prims.is_basic_key(step.attrs.get("key", ()))
    return True
