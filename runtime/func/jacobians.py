"""``jacrev`` (one vector-Jacobian product a row of the Jacobian, on one run of the
function) and ``hessian`` (PyTorch's forward-over-reverse ``jacfwd(jacrev(f))``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..creation import eye, zeros_like
from ..tensor import Tensor
from ._argnums import slice_argnums
from ._pytree import tree_flatten, tree_unflatten
from .forward import jacfwd, jacobian_blocks
from .grad import vjp_with_argnums

__all__ = ["hessian", "jacrev"]


def _basis_rows(flat_out: list[Tensor]) -> list[list[Tensor]]:
    """One cotangent per element of the outputs: zeros but a one at that element."""
    rows = []
    for k, o in enumerate(flat_out):
        ones_at = eye(o.numel(), dtype=o.dtype, device=o.device)
        rows += [[ones_at[j].reshape(o.shape) if i == k else zeros_like(q)
                  for i, q in enumerate(flat_out)] for j in range(o.numel())]
    return rows


def jacrev(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, *,
           has_aux: bool = False, chunk_size: int | None = None,
           _preallocate_and_copy: bool = False) -> Callable[..., Any]:
    """The Jacobian of ``func`` with respect to the arguments at ``argnums``, one
    vector-Jacobian product a row: for each output, a tensor ``out.shape + arg.shape`` (a
    tuple over ``argnums`` when it is a tuple); ``(jacobian, aux)`` with ``has_aux``.
    ``chunk_size`` is checked and otherwise changes nothing (rows are computed one by one)."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:
        result = vjp_with_argnums(func, *args, argnums=argnums, has_aux=has_aux)
        output, vjp_fn = result[0], result[1]
        flat_out, out_spec = tree_flatten(output)
        flat_primals, primals_spec = tree_flatten(slice_argnums(args, argnums))
        rows = [tree_flatten(vjp_fn(tree_unflatten(basis, out_spec)))[0]
                for basis in _basis_rows(flat_out)]
        jac = tree_unflatten(jacobian_blocks(rows, flat_out, flat_primals, argnums,
                                             primals_spec, dim=0), out_spec)
        return (jac, result[2]) if has_aux else jac

    return wrapper


def hessian(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """The Hessian of ``func`` with respect to the arguments at ``argnums``:
    ``jacfwd(jacrev(func, argnums), argnums)``."""
    return jacfwd(jacrev(func, argnums), argnums)
