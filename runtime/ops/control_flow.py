"""PyTorch's control-flow operators, torch.cond and torch.while_loop, run eagerly (in a
captured step, a tensor predicate read in Python falls back to eager at that line, as any
value read in Python)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _dtype as D
from ..tensor import Tensor


def cond(pred: Any, true_fn: Callable[..., Any], false_fn: Callable[..., Any],
         operands: tuple[Any, ...] | list[Any] = ()) -> Any:
    """true_fn(*operands) if pred else false_fn(*operands), run eagerly (a captured step
    whose pred is a tensor falls back to eager at this line, as any value read in Python)."""
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got "
                               f"{pred}.")
        taken = bool(pred.item())
    elif isinstance(pred, (bool, int, float)):
        taken = bool(pred)
    else:
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(f"Expect operands to be a tuple of possibly nested dict/list/tuple "
                           f"that only consists of tensor leaves, but got {operands}.")
    return (true_fn if taken else false_fn)(*operands)


def while_loop(cond_fn: Callable[..., Any], body_fn: Callable[..., Any],
               carried_inputs: tuple[Any, ...] | list[Any]) -> tuple[Any, ...]:
    """body_fn applied to the carried values while cond_fn of them holds, run eagerly; the
    final carried values."""
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"carried_inputs must be a tuple or list, got "
                           f"{type(carried_inputs).__name__}")
    carried = tuple(carried_inputs)
    while True:
        go = cond_fn(*carried)
        if isinstance(go, Tensor):
            if go.numel() != 1 or go.dtype is not D.bool_:
                raise RuntimeError(f"cond_fn must return a boolean scalar tensor, got {go}")
            go = bool(go.item())
        if not go:
            return carried
        out = body_fn(*carried)
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(out) != len(carried):
            raise RuntimeError(f"body_fn must return as many values as it takes: got "
                               f"{len(out)} for {len(carried)}")
        carried = out


FUNCTIONS: dict[str, Callable[..., Any]] = {"cond": cond, "while_loop": while_loop}
METHODS: dict[str, Any] = {}
