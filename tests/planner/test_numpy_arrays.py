"""A captured step's tensors of numpy arrays (rt.tensor, rt.as_tensor, rt.from_numpy): the
arrays as they are at each call, as eager mode reads them."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt


BUFFER = np.zeros(4, np.float32)


@pytest.mark.parametrize("make", ["tensor", "as_tensor", "from_numpy"])
def test_a_numpy_buffer_refilled_between_calls_is_read_at_each_call(make: str) -> None:
    """``rt.tensor(BUFFER)`` of a numpy array the caller refills in place between calls (or
    passes again): each replay reads it as it is then, as eager mode copies it then; the plan
    kept the copy the capture made, and returned the first call's numbers silently."""
    w = rt.ones(4, requires_grad=True)
    convert = getattr(rt, make)

    def step(a: Any) -> Any:
        return (w * convert(BUFFER)).sum() + (w * convert(a)).sum()

    compiled = planner.compile(step)
    arg = np.zeros(4, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for i in range(5):
            BUFFER[:] = i
            arg[:] = 10 * i
            assert float(compiled(arg)) == float(step(arg)) == 44.0 * i
    assert compiled.captures == 1
