"""rt.autograd.graph: hooks on the tensors saved for backward (PyTorch's saved_tensors_hooks,
save_on_cpu, disable_saved_tensors_hooks), a hook on the gradients of several tensors
(register_multi_grad_hook), and the graph's Node class."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

from .node import Node, RemovableHandle, gradient_edge, saved_tensors_hooks_state

__all__ = ["GradientEdge", "Node", "allow_mutation_on_saved_tensors",
           "disable_saved_tensors_hooks", "get_gradient_edge",
           "increment_version", "register_multi_grad_hook", "save_on_cpu",
           "saved_tensors_hooks"]


class GradientEdge(NamedTuple):
    """Where a gradient flows into the graph: a node and which of its inputs (PyTorch's
    ``torch.autograd.graph.GradientEdge``). ``autograd.grad`` takes one in place of a tensor,
    as an input (the gradient flowing into that edge) or an output (with its grad_output)."""

    node: Node
    output_nr: int
    ownership_token: Any = None


def get_gradient_edge(tensor: Any) -> GradientEdge:
    """The edge a gradient of ``tensor`` flows into: its grad_fn's (and output number), or
    its AccumulateGrad node for a leaf. It names the node, not the tensor: a later in-place
    change of the tensor does not move it."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    edge = gradient_edge(tensor)
    if edge is None:  # a view made in no_grad mode (PyTorch's assertion)
        raise AssertionError("Expected gradient function to be set")
    return GradientEdge(*edge)


class saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Inside, each tensor an op saves for backward is kept as ``pack_hook(tensor)``, and
    ``unpack_hook(packed)`` gives it back when the backward needs it (the innermost pair
    applies; the hooks stay with the tensors saved under them)."""

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]
                 ) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        state = saved_tensors_hooks_state
        if state.disabled is not None:
            raise RuntimeError(state.disabled)
        state.stack.append((self.pack_hook, self.unpack_hook))

    def __exit__(self, *exc: object) -> None:
        saved_tensors_hooks_state.stack.pop()


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - PyTorch's name
    """Saved tensors go to host memory and back to their device for the backward. Host
    copies are ordinary arrays: ``pin_memory`` is accepted and changes nothing here."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor: Any) -> tuple[Any, Any]:
            return tensor.device, tensor.cpu()

        def unpack_from_cpu(packed: tuple[Any, Any]) -> Any:
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


class _AllowMutationOnSavedContext:
    """The state of one allow_mutation_on_saved_tensors block: the copies it saved."""

    def __init__(self) -> None:
        self.saved: dict[int, Any] = {}

    def clear(self) -> None:
        self.saved.clear()


_allow_mutation_enabled = False


@contextmanager
def allow_mutation_on_saved_tensors() -> Iterator[_AllowMutationOnSavedContext]:
    """PyTorch's: inside, a tensor saved for backward may be written in place afterwards, the
    backward seeing the value it had when saved. PyTorch clones a saved tensor when it is
    first mutated; here each is copied when saved (the same gradients, more memory). The
    backward must run inside the same block (PyTorch's AssertionError outside it)."""
    global _allow_mutation_enabled
    ctx = _AllowMutationOnSavedContext()
    outside = ("Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
               "in which the graph was originally recorded.")

    def pack(tensor: Any) -> int:
        key = len(ctx.saved)
        ctx.saved[key] = tensor.detach().clone()
        return key

    def unpack(key: int) -> Any:
        if not _allow_mutation_enabled or key not in ctx.saved:
            raise AssertionError(outside)
        return ctx.saved[key]

    with saved_tensors_hooks(pack, unpack):
        try:
            if _allow_mutation_enabled:
                raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
            _allow_mutation_enabled = True
            yield ctx
        finally:
            ctx.clear()
            _allow_mutation_enabled = False


@contextmanager
def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
    """Inside, saved_tensors_hooks raise RuntimeError(error_message); so does entering this
    while hooks are set."""
    state = saved_tensors_hooks_state
    if state.stack:
        raise RuntimeError(error_message)
    prev = state.disabled
    state.disabled = error_message
    try:
        yield
    finally:
        state.disabled = prev


def increment_version(tensor: Any | Iterable[Any]) -> None:
    """Bump the version counter of a tensor (or of each of several), as an in-place write
    would: a saved copy of it then refuses to be used in backward."""
    from ..tensor import Tensor

    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        t._vc.v += 1


class _MultiHandle(RemovableHandle):
    """The handles of the tensor hooks ``register_multi_grad_hook`` placed, removed as one."""

    def __init__(self, handles: tuple[RemovableHandle, ...]) -> None:
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def _grad_fn_or_grad_acc(t: Any) -> Node:
    from .node import gradient_edge

    edge = gradient_edge(t)
    if edge is None:  # a view made in no_grad mode (PyTorch's assertion)
        raise AssertionError("Expected gradient function to be set")
    return edge.function


def register_multi_grad_hook(tensors: Sequence[Any], fn: Callable[..., None], *,
                             mode: str = "all") -> RemovableHandle:
    """A hook on the gradients of several tensors, as PyTorch's: with ``mode="all"``,
    ``fn(grads)`` once per backward, after every tensor of ``tensors`` that backward reaches
    has its gradient (``grads`` in their order, None for one it does not reach); with
    ``mode="any"``, ``fn(grad)`` with the first of them computed, once per backward."""
    from .engine import current_graph_task_id, will_engine_execute_node

    supported_modes = ("all", "any")
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    lock = threading.Lock()

    def task_id() -> int:
        task = current_graph_task_id()
        if task == -1:
            raise AssertionError("expected this hook to be called inside a backward call")
        return task

    if mode == "any":
        ran: set[int] = set()

        def first_grad(grad: Any) -> None:
            task = task_id()
            with lock:
                if task in ran:
                    return
                ran.add(task)
            fn(grad)

        return _MultiHandle(tuple(t.register_hook(first_grad) for t in tensors
                                  if t.requires_grad))

    grad_fns = [_grad_fn_or_grad_acc(t) for t in tensors]
    count: dict[int, int] = {}
    expected: dict[int, int] = {}
    buffer: dict[int, list[Any]] = {}

    def inner_hook(idx: int) -> Callable[[Any], None]:
        def hook(grad: Any) -> None:
            task = task_id()
            with lock:
                if task not in count:  # this backward's first: how many will come
                    count[task] = 0
                    expected[task] = sum(map(will_engine_execute_node, grad_fns))
                    buffer[task] = [None] * len(tensors)
                count[task] += 1
                buffer[task][idx] = grad
                done = count[task] == expected[task]
                grads = buffer.pop(task) if done else None
                if done:
                    del count[task], expected[task]
            if grads is not None:
                fn(grads)
        return hook

    return _MultiHandle(tuple(t.register_hook(inner_hook(i)) for i, t in enumerate(tensors)))
