"""The tutorial training scripts of tests/runtime/test_scripts_training.py with their step
compiled: the same losses as eager, two calls and more, with no fallback to eager."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from tests.runtime.test_scripts_training import SCRIPTS, Run, as_is, assert_runs_equal, vae

# the scripts whose compiled run takes under 2 s with a cold kernel cache; the transformers,
# gpt_sdpa, seq2seq (5 s each) and tabular equal eager too
FAST = ["resnet", "lstm", "gan"]


def compiled_run(name: str, tmp: Path, weights: dict[str, np.ndarray]) -> Run:
    rt.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a fallback to eager warns
        return SCRIPTS[name](rt, weights, planner.compile, tmp)


def eager_run(name: str, tmp: Path) -> Run:
    rt.manual_seed(0)
    return SCRIPTS[name](rt, None, as_is, tmp)


@pytest.mark.parametrize("name", FAST)
def test_compiled_script_equals_eager(name: str, tmp_path: Path) -> None:
    want = eager_run(name, tmp_path)
    assert_runs_equal(compiled_run(name, tmp_path, want.weights), want, rtol=1e-5, atol=1e-6)


def test_gpt_compiles_without_fallback_and_equals_eager(tmp_path: Path) -> None:
    """nanoGPT's causal mask buffer is a view (``tril(ones(T, T)).view(1, 1, T, T)``) of a
    tensor made outside the step: read as a state of its own."""
    want = eager_run("gpt", tmp_path)
    assert_runs_equal(compiled_run("gpt", tmp_path, want.weights), want, rtol=1e-5, atol=1e-6)


def test_a_step_writing_memory_an_outside_view_shares_falls_back() -> None:
    """A view of an outside tensor read while its base is written in place: the plan would
    read a stale copy of one through the other, so the step runs eagerly, saying so."""
    def make() -> tuple[Any, Any]:
        base = rt.zeros(4, 4)
        return base, base.view(16)

    base, view = make()
    eager_base, eager_view = make()

    def fn(b: Any, v: Any, x: Any) -> Any:
        b.add_(x)
        return v.sum()

    step = planner.compile(lambda x: fn(base, view, x))
    x = rt.ones(4, 4)
    with pytest.warns(RuntimeWarning, match="memory it shares in place"):
        for _ in range(3):
            assert step(x).item() == fn(eager_base, eager_view, x).item()


def test_compiled_vae_draws_as_eager(tmp_path: Path) -> None:
    """randn_like in the step: a seeded compiled run draws the eager run's noise."""
    want = vae(rt, None, as_is, tmp_path, noise=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = vae(rt, want.weights, planner.compile, tmp_path, noise=False)
    np.testing.assert_allclose(got.losses, want.losses, rtol=1e-5)
    assert len(set(got.losses)) == len(got.losses)


def test_step_calling_train_captures_once_per_mode() -> None:
    """An epoch loop ending in model.eval() with a step that starts with model.train(): two
    captures (one per mode the step is entered in), not one per epoch."""
    model = rt.nn.Sequential(rt.nn.Linear(3, 2), rt.nn.Dropout(0.0))
    opt = rt.optim.SGD(model.parameters(), lr=0.1)

    @planner.compile
    def step(x: rt.Tensor) -> rt.Tensor:
        model.train()
        opt.zero_grad()
        loss = model(x).sum()
        loss.backward()
        opt.step()
        return loss

    for _ in range(4):
        for _ in range(2):
            step(rt.ones(4, 3))
        model.eval()
    assert step.captures <= 3  # the warm-up may add one


def _nested_losses(compiled: bool) -> list[float]:
    w = rt.nn.Parameter(rt.ones(3))
    opt = rt.optim.SGD([w], lr=0.1, momentum=0.9)

    def forward_backward(x: rt.Tensor) -> rt.Tensor:
        loss = (w * x).sum() ** 2
        loss.backward()
        return loss

    def step(x: rt.Tensor) -> rt.Tensor:
        loss = forward_backward(x)
        opt.step()
        opt.zero_grad()
        return loss

    if compiled:
        step, forward_backward = planner.compile(step), planner.compile(forward_backward)
    return [step(rt.full((3,), 0.1 * (i + 1))).item() for i in range(4)]


def test_compiled_step_calling_a_compiled_step_equals_eager() -> None:
    """The inner step, called while the outer one is captured, may run eagerly (it says so),
    never replay stale parameters (the second loss was the first step's, silently)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = _nested_losses(True)
    np.testing.assert_allclose(got, _nested_losses(False), rtol=1e-5)


def _lazy_losses(compiled: bool, dry_run: bool, adam: bool = True) -> list[float]:
    rt.manual_seed(0)
    model = rt.nn.Sequential(rt.nn.LazyLinear(8), rt.nn.LazyBatchNorm1d(), rt.nn.ReLU(),
                             rt.nn.LazyLinear(1))
    opt = (rt.optim.Adam(model.parameters(), lr=0.01) if adam
           else rt.optim.SGD(model.parameters(), lr=0.01))

    def step(x: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    if dry_run:
        model(rt.ones(4, 3))
    if compiled:
        step = planner.compile(step)
    return [step(rt.ones(4, 3) * (i + 1) + rt.arange(3).float()).item() for i in range(3)]


def test_compiled_lazy_model_after_a_dry_run() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = _lazy_losses(compiled=True, dry_run=True)
    np.testing.assert_allclose(got, _lazy_losses(compiled=False, dry_run=True), rtol=1e-5)


@pytest.mark.parametrize("adam", [False, True])
def test_compiled_lazy_model_without_a_dry_run_initializes_in_an_eager_first_call(
        adam: bool) -> None:
    """Its first call would initialize the parameters inside the capture (the capture used to
    leave them holding traced values): that call runs eagerly, initializing them, without a
    fallback warning, and the step is captured right after it, once."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = _lazy_losses(compiled=True, dry_run=False, adam=adam)
    np.testing.assert_allclose(got, _lazy_losses(compiled=False, dry_run=False, adam=adam),
                               rtol=1e-5)


def _losses_after_attribute_change(compiled: bool, change: str) -> list[float]:
    """Six steps; before the fourth, a module attribute its forward reads is changed."""
    rt.manual_seed(0)
    model = rt.nn.Sequential(rt.nn.Linear(4, 8), rt.nn.ReLU(), rt.nn.Dropout(0.0),
                             rt.nn.Linear(8, 3))
    criterion = rt.nn.CrossEntropyLoss()
    opt = rt.optim.SGD(model.parameters(), lr=0.1)

    def step(x: rt.Tensor, y: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        opt.step()
        return loss

    if compiled:
        step = planner.compile(step)
    rng = np.random.default_rng(0)
    losses = []
    for i in range(6):
        if i == 3:
            rt.manual_seed(1)
            target = model[2] if change == "p" else criterion
            setattr(target, change, {"p": 0.5, "label_smoothing": 0.3, "reduction": "sum"}[change])
        x = rt.from_numpy(rng.standard_normal((5, 4)).astype(np.float32))
        losses.append(step(x, rt.from_numpy(rng.integers(0, 3, 5))).item())
    return losses


@pytest.mark.parametrize("change", ["p", "label_smoothing", "reduction"])
def test_changed_module_attribute_is_replayed(change: str) -> None:
    np.testing.assert_allclose(_losses_after_attribute_change(True, change),
                               _losses_after_attribute_change(False, change), rtol=1e-5)
