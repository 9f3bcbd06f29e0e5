"""rt.autograd.backward and rt.autograd.grad, with PyTorch's arguments and errors."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .engine import get_default_engine
from .node import Edge, gradient_edge, input_edge

if TYPE_CHECKING:
    from ..tensor import Tensor


def _tensor_seq(x: Any) -> tuple[Any, ...]:
    from ..tensor import Tensor
    from .graph import GradientEdge

    if isinstance(x, (Tensor, GradientEdge)):  # one tensor or edge (an edge is a tuple too)
        return (x,)
    if x is None:
        return ()
    return tuple(x)


def _inputs_seq(inputs: Any, where: str) -> tuple[Any, ...]:
    """``inputs=`` as a tuple: a tensor, a sequence, or (PyTorch 2.13) a dict of tensors, such
    as ``dict(model.named_parameters())``, whose values count."""
    if type(inputs) is dict:
        return tuple(inputs.values())
    if isinstance(inputs, Mapping):
        raise TypeError(f"`inputs` argument to `{where}()` must be a dict, not "
                        f"{type(inputs).__name__}. Other Mapping types are not supported.")
    return _tensor_seq(inputs)


def _grads_seq(grads: Any, n: int) -> tuple[Any, ...]:
    """grad_tensors / grad_outputs as a tuple; None stands for a None per output."""
    return (None,) * n if grads is None else _tensor_seq(grads)


def _make_grads(outputs: Sequence[Tensor], grads: Sequence[Any], is_grads_batched: bool = False
                ) -> list[Any]:
    from ..creation import ones, ones_like
    from ..tensor import Tensor

    from .graph import GradientEdge

    new: list[Any] = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if not isinstance(out, (Tensor, GradientEdge)):
            raise AssertionError("Expected output to be a runtime.Tensor")
        if isinstance(out, GradientEdge):  # its node's metadata stands for the tensor
            out_shape, out_dtype, out_device = out.node.input_metas[out.output_nr]
            out_shape = tuple(out_shape)
        else:
            out_shape, out_dtype, out_device = out.shape, out.dtype, out.device
        if isinstance(g, Tensor):
            # PyTorch compares the first slice of a batched grad (``grad[0]``), and its error
            # then names that slice's shape less its first dim
            first = g[0] if is_grads_batched else g
            if tuple(first.shape) != tuple(out_shape):
                if is_grads_batched:
                    if isinstance(out, GradientEdge):
                        raise RuntimeError("Batched grads are not supported with GradientEdge")
                    raise RuntimeError(
                        "If `is_grads_batched=True`, we interpret the first dimension of each "
                        "grad_output as the batch dimension. The sizes of the remaining "
                        "dimensions are expected to match the shape of corresponding output, "
                        f"but a mismatch was detected: grad_output[{i}] has a shape of "
                        f"{_size(first.shape[1:])} and output[{i}] has a shape of "
                        f"{_size(out_shape)}. If you only want some tensors in `grad_output` "
                        "to be considered batched, consider using vmap.")
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {_size(g.shape)} and "
                    f"output[{i}] has a shape of {_size(out_shape)}.")
            # PyTorch only refuses a complex grad_output for a real output (or the reverse);
            # there are no complex dtypes here, and the engine casts the grad to the output's
            new.append(g)
        elif g is None:
            if isinstance(out, GradientEdge) or out.requires_grad:
                if not all(n == 1 for n in out_shape):
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out_dtype.is_floating_point:
                    raise RuntimeError("grad can be implicitly created only for real scalar "
                                       f"outputs but got {out_dtype}")
                new.append(ones_like(out) if isinstance(out, Tensor) else
                           ones(out_shape, dtype=out_dtype, device=out_device))
            else:
                new.append(None)
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got "
                            f"{type(g).__name__}")
    return new


def _check_input(t: Any) -> None:
    from ..tensor import Tensor
    from .graph import GradientEdge

    if not isinstance(t, (Tensor, GradientEdge)):
        raise RuntimeError("all inputs have to be Tensors or GradientEdges, but got "
                           f"{type(t).__name__}")


def _size(shape: tuple[int, ...]) -> str:
    return f"torch.Size({list(shape)})"


def _edge(t: Any) -> Edge:
    """Where a gradient of ``t`` flows: a tensor's gradient edge, or a GradientEdge given."""
    from .graph import GradientEdge

    if isinstance(t, GradientEdge):
        return tuple.__new__(Edge, (t.node, t.output_nr))
    return input_edge(t)


def _root_edges(tensors: Sequence[Tensor], grads: Sequence[Any]) -> list[Edge]:
    from .graph import GradientEdge

    if len(grads) != len(tensors):
        raise RuntimeError(f"got {len(tensors)} tensors and {len(grads)} gradients")
    edges = []
    for i, t in enumerate(tensors):
        if isinstance(t, GradientEdge):
            edges.append(_edge(t))
            continue
        edge = gradient_edge(t) if t.requires_grad else None
        if edge is None:  # (a view made in no_grad mode requires grad and has no edge)
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")
        edges.append(edge)
    return edges


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, grad_variables: Any = None, inputs: Any = None
             ) -> None:
    if grad_variables is not None:
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.",
                      FutureWarning, stacklevel=2)
        if grad_tensors is not None:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both "
                               "passed to `backward()`. Please only use `grad_tensors`.")
        grad_tensors = grad_variables
    inputs_t = _inputs_seq(inputs, "backward")
    if inputs is not None and not inputs_t:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    outs = _tensor_seq(tensors)
    grads_list = _make_grads(outs, _grads_seq(grad_tensors, len(outs)))
    if retain_graph is None:
        retain_graph = create_graph
    roots = _root_edges(outs, grads_list)
    if not roots:
        return  # PyTorch's engine runs nothing for no tensors
    out_edges = None
    if inputs_t:
        out_edges = []
        from .graph import GradientEdge

        for t in inputs_t:
            _check_input(t)
            if isinstance(t, GradientEdge):  # its node runs (a leaf's accumulates)
                out_edges.append(_edge(t))
                continue
            if not t.requires_grad:
                # PyTorch makes each input retain its grad first, and that check speaks
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            if t.grad_fn is not None and not t.retains_grad:
                t.retain_grad()  # a non-leaf in inputs= gets its .grad, as in PyTorch
            out_edges.append(input_edge(t))
    if create_graph:
        _warn_create_graph_once()
    get_default_engine().execute(roots, grads_list, retain_graph, create_graph,
                                 accumulate_grad=True, outputs=out_edges)


_create_graph_warned = False


def _warn_create_graph_once() -> None:
    """PyTorch's engine warns once a process (TORCH_WARN_ONCE) when backward() builds a graph
    of the gradients it accumulates into .grad; every time under torch.set_warn_always(True),
    as TORCH_WARN_ONCE does."""
    from ..ops.settings import is_warn_always_enabled

    global _create_graph_warned
    if not _create_graph_warned or is_warn_always_enabled():
        _create_graph_warned = True
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between the "
            "parameter and its gradient which can cause a memory leak. We recommend using "
            "autograd.grad when creating the graph to avoid this. If you have to use this "
            "function, make sure to reset the .grad fields of your parameters to None after use "
            "to break the cycle and avoid the leak.", UserWarning, stacklevel=3)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False
         ) -> Any:
    """PyTorch's autograd.grad: a tuple of gradients, one per input (a dict keyed as
    ``inputs`` when that is a dict)."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outs = _tensor_seq(outputs)
    ins = _inputs_seq(inputs, "grad")
    if not ins:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). "
                      "To accumulate gradient for other parts of the graph, please use "
                      "torch.autograd.backward.", FutureWarning, stacklevel=2)
    grads_list = _make_grads(outs, _grads_seq(grad_outputs, len(outs)), is_grads_batched)
    if retain_graph is None:
        retain_graph = create_graph
    from .graph import GradientEdge

    for t in ins:
        _check_input(t)
        if not isinstance(t, GradientEdge) and not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    if is_grads_batched:
        result = _batched_grad(outs, ins, grads_list, retain_graph, create_graph)
    else:
        result = _run_grad(outs, ins, grads_list, retain_graph, create_graph)
    final: list[Tensor | None] = []
    for i, (t, g) in enumerate(zip(ins, result)):
        if g is None:
            if materialize_grads and isinstance(t, GradientEdge):
                raise RuntimeError("materialize_grads cannot be used when the given input is a "
                                   "GradientEdge")
            if materialize_grads:
                from ..creation import zeros_like

                g = zeros_like(t, requires_grad=create_graph)
            elif not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in "
                    "the graph. Set allow_unused=True if this is the desired behavior.")
        final.append(g)
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), final))
    return tuple(final)


def _run_grad(outs: Sequence[Tensor], ins: Sequence[Tensor], grads: list[Any],
              retain_graph: bool, create_graph: bool) -> list[Any]:
    roots = _root_edges(outs, grads)
    out_edges = [_edge(t) for t in ins]
    return get_default_engine().execute(roots, grads, retain_graph, create_graph,
                                        accumulate_grad=False, outputs=out_edges)


def _batched_grad(outs: Sequence[Tensor], ins: Sequence[Tensor], grads: list[Any],
                  retain_graph: bool, create_graph: bool) -> list[Any]:
    """is_grads_batched: one backward per slice of the grad_outputs' first dimension, stacked
    (PyTorch vmaps the backward; the values are the same). The graph is kept for all but the
    last slice."""
    from ..ops.functional import stack
    from ..tensor import Tensor

    batch = next((g.shape[0] for g in grads if isinstance(g, Tensor)), 1)
    rows = [_run_grad(outs, ins, [g[b] if isinstance(g, Tensor) else g for g in grads],
                      retain_graph or b < batch - 1, create_graph) for b in range(batch)]
    return [None if col[0] is None else stack(list(col)) for col in zip(*rows)]
