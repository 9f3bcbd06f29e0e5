"""The scripts of tests/runtime/test_scripts_more_models.py, test_scripts_more_training.py,
test_scripts_more_recipes.py and test_scripts_more_tutorials.py with their steps compiled: the same losses, parameters and
evaluations as eager, each step captured (a fallback to eager warns, and warnings are errors
here) and replayed rather than captured again on every call; the two that run eagerly by
design say why and still equal eager."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from runtime.utils.checkpoint import checkpoint
from tests.runtime import test_scripts_more_models as models
from tests.runtime import test_scripts_more_recipes as recipes
from tests.runtime import test_scripts_more_training as training
from tests.runtime import test_scripts_more_tutorials as tutorials
from tests.runtime.test_scripts_training import Run, as_is

# scripts whose step runs eagerly, and the reason the planner gives
EAGER = {"grad_hooks": "Linear has a (full )?backward \\(pre-\\)hook",
         # GradScaler reads found_inf's value (bfloat16 steps themselves compile)
         "autocast_scaler": "Tensor.bool\\(\\) reads a tensor's value"}
SCRIPTS = {name: script for name, script in
           {**models.SCRIPTS, **training.SCRIPTS, **recipes.SCRIPTS,
            **tutorials.SCRIPTS}.items()
           if name not in EAGER}

# the captures a step may make: one (after an eager warm-up call that makes the optimizer's
# state), and more where the script changes what the plan depends on
MAX_CAPTURES: dict[str, int] = {
    "accumulate": 2,  # a micro-batch's .grad is None (the first) or accumulates (the others)
    "finetune": 3,  # add_param_group and a layer unfrozen halfway
    "conv_vae": models.STEPS,  # beta, a Python float, changes every step (KL annealing)
    "custom_inplace": 2,
    "dann": tutorials.STEPS,  # alpha, a Python float, follows the paper's schedule  # a Python bool argument: the tail output used or not
}


def compiled_run(name: str, tmp: Path, weights: Any) -> tuple[Run, list[Any]]:
    made: list[Any] = []

    def wrap(fn: Callable[..., Any]) -> Any:
        made.append(planner.compile(fn))
        return made[-1]

    rt.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a fallback to eager warns
        return {**SCRIPTS, **recipes.SCRIPTS}[name](rt, weights, wrap, tmp), made


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_compiled_script_equals_eager(name: str, tmp_path: Path) -> None:
    rt.manual_seed(0)
    want = SCRIPTS[name](rt, None, as_is, tmp_path)
    got, steps = compiled_run(name, tmp_path, want.weights)
    models.assert_runs_match(got, want, rtol=1e-5, atol=1e-6)
    assert steps
    for step in steps:
        assert 1 <= step.captures <= MAX_CAPTURES.get(name, 1), step.captures


@pytest.mark.parametrize("name", list(EAGER))
def test_compiled_script_running_eagerly_says_why(name: str, tmp_path: Path) -> None:
    rt.manual_seed(0)
    want = recipes.SCRIPTS[name](rt, None, as_is, tmp_path)
    rt.manual_seed(0)
    with pytest.warns(RuntimeWarning, match=f"runs eagerly: .*{EAGER[name]}"):
        got = recipes.SCRIPTS[name](rt, want.weights, planner.compile, tmp_path)
    models.assert_runs_match(got, want, rtol=1e-5, atol=1e-6)


def test_seeded_dropout_compiled_equals_eager() -> None:
    """Dropout masks, randn data and randperm orders drawn from one seed: the compiled
    steps draw what the eager ones draw."""
    want = training.seeded(rt, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = training.seeded(rt, 0, planner.compile)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert training.seeded(rt, 0, planner.compile) == got


def _checkpointed_dropout(compiled: bool, use_reentrant: bool) -> tuple[list[float], Any]:
    """A checkpointed block with dropout: the rerun's masks are the first run's in eager, so
    the captured step, which runs the block once, gives the same losses and leaves the
    generator where eager leaves it."""
    rt.manual_seed(0)
    nn = rt.nn
    block = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 4))
    head = nn.Linear(4, 1)
    opt = rt.optim.SGD([*block.parameters(), *head.parameters()], lr=0.1, momentum=0.9)
    x = rt.randn(6, 4)

    def step(xb: Any) -> Any:
        opt.zero_grad()
        h = checkpoint(block, xb.requires_grad_() if use_reentrant else xb,
                       use_reentrant=use_reentrant)
        loss = head(h).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    if compiled:
        step = planner.compile(step)
    losses = [step(x.clone()).item() for _ in range(4)]
    return losses, rt.rand(3).numpy()


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_is_captured(use_reentrant: bool) -> None:
    """It ran eagerly: saved_tensors_hooks (use_reentrant=False) and the rerun's generator
    state read as a value (True) were refused by the capture."""
    want, after = _checkpointed_dropout(False, use_reentrant)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got, got_after = _checkpointed_dropout(True, use_reentrant)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got_after, after)
    assert len(set(got)) == len(got)


def test_reentrant_checkpoint_without_grad_inputs_is_captured_as_eager() -> None:
    """None of its inputs requires grad: the block's parameters get no gradient, as eager
    (PyTorch's warning at capture)."""
    def run(compiled: bool) -> list[Any]:
        rt.manual_seed(0)
        block, head = rt.nn.Linear(3, 3), rt.nn.Linear(3, 1)

        def step(x: Any) -> Any:
            loss = head(checkpoint(block, x, use_reentrant=True)).sum()
            loss.backward()
            return loss

        if compiled:
            step = planner.compile(step)
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
            step(rt.ones(2, 3))
        return [block.weight.grad, head.weight.grad.numpy()]

    got, want = run(True), run(False)
    assert got[0] is None and want[0] is None
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)


def _scaled_steps(compiled: bool, autocast: bool) -> list[Any]:
    """GradScaler's first scale() makes its scale while the step is captured: a tensor the
    scaler keeps, read by the plan as state (the scaler kept a traced value: the eager
    unscale_ or fallback after it raised GraphBreak out of the user's call)."""
    rt.manual_seed(0)
    model = rt.nn.Sequential(rt.nn.Linear(3, 4), rt.nn.Tanh(), rt.nn.Linear(4, 2))
    opt = rt.optim.SGD(model.parameters(), lr=0.1)
    scaler = rt.amp.GradScaler("cpu", init_scale=4.0, growth_interval=1)

    def forward_backward(x: Any) -> Any:
        opt.zero_grad()
        with rt.autocast("cpu", dtype=rt.float16, enabled=autocast):
            loss = model(x).float().pow(2).mean()
        scaler.scale(loss).backward()
        return loss

    def step(x: Any) -> Any:  # unscale_ reads whether a gradient is finite: eager
        loss = forward_backward(x)
        scaler.step(opt)
        scaler.update()
        return loss

    run = forward_backward if not autocast else step
    if compiled:
        run = planner.compile(run)
    out = []
    for i in range(4):
        loss = run(rt.ones(2, 3) * (i + 1))
        if not autocast:
            out.append(model[0].weight.grad.numpy().copy())
            scaler.step(opt)
            scaler.update()
        out += [loss.item(), scaler.get_scale()]
    return out + [p.detach().numpy() for p in model.parameters()]


def test_grad_scaler_made_in_a_capture_is_state() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = _scaled_steps(compiled=True, autocast=False)
    for g, w in zip(got, _scaled_steps(compiled=False, autocast=False), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)


def test_grad_scaler_step_falls_back_to_eager() -> None:
    with pytest.warns(RuntimeWarning, match="runs eagerly: Tensor.bool\\(\\) reads"):
        got = _scaled_steps(compiled=True, autocast=True)
    for g, w in zip(got, _scaled_steps(compiled=False, autocast=True), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)


def _momentum_encoder_losses(compiled: bool) -> tuple[list[float], list[np.ndarray]]:
    """MoCo's key encoder, updated as the reference code does (``param_k.data =
    param_k.data * m + param_q.data * (1 - m)``), and its queue written at a Python
    pointer."""
    rt.manual_seed(0)
    nn, F = rt.nn, rt.nn.functional
    encoder_q = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    encoder_k = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    encoder_k.load_state_dict(encoder_q.state_dict())
    encoder_k.requires_grad_(False)
    queue = F.normalize(rt.randn(3, 8), dim=0)
    pointer = {"ptr": 0}
    opt = rt.optim.SGD(encoder_q.parameters(), lr=0.1, momentum=0.9)

    def step(im_q: Any, im_k: Any) -> Any:
        opt.zero_grad()
        q = F.normalize(encoder_q(im_q), dim=1)
        with rt.no_grad():
            for param_q, param_k in zip(encoder_q.parameters(), encoder_k.parameters()):
                param_k.data = param_k.data * 0.9 + param_q.data * 0.1
            k = F.normalize(encoder_k(im_k), dim=1)
        logits = rt.cat([(q * k).sum(1, keepdim=True), q @ queue.clone().detach()], 1) / 0.2
        loss = F.cross_entropy(logits, rt.zeros(logits.size(0), dtype=rt.long))
        loss.backward()
        opt.step()
        ptr = pointer["ptr"]
        queue[:, ptr:ptr + 2] = k.T
        pointer["ptr"] = (ptr + 2) % 8
        return loss

    if compiled:
        step = planner.compile(step)
    r = np.random.default_rng(0)
    losses = []
    for _ in range(5):
        x = rt.from_numpy(r.standard_normal((2, 4)).astype(np.float32))
        losses.append(step(x, x + 0.1).item())
    return losses, [queue.numpy()] + [p.detach().numpy() for p in encoder_k.parameters()]


def test_data_assigned_in_a_step_runs_eagerly() -> None:
    """``.data =`` swaps a tensor's storage, which a plan does not do: the step runs eagerly,
    saying so (the plan replayed the key encoder's first values, silently; or the capture
    left a traced value in it, and the eager warm-up raised GraphBreak)."""
    with pytest.warns(RuntimeWarning, match="runs eagerly: Tensor.data is assigned"):
        got, got_state = _momentum_encoder_losses(compiled=True)
    want, want_state = _momentum_encoder_losses(compiled=False)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    for g, w in zip(got_state, want_state, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)
