"""``LazyModuleMixin``: a module whose parameters take their shapes from its first input
(PyTorch's ``torch.nn.modules.lazy``).

A lazy module holds UninitializedParameters (and UninitializedBuffers) until its first call,
when a forward pre-hook runs its ``initialize_parameters(*input)``: they are materialized in
place (an optimizer made before holds them), initialized, and the module becomes its
``cls_to_become`` (LazyLinear a Linear). Loading a state dict into a lazy module
materializes its parameters with the loaded shapes. A compiled step whose first call would
initialize a lazy module runs eagerly (PyTorch, too, asks for a dry run before anything
else holds the parameters).
"""

from __future__ import annotations

import itertools
from typing import Any

from runtime.autograd import no_grad
from runtime.nn.module import Module
from runtime.nn.parameter import is_lazy
from runtime.tracing import WarmUpNeeded, is_tracing


class LazyModuleMixin:
    cls_to_become: type[Module] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(  # type: ignore[attr-defined]
            self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(  # type: ignore[attr-defined]
            self._infer_parameters, with_kwargs=True)

    def _tensors(self) -> itertools.chain[tuple[str, Any]]:
        return itertools.chain(self._parameters.items(),  # type: ignore[attr-defined]
                               self._buffers.items())  # type: ignore[attr-defined]

    def _save_to_state_dict(self, destination: dict[str, Any], prefix: str,
                            keep_vars: bool) -> None:
        """As Module's, but an uninitialized tensor is saved as it is (detach would make it
        an empty tensor), so that loading the dict keeps a lazy module lazy."""
        for name, value in self._local_state().items():  # type: ignore[attr-defined]
            keep = keep_vars or is_lazy(value)
            destination[prefix + name] = value if keep else value.detach()

    def _lazy_load_hook(self, state_dict: dict[str, Any], prefix: str, *args: Any) -> None:
        for name, value in self._tensors():
            loaded = state_dict.get(prefix + name)
            if loaded is not None and is_lazy(value) and not is_lazy(loaded):
                with no_grad():
                    value.materialize(loaded.shape)

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {type(self).__name__}")

    def has_uninitialized_params(self) -> bool:
        return any(is_lazy(value) for _, value in self._tensors())

    def _infer_parameters(self, module: Any, args: tuple[Any, ...],
                          kwargs: dict[str, Any] | None = None) -> None:
        if is_tracing():  # a capture would materialize the parameters with traced values
            raise WarmUpNeeded(f"{module._get_name()} (a lazy module) has not had an input yet")
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        del module._initialize_hook, module._load_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become
