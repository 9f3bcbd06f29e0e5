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
from runtime.tensor import Tensor

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

    replace._runtime_internal = True  # type: ignore[attr-defined]
    handle = node.register_hook(replace)


def _checked(hook: Hook, r: Any, expected: int) -> tuple[Any, ...]:
    """A hook's replacement grad_input, refused with PyTorch's error if its length is not
    the node's."""
    r = tuple(r)
    if len(r) != expected:
        raise RuntimeError(f"hook '{getattr(hook, '__name__', hook)}' has returned an "
                           f"incorrect number of values (got {len(r)}, but expected "
                           f"{expected})")
    return r


def older_hooks(hooks: list[Hook], module: Any, fn: Any, args: Any = (), output: Any = None
                ) -> list[Callable[[tuple[Any, ...], tuple[Any, ...]], Any]]:
    """Each ``hook(module, grad_input, grad_output)`` as post hooks of ``fn``, the node of
    ``output`` (the module's first output; ``args`` its inputs), in order."""
    product = _addmm_product(fn)
    if product is not None:
        return [_addmm_hook(hook, module, product) for hook in hooks]
    operands = _op_operands(module, args, fn)
    if operands is not None and output is not None:
        return [_composite_hook(hooks, module, fn, operands, output)]
    return [_node_hook(hook, module, fn) for hook in hooks]


def _node_hook(hook: Hook, module: Any, fn: Any) -> Callable[..., Any]:
    """PyTorch's grad_input where our node has its inputs: fn's differentiable outputs."""
    kept = _differentiable(fn)

    def call(outputs: tuple[Any, ...], grads: tuple[Any, ...]) -> Any:
        r = hook(module, tuple(outputs[i] for i in kept), grads)
        if r is None:
            return None
        r = _checked(hook, r, len(kept))
        out = list(outputs)
        for i, v in zip(kept, r):
            out[i] = v
        return tuple(out)

    return call


# PyTorch's single-op nodes of leaf modules whose inputs are the module's input and then
# these attributes of the module (its parameters, a None one an absent input), where ours
# is the last primitive of a composite: their grad_input is computed w.r.t. those tensors
_OPERANDS: dict[str, tuple[bool, tuple[str, ...]]] = {
    **{name: (True, ("weight", "bias")) for name in (
        "ConvolutionBackward0", "NativeBatchNormBackward0", "NativeLayerNormBackward0",
        "NativeGroupNormBackward0")},
    "PreluKernelBackward0": (True, ("weight",)),
    "EmbeddingBackward0": (False, ("weight",)),
    **{name: (True, ()) for name in (
        "SoftmaxBackward0", "LogSoftmaxBackward0", "GeluBackward0", "SigmoidBackward0",
        "SiluBackward0", "EluBackward0", "HardswishBackward0", "HardsigmoidBackward0",
        "SoftplusBackward0", "MishBackward0", "LeakyReluBackward0", "HardtanhBackward0",
        "MaxPool2DWithIndicesBackward0", "AvgPool2DBackward0", "AdaptiveAvgPool2DBackward0",
        "MeanBackward1")},
}


def _op_operands(module: Any, args: Any, fn: Any) -> list[Any] | None:
    """The inputs of PyTorch's node ``fn`` stands for, for a leaf module whose op it is
    (None where ours has its inputs already, or the module is a container)."""
    found = _OPERANDS.get(type(fn).__name__)
    if found is None or next(iter(module.children()), None) is not None:
        return None
    takes_input, attributes = found
    first = next((a for a in (args if isinstance(args, tuple) else (args,))
                  if isinstance(a, Tensor)), None)
    if takes_input and first is None:
        return None
    return ([first] if takes_input else []) + [getattr(module, a, None) for a in attributes]


def _composite_hook(hooks: list[Hook], module: Any, fn: Any, operands: list[Any],
                    output: Any) -> Callable[..., Any]:
    """PyTorch's grad_input of a leaf module's single-op node: the gradients w.r.t. the
    op's inputs (None for one that needs none), computed once more from the gradient
    going into the node, for all the hooks (one post hook: the one-off backward passes
    this node again, where every hook of it must be inert). A replacement of them is
    refused: ours reach those inputs through several steps, which a hook's values cannot
    stand in for."""
    from runtime.autograd import grad as autograd_grad

    inside = [False]  # the one-off backward below passes this node again: inert then

    def call(outputs: tuple[Any, ...], grads: tuple[Any, ...]) -> Any:
        if inside[0]:
            return None
        needing = [i for i, t in enumerate(operands)
                   if isinstance(t, Tensor) and t.requires_grad]
        grad_input: list[Any] = [None] * len(operands)
        if needing and grads[0] is not None:
            inside[0] = True
            try:
                found = autograd_grad(output, [operands[i] for i in needing], grads[0],
                                      retain_graph=True, allow_unused=True)
            finally:
                inside[0] = False
            for i, g in zip(needing, found):
                grad_input[i] = g
        given = tuple(grad_input)
        for hook in hooks:
            r = hook(module, given, grads)
            if r is not None and any(a is not b for a, b in
                                     zip(_checked(hook, r, len(given)), given)):
                raise NotImplementedError(
                    f"register_backward_hook: a hook replacing grad_input of "
                    f"{type(fn).__name__} is not supported here (runtime computes this op in "
                    "several steps); use register_full_backward_hook")
        return None

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
        r = _checked(hook, r, 3)
        if r[1] is not g_input or r[2] is not g_weight_t:
            _replace_outputs(product, [r[1], r[2]])
        return (g_product, r[0])

    return call
