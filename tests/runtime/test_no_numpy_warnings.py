"""No numpy floating-point warning comes out of the runtime (runtime._quiet): PyTorch computes
log(0) = -inf, 1/0, an overflowing exp, inf * 0 and inf - inf silently, and so does the runtime
now, eagerly and compiled, under ``warnings.simplefilter("error")`` (pytest's ``-W error``)
too; the caller's own numpy code keeps its error state."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

OPS: dict[str, Callable[[], Any]] = {
    "log of 0": lambda: rt.log(rt.tensor(0.0)),
    "divide by 0": lambda: rt.tensor(1.0) / 0,
    "exp overflow": lambda: rt.exp(rt.tensor(1000.0)),
    "inf times 0 in place": lambda: rt.tensor([1.0, float("inf")]).mul_(0.0),
    "inf minus inf": lambda: rt.tensor([float("inf")]) - rt.tensor([float("inf")]),
    "sqrt of -1": lambda: rt.sqrt(rt.tensor(-1.0)),
    "0 / 0 in place": lambda: rt.tensor([0.0]).div_(0.0),
    "softmax of -inf": lambda: rt.nn.functional.softmax(rt.tensor([float("-inf")] * 3), 0),
    "backward of log at 0": lambda: rt.tensor([0.0], requires_grad=True).log().sum().backward(),
    "float64 pow overflow": lambda: rt.tensor(10.0, dtype=rt.float64) ** 400,
}


@pytest.mark.parametrize("name", OPS)
def test_eager_ops_give_no_numpy_warning(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        OPS[name]()
        with pytest.raises(RuntimeWarning, match="divide by zero"):
            np.log(np.zeros(1))  # the caller's numpy still warns


@pytest.mark.parametrize(("backend", "workers"), [("interpreter", 1), ("llvm", 1),
                                                  ("interpreter", 2)])
def test_compiled_steps_give_no_numpy_warning(backend: str, workers: int) -> None:
    x = rt.tensor([0.0, 1.0], requires_grad=True)

    @planner.compile(backend=backend, workers=workers)
    def step(x: Any) -> Any:
        x.grad = None
        y = (x.log() * 2 + rt.exp(x * 1000)).sum()
        y.backward()
        return y

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            assert np.isnan(step(x).item())
            assert x.grad.tolist() == [float("inf"), float("inf")]
