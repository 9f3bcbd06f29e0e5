"""``use_deterministic_algorithms``, PyTorch's switch for bit-reproducible runs.

Every eager op of the runtime gives the same bits from one run to the next already (numpy's
kernels, and split kernels that combine their chunks in an order fixed by the kernel, never by
the thread count). The one thing the switch changes is compiling: while it is on, a compiled
step builds its kernels in the call that plans it, never in the background (planner.background,
whose switch from the unfused plan to the fused one happens at whichever call finds the kernels
built), so every call runs the same code from one run to the next.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

_state = {"mode": False, "warn_only": False, "fill_uninitialized_memory": True}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Whether runs must give the same bits every time (PyTorch's signature and type checks;
    ``warn_only``: the ops PyTorch alerts for on the CPU warn instead of raising)."""
    if type(mode) is not bool:
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be "
                        f"bool, not {type(mode).__name__}")
    if type(warn_only) is not bool:
        raise TypeError(f"_set_deterministic_algorithms(): argument 'warn_only' must be bool, "
                        f"not {type(warn_only).__name__}")
    _state["mode"], _state["warn_only"] = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    return _state["mode"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _state["warn_only"]


def alert_not_deterministic(caller: str) -> None:
    """PyTorch's alert for an op it has no deterministic CPU kernel for (``put_`` without
    accumulate: which of several writes to one place wins is unspecified), while
    deterministic algorithms are on: its RuntimeError, or its warning with ``warn_only``."""
    if not _state["mode"]:
        return
    message = (f"{caller} does not have a deterministic implementation, but you set "
               "'torch.use_deterministic_algorithms(True)'. You can turn off determinism just "
               "for this operation, or you can use the 'warn_only=True' option, if that's "
               "acceptable for your application. You can also file an issue at "
               "https://github.com/pytorch/pytorch/issues to help us prioritize adding "
               "deterministic support for this operation.")
    if _state["warn_only"]:
        warnings.warn(message, UserWarning, stacklevel=3)
        return
    raise RuntimeError(message)


def uninitialized_fill(np_dtype: Any) -> Any:
    """What PyTorch writes into new uninitialized memory (empty, resize_) while deterministic
    algorithms and ``torch.utils.deterministic.fill_uninitialized_memory`` are on: NaN in a
    float dtype, the largest value in an integer one, True in bool; else None (left as is)."""
    if not (_state["mode"] and _state["fill_uninitialized_memory"]):
        return None
    dt = np.dtype(np_dtype)
    if dt.kind == "b":
        return True
    if dt.kind in "iu":
        return np.iinfo(dt).max
    return np.nan
