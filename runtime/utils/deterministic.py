"""``torch.utils.deterministic``: ``fill_uninitialized_memory``, whether new uninitialized
memory (empty, resize_) is filled with NaN / the dtype's largest value while deterministic
algorithms are on (PyTorch's default: True)."""

from __future__ import annotations

import sys
import types

from .._determinism import _state


class _Deterministic(types.ModuleType):
    @property
    def fill_uninitialized_memory(self) -> bool:
        return bool(_state["fill_uninitialized_memory"])

    @fill_uninitialized_memory.setter
    def fill_uninitialized_memory(self, mode: bool) -> None:
        if type(mode) is not bool:
            raise RuntimeError(f"expected a bool, but got {type(mode).__name__}")
        _state["fill_uninitialized_memory"] = mode


sys.modules[__name__].__class__ = _Deterministic
