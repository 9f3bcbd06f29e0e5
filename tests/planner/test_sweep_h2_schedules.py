"""lr schedulers stepped inside a compiled step (issue 11 sweep, h2): a scheduler stepped to
an epoch given as the step's float argument, and a nested SequentialLR; each call equals
eager."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

import planner
import runtime as rt

S = rt.optim.lr_scheduler


def _build(kind: str) -> tuple[Any, Any, Any]:
    rt.manual_seed(0)
    model = rt.nn.Linear(6, 2)
    opt = rt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    if kind == "warm_restarts":
        sched = S.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=0.01)
    else:
        inner = S.SequentialLR(opt, [S.ConstantLR(opt, 0.5, 2), S.ExponentialLR(opt, 0.8)], [2])
        sched = S.SequentialLR(opt, [inner, S.StepLR(opt, 2, 0.5)], milestones=[4])

    def step(x: Any, epoch: float) -> Any:
        opt.zero_grad()
        loss = (model(x) ** 2).mean()
        loss.backward()
        opt.step()
        if kind == "warm_restarts":
            sched.step(epoch)
        else:
            sched.step()
        return loss

    return model, opt, step


def test_scheduler_stepped_to_an_epoch_argument_equals_eager() -> None:
    """CosineAnnealingWarmRestarts.step(epoch), the epoch a float argument of the compiled
    step (a fraction: a step per batch): the second value made the argument an input of the
    plan, a tensor at capture, which the deferred scheduler step then compared in Python at
    replay (a GraphBreak raised out of the call). Now the step is captured with the value
    as a constant, and each call's lr and loss equal eager's."""
    x = rt.from_numpy(np.random.default_rng(0).standard_normal((8, 6)).astype(np.float32))
    for kind in ("warm_restarts", "nested"):
        model, opt, fn = _build(kind)
        ref, ref_opt, ref_fn = _build(kind)
        step = planner.compile(fn)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            warnings.filterwarnings("ignore", "The epoch parameter")  # torch's deprecation
            warnings.filterwarnings("ignore", "Detected call of `lr_scheduler.step")
            for i in range(7):
                got, want = float(step(x, i * 0.7)), float(ref_fn(x, i * 0.7))
                np.testing.assert_allclose(got, want, rtol=1e-5)
                assert opt.param_groups[0]["lr"] == ref_opt.param_groups[0]["lr"]
        for p, q in zip(model.parameters(), ref.parameters(), strict=True):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                       atol=1e-7)


def test_schedule_of_a_tensor_lr_compiles_once() -> None:
    """Adam with a tensor lr and StepLR / OneCycleLR stepped between compiled calls: the
    scheduler fills the lr tensor the plan reads (it replaced it, a new guard each call: six
    captures for six calls), and each call equals eager."""
    x = rt.ones(3, 4)
    for make in (lambda o: S.StepLR(o, 1, 0.5), lambda o: S.OneCycleLR(o, 0.1, total_steps=10)):
        def build() -> tuple[Any, Any, Any, Any]:
            rt.manual_seed(0)
            model = rt.nn.Linear(4, 2)
            opt = rt.optim.Adam(model.parameters(), lr=rt.tensor(0.01))
            sched = make(opt)

            def step(x: Any) -> Any:
                opt.zero_grad()
                loss = (model(x) ** 2).mean()
                loss.backward()
                opt.step()
                return loss

            return model, opt, sched, step

        model, opt, sched, fn = build()
        ref, ref_opt, ref_sched, ref_fn = build()
        step = planner.compile(fn)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(6):
                np.testing.assert_allclose(float(step(x)), float(ref_fn(x)), rtol=1e-6)
                sched.step()
                ref_sched.step()
        assert step.captures == 1
        for p, q in zip(model.parameters(), ref.parameters(), strict=True):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6,
                                       atol=1e-8)
