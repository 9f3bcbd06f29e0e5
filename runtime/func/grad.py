"""``torch.func.grad``, ``grad_and_value`` and ``vjp`` on the eager autograd engine (one
``GradLevel`` per call; nesting works because an inner level keeps its graph to the outer
level's inputs)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor
from ._argnums import normalize_argnums, replace_args, slice_argnums
from ._level import GradLevel, check_tensor_outputs, level_grad_mode
from ._pytree import tree_flatten, tree_unflatten

__all__ = ["grad", "grad_and_value", "vjp"]

_GV = "grad_and_value(f)(*args)"


def _split_aux(output: Any, where: str) -> tuple[Any, Any]:
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{where}: output of function f should be a tuple: (output, aux) "
                           "if has_aux is True")
    return output


def _check_scalar(output: Any) -> None:
    if not isinstance(output, Tensor):
        raise RuntimeError(f"{_GV}: Expected f(*args) to return a Tensor, got {type(output)}")
    if output.dim() != 0:
        raise RuntimeError(f"{_GV}: Expected f(*args) to return a scalar Tensor, got tensor "
                           f"with {output.dim()} dims. Maybe you wanted to use the vjp or "
                           "jacrev APIs instead?")


def _grad_and_value(func: Callable[..., Any], argnums: Any, has_aux: bool,
                    args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    level = GradLevel()
    level.note_inputs((args, kwargs))
    with level_grad_mode(level):
        diff = slice_argnums(args, argnums, as_tuple=False)
        fresh = level.differentiable_tree(diff)
        args = replace_args(args, fresh, normalize_argnums(argnums, len(args)))
        output = func(*args, **kwargs)
        aux = None
        if has_aux:
            output, aux = _split_aux(output, _GV)
        _check_scalar(output)
        flat_fresh, spec = tree_flatten(fresh)
        grads = level.grad([output], flat_fresh, retain_graph=level.outer_tracking,
                           create_graph=level.outer_tracking)
        grads = level.unwrap_tree(tree_unflatten(list(grads), spec))
        output = level.unwrap(output)
        if has_aux:
            return grads, (output, level.unwrap_aux(aux))
        return grads, output


def grad_and_value(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0,
                   has_aux: bool = False) -> Callable[..., Any]:
    """``func``'s gradient with respect to the arguments at ``argnums`` (pytrees of tensors)
    and its value: ``(grad, value)``, or ``(grad, (value, aux))`` with ``has_aux``."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return _grad_and_value(func, argnums, has_aux, args, kwargs)
    return wrapper


def grad(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0,
         has_aux: bool = False) -> Callable[..., Any]:
    """The gradient of a scalar-valued ``func`` with respect to the arguments at
    ``argnums``, shaped as those arguments; ``(grad, aux)`` with ``has_aux``. Inputs the
    output does not depend on get zeros. ``grad(grad(f))`` is the second derivative."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        grads, value = _grad_and_value(func, argnums, has_aux, args, kwargs)
        return (grads, value[1]) if has_aux else grads
    return wrapper


def _check_outputs(flat_out: list[Any]) -> None:
    check_tensor_outputs(flat_out, "vjp(f, *primals)")
    for out in flat_out:
        if not out.is_floating_point():
            raise RuntimeError("vjp(f, ...): All outputs of f must be floating-point or "
                               f"complex Tensors, got Tensor with dtype {out.dtype}")


def vjp_with_argnums(func: Callable[..., Any], *primals: Any, argnums: Any = None,
                     has_aux: bool = False) -> tuple[Any, ...]:
    """``vjp``; with ``argnums`` its function returns the products for those arguments only
    (as ``jacrev`` needs)."""
    level = GradLevel()
    level.note_inputs(primals)
    with level_grad_mode(level):
        if argnums is None:
            fresh = level.differentiable_tree(primals)
            args = fresh
        else:
            fresh = level.differentiable_tree(slice_argnums(primals, argnums, as_tuple=False))
            args = replace_args(primals, fresh, normalize_argnums(argnums, len(primals)))
        out = func(*args)
        aux = None
        if has_aux:
            out, aux = _split_aux(out, "vjp(f, *primals)")
            aux = level.unwrap_aux(aux)
        flat_out, out_spec = tree_flatten(out)
        _check_outputs(flat_out)
        results = level.unwrap_tree(out)
    flat_fresh, fresh_spec = tree_flatten(fresh)

    def vjp_fn(cotangents: Any, retain_graph: bool = True,
               create_graph: bool | None = None) -> Any:
        if create_graph is None:
            create_graph = is_grad_enabled()
        flat_cot, cot_spec = tree_flatten(cotangents)
        if cot_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               "pytree structure of outputs to the function. cotangents: "
                               f"{_pprint(cot_spec)}, primal output: {_pprint(out_spec)}")
        grads = level.grad(flat_out, flat_fresh, flat_cot, retain_graph=retain_graph,
                           create_graph=create_graph)
        return level.unwrap_tree(tree_unflatten(list(grads), fresh_spec), create_graph)

    return (results, vjp_fn, aux) if has_aux else (results, vjp_fn)


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` (a pytree like the output) is
    the tuple of vector-Jacobian products, one per primal; ``(output, vjp_fn, aux)`` with
    ``has_aux``."""
    return vjp_with_argnums(func, *primals, has_aux=has_aux)


def _pprint(spec: Any) -> str:
    """PyTorch's ``treespec_pprint``: the structure with ``*`` for each leaf."""
    class _Star:
        def __repr__(self) -> str:
            return "*"

    return repr(tree_unflatten([_Star()] * spec.num_leaves, spec))
