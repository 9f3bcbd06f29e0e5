"""rt.autograd.backward and rt.autograd.grad, with PyTorch's arguments and errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .engine import get_default_engine
from .node import Edge, gradient_edge

if TYPE_CHECKING:
    from ..tensor import Tensor


def _tensor_seq(x: Any) -> tuple[Any, ...]:
    from ..tensor import Tensor

    if isinstance(x, Tensor):
        return (x,)
    if x is None:
        return ()
    return tuple(x)


def _make_grads(outputs: Sequence[Tensor], grads: Sequence[Any], is_grads_batched: bool = False
                ) -> list[Any]:
    from ..creation import ones_like
    from ..tensor import Tensor

    new: list[Any] = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if isinstance(g, Tensor):
            if g.shape != out.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {_size(g.shape)} and "
                    f"output[{i}] has a shape of {_size(out.shape)}.")
            if out.dtype.is_floating_point != g.dtype.is_floating_point:
                raise RuntimeError(
                    f"For complex Tensors, both grad_output and output are required to have the "
                    f"same dtype. Mismatch in dtype: grad_output[{i}] has a dtype of "
                    f"{g.dtype.name} and output[{i}] has a dtype of {out.dtype.name}.")
            new.append(g)
        elif g is None:
            if out.requires_grad:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out.dtype.is_floating_point:
                    raise RuntimeError("grad can be implicitly created only for real scalar "
                                       f"outputs but got {out.dtype.name}")
                new.append(ones_like(out))
            else:
                new.append(None)
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got "
                            f"{type(g).__name__}")
    return new


def _size(shape: tuple[int, ...]) -> str:
    return f"runtime.Size({list(shape)})"


def _root_edges(tensors: Sequence[Tensor]) -> list[Edge]:
    edges = []
    for i, t in enumerate(tensors):
        if not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")
        edges.append(gradient_edge(t))
    return edges


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs: Any = None) -> None:
    outs = _tensor_seq(tensors)
    if not outs:
        raise RuntimeError("backward() received an empty list of tensors")
    inputs_t = _tensor_seq(inputs)
    if inputs is not None and not inputs_t:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    grads = _tensor_seq(grad_tensors) if grad_tensors is not None else (None,) * len(outs)
    if len(grads) != len(outs):
        raise RuntimeError(f"got {len(grads)} tensors and {len(outs)} gradients")
    if retain_graph is None:
        retain_graph = create_graph
    grads_list = _make_grads(outs, grads)
    roots = _root_edges(outs)
    out_edges = None
    if inputs_t:
        out_edges = []
        for t in inputs_t:
            if not t.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            if t.grad_fn is not None and not t.retains_grad:
                t.retain_grad()  # a non-leaf in inputs= gets its .grad, as in PyTorch
            out_edges.append(gradient_edge(t))
    get_default_engine().execute(roots, grads_list, retain_graph, create_graph,
                                 accumulate_grad=True, outputs=out_edges)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False
         ) -> tuple[Tensor | None, ...]:
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outs = _tensor_seq(outputs)
    ins = _tensor_seq(inputs)
    if not ins:
        raise RuntimeError("grad requires non-empty inputs.")
    grads = _tensor_seq(grad_outputs) if grad_outputs is not None else (None,) * len(outs)
    if len(grads) != len(outs):
        raise RuntimeError(f"grad_outputs has {len(grads)} tensors but outputs has {len(outs)}")
    if retain_graph is None:
        retain_graph = create_graph
    for t in ins:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    grads_list = _make_grads(outs, grads)
    roots = _root_edges(outs)
    out_edges = [gradient_edge(t) for t in ins]
    result = get_default_engine().execute(roots, grads_list, retain_graph, create_graph,
                                          accumulate_grad=False, outputs=out_edges)
    final: list[Tensor | None] = []
    for t, g in zip(ins, result):
        if g is None:
            if materialize_grads:
                from ..creation import zeros_like

                g = zeros_like(t)
            elif not allow_unused:
                raise RuntimeError(
                    "One of the differentiated Tensors appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior.")
        final.append(g)
    return tuple(final)
