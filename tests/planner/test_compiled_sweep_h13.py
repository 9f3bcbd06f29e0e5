"""Compiled training steps against eager mode (h13's sweep of training-loop patterns): the
same parameters, gradients, optimizer state and returned values after every call."""

from __future__ import annotations

import functools
import io
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

_WEIGHTS = {0: 1.0, 1: 2.0, 2: 3.0}


@functools.lru_cache
def _scale_of(n: int) -> float:
    return 1.0 + n / 2


# a number argument looked up by its hash: the stand-in a capture passes must not be
# hashed by its id, which no key equals (the lookup missed: 0.0, False, silently)
_LOOKUPS: dict[str, Callable[[int], float]] = {
    "dict_get": lambda it: _WEIGHTS.get(it % 3, 0.0),
    "set_member": lambda it: 5.0 if it in {1, 4} else 1.0,
    "dict_literal_key": lambda it: {it: 2.0}.get(1, 0.5),
    "lru_cache": lambda it: _scale_of(it % 2),
}


def _train(lookup: Callable[[int], float], compiled: bool) -> list[Any]:
    w = rt.tensor([1.0, -2.0, 0.5], requires_grad=True)
    opt = rt.optim.SGD([w], lr=0.1)

    def step(x: rt.Tensor, it: int) -> rt.Tensor:
        opt.zero_grad()
        loss = (w * x).pow(2).sum() * lookup(it)
        loss.backward()
        opt.step()
        return loss

    run = planner.compile(step) if compiled else step
    x = rt.tensor([0.5, 0.25, 1.0])
    return [float(run(x, it)) for it in range(6)] + w.detach().numpy().tolist()


@pytest.mark.parametrize("name", sorted(_LOOKUPS))
def test_a_number_argument_looked_up_by_hash_is_its_value(name: str) -> None:
    eager = _train(_LOOKUPS[name], compiled=False)
    compiled = _train(_LOOKUPS[name], compiled=True)
    np.testing.assert_allclose(compiled, eager, rtol=1e-6)


def _step_first(opt_name: str, compiled: bool) -> tuple[list[Any], list[float]]:
    """A loop stepping the optimizer before the backward (the first call's step finds no
    gradient), its lr halved by a scheduler between calls: the optimizer state's entries
    after each call, and the losses, weights and state values."""
    rt.manual_seed(0)
    model = rt.nn.Linear(4, 3)
    opt = {"rprop": rt.optim.Rprop, "asgd": rt.optim.ASGD,
           "adam": rt.optim.Adam}[opt_name](model.parameters(), lr=0.01)
    sched = rt.optim.lr_scheduler.ExponentialLR(opt, 0.5)

    def step(x: rt.Tensor) -> rt.Tensor:
        opt.step()
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        return loss

    run = planner.compile(step) if compiled else step
    entries: list[Any] = []
    values: list[float] = []
    for i in range(4):
        values.append(float(run(rt.ones(5, 4) * (i + 1))))
        sched.step()
        values += model.weight.detach().numpy().ravel().tolist()
        for index, state in opt.state_dict()["state"].items():
            for name, value in sorted(state.items()):
                entries.append((i, index, name))
                values += np.ravel(rt.as_tensor(value).numpy()).tolist()
    return entries, values


@pytest.mark.parametrize("opt_name", ["rprop", "asgd", "adam"])
def test_optimizer_state_made_when_eager_mode_makes_it(opt_name: str) -> None:
    # the capture after the first (eager) call made the optimizer's state for its plan:
    # Adam's zeros showed in state_dict() a call early, Rprop's step sizes and ASGD's eta
    # took the lr of then, not the halved lr of the step that first finds a gradient
    eager_entries, eager_values = _step_first(opt_name, False)
    entries, values = _step_first(opt_name, True)
    assert entries == eager_entries
    np.testing.assert_allclose(values, eager_values, rtol=1e-6)


def _resumed() -> tuple[rt.nn.Module, Any, Any]:
    """A model, SGD and StepLR resumed from a checkpoint of two steps (rt.save / rt.load):
    the scheduler's last lr equals the optimizer's, but is another float object."""
    def make() -> tuple[rt.nn.Module, Any, Any]:
        rt.manual_seed(0)
        model = rt.nn.Linear(4, 3)
        opt = rt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        return model, opt, rt.optim.lr_scheduler.StepLR(opt, 1, 0.5)

    model, opt, sched = make()
    for _ in range(2):
        opt.zero_grad()
        model(rt.ones(2, 4)).sum().backward()
        opt.step()
        sched.step()
    buffer = io.BytesIO()
    rt.save({"model": model.state_dict(), "opt": opt.state_dict(),
             "sched": sched.state_dict()}, buffer)
    buffer.seek(0)
    checkpoint = rt.load(buffer)
    model, opt, sched = make()
    model.load_state_dict(checkpoint["model"])
    opt.load_state_dict(checkpoint["opt"])
    sched.load_state_dict(checkpoint["sched"])
    return model, opt, sched


def _resumed_run(where: str, compiled: bool) -> tuple[list[float], list[str]]:
    model, opt, sched = _resumed()

    def step(x: rt.Tensor) -> Any:
        before = sched.get_last_lr()[0]
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        if where != "outside":
            sched.step()
        return loss, before if where == "before" else sched.get_last_lr()[0]

    run = planner.compile(step) if compiled else step
    got = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(4):
            loss, lr = run(rt.ones(2, 4) * (i + 1))
            got += [float(loss), lr]
            if where == "outside":
                sched.step()
    return got + model.weight.detach().numpy().ravel().tolist(), [str(w.message)
                                                                   for w in caught]


@pytest.mark.parametrize("where", ["after", "before", "outside"])
def test_last_lr_returned_after_resuming_from_a_checkpoint(where: str) -> None:
    # the loaded last lr is not the group's own float: a plan returned it as a constant
    # (0.025 at every call; read after sched.step() inside the step, or before it, or with
    # the schedule stepped between calls)
    eager, _ = _resumed_run(where, compiled=False)
    got, messages = _resumed_run(where, compiled=True)
    first = 0.0125 if where == "after" else 0.025
    assert eager[1:8:2] == [first, first / 2, first / 4, first / 8]
    np.testing.assert_allclose(got, eager, rtol=1e-6)
    if where == "outside":  # read from the optimizer's group at each replay: no fallback
        assert not messages, messages


BASE_LR = 0.1


def _config_lr_run(returned: str, compiled: bool) -> tuple[list[Any], list[str]]:
    """An optimizer made with the config's float (``BASE_LR``), scheduled between calls; the
    step returns that config value, or it and the group's lr, or the optimizer's defaults,
    the scheduler's base lr or the group's initial lr (each that float, as they were)."""
    rt.manual_seed(0)
    model = rt.nn.Linear(4, 3)
    opt = rt.optim.SGD(model.parameters(), lr=BASE_LR)
    sched = rt.optim.lr_scheduler.ExponentialLR(opt, 0.5)
    cfg = {"lr": BASE_LR}

    def train(x: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    # one function each: a step's code is read whole for the paths it may read
    def global_lr(x: rt.Tensor) -> Any:
        return train(x), BASE_LR

    def config_lr(x: rt.Tensor) -> Any:
        return train(x), cfg["lr"]

    def both(x: rt.Tensor) -> Any:
        return train(x), cfg["lr"], opt.param_groups[0]["lr"]

    def defaults(x: rt.Tensor) -> Any:
        return train(x), opt.defaults["lr"]

    def base(x: rt.Tensor) -> Any:
        return train(x), sched.base_lrs[0], opt.param_groups[0]["initial_lr"]

    def assigned(x: rt.Tensor) -> Any:  # the group's lr set to the config's float: that float
        return train(x), cfg["lr"], opt.param_groups[0]["lr"]

    if returned == "assigned":
        opt.param_groups[0]["lr"] = cfg["lr"]
    step = {"global": global_lr, "config": config_lr, "both": both, "defaults": defaults,
            "base": base, "assigned": assigned}[returned]
    run = planner.compile(step) if compiled else step
    got = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(3):
            got.append([float(v) for v in run(rt.ones(2, 4) * (i + 1))])
            sched.step()
    return got, _planner_warnings(caught)


@pytest.mark.parametrize("returned", ["global", "config", "both", "defaults", "base",
                                      "assigned"])
def test_a_returned_config_lr_is_not_the_scheduled_lr(returned: str) -> None:
    # the float the optimizer was made with (or the scheduler's copy of it), returned: the
    # group's lr was that very float, so a plan read the group's lr at each replay (0.1,
    # 0.05, 0.025) for the constant 0.1
    eager, _ = _config_lr_run(returned, compiled=False)
    assert [row[1] for row in eager] == [0.1, 0.1, 0.1]
    got, messages = _config_lr_run(returned, compiled=True)
    np.testing.assert_allclose(got, eager, rtol=1e-6)
    # one float for both (the config's, the group's lr set to it): the step runs eagerly
    assert bool(messages) == (returned == "assigned"), messages


def test_a_step_reading_an_item_is_not_captured_at_every_new_iteration_number() -> None:
    # the step reads loss.item(), whatever its int argument: each new value was captured
    # again (into the same fallback, with its warning), making every call slower than eager
    def run(compiled: bool) -> tuple[list[float], int]:
        rt.manual_seed(0)
        model = rt.nn.Linear(4, 3)
        opt = rt.optim.SGD(model.parameters(), lr=0.1)

        def step(x: rt.Tensor, it: int) -> rt.Tensor:
            opt.zero_grad()
            loss = model(x).pow(2).mean() * (1 + it % 2)
            loss.backward()
            if loss.item() > 1e6:
                raise RuntimeError("diverged")
            opt.step()
            return loss

        fn = planner.compile(step) if compiled else step
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            losses = [float(fn(rt.ones(2, 4) * (it + 1) / 8, it)) for it in range(8)]
        return losses + model.weight.detach().numpy().ravel().tolist(), len(caught)

    eager, _ = run(compiled=False)
    got, fallbacks = run(compiled=True)
    np.testing.assert_allclose(got, eager, rtol=1e-6)
    assert fallbacks == 2  # the first call's, and the first with the int as an input


def _cycled_momentum_run(inside: bool, compiled: bool) -> tuple[list[float], list[str]]:
    rt.manual_seed(0)
    model = rt.nn.Linear(4, 3)
    opt = rt.optim.Adam(model.parameters(), lr=0.1)
    sched = rt.optim.lr_scheduler.OneCycleLR(opt, 0.5, total_steps=10)

    def step(x: rt.Tensor) -> Any:
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        if inside:
            sched.step()
        return loss, opt.param_groups[0]["betas"][0]

    run = planner.compile(step) if compiled else step
    got = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(4):
            loss, beta1 = run(rt.ones(2, 4))
            got += [float(loss), beta1]
            if not inside:
                sched.step()
    return got, _planner_warnings(caught)


@pytest.mark.parametrize("inside", [False, True])
def test_a_returned_beta_that_a_schedule_cycles_is_read_at_each_call(inside: bool) -> None:
    # betas[0], an element of a tuple setting, was returned as the constant the capture met
    # (0.95 at every call, where OneCycleLR makes it 0.9, 0.85, ...); with the schedule
    # stepped inside the step its value is from before that step: the step runs eagerly
    eager, _ = _cycled_momentum_run(inside, compiled=False)
    got, messages = _cycled_momentum_run(inside, compiled=True)
    np.testing.assert_allclose(got, eager, rtol=1e-6)
    assert bool(messages) == inside, messages


def test_new_tensor_of_a_float_argument_warns_as_eager_mode_does() -> None:
    # x.new_tensor(lr) with a Python float warns of nothing; its capture warned PyTorch's
    # "To copy construct from a tensor" for the float's stand-in
    w = rt.ones(4, requires_grad=True)
    opt = rt.optim.SGD([w], lr=0.1)

    def step(x: rt.Tensor, scale: float) -> rt.Tensor:
        opt.zero_grad()
        loss = (x * w * x.new_tensor(scale)).sum()
        loss.backward()
        opt.step()
        return loss

    compiled = planner.compile(step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        losses = [float(compiled(rt.ones(4), 0.1 * (i + 1))) for i in range(3)]
    np.testing.assert_allclose(losses, [0.4, 0.792, 1.164], rtol=1e-6)
    assert not caught, [str(w.message) for w in caught]


def _eval_after_forward_run(compiled: bool) -> list[Any]:
    rt.manual_seed(0)
    model = rt.nn.Sequential(rt.nn.Linear(4, 8), rt.nn.BatchNorm1d(8), rt.nn.Linear(8, 3))
    opt = rt.optim.SGD(model.parameters(), lr=0.1)

    def step(x: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        out = model(x)
        model.eval()  # the forward above ran in training mode
        loss = out.pow(2).mean()
        loss.backward()
        opt.step()
        if loss.item() > 1e9:  # reads a value: the step runs eagerly
            raise RuntimeError("diverged")
        return loss

    run = planner.compile(step) if compiled else step
    got: list[Any] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(3):
            model.train()
            x = rt.ones(6, 4) * (i + 1) + rt.arange(6).reshape(6, 1)
            got += [float(run(x)), model.training, int(model[1].num_batches_tracked)]
    return got + model[1].running_mean.numpy().tolist()


def test_a_fallback_runs_from_the_modes_the_capture_met() -> None:
    # the capture ran the step's model.eval() for real and left it: the call then ran
    # eagerly with its forward in eval mode (another loss, running stats not updated)
    eager = _eval_after_forward_run(compiled=False)
    assert eager[1:3] == [False, 1]
    np.testing.assert_allclose(_eval_after_forward_run(compiled=True), eager, rtol=1e-6)


def test_a_param_group_added_in_the_step_is_added_once() -> None:
    # the capture ran opt.add_param_group for real and kept the group: the call, run eagerly
    # after it, added it again (ValueError: some parameters appear in more than one group)
    def run(compiled: bool) -> list[Any]:
        rt.manual_seed(0)
        model, head = rt.nn.Linear(4, 3), rt.nn.Linear(3, 3)
        opt = rt.optim.SGD(model.parameters(), lr=0.1)

        def step(x: rt.Tensor, it: int) -> rt.Tensor:
            if it == 2:  # the head starts training at the third call
                opt.add_param_group({"params": head.parameters(), "lr": 0.05})
            opt.zero_grad()
            loss = head(model(x)).pow(2).mean()
            loss.backward()
            opt.step()
            return loss

        fn = planner.compile(step) if compiled else step
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the call adding the group runs eagerly
            losses = [float(fn(rt.ones(2, 4) * (it + 1), it)) for it in range(5)]
        return losses + [len(opt.param_groups)] + head.weight.detach().numpy().ravel().tolist()

    np.testing.assert_allclose(run(compiled=True), run(compiled=False), rtol=1e-6)


def _hook_once_run(kind: str, at: int, reads_item: bool, compiled: bool) -> list[float]:
    rt.manual_seed(0)
    model = rt.nn.Linear(4, 3)
    opt = rt.optim.Adam(model.parameters(), lr=0.1)  # a fresh Adam: the first call is eager

    def step(x: rt.Tensor, it: int) -> rt.Tensor:
        if it == at:
            if kind == "gradient":
                model.weight.register_hook(lambda g: g * 2)
            else:
                model.register_forward_hook(lambda module, args, out: out * 2)
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        if reads_item and loss.item() > 1e9:  # reads a value: the step runs eagerly
            raise RuntimeError("diverged")
        return loss

    fn = planner.compile(step) if compiled else step
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        losses = [float(fn(rt.ones(2, 4) * 0.1 * (it + 1), it)) for it in range(4)]
    return losses + model.weight.detach().numpy().ravel().tolist()


@pytest.mark.parametrize("kind", ["gradient", "forward"])
@pytest.mark.parametrize("at", [0, 1])
@pytest.mark.parametrize("reads_item", [False, True])
def test_a_hook_the_step_registers_once_is_registered_once(kind: str, at: int,
                                                           reads_item: bool) -> None:
    # the capture registered the hook for real, and the call run eagerly after it (a fallback,
    # a fresh optimizer's first call) registered it again: the hook ran twice from then on
    eager = _hook_once_run(kind, at, reads_item, compiled=False)
    np.testing.assert_allclose(_hook_once_run(kind, at, reads_item, compiled=True), eager,
                               rtol=1e-5)


def _planner_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    """The planner's own warnings: not, say, the os.fork() warning of a JAX that another test
    imported (the background compile forks)."""
    return [str(w.message) for w in caught if str(w.message).startswith("planner")]
