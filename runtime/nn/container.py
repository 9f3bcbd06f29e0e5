"""Containers: `Sequential` chains modules in order; `ModuleList`, `ModuleDict` and
`ParameterList` hold modules or parameters so that they are registered."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, overload

from runtime.nn.module import Module, _addindent, _changed, typename
from runtime.nn.parameter import Parameter
from runtime.tensor import Tensor


class Container(Module):
    """PyTorch's deprecated Container: a Module holding the modules given by keyword."""

    def __init__(self, **kwargs: Any) -> None:
        import warnings

        warnings.warn("`nn.Container` is deprecated. All of its functionality is now "
                      "implemented in `nn.Module`. Subclass that instead.", FutureWarning,
                      stacklevel=2)
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)


class Sequential(Module):
    @overload
    def __init__(self, *args: Module) -> None: ...

    @overload
    def __init__(self, arg: OrderedDict[str, Module]) -> None: ...

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _index(self, idx: int) -> str:
        size = len(self)
        idx = operator.index(idx)  # PyTorch's TypeError for a str or float index
        if not -size <= idx < size:
            raise IndexError(f"index {idx} is out of range")
        return list(self._modules)[idx % size]

    @overload
    def __getitem__(self, idx: slice) -> Sequential: ...

    @overload
    def __getitem__(self, idx: int) -> Module: ...

    def __getitem__(self, idx: int | slice) -> Module:
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._modules[self._index(idx)]  # type: ignore[return-value]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, self._index(idx), module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)[idx] if isinstance(idx, slice) else [self._index(idx)]
        for key in keys:
            delattr(self, key)
        _renumber(self, list(self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())  # type: ignore[arg-type]

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        for module in sequential:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        items = list(self._modules.values())
        if not -len(items) <= index <= len(items):
            raise IndexError(f"Index out of range: {index}")
        items.insert(index, module)
        _renumber(self, items)
        return self

    def pop(self, key: int | slice) -> Module:
        module = self[key]
        del self[key]
        return module

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return Sequential(*self, *other)

    def __iadd__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return self.extend(list(other))

    def __mul__(self, other: int) -> Sequential:
        """PyTorch's: a new Sequential of this one's modules ``other`` times over (the same
        modules, shared)."""
        _check_factor(self, other)
        combined = Sequential()
        for _ in range(other):
            for module in self:
                combined.add_module(str(len(combined)), module)
        return combined

    def __rmul__(self, other: int) -> Sequential:
        return self.__mul__(other)

    def __imul__(self, other: int) -> Sequential:
        """PyTorch's: this Sequential's modules repeated in place, ``other`` times in all."""
        _check_factor(self, other)
        n = len(self)
        for offset in range(n, n * other, n):
            for i in range(n):
                self.add_module(str(i + offset), self._modules[str(i)])
        return self

    def __dir__(self) -> list[str]:
        return [key for key in super().__dir__() if not key.isdigit()]

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input


def _renumber(container: Module, items: list[Module | None]) -> None:
    """``container``'s children replaced by ``items``, keyed "0".."n-1" (as torch keeps a
    Sequential or ModuleList after a deletion or insertion)."""
    for key in list(container._modules):
        delattr(container, key)
    for i, module in enumerate(items):
        container.add_module(str(i), module)


def _check_factor(seq: Sequential, other: Any) -> None:
    """PyTorch's checks of a Sequential's repeat count (an int above 0)."""
    if not isinstance(other, int):
        raise TypeError(f"unsupported operand type(s) for *: {type(seq)} and {type(other)}")
    if other <= 0:
        raise ValueError(f"Non-positive multiplication factor {other} for {type(seq)}")


def _abs_index(idx: int, size: int) -> int:
    idx = operator.index(idx)  # PyTorch's TypeError for a str or float index
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range")
    return idx % size


def _check_module(module: Any) -> Module:
    if not isinstance(module, Module):
        raise TypeError(f"{typename(module)} is not a Module subclass")
    return module


class ModuleList(Module):
    """Modules held in a list: registered (their parameters are the list's), indexable."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])  # type: ignore[arg-type]
        return self._modules[str(_abs_index(idx, len(self)))]

    def __setitem__(self, idx: int, module: Module) -> None:
        # PyTorch's setattr: None empties the slot, another non-Module is its setattr error
        setattr(self, str(_abs_index(idx, len(self))), module)

    def __delitem__(self, idx: int | slice) -> None:
        items = list(self._modules.values())
        if isinstance(idx, slice):
            del items[idx]
        else:
            del items[_abs_index(idx, len(items))]
        _renumber(self, items)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())  # type: ignore[arg-type]

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __dir__(self) -> list[str]:
        return [key for key in super().__dir__() if not key.isdigit()]

    def __repr__(self) -> str:
        """PyTorch's: a run of equal entries is one line, ``(0-11): 12 x Block(...)``."""
        reprs = [repr(module) for module in self]
        if not reprs:
            return self._get_name() + "()"
        runs: list[list[Any]] = []  # [first index, last index, repr]
        for i, text in enumerate(reprs):
            if runs and runs[-1][2] == text:
                runs[-1][1] = i
            else:
                runs.append([i, i, text])
        lines = [_addindent(f"({a}): {text}" if a == b else f"({a}-{b}): {b - a + 1} x {text}", 2)
                 for a, b, text in runs]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return type(self)([*self, *other])

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), _check_module(module))
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        if isinstance(modules, (str, bytes)) or not isinstance(modules, Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got "
                            + type(modules).__name__)
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        """PyTorch's: the modules from ``index`` on moved up one key, then ``module`` set at
        key ``index`` as given (one past the end lands at that key; a negative index reaches
        a key "-1" that is not there: its KeyError, the modules moved)."""
        _changed()  # the structure a compiled step guards on
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def pop(self, key: int | slice) -> Module:
        module = self[key]
        del self[key]
        return module  # type: ignore[no-any-return]


class ModuleDict(Module):
    """Modules held by name, in insertion order; registered as children."""

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None
                 ) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]  # type: ignore[return-value]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, _check_module(module))

    def __delitem__(self, key: str) -> None:
        if key not in self._modules:
            raise KeyError(key)
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        for key in list(self._modules):
            delattr(self, key)

    def pop(self, key: str) -> Module:
        module = self[key]
        del self[key]
        return module

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()  # type: ignore[return-value]

    def values(self) -> Iterable[Module]:
        return self._modules.values()  # type: ignore[return-value]

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for key, module in _pairs(pairs, modules, "ModuleDict", "ModuleDict"):
            self[key] = module


class ParameterList(Module):
    """Parameters held in a list, registered as "0", "1", ...; a plain tensor appended becomes
    a Parameter (as torch's)."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)([self[i] for i in range(len(self))[idx]])
        return getattr(self, str(_abs_index(idx, len(self))))

    def __setitem__(self, idx: int, param: Any) -> None:
        setattr(self, str(_abs_index(idx, len(self))), _as_parameter(param))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterList should not be called.")

    def __dir__(self) -> list[str]:
        return [key for key in super().__dir__() if not key.isdigit()]

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))

    def __iadd__(self, values: Iterable[Any]) -> ParameterList:
        return self.extend(values)

    def append(self, value: Any) -> ParameterList:
        self._size += 1
        setattr(self, str(self._size - 1), _as_parameter(value))
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        if isinstance(values, (str, bytes, Tensor)) or not isinstance(values, Iterable):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return _parameter_lines(enumerate(self), lambda p: repr(p.dtype))


def _parameter_lines(items: Iterable[tuple[Any, Any]], kind_of: Callable[[Tensor], str]) -> str:
    """PyTorch's ParameterList/ParameterDict extra_repr: an indented line per entry, a
    tensor's described by ``kind_of`` (its dtype, or its type name), its size and a cuda
    device."""
    lines = []
    for key, p in items:
        if isinstance(p, Tensor):
            kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
            size = "x".join(str(s) for s in p.shape)
            device = f" ({p.device})" if p.device.type == "cuda" else ""
            lines.append(f"  ({key}): {kind} containing: [{kind_of(p)} of size {size}{device}]")
        else:
            lines.append(f"  ({key}): Object of type: {type(p).__name__}")
    return "\n".join(lines)


class ParameterDict(Module):
    """Parameters held by name, in insertion order; a plain tensor becomes a Parameter (as
    torch's)."""

    def __init__(self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None
                 ) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys:  # torch reads the attribute: its error
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{key}'")
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not a "
                            f"string (type is '{type(key).__name__}'). Open an issue on github "
                            "if you need non-string keys.")
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        if key not in self._keys:
            raise KeyError(key)
        del self._keys[key]
        delattr(self, key)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterDict should not be called.")

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._keys))

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def keys(self) -> Iterable[str]:
        return self._keys.keys()

    def items(self) -> Iterable[tuple[str, Any]]:
        return [(k, self[k]) for k in self._keys]

    def values(self) -> Iterable[Any]:
        return [self[k] for k in self._keys]

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self._keys else default

    def pop(self, key: str) -> Any:
        value = self[key]
        del self[key]
        return value

    def clear(self) -> None:
        for key in list(self._keys):
            del self[key]

    def popitem(self) -> tuple[str, Any]:
        """The last inserted entry, removed."""
        if not self._keys:
            raise KeyError("popitem(): dictionary is empty")
        key = next(reversed(self._keys))
        return key, self.pop(key)

    def setdefault(self, key: str, default: Any | None = None) -> Any:
        if key not in self._keys:
            self[key] = default
        return self[key]

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same parameters."""
        return ParameterDict(OrderedDict(self.items()))

    def fromkeys(self, keys: Iterable[str], default: Any | None = None) -> ParameterDict:
        return ParameterDict((k, default) for k in keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def __or__(self, other: ParameterDict) -> ParameterDict:
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        merged = other.copy()
        merged.update(self)
        return merged

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self

    def update(self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> None:
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs: Any = parameters.items()
        elif isinstance(parameters, Mapping):  # a plain dict: by key, as PyTorch orders it
            pairs = sorted(parameters.items())
        else:
            pairs = parameters
        # (PyTorch's TypeError for the whole argument names it "ParametersDict")
        for key, value in _pairs(pairs, parameters, "ParametersDict", "ParameterDict"):
            self[key] = value

    def extra_repr(self) -> str:
        return _parameter_lines(self.items(), typename)


def _pairs(pairs: Any, given: Any, name: str, element: str) -> Iterator[tuple[Any, Any]]:
    """The (key, value) pairs a container's ``update`` takes (``given`` as the caller passed
    it), with PyTorch's errors and texts: a TypeError for what is no iterable of pairs (naming
    ``name``) or for an element that is not iterable, a ValueError for one not of length 2
    (naming ``element``)."""
    if not isinstance(given, Iterable):  # a string is an iterable of pairs too (of length 1)
        raise TypeError(f"{name}.update should be called with an iterable of key/value pairs, "
                        f"but got {type(given).__name__}")
    for j, pair in enumerate(pairs):
        if not isinstance(pair, Iterable):
            raise TypeError(f"{element} update sequence element #{j} should be Iterable; is"
                            f"{type(pair).__name__}")
        pair = tuple(pair)
        if len(pair) != 2:
            raise ValueError(f"{element} update sequence element #{j} has length {len(pair)}; "
                             "2 is required")
        yield pair[0], pair[1]


def _as_parameter(value: Any) -> Any:
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value
