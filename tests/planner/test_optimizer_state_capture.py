"""A fresh optimizer's state is made outside the capture (``Optimizer._lazy_state``, as
torch.compile's optimizer support makes it): the first call of a training step is captured
and runs its plan, with the state the eager step would make, and every later call replays
the same plan."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from runtime import nn, optim

OPTIMIZERS: dict[str, Callable[[Any], Any]] = {
    "adam": lambda ps: optim.Adam(ps, lr=1e-2),
    "adam_amsgrad": lambda ps: optim.Adam(ps, lr=1e-2, amsgrad=True, weight_decay=0.1),
    "adamw": lambda ps: optim.AdamW(ps, lr=1e-2),
    "adamax": lambda ps: optim.Adamax(ps, lr=1e-2),
    "nadam": lambda ps: optim.NAdam(ps, lr=1e-2),
    "radam": lambda ps: optim.RAdam(ps, lr=1e-2),
    "adadelta": lambda ps: optim.Adadelta(ps),
    "rmsprop": lambda ps: optim.RMSprop(ps, lr=1e-2, momentum=0.5, centered=True),
    "rprop": lambda ps: optim.Rprop(ps, lr=1e-2),
    "asgd": lambda ps: optim.ASGD(ps, lr=1e-2, t0=1),
    "adafactor": lambda ps: optim.Adafactor(ps, lr=1e-2),
    "sgd_momentum": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
    "sgd_nesterov": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True,
                                         weight_decay=1e-2),
}


def build(name: str) -> tuple[Any, Any]:
    rt.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 2))
    return model, OPTIMIZERS[name](model.parameters())


def train(model: Any, opt: Any, x: Any, y: Any) -> Any:
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()


def batches(n: int) -> list[tuple[Any, Any]]:
    rng = np.random.default_rng(2)
    return [(rt.from_numpy(rng.standard_normal((6, 5)).astype(np.float32)),
             rt.from_numpy(rng.standard_normal((6, 2)).astype(np.float32))) for _ in range(n)]


def _array(v: Any) -> np.ndarray:
    return np.asarray(v.numpy() if hasattr(v, "numpy") else v)


def assert_same_training(model: Any, opt: Any, ref: Any, ref_opt: Any) -> None:
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
        assert list(opt.state[p]) == list(ref_opt.state[q])  # the same entries, in order
        for key, value in ref_opt.state[q].items():
            np.testing.assert_allclose(_array(opt.state[p][key]), _array(value), rtol=1e-4,
                                       atol=1e-6)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_the_first_call_runs_the_plan_with_the_state_eager_mode_makes(name: str) -> None:
    (model, opt), (ref, ref_opt) = build(name), build(name)
    step = planner.compile(train)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager
        for i, (x, y) in enumerate(batches(4)):
            np.testing.assert_allclose(step(model, opt, x, y).item(),
                                       train(ref, ref_opt, x, y).item(), rtol=1e-5)
            if i == 0:  # the first call ran the plan: no eager run, one capture
                assert (step.captures, step.warmups) == (1, 0)
                assert_same_training(model, opt, ref, ref_opt)
    assert (step.captures, step.warmups) == (1, 0)
    assert_same_training(model, opt, ref, ref_opt)


def test_the_state_matches_pytorchs_after_a_compiled_first_step() -> None:
    torch = pytest.importorskip("torch")
    model, opt = build("adam")
    tmodel = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 2))
    with torch.no_grad():
        for p, q in zip(model.parameters(), tmodel.parameters(), strict=True):
            q.copy_(torch.from_numpy(p.detach().numpy().copy()))
    topt = torch.optim.Adam(tmodel.parameters(), lr=1e-2)
    x, y = batches(1)[0]
    planner.compile(train)(model, opt, x, y)
    topt.zero_grad()
    torch.nn.functional.mse_loss(tmodel(torch.from_numpy(x.numpy())),
                                 torch.from_numpy(y.numpy())).backward()
    topt.step()
    for p, q in zip(model.parameters(), tmodel.parameters(), strict=True):
        mine, theirs = opt.state[p], topt.state[q]
        assert list(mine) == list(theirs)
        for key in theirs:
            np.testing.assert_allclose(_array(mine[key]), theirs[key].numpy(), rtol=1e-5,
                                       atol=1e-7)


def test_a_step_that_falls_back_after_making_state_trains_as_eager_mode() -> None:
    """The capture made the state, then met something it cannot hold: the state it made is
    taken back, and the call runs eagerly, making it, and trains the same."""
    (model, opt), (ref, ref_opt) = build("adam"), build("adam")
    seen: list[float] = []

    def noisy(model: Any, opt: Any, x: Any, y: Any) -> Any:
        loss = train(model, opt, x, y)
        seen.append(float(loss))  # reads a value: a graph break
        return loss

    step = planner.compile(noisy)
    with pytest.warns(RuntimeWarning, match="runs eagerly"):
        for x, y in batches(3):
            np.testing.assert_allclose(step(model, opt, x, y).item(),
                                       train(ref, ref_opt, x, y).item(), rtol=1e-6)
    assert len(seen) == 3
    assert_same_training(model, opt, ref, ref_opt)


def test_lower_makes_the_state_an_eager_step_then_uses() -> None:
    """Lowering a step for inspection makes a fresh optimizer's state (zeros, step 0), as
    torch.compile's tracing does; the eager step that follows trains as it would have."""
    (model, opt), (ref, ref_opt) = build("adamw"), build("adamw")
    x, y = batches(1)[0]
    plan = planner.compile(train).lower(model, opt, x, y)
    assert plan.kernels or plan.steps
    p = next(model.parameters())
    assert float(opt.state[p]["step"]) == 0.0
    assert not opt.state[p]["exp_avg"].numpy().any()
    np.testing.assert_allclose(train(model, opt, x, y).item(), train(ref, ref_opt, x, y).item(),
                               rtol=1e-6)
    assert_same_training(model, opt, ref, ref_opt)


def test_state_restarted_by_the_step_itself_is_planned_as_its_own() -> None:
    """A step whose own code reaches ``opt.state`` (here: restarting Adam every call) makes
    the state inside the capture: a replay makes it anew each call, as the eager step does."""
    (model, opt), (ref, ref_opt) = build("adam"), build("adam")

    def restarting(model: Any, opt: Any, x: Any, y: Any) -> Any:
        opt.state.clear()
        return train(model, opt, x, y)

    step = planner.compile(restarting)
    for x, y in batches(4):
        np.testing.assert_allclose(step(model, opt, x, y).item(),
                                   restarting(ref, ref_opt, x, y).item(), rtol=1e-6)
    assert_same_training(model, opt, ref, ref_opt)
    assert float(opt.state[next(model.parameters())]["step"]) == 1.0


def test_a_parameter_group_added_later_gets_its_state_in_the_next_capture() -> None:
    """A group added between calls changes the optimizer's guard: the next call captures
    again, making the new parameters' state outside the capture, and trains as eager."""
    (model, opt), (ref, ref_opt) = build("adam"), build("adam")
    rt.manual_seed(5)
    extra = rt.randn(2, requires_grad=True)
    ref_extra = extra.detach().clone().requires_grad_(True)

    def with_extra(model: Any, opt: Any, x: Any, y: Any, e: Any) -> Any:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x) + e, y)
        loss.backward()
        opt.step()
        return loss.detach()

    step = planner.compile(with_extra)
    for i, (x, y) in enumerate(batches(4)):
        if i == 2:
            opt.add_param_group({"params": [extra], "lr": 0.05})
            ref_opt.add_param_group({"params": [ref_extra], "lr": 0.05})
        np.testing.assert_allclose(step(model, opt, x, y, extra).item(),
                                   with_extra(ref, ref_opt, x, y, ref_extra).item(), rtol=1e-5)
    np.testing.assert_allclose(extra.detach().numpy(), ref_extra.detach().numpy(), rtol=1e-5)
    # call 2 captures again because call 1 set extra's .grad (no optimizer zeroes it yet),
    # call 3 because of the new group
    assert (step.captures, step.warmups) == (3, 0)
    assert_same_training(model, opt, ref, ref_opt)
