"""The grad_input a non-full backward hook (``Module.register_backward_hook``) sees: the
gradients w.r.t. the inputs of the autograd node that made the module's output, laid out as
PyTorch's node has them. Our node is often one primitive of a composite op, so its inputs
differ: a where's bool condition and scalar operands (PyTorch's ReluBackward0 has the one
input), or the bias add of a linear (PyTorch's AddmmBackward0 has bias, input and
weight.t()). A hook's replacement goes back the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runtime import _dtype as D
from runtime.autograd.node import Meta

Hook = Callable[..., Any]


def _differentiable(fn: Any) -> list[int]:
    """The positions of fn's inputs PyTorch's node has edges for: tensors other than bool
    ones (its non-differentiable conditions and masks); Python scalars have none."""
    metas = getattr(fn, "metas", None)
    if metas is None:
        return list(range(len(fn.next_edges)))
    return [i for i, m in enumerate(metas) if isinstance(m, Meta) and m.dtype is not D.bool_]


def _addmm_product(fn: Any) -> Any:
    """The matmul node under a linear's bias add (PyTorch's AddmmBackward0), or None."""
    if type(fn).__name__ != "AddmmBackward0" or getattr(fn, "prim", None) is None \
            or fn.prim.name != "add":
        return None
    edge = fn.next_edges[0]
    node = None if edge is None else edge.function
    return node if getattr(getattr(node, "prim", None), "name", None) == "matmul" else None


def _replace_outputs(node: Any, values: list[Any]) -> None:
    """node's next outputs replaced by ``values``, once."""
    handle: Any = None

    def replace(outputs: tuple[Any, ...], grads: tuple[Any, ...]) -> tuple[Any, ...]:
        handle.remove()
        return tuple(values)

    handle = node.register_hook(replace)


def older_hook(hook: Hook, module: Any, fn: Any) -> Callable[[tuple[Any, ...], tuple[Any, ...]],
                                                                 Any]:
    """``hook(module, grad_input, grad_output)`` as a post hook of ``fn``."""
    product = _addmm_product(fn)
    if product is not None:
        return _addmm_hook(hook, module, product)
    kept = _differentiable(fn)

    def call(outputs: tuple[Any, ...], grads: tuple[Any, ...]) -> Any:
        r = hook(module, tuple(outputs[i] for i in kept), grads)
        if r is None:
            return None
        r = tuple(r)
        if len(r) != len(kept):
            raise RuntimeError(f"hook '{getattr(hook, '__name__', hook)}' has returned an "
                               f"incorrect number of values (got {len(r)}, but expected "
                               f"{len(kept)})")
        out = list(outputs)
        for i, v in zip(kept, r):
            out[i] = v
        return tuple(out)

    return call


def _addmm_hook(hook: Hook, module: Any, product: Any) -> Callable[..., Any]:
    """PyTorch's grad_input of addmm, (bias, input, weight.t()): the product's gradients are
    computed from the gradient going into it (once more, for the hook), and a replacement of
    them becomes the product node's outputs."""

    def call(outputs: tuple[Any, ...], grads: tuple[Any, ...]) -> Any:
        g_product, g_bias = outputs
        g_input, g_weight_t = (None, None) if g_product is None else product.apply([g_product])
        r = hook(module, (g_bias, g_input, g_weight_t), grads)
        if r is None:
            return None
        r = tuple(r)
        if len(r) != 3:
            raise RuntimeError(f"hook '{getattr(hook, '__name__', hook)}' has returned an "
                               f"incorrect number of values (got {len(r)}, but expected 3)")
        if r[1] is not g_input or r[2] is not g_weight_t:
            _replace_outputs(product, [r[1], r[2]])
        return (g_product, r[0])

    return call
