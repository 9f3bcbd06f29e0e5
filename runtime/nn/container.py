"""`Sequential`: chains modules in order."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Any, overload

from runtime.nn.module import Module


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
        # keep the numbering contiguous, like torch
        items = list(self._modules.values())
        self._modules.clear()
        for i, module in enumerate(items):
            self._modules[str(i)] = module

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())  # type: ignore[arg-type]

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input
