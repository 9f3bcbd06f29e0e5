"""``argnums`` of ``grad``, ``jacrev``, ``jacfwd``, ``hessian``: which positional arguments
a transform differentiates, with PyTorch's checks and error texts."""

from __future__ import annotations

from typing import Any

__all__ = ["replace_args", "slice_argnums"]

Argnums = int | tuple[int, ...]


def _wrap_argnum(argnum: Any, num_args: int) -> int:
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def normalize_argnums(argnums: Any, num_args: int) -> Argnums:
    """``argnums`` checked against ``num_args`` arguments, negative ones made positive."""
    if not isinstance(argnums, int | tuple):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if isinstance(argnums, int):
        return _wrap_argnum(argnums, num_args)
    wrapped = tuple(_wrap_argnum(a, num_args) for a in argnums)
    if not wrapped:
        raise RuntimeError("argnums must be non-empty")
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return wrapped


def slice_argnums(args: tuple[Any, ...], argnums: Any, as_tuple: bool = True) -> Any:
    """The arguments at ``argnums``: a tuple of them (one-tuple for an int unless
    ``as_tuple`` is False)."""
    argnums = normalize_argnums(argnums, len(args))
    if isinstance(argnums, int):
        return (args[argnums],) if as_tuple else args[argnums]
    return tuple(args[i] for i in argnums)


def replace_args(args: tuple[Any, ...], new: Any, argnums: Argnums) -> tuple[Any, ...]:
    """``args`` with ``new`` (one value for an int ``argnums``, a tuple for a tuple) at
    ``argnums``; ``argnums`` already normalized."""
    if isinstance(argnums, int):
        return tuple(new if i == argnums else a for i, a in enumerate(args))
    at = dict(zip(argnums, new))
    return tuple(at.get(i, a) for i, a in enumerate(args))
