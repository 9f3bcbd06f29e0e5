"""More tutorial scripts ported from PyTorch by changing the import, each a training recipe:
gradient accumulation over micro-batches, parameter groups with a chained learning-rate
schedule, a checkpoint saved mid-training and resumed, a frozen backbone with a fine-tuned
head, ``clip_grad_norm_(error_if_nonfinite=True)`` and evaluation under ``inference_mode``
between steps. Each starts from the same weights and data in both libraries and its losses,
learning rates and final parameters equal PyTorch's; seeded dropout (whose draws are each
library's own) is checked to repeat within a library. The compiled runs are in
tests/planner/test_scripts_compiled_more_scripts.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import runtime as rt
from tests.runtime.test_scripts_more_models import equals_pytorch, finish
from tests.runtime.test_scripts_training import (
    Run,
    Step,
    Weights,
    as_is,
    batches,
    numpy_state,
    start,
    tensors,
    torch_one_thread,  # noqa: F401  (a fixture)
)

STEPS = 6


def regression_data(r: np.random.Generator, rows: int = 8) -> tuple[np.ndarray, np.ndarray]:
    x = r.standard_normal((rows, 4)).astype(np.float32)
    return x, np.tanh(x @ np.array([[1.0], [-2.0], [0.5], [0.0]], np.float32) + 0.3)


def mlp(lib: ModuleType) -> Any:
    nn = lib.nn
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1))


# ---- gradient accumulation: four micro-batches a step, the loss divided by four -----------

def accumulate(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
               tmp: Path) -> Run:
    model = mlp(lib)
    w0 = start(lib, model, weights)
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3,
                        dampening=0.1)
    criterion = lib.nn.MSELoss()
    accumulation_steps = 4

    def micro_step(x: Any, y: Any) -> Any:
        loss = criterion(model(x), y) / accumulation_steps
        loss.backward()
        return loss

    def update() -> None:
        opt.step()
        opt.zero_grad()

    micro_step, update = wrap(micro_step), wrap(update)
    losses, grads = [], []
    for i, (x, y) in enumerate(batches(30, 4 * accumulation_steps,
                                       lambda r: regression_data(r, 2))):
        losses.append(micro_step(lib.from_numpy(x), lib.from_numpy(y)).item())
        if (i + 1) % accumulation_steps == 0:
            grads.append(model[0].weight.grad.numpy().copy())
            update()
    assert all(p.grad is None for p in model.parameters())
    return finish(lib, model, tmp, w0, losses, grad=np.stack(grads))


# ---- parameter groups (no decay for biases, a faster head) and a chained schedule ---------

def param_groups(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
                 tmp: Path) -> Run:
    model = mlp(lib)
    w0 = start(lib, model, weights)
    sched_mod = lib.optim.lr_scheduler
    body = [p for n, p in model.named_parameters() if not n.startswith("4.")]
    decay = [p for p in body if p.dim() > 1]
    no_decay = [p for p in body if p.dim() <= 1]
    opt = lib.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                           {"params": no_decay, "weight_decay": 0.0},
                           {"params": model[4].parameters(), "lr": 3e-2}], lr=1e-2)
    warmup = sched_mod.LinearLR(opt, start_factor=0.25, total_iters=2)
    cosine = sched_mod.CosineAnnealingLR(opt, T_max=STEPS - 2, eta_min=1e-4)
    sched = sched_mod.ChainedScheduler([sched_mod.SequentialLR(opt, [warmup, cosine],
                                                               milestones=[2]),
                                        sched_mod.ExponentialLR(opt, gamma=0.95)])
    criterion = lib.nn.SmoothL1Loss(beta=0.5)

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        opt.step()
        return loss

    step = wrap(step)
    losses, lrs = [], []
    for d in batches(31, STEPS, regression_data):
        losses.append(step(*tensors(lib, d)).item())
        sched.step()
        lrs.append([g["lr"] for g in opt.param_groups])
    assert [g["weight_decay"] for g in opt.param_groups] == [0.1, 0.0, 0.01]
    return finish(lib, model, tmp, w0, losses, lrs=np.array(lrs),
                  last_lr=np.array(sched.get_last_lr()))


# ---- a checkpoint saved mid-training and resumed: the losses of an unbroken run -----------

def resume(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
           tmp: Path) -> Run:
    def make() -> tuple[Any, Any, Any]:
        model = mlp(lib)
        opt = lib.optim.Adam(model.parameters(), lr=1e-2, amsgrad=True, weight_decay=1e-3)
        sched = lib.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        return model, opt, sched

    def train(parts: tuple[Any, Any, Any], data: list[tuple[np.ndarray, ...]]) -> list[float]:
        model, opt, sched = parts

        def step(x: Any, y: Any) -> Any:
            opt.zero_grad()
            loss = lib.nn.functional.l1_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss

        step = wrap(step)
        losses = []
        for d in data:
            losses.append(step(*tensors(lib, d)).item())
            sched.step()
        return losses

    data = batches(32, STEPS, regression_data)
    unbroken = make()
    w0 = start(lib, unbroken[0], weights)
    want = train(unbroken, data)

    first = make()
    first[0].load_state_dict({k: lib.from_numpy(v.copy()) for k, v in w0.items()})
    losses = train(first, data[:3])
    path = tmp / "checkpoint.pt"
    lib.save({"epoch": 3, "model_state_dict": first[0].state_dict(),
              "optimizer_state_dict": first[1].state_dict(),
              "scheduler_state_dict": first[2].state_dict(), "loss": losses[-1]}, path)
    del first
    model, opt, sched = make()
    checkpoint = lib.load(path, weights_only=True)
    model.load_state_dict(checkpoint["model_state_dict"])
    opt.load_state_dict(checkpoint["optimizer_state_dict"])
    sched.load_state_dict(checkpoint["scheduler_state_dict"])
    assert checkpoint["epoch"] == 3 and checkpoint["loss"] == losses[-1]
    model.train()
    losses += train((model, opt, sched), data[3:])
    np.testing.assert_allclose(losses, want, rtol=1e-6, atol=1e-7)
    state = opt.state_dict()["state"]
    return finish(lib, model, tmp, w0, losses, lr=opt.param_groups[0]["lr"],
                  max_exp_avg_sq=state[0]["max_exp_avg_sq"].numpy(),
                  step=float(state[0]["step"]))


# ---- transfer learning: a frozen backbone (BatchNorm in eval), a fine-tuned head ----------

def finetune(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
             tmp: Path) -> Run:
    nn = lib.nn
    model = nn.Sequential()
    model.add_module("backbone", nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(),
                                               nn.Linear(8, 8), nn.ReLU()))
    model.add_module("head", nn.Linear(8, 3))
    w0 = start(lib, model, weights)
    frozen = {k: v for k, v in numpy_state(model).items() if k.startswith("backbone.")}
    for param in model.backbone.parameters():
        param.requires_grad = False
    opt = lib.optim.SGD(filter(lambda p: p.requires_grad, model.parameters()), lr=0.1,
                        momentum=0.9)
    criterion = nn.CrossEntropyLoss()

    def step(x: Any, y: Any) -> Any:
        model.train()
        model.backbone.eval()  # frozen BatchNorm: running statistics, no update
        opt.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        return r.standard_normal((6, 4)).astype(np.float32), r.integers(0, 3, 6)

    step = wrap(step)
    losses = [step(*tensors(lib, d)).item() for d in batches(33, STEPS // 2, data)]
    for k, v in numpy_state(model).items():
        if k.startswith("backbone."):
            np.testing.assert_array_equal(v, frozen[k], err_msg=k)
    assert all(p.grad is None for p in model.backbone.parameters())
    # then unfreeze the backbone's last layer with a smaller learning rate
    model.backbone[3].requires_grad_(True)
    opt.add_param_group({"params": model.backbone[3].parameters(), "lr": 0.01})
    losses += [step(*tensors(lib, d)).item() for d in batches(34, STEPS // 2, data)]
    assert model.backbone[0].weight.grad is None and model.backbone[3].weight.grad is not None
    return finish(lib, model, tmp, w0, losses)


# ---- clip_grad_norm_(error_if_nonfinite=True): clips, and refuses an infinite norm --------

def clip_nonfinite(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
                   tmp: Path) -> Run:
    model = mlp(lib)
    w0 = start(lib, model, weights)
    opt = lib.optim.SGD(model.parameters(), lr=0.2)

    def step(x: Any, y: Any, scale: Any) -> tuple[Any, Any]:
        opt.zero_grad()
        loss = (lib.nn.functional.mse_loss(model(x), y) * scale).sum()
        loss.backward()
        norm = lib.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5,
                                            error_if_nonfinite=True)
        opt.step()
        return loss, norm

    step = wrap(step)
    losses, norms, errors = [], [], []
    for i, d in enumerate(batches(35, STEPS, regression_data)):
        scale = lib.tensor([float("inf") if i == 3 else 1.0 + i])
        before = numpy_state(model)
        try:
            loss, norm = step(*tensors(lib, d), scale)
        except RuntimeError as e:
            errors.append(str(e))
            for k, v in numpy_state(model).items():  # the step stopped before opt.step()
                np.testing.assert_array_equal(v, before[k], err_msg=k)
            continue
        losses.append(loss.item())
        norms.append(norm.item())
    assert len(errors) == 1 and "is non-finite, so it cannot be clipped" in errors[0]
    return finish(lib, model, tmp, w0, losses, norms=np.array(norms), error=errors[0])


# ---- inference_mode between training steps, and an inference tensor reused with care ------

def inference_mix(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
                  tmp: Path) -> Run:
    model = mlp(lib)
    w0 = start(lib, model, weights)
    opt = lib.optim.Adam(model.parameters(), lr=1e-2)
    criterion = lib.nn.MSELoss()

    def step(x: Any, y: Any, target_shift: Any) -> Any:
        opt.zero_grad()
        loss = criterion(model(x), y + target_shift)
        loss.backward()
        opt.step()
        return loss

    step = wrap(step)
    losses = []
    shift = lib.zeros(1)
    for x, y in batches(36, STEPS, regression_data):
        x, y = lib.from_numpy(x), lib.from_numpy(y)
        losses.append(step(x, y, shift).item())
        with lib.inference_mode():
            pred = model(x)
            assert pred.is_inference() and not pred.requires_grad
            with lib.inference_mode(mode=False):
                assert lib.is_grad_enabled() and not lib.is_inference_mode_enabled()
            losses.append(criterion(pred, y).item())
        # an inference tensor is saved by mse_loss's backward: PyTorch's workaround, a clone
        criterion(model(x), pred.clone()).backward()
        losses.append(model[0].weight.grad.sum().item())
        opt.zero_grad()
        shift = pred.mean(0).clone() * 0.1  # a clone outside inference mode is a normal tensor
        assert not shift.is_inference()
    return finish(lib, model, tmp, w0, losses)


SCRIPTS: dict[str, Callable[..., Run]] = {
    "accumulate": accumulate,
    "param_groups": param_groups,
    "resume": resume,
    "finetune": finetune,
    "clip_nonfinite": clip_nonfinite,
    "inference_mix": inference_mix,
}


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_script_equals_pytorch(name: str, tmp_path: Path, torch_one_thread: ModuleType  # noqa: F811
                               ) -> None:
    equals_pytorch(SCRIPTS, name, torch_one_thread, tmp_path)


# ---- torch.manual_seed: a seeded run repeats, draws and all -------------------------------

def seeded(lib: ModuleType, seed: int, wrap: Callable[[Step], Step] = as_is) -> list[float]:
    """Initialisation, dropout masks, randn data and a randperm order, all from the global
    generator seeded once."""
    lib.manual_seed(seed)
    nn = lib.nn
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 1))
    opt = lib.optim.SGD(model.parameters(), lr=0.05)
    x, y = lib.randn(12, 4), lib.randn(12, 1)

    def step(xb: Any, yb: Any) -> Any:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    step = wrap(step)
    model.train()
    losses = []
    for _ in range(2):
        order = lib.randperm(12)
        for i in range(0, 12, 4):
            idx = order[i:i + 4]
            losses.append(step(x[idx], y[idx]).item())
    return losses


@pytest.mark.parametrize("lib_name", ["runtime", "torch"])
def test_manual_seed_repeats_a_run(lib_name: str) -> None:
    lib = rt if lib_name == "runtime" else pytest.importorskip("torch")
    first = seeded(lib, 0)
    assert seeded(lib, 0) == first
    assert seeded(lib, 1) != first


def test_generator_state_round_trip_repeats_the_draws() -> None:
    """get_rng_state/set_rng_state, as a resumed script restores the generator."""
    rt.manual_seed(5)
    rt.rand(3)
    state = rt.get_rng_state()
    want = [rt.rand(4).numpy(), rt.randn(2, 2).numpy(), rt.randperm(6).numpy()]
    rt.set_rng_state(state)
    got = [rt.rand(4).numpy(), rt.randn(2, 2).numpy(), rt.randperm(6).numpy()]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_inference_tensor_saved_for_backward_is_pytorchs_error() -> None:
    torch = pytest.importorskip("torch")
    messages = []
    for lib in (torch, rt):
        w = lib.ones(2, requires_grad=True)
        with lib.inference_mode():
            t = lib.ones(2)
        try:
            (w * t).sum().backward()
        except RuntimeError as e:
            messages.append(str(e))
    assert len(messages) == 2 and messages[0] == messages[1]
