"""A learning rate that reaches 0 (PolynomialLR's last step, a cosine schedule with
eta_min=0) replays the plan: no update branches on lr == 0, so only its type is guarded
(a zero momentum or weight decay still captures again: the updates branch on those)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

nn = rt.nn


def _train(compiled: bool, schedule: str, opt_name: str) -> tuple[list[float], Any, Any]:
    rt.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = getattr(rt.optim, opt_name)(model.parameters(), lr=0.1)
    sched = {"polynomial": lambda: rt.optim.lr_scheduler.PolynomialLR(opt, total_iters=3),
             "cosine": lambda: rt.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2)}[schedule]()

    def step(x: Any) -> Any:
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        sched.step()
        return loss

    fn = planner.compile(step) if compiled else step
    rng = np.random.default_rng(0)
    losses, lrs = [], []
    for _ in range(6):
        losses.append(float(fn(rt.tensor(rng.standard_normal((3, 4)).astype(np.float32)))))
        lrs.append(opt.param_groups[0]["lr"])
    return losses, lrs, fn


@pytest.mark.parametrize("schedule", ["polynomial", "cosine"])
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_a_schedule_reaching_zero_replays(schedule: str, opt_name: str) -> None:
    want, want_lrs, _ = _train(False, schedule, opt_name)
    got, got_lrs, step = _train(True, schedule, opt_name)
    assert 0.0 in want_lrs and got_lrs == want_lrs
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert step.captures == 1
