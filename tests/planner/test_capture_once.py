"""A standard training loop is captured exactly once, whatever the optimizer. The built-in
optimizers make a parameter's state (Adam's moments, RMSprop's square averages, SGD's momentum
buffers without dampening) outside the capture, for real (``Optimizer._lazy_state``, as
torch.compile's optimizer support does): the first call is captured and replays its plan. A
capture that creates state inside the step (SGD's first momentum buffer with dampening is the
gradient itself; an optimizer of the user's) runs that call eagerly and is captured right
after, with the state in place: the next call replays. Results equal eager step for step."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from runtime import nn, optim

OPTIMIZERS: dict[str, Callable[[Any], Any]] = {
    "sgd": lambda ps: optim.SGD(ps, lr=0.1),
    "sgd_momentum": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.1),
    "adam": lambda ps: optim.Adam(ps, lr=1e-2),
    "adam_amsgrad": lambda ps: optim.Adam(ps, lr=1e-2, amsgrad=True),
    "adamw": lambda ps: optim.AdamW(ps, lr=1e-2, weight_decay=0.1),
    "rmsprop": lambda ps: optim.RMSprop(ps, lr=1e-2, momentum=0.5, centered=True),
    "adagrad": lambda ps: optim.Adagrad(ps, lr=1e-2),
}
# the optimizers whose first step makes state inside a capture (the others make it outside
# the capture, or, Adagrad, at construction)
LAZY = {"sgd_momentum"}


def build(name: str) -> tuple[Any, Any]:
    rt.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
    return model, OPTIMIZERS[name](model.parameters())


@pytest.mark.parametrize("set_to_none", [True, False])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_training_loop_captures_once(name: str, set_to_none: bool,
                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="planner")

    def train(model: Any, opt: Any, x: Any, y: Any) -> Any:
        opt.zero_grad(set_to_none=set_to_none)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    (model, opt), (ref, ref_opt) = build(name), build(name)
    step = planner.compile(train)
    rng = np.random.default_rng(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager warns
        for i in range(5):
            x = rt.from_numpy(rng.standard_normal((8, 6)).astype(np.float32))
            y = rt.from_numpy(rng.integers(0, 3, 8))
            np.testing.assert_allclose(step(model, opt, x, y).item(),
                                       train(ref, ref_opt, x, y).item(), rtol=1e-5)
            if i == 0:  # planned by the first call, eager or not
                assert step.plan is not None and step.captures == 1
    assert step.captures == 1, [r.getMessage() for r in caplog.records]
    # zero_grad(set_to_none=False) leaves a None .grad None: the first backward makes them
    assert step.warmups == (1 if name in LAZY or not set_to_none else 0)
    if step.warmups:
        said = [r.getMessage() for r in caplog.records if "eagerly this once" in r.getMessage()]
        assert said and (type(opt).__name__ in said[0] or ".grad" in said[0]), said
    assert not [r for r in caplog.records if "recompil" in r.getMessage()]
    # centered RMSprop divides each gradient by its running deviation: the compiled kernels' and
    # eager mode's rounding of a near-zero gradient moves a weight by a part of lr (0.01)
    atol = 1e-5 if name == "rmsprop" else 1e-6
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=atol)
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        for key, value in ref_opt.state[q].items():
            mine = opt.state[p][key]
            np.testing.assert_allclose(np.asarray(mine.numpy() if hasattr(mine, "numpy")
                                                  else mine),
                                       np.asarray(value.numpy() if hasattr(value, "numpy")
                                                  else value), rtol=1e-5, atol=atol)


def test_state_made_anew_every_call_runs_eagerly_once_then_is_planned() -> None:
    """A step that replaces its state every call cannot be steadied by one eager call: the
    warm-up happens once, then the step is planned with the state as its own writes."""
    w = rt.zeros(4, requires_grad=True)
    opt = optim.Adam([w], lr=0.1)

    def train(x: Any) -> Any:
        opt.state.clear()  # an unusual step: it restarts Adam every call
        opt.zero_grad()
        loss = ((w - x) ** 2).sum()
        loss.backward()
        opt.step()
        return loss

    step = planner.compile(train)
    ref = rt.zeros(4, requires_grad=True)
    ref_opt = optim.Adam([ref], lr=0.1)
    for i in range(4):
        x = rt.full((4,), float(i))
        got = step(x)
        ref_opt.state.clear()
        ref_opt.zero_grad()
        want = ((ref - x) ** 2).sum()
        want.backward()
        ref_opt.step()
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-6)
        np.testing.assert_allclose(w.detach().numpy(), ref.detach().numpy(), rtol=1e-6)
    assert step.warmups == 1
    assert step.captures >= 1


class _UsersAdam(optim.Adam):
    """An optimizer of the user's that makes its state as it steps, in the step."""

    _state_made_lazily = False

    def _lazy_state(self, p: Any, make: Any) -> Any:
        state = self.state[p]
        if not state:
            state.update(make())
        return state


@pytest.mark.parametrize(("make", "warmups"), [
    (lambda p: optim.Adam(p, lr=0.1), 0), (lambda p: optim.SGD(p, lr=0.1, momentum=0.9), 0),
    (lambda p: optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.5), 1),
    (lambda p: _UsersAdam(p, lr=0.1), 1), (lambda p: optim.SGD(p, lr=0.1), 0)])
def test_a_fresh_optimizer_captures_once(
        make: Any, warmups: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """An optimizer the step reaches that holds no state yet: a built-in one makes it
    outside the capture, and the first call runs its plan; one that would make it inside
    the step runs the first call eagerly without first capturing to find that out. Either
    way one capture."""
    import sys

    compile_module = sys.modules["planner.compile"]  # planner.compile is the function
    captured = []
    real = compile_module.capture

    def counting(*args: Any, **kwargs: Any) -> Any:
        captured.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(compile_module, "capture", counting)
    w, ref = rt.zeros(4, requires_grad=True), rt.zeros(4, requires_grad=True)
    opt, ref_opt = make([w]), make([ref])

    def train(x: Any) -> Any:
        opt.zero_grad()
        loss = ((w - x) ** 2).sum()
        loss.backward()
        opt.step()
        return loss.detach()

    step = planner.compile(train)
    for i in range(3):
        x = rt.full((4,), float(i + 1))
        got = step(x)
        ref_opt.zero_grad()
        want = ((ref - x) ** 2).sum()
        want.backward()
        ref_opt.step()
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-6)
    np.testing.assert_allclose(w.detach().numpy(), ref.detach().numpy(), rtol=1e-6)
    assert (step.captures, step.warmups, len(captured)) == (1, warmups, 1)
