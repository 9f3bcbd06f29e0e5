"""`torch.nn.utils.stateless.functional_call` (deprecated there for
``torch.func.functional_call``, the same function): a module called with some of its
parameters and buffers replaced, for that call only, by the given tensors (gradients flow to
them), tied weights replaced together."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

from runtime.nn.module import Module
from runtime.tensor import Tensor

__all__ = ["functional_call"]

_MISSING = object()


def _untie(module: Module, given: dict[str, Tensor]) -> dict[str, Tensor]:
    """``given`` with each tensor also under the other names of the tensor it replaces
    (weights the module shares between submodules); two values for one tied tensor are
    refused, as PyTorch's."""
    names: dict[int, set[str]] = {}
    for name, tensor in [*module.named_parameters(remove_duplicate=False),
                         *module.named_buffers(remove_duplicate=False)]:
        names.setdefault(id(tensor), set()).add(name)
    tied = {name: group for group in names.values() if len(group) > 1 for name in group}
    given_tied = [name for name in given if name in tied]
    for name in given_tied:
        group = tied[name]
        if len(group.intersection(given_tied)) > 1 and \
                len({id(given[n]) for n in group if n in given}) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(group)}, "
                             "which are tied. Consider using tie_weights=False")
    untied = dict(given)
    for name in given_tied:
        for other in tied[name]:
            untied[other] = given[name]
    return untied


def _swap(module: Module, name: str, tensor: Any) -> Any:
    """Put ``tensor`` at the dotted ``name`` (_MISSING: take it away); what was there."""
    *path, attr = name.split(".")
    owner = module
    for part in path:
        owner = getattr(owner, part)
    if attr in owner._parameters:
        old, store = owner._parameters[attr], owner._parameters
    elif attr in owner._buffers:
        old, store = owner._buffers[attr], owner._buffers
    else:
        old, store = getattr(owner, attr, _MISSING), None
    if tensor is _MISSING:
        if store is not None:
            del store[attr]
        elif old is not _MISSING:
            delattr(owner, attr)
    elif store is not None:
        store[attr] = tensor  # a plain tensor too, as PyTorch's swap
    else:
        object.__setattr__(owner, attr, tensor)
    return old


@contextlib.contextmanager
def _reparametrize_module(module: Module, parameters_and_buffers: dict[str, Tensor],
                          tie_weights: bool = False, strict: bool = False) -> Iterator[None]:
    tensors = _untie(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        valid = {n for n, _ in [*module.named_parameters(remove_duplicate=False),
                                *module.named_buffers(remove_duplicate=False)]}
        missing, unexpected = sorted(valid - set(tensors)), sorted(set(tensors) - valid)
        errors = []
        if unexpected:
            errors.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            errors.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if errors:
            raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t"
                               + "\n\t".join(errors))
    originals: dict[str, Any] = {}
    try:
        for name, tensor in tensors.items():
            originals[name] = _swap(module, name, tensor)
        yield
    finally:
        for name, old in reversed(originals.items()):
            _swap(module, name, old)


def _functional_call(module: Module, parameters_and_buffers: dict[str, Tensor],
                     args: Any = None, kwargs: dict[str, Any] | None = None, *,
                     tie_weights: bool = True, strict: bool = False) -> Any:
    from runtime.nn.parallel import DataParallel

    if isinstance(module, DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    kwargs = {} if kwargs is None else kwargs
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights,
                               strict=strict):
        return module(*args, **kwargs)


def functional_call(module: Module, parameters_and_buffers: dict[str, Tensor],
                    args: Any = None, kwargs: dict[str, Any] | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with ``parameters_and_buffers`` (dotted names) in place
    of its own for this call; PyTorch's deprecation warning."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)
