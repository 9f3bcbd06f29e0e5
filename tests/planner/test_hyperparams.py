"""Optimizer hyperparameters are inputs a compiled plan reads at each replay: a learning-rate
schedule, or a hand edit of param_groups, never recompiles, and each replay equals eager."""

from __future__ import annotations

import logging
import math
import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

OPTIMIZERS = {
    "sgd": lambda ps: rt.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-2, nesterov=True),
    "adam": lambda ps: rt.optim.Adam(ps, lr=1e-2, weight_decay=1e-3),
    "adamw": lambda ps: rt.optim.AdamW(ps, lr=1e-2, betas=(0.8, 0.99)),
}


def make(name: str) -> tuple[Any, Any]:
    rt.manual_seed(0)
    model = rt.nn.Sequential(rt.nn.Linear(6, 16), rt.nn.Tanh(), rt.nn.Linear(16, 2))
    return model, OPTIMIZERS[name](list(model.parameters()))


def train(model: Any, opt: Any, x: Any, y: Any) -> Any:
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    return loss


def cosine(i: int, n: int, base: float) -> float:
    return 0.5 * base * (1 + math.cos(math.pi * i / n))


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_cosine_schedule_compiles_once_and_equals_eager(
        name: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="planner")
    (model, opt), (ref, ref_opt) = make(name), make(name)
    step = planner.compile(train)
    rng = np.random.default_rng(1)
    x = rt.from_numpy(rng.standard_normal((8, 6)).astype(np.float32))
    y = rt.from_numpy(rng.standard_normal((8, 2)).astype(np.float32))
    base, n = opt.param_groups[0]["lr"], 12
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager
        for i in range(n):
            for o in (opt, ref_opt):
                o.param_groups[0]["lr"] = cosine(i, n, base)
            if i == n // 2 and name != "sgd":  # betas and eps are inputs too
                for o in (opt, ref_opt):
                    o.param_groups[0]["betas"] = (0.85, 0.995)
                    o.param_groups[0]["eps"] = 1e-6
            got, want = step(model, opt, x, y), train(ref, ref_opt, x, y)
            np.testing.assert_allclose(got.item(), want.item(), rtol=1e-6)
            for p, q in zip(model.parameters(), ref.parameters(), strict=True):
                np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(),
                                           rtol=1e-6, atol=1e-7)
    # the optimizer's state is made outside the capture: one plan, from the first call
    assert (step.captures, step.warmups) == (1, 0), [r.getMessage() for r in caplog.records]
    assert step.plan.kernels, "the update is still fused"
    hypers = [s.desc for s in step._cache[next(iter(step._cache))].bindings[0].slots
              if s.kind == "hyper"]
    assert any("lr" in d for d in hypers), hypers


def test_zero_weight_decay_recompiles_and_says_why(caplog: pytest.LogCaptureFixture) -> None:
    """Whether a number is zero decides which ops the update runs: that is guarded."""
    caplog.set_level(logging.INFO, logger="planner")
    (model, opt), (ref, ref_opt) = make("sgd"), make("sgd")
    step = planner.compile(train)
    x, y = rt.ones(4, 6), rt.zeros(4, 2)
    for i in range(4):
        if i == 2:
            opt.param_groups[0]["weight_decay"] = ref_opt.param_groups[0]["weight_decay"] = 0
        np.testing.assert_allclose(step(model, opt, x, y).item(),
                                   train(ref, ref_opt, x, y).item(), rtol=1e-5, atol=1e-7)
    # call 1 captures (the momentum buffers made outside the capture), 3 recaptures (decay
    # is 0)
    assert (step.captures, step.warmups) == (2, 0)
    lines = [r.getMessage() for r in caplog.records if "recompil" in r.getMessage()]
    assert "param_groups[0]['weight_decay'] is 0 (was non-zero" in lines[-1], lines


def test_hyperparameter_written_in_place_is_refused() -> None:
    model, opt = make("sgd")
    train(model, opt, rt.ones(4, 6), rt.zeros(4, 2))  # its state made: the first call captures

    def bad(x: Any) -> Any:
        lr = opt._hyper(opt.param_groups[0], "lr")
        lr.mul_(2.0)
        return train(model, opt, x, rt.zeros(4, 2))

    with pytest.raises(planner.CompileError, match="writes the hyperparameter SGD lr in place"):
        planner.compile(bad, fullgraph=True)(rt.ones(4, 6))


@pytest.mark.parametrize("schedule", ["cosine_warmup", "onecycle"])
def test_lr_scheduler_in_a_compiled_loop(schedule: str) -> None:
    """optim.lr_scheduler between compiled steps: warmup then cosine (SequentialLR), and
    OneCycleLR, which also cycles SGD's momentum every step. Neither recompiles."""
    sched_mod = rt.optim.lr_scheduler

    def build() -> tuple[Any, Any, Any]:
        rt.manual_seed(0)
        model = rt.nn.Sequential(rt.nn.Linear(6, 16), rt.nn.Tanh(), rt.nn.Linear(16, 2))
        if schedule == "onecycle":
            opt = rt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            return model, opt, sched_mod.OneCycleLR(opt, max_lr=0.2, total_steps=10)
        opt = rt.optim.AdamW(model.parameters(), lr=1e-2)
        warm = sched_mod.LinearLR(opt, start_factor=0.1, total_iters=3)
        cos = sched_mod.CosineAnnealingLR(opt, T_max=7)
        return model, opt, sched_mod.SequentialLR(opt, [warm, cos], milestones=[3])

    (model, opt, sched), (ref, ref_opt, ref_sched) = build(), build()
    step = planner.compile(train)
    x, y = rt.from_numpy(np.ones((8, 6), np.float32)), rt.from_numpy(np.zeros((8, 2), np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(10):
            np.testing.assert_allclose(step(model, opt, x, y).item(),
                                       train(ref, ref_opt, x, y).item(), rtol=1e-5)
            sched.step()
            ref_sched.step()
    # the optimizer state is made outside the first call's capture: one capture
    assert (step.captures, step.warmups) == (1, 0)
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-7)


SCHEDULES = {
    "step": lambda opt: rt.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5),
    "warmup_cosine": lambda opt: rt.optim.lr_scheduler.SequentialLR(
        opt, [rt.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=3),
              rt.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=7)], milestones=[3]),
    "onecycle": lambda opt: rt.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=12),
    "lambda": lambda opt: rt.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0 / (1 + e)),
}


@pytest.mark.parametrize("where", ["after", "before"])
@pytest.mark.parametrize(("schedule", "name"), [("step", "sgd"), ("warmup_cosine", "adamw"),
                                                ("onecycle", "adam"), ("lambda", "sgd")])
def test_lr_scheduler_stepped_inside_the_compiled_step(schedule: str, name: str,
                                                       where: str) -> None:
    """A scheduler's ``step()`` inside the step is replayed at every call (not run once at
    capture): before the optimizer's update where the step calls it first, after it
    otherwise. Losses, weights, lr and the scheduler's epoch equal eager's; one capture."""
    def build() -> tuple[Any, Any, Any, Any]:
        model, opt = make(name)
        sched = SCHEDULES[schedule](opt)

        def step(x: Any, y: Any) -> Any:
            opt.zero_grad()
            if where == "before":
                sched.step()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            if where == "after":
                sched.step()
            return loss

        return model, opt, sched, step

    model, opt, sched, fn = build()
    ref, ref_opt, ref_sched, ref_fn = build()
    step = planner.compile(fn)
    rng = np.random.default_rng(2)
    x = rt.from_numpy(rng.standard_normal((8, 6)).astype(np.float32))
    y = rt.from_numpy(rng.standard_normal((8, 2)).astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager
        # torch's (and our) warning of a schedule stepped before the optimizer, "before"
        warnings.filterwarnings("ignore", "Detected call of `lr_scheduler.step")
        for _ in range(10):
            np.testing.assert_allclose(float(step(x, y)), float(ref_fn(x, y)), rtol=1e-5)
            assert opt.param_groups[0]["lr"] == ref_opt.param_groups[0]["lr"]
    assert sched.last_epoch == ref_sched.last_epoch == 10
    assert step.captures == 1
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-7)


def test_lowering_a_step_does_not_step_its_scheduler() -> None:
    model, opt = make("sgd")
    sched = SCHEDULES["step"](opt)

    def step(x: Any) -> Any:
        loss = train(model, opt, x, rt.zeros(4, 2))
        sched.step()
        return loss

    planner.compile(step).lower(rt.ones(4, 6))
    assert sched.last_epoch == 0 and opt.param_groups[0]["lr"] == 0.1


def test_a_scheduler_between_two_updates_or_on_a_metric_runs_eagerly() -> None:
    """What a replay cannot order (an update after the scheduler moved lr in the same call)
    or cannot know (ReduceLROnPlateau's metric) falls back to eager, loudly, and trains as
    eager does."""
    for kind in ("between", "plateau"):
        model, opt = make("sgd")
        ref, ref_opt = make("sgd")
        scheds = [rt.optim.lr_scheduler.StepLR(o, 1, gamma=0.5) if kind == "between"
                  else rt.optim.lr_scheduler.ReduceLROnPlateau(o, patience=0)
                  for o in (opt, ref_opt)]

        def run(m: Any, o: Any, s: Any, x: Any) -> Any:
            loss = train(m, o, x, rt.zeros(4, 2))
            if kind == "between":
                s.step()
                loss = train(m, o, x, rt.zeros(4, 2))
            else:
                s.step(loss)
            return loss

        step = planner.compile(lambda x: run(model, opt, scheds[0], x))
        x = rt.ones(4, 6)
        with pytest.warns(RuntimeWarning, match="runs eagerly"):
            got = float(step(x))
        np.testing.assert_allclose(got, float(run(ref, ref_opt, scheds[1], x)), rtol=1e-6)
        for _ in range(3):
            np.testing.assert_allclose(float(step(x)), float(run(ref, ref_opt, scheds[1], x)),
                                       rtol=1e-6)
        assert opt.param_groups[0]["lr"] == ref_opt.param_groups[0]["lr"]
