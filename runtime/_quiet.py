"""numpy's floating-point warnings kept out of the runtime's results, as PyTorch gives none.

``rt.log(rt.tensor(0.))`` is -inf in PyTorch, silently; numpy's ``log`` of 0 says "divide by
zero encountered" (an exception under ``warnings.simplefilter("error")``, which pytest's
``-W error`` sets), and so do a division by zero, an overflowing exp, ``inf * 0`` and the
rest. The runtime's numpy calls run with every floating-point error ignored: numpy's error
state is a context variable, set to "ignore" around each call and put back after it, so the
caller's own numpy code keeps its state (0.3 us a call, where ``np.errstate`` costs 3 us;
numpy 1.x, which has no such variable, gets ``np.errstate``)."""

from __future__ import annotations

from typing import Any

import numpy as np

try:  # numpy 2: the error state is this context variable's value
    from numpy._core._ufunc_config import _extobj_contextvar as _STATE

    with np.errstate(all="ignore"):
        _IGNORE = _STATE.get()
except (ImportError, AttributeError):  # pragma: no cover - numpy 1.x
    _STATE = None


def enter() -> Any:
    """Ignore floating-point errors from here until ``leave(the value returned)``."""
    if _STATE is not None:
        return _STATE.set(_IGNORE)
    state = np.errstate(all="ignore")  # pragma: no cover - numpy 1.x
    state.__enter__()  # pragma: no cover
    return state  # pragma: no cover


def leave(token: Any) -> None:
    if _STATE is not None:
        _STATE.reset(token)
    else:  # pragma: no cover - numpy 1.x
        token.__exit__(None, None, None)
