"""Compiled training steps for every optimizer (h24's port of PyTorch's optimizer tests):
``zero_grad(); loss.backward(); opt.step()`` under planner.compile against the same step run
eagerly, over 5 calls, with a representative option set each (maximize, amsgrad, nesterov,
foreach, fused, tensor lr, weight decay, ...): the same losses, parameters, gradients and
every state tensor after every call; one capture, no fallback; a hyperparameter changed
between calls replays the same plan with the new value. LBFGS with a closure re-evaluates
the loss in Python loops that read tensor values: it falls back to eager, with a warning."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from runtime import nn, optim

# (optimizer, what to change between calls 3 and 4: a group's key and its new value, or a
# tensor lr's new value filled in place)
CASES: dict[str, tuple[Callable[[Any], Any], tuple[str, Any]]] = {
    "sgd_nesterov_foreach": (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True,
                                                  weight_decay=0.1, foreach=True),
                             ("momentum", 0.5)),
    "sgd_dampening_maximize": (lambda ps: optim.SGD(ps, lr=0.05, momentum=0.9, dampening=0.5,
                                                    maximize=True), ("lr", 0.02)),
    "adam_amsgrad_maximize_tensor_lr": (
        lambda ps: optim.Adam(ps, lr=rt.tensor(0.01), amsgrad=True, maximize=True,
                              weight_decay=0.1), ("lr", 0.005)),
    "adam_tensor_betas": (lambda ps: optim.Adam(ps, lr=rt.tensor(0.01),
                                                betas=(rt.tensor(0.8), rt.tensor(0.99))),
                          ("betas", (0.7, 0.95))),
    "adamw_amsgrad_fused": (lambda ps: optim.AdamW(ps, lr=0.01, amsgrad=True, fused=True),
                            ("weight_decay", 0.2)),
    "adamax_maximize": (lambda ps: optim.Adamax(ps, lr=0.05, weight_decay=0.1, maximize=True),
                        ("lr", 0.01)),
    "nadam_decoupled": (lambda ps: optim.NAdam(ps, lr=0.01, weight_decay=0.1,
                                               momentum_decay=6e-3,
                                               decoupled_weight_decay=True),
                        ("momentum_decay", 0.5)),
    "radam_maximize_foreach": (lambda ps: optim.RAdam(ps, lr=0.01, weight_decay=0.1,
                                                      maximize=True, foreach=True),
                               ("lr", 0.05)),
    "adagrad_lr_decay_fused": (lambda ps: optim.Adagrad(ps, lr=0.1, lr_decay=0.5,
                                                        weight_decay=0.1,
                                                        initial_accumulator_value=0.1,
                                                        fused=True), ("lr", 0.05)),
    "adadelta_tensor_lr": (lambda ps: optim.Adadelta(ps, lr=rt.tensor(0.5), rho=0.95,
                                                     weight_decay=0.1, maximize=True),
                           ("lr", 0.25)),
    "rmsprop_centered_momentum": (lambda ps: optim.RMSprop(ps, lr=0.01, weight_decay=0.1,
                                                           centered=True, momentum=0.1),
                                  ("momentum", 0.3)),
    "rprop_maximize": (lambda ps: optim.Rprop(ps, lr=0.01, etas=(0.5, 1.5), maximize=True),
                       ("etas", (0.4, 1.3))),
    "asgd_t0": (lambda ps: optim.ASGD(ps, lr=0.02, t0=2, weight_decay=0.1), ("lambd", 0.5)),
    "adafactor_maximize": (lambda ps: optim.Adafactor(ps, lr=0.01, weight_decay=0.1,
                                                      maximize=True), ("d", 1.5)),
    "muon": (lambda ps: optim.Muon(ps, lr=0.02, weight_decay=0.1, momentum=0.9),
             ("momentum", 0.8)),
}


def build(name: str) -> tuple[Any, Any]:
    rt.manual_seed(0)
    bias = name != "muon"  # Muon takes 2-D parameters only
    model = nn.Sequential(nn.Linear(4, 5, bias=bias), nn.Tanh(), nn.Linear(5, 2, bias=bias))
    return model, CASES[name][0](list(model.parameters()))


def train(model: Any, opt: Any, x: Any, y: Any) -> Any:
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()


def batches(n: int) -> list[tuple[Any, Any]]:
    rng = np.random.default_rng(4)
    return [(rt.from_numpy(rng.standard_normal((3, 4)).astype(np.float32)),
             rt.from_numpy(rng.standard_normal((3, 2)).astype(np.float32))) for _ in range(n)]


def change(opt: Any, key: str, value: Any) -> None:
    """Set every group's ``key`` to ``value`` (a tensor setting filled in place, as a
    scheduler does)."""
    for group in opt.param_groups:
        if isinstance(group[key], rt.Tensor):
            group[key].fill_(value)
        elif isinstance(group[key], tuple) and isinstance(group[key][0], rt.Tensor):
            for setting, new in zip(group[key], value, strict=True):
                setting.fill_(new)
        else:
            group[key] = value


def _close(actual: Any, expected: Any, what: str = "") -> None:
    np.testing.assert_allclose(actual.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6,
                               err_msg=what)


def assert_same(model: Any, opt: Any, ref: Any, ref_opt: Any) -> None:
    """Parameters, gradients and every state entry (to float32 rounding: a compiled tanh
    and its fused backward round in their own way, a last bit here and there)."""
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        _close(p.detach(), q.detach())
        _close(p.grad, q.grad)
        assert list(opt.state[p]) == list(ref_opt.state[q])
        for key, value in ref_opt.state[q].items():
            mine = opt.state[p][key]
            assert type(mine) is type(value), key
            if isinstance(value, rt.Tensor):
                assert (mine.dtype, mine.shape) == (value.dtype, value.shape), key
                _close(mine, value, key)


@pytest.mark.parametrize("name", list(CASES))
def test_compiled_step_matches_eager_and_replays(name: str) -> None:
    (model, opt), (ref, ref_opt), (unchanged, unchanged_opt) = (build(name) for _ in range(3))
    step = planner.compile(train)
    key, value = CASES[name][1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager
        for i, (x, y) in enumerate(batches(5)):
            if i == 3:  # a new value, read by the same plan at its next replay
                change(opt, key, value)
                change(ref_opt, key, value)
            _close(step(model, opt, x, y), train(ref, ref_opt, x, y))
            assert_same(model, opt, ref, ref_opt)
            train(unchanged, unchanged_opt, x, y)
    # the change shows (beyond the tolerance): a plan that kept the old value would fail
    assert any(not np.allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-5)
               for p, q in zip(ref.parameters(), unchanged.parameters(), strict=True))
    # SGD's first momentum buffer is the gradient itself, not a zero buffer updated, where
    # dampening is nonzero: the first call runs eagerly to make it (a warm-up, no warning)
    warmups = 1 if opt.param_groups[0].get("dampening", 0) != 0 else 0
    assert (step.captures, step.warmups) == (1, warmups)


def test_lbfgs_with_a_closure_falls_back_with_a_warning() -> None:
    """LBFGS's step reads the loss and the gradient's values in Python (its stopping tests,
    its line search) and calls the closure a number of times those decide: no plan can
    hold it, so the compiled step warns and runs eagerly, with eager's results."""
    def lbfgs_step(model: Any, opt: Any, x: Any, y: Any) -> Any:
        def closure() -> Any:
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            return loss
        return opt.step(closure).detach()

    results = []
    for compiled in (True, False):
        rt.manual_seed(0)
        model = nn.Linear(4, 2)
        opt = optim.LBFGS(model.parameters(), max_iter=4)
        fn = planner.compile(lbfgs_step) if compiled else lbfgs_step
        losses = []
        for i, (x, y) in enumerate(batches(2)):
            if compiled and i == 0:  # the first call warns; later ones run eagerly quietly
                with pytest.warns(RuntimeWarning, match="runs eagerly: Tensor.item"):
                    losses.append(fn(model, opt, x, y).numpy())
            else:
                losses.append(fn(model, opt, x, y).numpy())
        results.append((losses, [p.detach().numpy().copy() for p in model.parameters()]))
    (losses, params), (ref_losses, ref_params) = results
    np.testing.assert_array_equal(losses, ref_losses)
    for p, q in zip(params, ref_params, strict=True):
        np.testing.assert_array_equal(p, q)


class _PlainSGD(optim.Optimizer):
    """A user's optimizer in torch's style: its step reads each setting as a Python number."""

    def __init__(self, params: Any, lr: float = 0.1, momentum: float = 0.0) -> None:
        super().__init__(params, {"lr": lr, "momentum": momentum})

    @rt.no_grad()
    def step(self, closure: Any = None) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                d = p.grad
                if group["momentum"]:
                    state = self.state[p]
                    if "buf" not in state:
                        state["buf"] = d.clone()
                    else:
                        state["buf"].mul_(group["momentum"]).add_(d)
                    d = state["buf"]
                p.add_(d, alpha=-group["lr"])


@pytest.mark.parametrize(("make", "key", "value"), [
    (lambda ps: _PlainSGD(ps, lr=0.1), "lr", 0.01),
    (lambda ps: _PlainSGD(ps, lr=0.1, momentum=0.9), "momentum", 0.5),
    (lambda ps: optim.Muon(ps, lr=0.02), "eps", 10.0),
    (lambda ps: optim.Muon(ps, lr=0.02), "ns_coefficients", (3.0, -3.2, 1.2)),
], ids=["user_lr", "user_momentum", "muon_eps", "muon_ns_coefficients"])
def test_a_setting_the_step_reads_as_a_number_is_guarded_by_value(
        make: Callable[[Any], Any], key: str, value: Any) -> None:
    """A setting an update reads as a Python number (a user's optimizer reading
    group["lr"], Muon's eps and Newton-Schulz coefficients), not through Optimizer._hyper,
    is a constant of the plan: changed between calls, the step captures again and uses the
    new value. Here the plan kept the old one, guarded only by the number's type and
    whether it is zero: silently eager's results no more."""
    results = []
    for compiled in (True, False):
        rt.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 5, bias=False), nn.Tanh(),
                              nn.Linear(5, 2, bias=False))
        opt = make(list(model.parameters()))
        fn = planner.compile(train) if compiled else train
        for i, (x, y) in enumerate(batches(4)):
            if i == 2:
                opt.param_groups[0][key] = value
            fn(model, opt, x, y)
        results.append([p.detach().numpy().copy() for p in model.parameters()])
        if compiled:
            assert fn.captures == 2
    for p, q in zip(*results, strict=True):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)


def test_a_setting_the_update_never_reads_is_not_guarded_by_value() -> None:
    """Rprop reads its lr only to start each step size (state made outside the capture): a
    schedule changing it replays the one plan, as for the settings a plan reads at each
    replay, rather than capturing again at every call."""
    results = []
    for compiled in (True, False):
        model, _ = build("rprop_maximize")
        opt = optim.Rprop(model.parameters(), lr=0.01)
        sched = optim.lr_scheduler.ExponentialLR(opt, 0.5)
        fn = planner.compile(train) if compiled else train
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for x, y in batches(4):
                fn(model, opt, x, y)
                sched.step()
        results.append([p.detach().numpy().copy() for p in model.parameters()])
        if compiled:
            assert (fn.captures, fn.warmups) == (1, 0)
    for p, q in zip(*results, strict=True):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)
