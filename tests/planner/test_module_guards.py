"""Module state a compiled step depends on besides parameters: a module's plain settings
(Dropout's p, a loss's reduction and label_smoothing) are guarded, and a change recaptures,
naming the setting; a step that begins with model.train() replays after an evaluation in
eval mode instead of capturing again (the call is made before the guards, as the step's
first line makes it)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt


def _setup(seed: int = 0) -> tuple[Any, Any, Any, Any]:
    rt.manual_seed(seed)
    model = rt.nn.Sequential(rt.nn.Linear(4, 8), rt.nn.Tanh(), rt.nn.Linear(8, 3))
    crit = rt.nn.CrossEntropyLoss()
    opt = rt.optim.SGD(model.parameters(), lr=0.1)

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return model, crit, opt, step


@pytest.mark.parametrize(("name", "value"), [("label_smoothing", 0.2), ("reduction", "sum"),
                                             ("ignore_index", 1)])
def test_a_changed_loss_setting_recaptures(name: str, value: Any,
                                           caplog: pytest.LogCaptureFixture) -> None:
    _, crit, _, fn = _setup()
    _, eager_crit, _, eager = _setup()
    step = planner.compile(fn)
    x, y = rt.randn(5, 4), rt.tensor([0, 1, 2, 1, 0])
    for _ in range(2):
        np.testing.assert_allclose(step(x, y).item(), eager(x, y).item(), rtol=1e-5)
    setattr(crit, name, value)
    setattr(eager_crit, name, value)
    with caplog.at_level(logging.INFO, logger="planner"):
        for _ in range(2):
            np.testing.assert_allclose(step(x, y).item(), eager(x, y).item(), rtol=1e-5)
    assert f"CrossEntropyLoss.{name} is {value!r}" in caplog.text
    assert step.captures == 2


def test_a_changed_dropout_probability_recaptures() -> None:
    drop = rt.nn.Dropout(0.5)
    step = planner.compile(lambda x: drop(x).sum())
    x = rt.ones(1000)
    for _ in range(2):
        assert 300 < step(x).item() < 1700
    drop.p = 0.0
    assert step(x).item() == 1000.0  # nothing dropped, nothing scaled
    assert step.captures == 2


def test_a_step_beginning_with_train_replays_after_an_evaluation() -> None:
    model, _, _, fn = _setup(1)
    eager_model, _, _, eager_fn = _setup(1)

    def step_fn(x: Any, y: Any) -> Any:
        model.train()
        return fn(x, y)

    def eager_step(x: Any, y: Any) -> Any:
        eager_model.train()
        return eager_fn(x, y)

    step = planner.compile(step_fn)
    x, y = rt.randn(5, 4), rt.tensor([0, 1, 2, 1, 0])
    for _ in range(3):  # epochs: train steps, then an evaluation in eval mode
        for _ in range(2):
            np.testing.assert_allclose(step(x, y).item(), eager_step(x, y).item(), rtol=1e-5)
        assert model.training and all(m.training for m in model.modules())
        model.eval()
        eager_model.eval()
        with rt.no_grad():
            np.testing.assert_allclose(model(x).numpy(), eager_model(x).numpy(), rtol=1e-5)
    assert step.captures == 1


def test_a_mode_switch_after_a_forward_is_still_guarded() -> None:
    """eval() after the forward: the plan was traced in the mode the call found, so a call
    finding another mode captures again."""
    drop = rt.nn.Dropout(0.5)

    def fn(x: Any) -> Any:
        out = drop(x).sum()
        drop.eval()
        return out

    step = planner.compile(fn)
    x = rt.ones(1000)
    drop.train()
    assert step(x).item() != 1000.0  # dropped in train mode
    assert not drop.training
    assert step(x).item() == 1000.0  # found in eval mode: captured again, nothing dropped
    drop.train()
    assert step(x).item() != 1000.0
    assert step.captures == 2


class _Scaled(rt.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("scale", rt.ones(2))

    def forward(self, x: Any) -> Any:
        return (x * self.scale).sum()


def test_a_replaced_buffer_recaptures() -> None:
    m = _Scaled()
    step = planner.compile(lambda x: m(x))
    x = rt.ones(2)
    assert step(x).item() == step(x).item() == 2.0
    m.scale = rt.full((2,), 3.0)
    assert step(x).item() == 6.0


W = rt.tensor([1.0, 1.0])


def test_a_tensor_read_by_name_is_guarded_by_identity() -> None:
    """A global (or closure variable) rebound to another tensor between calls: the plan read
    the captured tensor's storage, and replayed the old one."""
    global W
    step = planner.compile(lambda x: (x * W).sum())
    x = rt.ones(2)
    assert step(x).item() == step(x).item() == 2.0
    before, W = W, rt.tensor([2.0, 2.0])
    try:
        assert step(x).item() == 4.0
    finally:
        W = before  # as it was, for a later run of this test in the process
    scale = rt.tensor([1.0, 1.0])
    inner = planner.compile(lambda x: (x * scale).sum())
    assert inner(x).item() == inner(x).item() == 2.0
    scale = rt.tensor([5.0, 5.0])  # noqa: F841 - read by the lambda through its closure
    assert inner(x).item() == 10.0


def test_arguments_sharing_storage_are_captured_apart(caplog: pytest.LogCaptureFixture
                                                      ) -> None:
    """A plan captured for two arguments apart is not replayed for one tensor passed twice:
    a write into the first is seen through the second."""
    def fn(x: Any, y: Any) -> Any:
        x.add_(1)
        return y.sum()

    step = planner.compile(fn)
    a, b = rt.ones(2), rt.ones(2)
    assert step(a, b).item() == step(a, b).item() == 2.0
    c, e = rt.ones(2), rt.ones(2)
    with caplog.at_level(logging.INFO, logger="planner"), \
            pytest.warns(RuntimeWarning, match="shares storage"):
        assert step(c, c).item() == fn(e, e).item() == 4.0
    assert "sharing storage: [0, 1] (was none)" in caplog.text
    tokens = rt.arange(10).float()  # read-only views of one tensor: still a plan
    pairs = planner.compile(lambda u, v: (u * v).sum())
    for _ in range(3):
        assert pairs(tokens[:-1], tokens[1:]).item() == (tokens[:-1] * tokens[1:]).sum().item()
    assert pairs.captures == 1
