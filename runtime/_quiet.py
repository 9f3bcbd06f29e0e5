"""numpy's floating-point warnings kept out of the runtime's results, as PyTorch gives none.

``rt.log(rt.tensor(0.))`` is -inf in PyTorch, silently; numpy's ``log`` of 0 says "divide by
zero encountered" (an exception under ``warnings.simplefilter("error")``, which pytest's
``-W error`` sets), and so do a division by zero, an overflowing exp, ``inf * 0`` and the
rest. The runtime's numpy calls run with every floating-point error ignored: numpy's error
state is a context variable, set to "ignore" around each call and put back after it (the
caller reads ``current()``, then in a ``try`` calls ``ignore()``, and ``restore`` in its
``finally``), so the caller's own numpy code keeps its state (0.3 us a call, where
``np.errstate`` costs 3 us; numpy 1.x, which has no such variable, keeps its warnings)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

try:  # numpy 2: the error state is this context variable's value
    from numpy._core._ufunc_config import _extobj_contextvar as _STATE

    with np.errstate(all="ignore"):
        _IGNORE = _STATE.get()
except (ImportError, AttributeError):  # pragma: no cover - numpy 1.x
    _STATE = None


if _STATE is not None:
    # builtin methods: Python handles a pending signal (a KeyboardInterrupt) after a builtin
    # returns, never inside it, so a ``finally`` that calls ``restore`` puts the state back
    # wherever an interrupt lands (a Python function's bytecodes could be cut short)
    current = _STATE.get  # the state now: read it before the ``try``
    ignore = functools.partial(_STATE.set, _IGNORE)  # inside the ``try``
    restore = _STATE.set  # in the ``finally``, with what ``current`` gave
else:  # pragma: no cover - numpy 1.x
    def current() -> Any:
        return None

    def ignore() -> None:
        return None

    def restore(state: Any) -> None:
        return None
