"""optim.lr_scheduler: learning rates equal torch's step for step, state dicts resume, errors."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime import optim
from runtime.optim import lr_scheduler as ours_sched

torch = pytest.importorskip("torch")

# name -> (optimizer name, optimizer kwargs, scheduler factory given (module, optimizer))
CASES: dict[str, tuple[str, dict[str, Any], Callable[[Any, Any], Any]]] = {
    "step": ("SGD", {"lr": 0.1}, lambda m, o: m.StepLR(o, step_size=3, gamma=0.5)),
    "multistep": ("SGD", {"lr": 0.1},
                  lambda m, o: m.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3)),
    "cosine": ("Adam", {"lr": 0.01}, lambda m, o: m.CosineAnnealingLR(o, T_max=7, eta_min=1e-4)),
    "lambda": ("SGD", {"lr": 0.1}, lambda m, o: m.LambdaLR(o, lambda e: 0.9 ** e + 0.01 * e)),
    "linear": ("AdamW", {"lr": 0.01},
               lambda m, o: m.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=6)),
    "onecycle": ("SGD", {"lr": 0.1, "momentum": 0.9},
                 lambda m, o: m.OneCycleLR(o, max_lr=[0.5, 0.2], total_steps=25)),
    "onecycle_adam_linear_3": ("Adam", {"lr": 0.1},
                               lambda m, o: m.OneCycleLR(o, max_lr=0.3, epochs=5,
                                                         steps_per_epoch=5, three_phase=True,
                                                         anneal_strategy="linear")),
    "sequential": ("SGD", {"lr": 0.1}, lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=4),
            m.CosineAnnealingLR(o, T_max=16)], milestones=[4])),
    "exponential": ("Adam", {"lr": 0.01}, lambda m, o: m.ExponentialLR(o, gamma=0.9)),
    "constant": ("SGD", {"lr": 0.1}, lambda m, o: m.ConstantLR(o, factor=0.25, total_iters=7)),
    "multiplicative": ("SGD", {"lr": 0.1},
                       lambda m, o: m.MultiplicativeLR(o, lambda e: 0.95 if e % 2 else 1.0)),
    "polynomial": ("AdamW", {"lr": 0.01},
                   lambda m, o: m.PolynomialLR(o, total_iters=10, power=2.0)),
    "warm_restarts": ("SGD", {"lr": 0.1}, lambda m, o: m.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=1e-3)),
    "chained": ("SGD", {"lr": 0.1}, lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.5, total_iters=4), m.ExponentialLR(o, gamma=0.9)])),
}


def groups(lib: Any) -> list[dict[str, Any]]:
    return [{"params": [lib.nn.Parameter(lib.ones(2))]},
            {"params": [lib.nn.Parameter(lib.ones(3))], "lr": 0.05}]


def make(name: str) -> tuple[Any, Any]:
    opt_name, kwargs, factory = CASES[name]
    mine = getattr(optim, opt_name)(groups(rt), **kwargs)
    theirs = getattr(torch.optim, opt_name)(groups(torch), **kwargs)
    return ((mine, factory(ours_sched, mine)),
            (theirs, factory(torch.optim.lr_scheduler, theirs)))


def settings(opt: Any) -> list[dict[str, Any]]:
    return [{k: v for k, v in g.items() if k in ("lr", "momentum", "betas", "initial_lr",
                                                   "max_lr", "min_lr")}
            for g in opt.param_groups]


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_equal_torch(name: str) -> None:
    (mine, sched), (theirs, tsched) = make(name)
    assert sched.get_last_lr() == tsched.get_last_lr()
    for _ in range(24):
        mine.step()
        theirs.step()
        sched.step()
        tsched.step()
        np.testing.assert_allclose(sched.get_last_lr(), tsched.get_last_lr(), rtol=1e-12)
        for ours, torchs in zip(settings(mine), settings(theirs), strict=True):
            assert ours.keys() == torchs.keys()
            for k in ours:  # numbers compared to 1e-12, tuples (betas) element by element
                assert np.allclose(ours[k], torchs[k], rtol=1e-12, atol=0), (k, ours, torchs)


@pytest.mark.parametrize("name", ["step", "cosine", "linear", "sequential", "onecycle",
                                  "warm_restarts", "chained", "polynomial"])
def test_state_dict_resumes(name: str) -> None:
    (mine, sched), _ = make(name)
    for _ in range(5):
        sched.step()
    saved = sched.state_dict()
    assert "optimizer" not in saved
    (other, resumed), _ = make(name)
    for group, g in zip(other.param_groups, mine.param_groups, strict=True):
        group.update({k: v for k, v in g.items() if k != "params"})
    resumed.load_state_dict(saved)
    for _ in range(5):
        sched.step()
        resumed.step()
        assert resumed.get_last_lr() == sched.get_last_lr()


def test_closed_form_with_an_explicit_epoch() -> None:
    (mine, sched), (theirs, tsched) = make("cosine")
    with pytest.warns(UserWarning):
        tsched.step(5)
    sched.step(5)
    assert sched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-12)


@pytest.mark.parametrize(("build", "error"), [
    (lambda m, o: m.LinearLR(o, start_factor=0), ValueError),
    (lambda m, o: m.LinearLR(o, end_factor=2), ValueError),
    (lambda m, o: m.LambdaLR(o, [lambda e: 1.0]), ValueError),
    (lambda m, o: m.OneCycleLR(o, max_lr=0.1), ValueError),
    (lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=10, pct_start=2.0), ValueError),
    (lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=10, anneal_strategy="x"),
     ValueError),
    (lambda m, o: m.SequentialLR(o, [m.StepLR(o, 2)], milestones=[3]), ValueError),
    (lambda m, o: m.StepLR(o, 2, last_epoch=4), KeyError),
    (lambda m, o: m.StepLR(object(), 2), TypeError),
])
def test_errors_match_torch(build: Callable[[Any, Any], Any], error: type) -> None:
    mine, theirs = optim.SGD(groups(rt), lr=0.1), torch.optim.SGD(groups(torch), lr=0.1)
    with pytest.raises(error) as got:
        build(ours_sched, mine)
    with pytest.raises(error) as want:
        build(torch.optim.lr_scheduler, theirs)
    assert str(got.value).split("\n")[0] == str(want.value).split("\n")[0]


def test_onecycle_past_total_steps_raises() -> None:
    opt = optim.SGD(groups(rt), lr=0.1, momentum=0.9)
    sched = ours_sched.OneCycleLR(opt, max_lr=0.1, total_steps=2)
    sched.step()
    sched.step()
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        sched.step()
    assert math.isfinite(opt.param_groups[0]["lr"])


def test_warm_restarts_with_fractional_epochs_equal_torch() -> None:
    (mine, sched), (theirs, tsched) = make("warm_restarts")
    for epoch in range(12):
        for i in range(4):
            sched.step(epoch + i / 4)
            tsched.step(epoch + i / 4)
            assert sched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-12)
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        sched.step(-1)


@pytest.mark.parametrize("kw", [{}, {"mode": "max", "threshold_mode": "abs", "patience": 2},
                                {"factor": 0.5, "patience": 1, "cooldown": 2,
                                 "min_lr": [0.02, 0.01]}])
def test_reduce_on_plateau_equals_torch(kw: dict[str, Any]) -> None:
    mine, theirs = optim.SGD(groups(rt), lr=0.1), torch.optim.SGD(groups(torch), lr=0.1)
    sched = ours_sched.ReduceLROnPlateau(mine, **kw)
    tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(theirs, **kw)
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.5, 0.6, 0.6, 0.6, 0.7, 0.7, 0.7, 0.8] * 2
    for m in metrics:
        sched.step(m)
        tsched.step(m)
        assert sched.get_last_lr() == tsched.get_last_lr()
        assert sched.num_bad_epochs == tsched.num_bad_epochs
    saved = sched.state_dict()
    other = ours_sched.ReduceLROnPlateau(optim.SGD(groups(rt), lr=0.1), **kw)
    other.load_state_dict(saved)
    assert other.best == sched.best and other.mode_worse == sched.mode_worse
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        ours_sched.ReduceLROnPlateau(mine, factor=1.0)
    with pytest.raises(ValueError, match="mode avg is unknown!"):
        ours_sched.ReduceLROnPlateau(mine, mode="avg")


def test_chained_refuses_plateau() -> None:
    opt = optim.SGD(groups(rt), lr=0.1)
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        ours_sched.ChainedScheduler([ours_sched.ReduceLROnPlateau(opt)])
