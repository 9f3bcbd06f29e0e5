"""Updates of same-shaped parameters that share only scalars (a learning rate, a clipping
coefficient) are kernels of their own, one compiled function for all of them
(``planner.fusion._apart``), and still equal eager."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from codegen.llvm import distinct
from planner.steps import KernelStep


def _model(opt_name: str, clip: bool) -> tuple[Any, Any]:
    """Four width-8 norms in a row (eight width-8 parameters of one shape) and a head."""
    rt.manual_seed(0)
    model = rt.nn.Sequential(*(rt.nn.LayerNorm(8) for _ in range(4)), rt.nn.Linear(8, 3))
    params = list(model.parameters())
    opt = {"sgd": lambda: rt.optim.SGD(params, lr=0.1, momentum=0.9),
           "adam": lambda: rt.optim.Adam(params, lr=0.01),
           "adamw": lambda: rt.optim.AdamW(params, lr=0.01, weight_decay=0.1)}[opt_name]()
    x = rt.randn(5, 8)
    y = rt.randint(0, 3, (5,))

    def step() -> Any:
        opt.zero_grad()
        loss = rt.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if clip:
            rt.nn.utils.clip_grad_norm_(model.parameters(), 0.05)
        opt.step()
        return loss

    return model, step


def _width8_updates(step: Any) -> list[Any]:
    """The elementwise kernels of the update over width-8 vectors (the clipping's norms are
    reductions: one kernel of eight sums)."""
    return [s.kernel for s in step.plan.steps if isinstance(s, KernelStep)
            and s.phase == "update" and s.kernel.domain == (8,) and not s.kernel.n_reduce]


@pytest.mark.parametrize("opt_name", ["sgd", "adam", "adamw"])
@pytest.mark.parametrize("clip", [False, True])
def test_same_shaped_updates_are_one_function_and_equal_eager(opt_name: str,
                                                              clip: bool) -> None:
    model, fn = _model(opt_name, clip)
    eager_model, eager = _model(opt_name, clip)
    step = planner.compile(fn, backend="llvm")
    for _ in range(3):
        np.testing.assert_allclose(step().item(), eager().item(), rtol=1e-5)
    for p, q in zip(model.parameters(), eager_model.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    kernels = _width8_updates(step)
    # each of the eight parameters updated by a kernel of its own (none of 8 x the code: a
    # clipped Adam's moments' kernel writes 4 values, its clipped gradient among them)...
    assert len(kernels) >= 8, step.plan.listing()
    assert max(len(k.outputs) for k in kernels) <= 4, step.plan.listing()
    # ...the same few functions for all eight (a kernel the same as another but for its
    # name is that one's function)
    assert 2 * len(set(distinct(kernels).values())) <= len(kernels), step.plan.listing()
