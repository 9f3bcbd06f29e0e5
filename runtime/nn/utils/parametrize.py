"""`torch.nn.utils.parametrize`: a tensor of a module (``weight``) computed, on every read,
by a chain of modules from the tensors it was registered with (``parametrizations.weight.
original``, or ``original0``, ``original1``, ... when ``right_inverse`` returns several).

As PyTorch, registering swaps the module's class for a subclass (``ParametrizedLinear``)
that reads the tensor through a property, and keeps the chains in ``module.parametrizations``
(a ``ModuleDict``), so the state dict names and the repr are PyTorch's."""

from __future__ import annotations

import contextlib
import copy
import copyreg
from collections.abc import Iterator, Sequence
from typing import Any

from runtime.autograd import no_grad
from runtime.nn.container import ModuleDict, ModuleList
from runtime.nn.module import Module
from runtime.nn.parameter import Parameter
from runtime.tensor import Tensor

_cache_enabled = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Within it, each parametrized tensor is computed once, on its first read."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module: Module, name: str, x: Tensor) -> None:
    if isinstance(x, Parameter):
        module.register_parameter(name, x)
    else:
        module.register_buffer(name, x)


def _set_data(dest: Tensor, value: Tensor) -> None:
    """PyTorch's ``dest.set_(value)``: the same tensor object (an optimizer's parameter
    stays it) now holds ``value``."""
    with no_grad():
        dest.data = value.detach()


_NOT_TENSOR = "A parametrization must return a tensor. Got {}."


def _check_result(z: Any, dtype: Any, shape: Any, lead: str, labels: tuple[str, str],
                  not_tensor: str = _NOT_TENSOR) -> None:
    """A parametrization (or right_inverse) may not change the tensor's type, dtype or shape
    unless registered with ``unsafe=True``: ``lead`` (formatted with "dtype" or "shape"),
    ``labels`` (before the expected and the actual value) and ``not_tensor`` (formatted with
    the type's name) are PyTorch's texts."""
    if not isinstance(z, Tensor):
        raise ValueError(not_tensor.format(type(z).__name__))
    for attr, want in (("dtype", dtype), ("shape", shape)):
        got = getattr(z, attr)
        if got != want:
            raise ValueError(f"{lead.format(attr)}\n{labels[0]}{attr}: {want}\n"
                             f"{labels[1]}{attr}: {got}")


_CHANGE = "Registering a parametrization may not change the {} of the tensor, unless {} flag is enabled."


class ParametrizationList(ModuleList):
    """The chain of parametrizations of one tensor, and the tensor(s) it starts from."""

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False
                 ) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        shape, dtype = original.shape, original.dtype
        with no_grad():
            new: Any = original
            for module in reversed(self):  # type: ignore[call-overload]
                # no right_inverse, or one that raises NotImplementedError: the identity
                if hasattr(module, "right_inverse"):
                    with contextlib.suppress(NotImplementedError):
                        new = module.right_inverse(new)
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change "
                                 f"the dtype.\noriginal.dtype: {original.dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            _set_data(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, tensor in enumerate(new):
                if not isinstance(tensor, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of the "
                                     f"sequence with type {type(tensor).__name__}.")
                if isinstance(original, Parameter):
                    tensor = Parameter(tensor.detach(), original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", tensor)
        if not self.unsafe:
            _check_result(self(), dtype, shape, _CHANGE.format("{}", "`unsafe`"),
                          ("unparametrized ", "parametrized "))

    def right_inverse(self, value: Tensor) -> None:
        """Assigning to the parametrized tensor: the originals become the right inverse of
        ``value`` through the chain."""
        with no_grad():
            for module in reversed(self):  # type: ignore[call-overload]
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                _set_data(self.original, value)
                return
            if len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of tensors of "
                                 f"length {self.ntensors}. Got a sequence of length "
                                 f"{len(value)}.")
            for i, tensor in enumerate(value):
                _set_data(getattr(self, f"original{i}"), tensor)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _deepcopy(self: Module, memo: dict[int, Any]) -> Module:
    """A parametrized module's deepcopy (pickling it is refused, as PyTorch's)."""
    if id(self) in memo:
        return memo[id(self)]  # type: ignore[no-any-return]
    replica = self.__new__(type(self))
    memo[id(self)] = replica
    replica.__dict__.update(copy.deepcopy(self.__dict__, memo))
    for slot in copyreg._slotnames(type(self)):  # type: ignore[attr-defined]
        if hasattr(self, slot):
            setattr(replica, slot, copy.deepcopy(getattr(self, slot), memo))
    return replica


def _getstate(self: Module) -> Any:
    raise RuntimeError("Serialization of parametrized modules is only supported through "
                       "state_dict(). See:\nhttps://pytorch.org/tutorials/beginner/"
                       "saving_loading_models.html#saving-loading-a-general-checkpoint-for-"
                       "inference-and-or-resuming-training")


def _inject_new_class(module: Module) -> None:
    cls = type(module)
    attrs: dict[str, Any] = {"__getstate__": _getstate}
    if not hasattr(cls, "__deepcopy__"):
        attrs["__deepcopy__"] = _deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), attrs)


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self: Module) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()  # type: ignore[no-any-return]
        key = (id(self), tensor_name)
        if key not in _cache:
            _cache[key] = parametrization()
        return _cache[key]

    def set_original(self: Module, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(type(module), tensor_name, property(get_parametrized, set_original))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """``module.<tensor_name>`` becomes ``parametrization(original)``; registering a second
    one on the same tensor chains it after the first."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            name = f"module.{tensor_name}."
            _check_result(x, y.dtype, y.shape, _CHANGE.format("{}", "the `unsafe`"),
                          (name, f"parametrization(module.{tensor_name})."))
            if hasattr(parametrization, "right_inverse"):
                z = parametrization.right_inverse(x)
                _check_result(z, y.dtype, y.shape,
                              "The tensor returned by parametrization.right_inverse must have "
                              f"the same {{}} as module.{tensor_name}, unless the `unsafe` flag "
                              "is enabled.", (name, "returned "),
                              "parametrization.right_inverse must return a tensor. Got: {}")
        chain = module.parametrizations[tensor_name]
        chain.append(parametrization)
        chain.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        chain = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = chain
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """The tensor back as a plain parameter (or buffer): its current parametrized value
    with ``leave_parametrized``, else its original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    chain = module.parametrizations[tensor_name]
    if chain.is_tensor:
        original = chain.original
        if leave_parametrized:
            _set_data(original, getattr(module, tensor_name))
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        t = getattr(module, tensor_name)  # with grad: whether any original requires it
        original = Parameter(t) if t.requires_grad else t
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before parametrizations swapped it."""
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """``from_module``'s parametrizations (of ``tensor_name``, or all) registered on
    ``to_module`` too, their original tensors shared (PyTorch's)."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for parametrization in from_module.parametrizations[name]:
            register_parametrization(to_module, name, parametrization)
        source, target = from_module.parametrizations[name], to_module.parametrizations[name]
        if hasattr(source, "original"):
            target.original = source.original
            continue
        num = 0
        while hasattr(source, f"original{num}"):
            setattr(target, f"original{num}", getattr(source, f"original{num}"))
            num += 1
    return to_module


__all__ = ["ParametrizationList", "cached", "is_parametrized", "register_parametrization",
           "remove_parametrizations", "transfer_parametrizations_and_params",
           "type_before_parametrizations"]
