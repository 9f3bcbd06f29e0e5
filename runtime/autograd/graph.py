"""rt.autograd.graph: hooks on the tensors saved for backward (PyTorch's saved_tensors_hooks,
save_on_cpu, disable_saved_tensors_hooks), and the graph's Node class."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from .node import Node, saved_tensors_hooks_state

__all__ = ["Node", "disable_saved_tensors_hooks", "increment_version", "save_on_cpu",
           "saved_tensors_hooks"]


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
