"""``use_deterministic_algorithms``, PyTorch's switch for bit-reproducible runs.

Every eager op of the runtime gives the same bits from one run to the next already (numpy's
kernels, and split kernels that combine their chunks in an order fixed by the kernel, never by
the thread count). The one thing the switch changes is compiling: while it is on, a compiled
step builds its kernels in the call that plans it, never in the background (planner.background,
whose switch from the unfused plan to the fused one happens at whichever call finds the kernels
built), so every call runs the same code from one run to the next.
"""

from __future__ import annotations

_state = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Whether runs must give the same bits every time (PyTorch's signature and type checks;
    ``warn_only`` is kept and reported as PyTorch keeps it: no op here has a
    nondeterministic version to warn about)."""
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
