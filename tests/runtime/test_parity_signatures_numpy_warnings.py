"""The runtime's reductions are silent where PyTorch's are (the mean of nothing, inf + -inf),
without silencing the user's own numpy: a warnings filter on numpy's modules hid every
``np.mean([])`` and ``np.sum`` warning in the process once runtime was imported."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np

import runtime as rt


def _run_ops() -> None:
    rt.mean(rt.empty(0))
    rt.mean(rt.empty(0, 3), 0)
    rt.sum(rt.tensor([np.inf, -np.inf]))
    rt.sum(rt.tensor([np.inf, -np.inf], dtype=rt.float16))
    rt.cumsum(rt.tensor([np.inf, -np.inf]), 0)
    rt.cumprod(rt.tensor([np.inf, 0.0]), 0)
    rt.mean(rt.tensor([np.inf, -np.inf]))


def test_reductions_are_silent_as_pytorchs() -> None:
    with warnings.catch_warnings(record=True) as caught:
        _run_ops()
    assert [str(w.message) for w in caught] == []
    assert np.isnan(rt.mean(rt.empty(0)).item())


def test_the_users_numpy_still_warns_after_runtime_ran() -> None:
    _run_ops()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        np.mean([])
        np.sum(np.array([np.inf, -np.inf]))
        np.cumsum(np.array([np.inf, -np.inf]))
    assert {str(w.message) for w in caught} == {
        "Mean of empty slice", "invalid value encountered in scalar divide",
        "invalid value encountered in reduce", "invalid value encountered in accumulate"}


def test_the_users_numpy_warns_under_default_filters() -> None:
    """In a fresh interpreter with Python's default filters (not pytest's), as a script
    sees them: the runtime adds no filter that hides them."""
    code = ("import warnings, numpy as np, runtime as rt\n"
            "rt.mean(rt.empty(0)); rt.sum(rt.tensor([float('inf'), -float('inf')]))\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    np.mean([]); np.sum(np.array([np.inf, -np.inf]))\n"
            "print(sorted({str(x.message) for x in w}))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == ("['Mean of empty slice', 'invalid value encountered in "
                                   "reduce', 'invalid value encountered in scalar divide']")
