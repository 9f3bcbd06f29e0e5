"""`runtime.nn.modules.utils`: PyTorch's helpers of that path (the n-tuple parsers modules'
arguments go through, and the prefix strip of a state dict saved from a wrapper such as
DistributedDataParallel)."""

from __future__ import annotations

import collections.abc
from collections.abc import Callable
from itertools import repeat
from typing import Any


def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple[Any, ...]]:
    def parse(x: Any) -> tuple[Any, ...]:
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def consume_prefix_in_state_dict_if_present(state_dict: dict[str, Any], prefix: str) -> None:
    """Strips ``prefix`` from the keys of ``state_dict`` that start with it, in place, and
    from the keys of its ``_metadata`` (whose ``prefix`` without dots names the wrapped
    module)."""
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is None:
        return
    for key in list(metadata.keys()):
        if len(key) == 0:
            continue  # the wrapper's own entry stays, unless the wrapped module's replaces it
        if key == prefix.replace(".", "") or key.startswith(prefix):
            metadata[key[len(prefix):]] = metadata.pop(key)
