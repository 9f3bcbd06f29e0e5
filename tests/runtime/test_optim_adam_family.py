"""Adamax, NAdam, RAdam and Adadelta: the update against torch.optim given the same gradients
(state included), training parity, torch's argument errors, state dicts, and a compiled loop
equal to eager with a schedule changing lr without recompiling."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from runtime import nn, optim
from tests.runtime.test_optim import classifier, paired, train_side_by_side

CONFIGS: list[tuple[str, dict[str, Any]]] = [
    ("Adamax", {}),
    ("Adamax", {"lr": 0.01, "betas": (0.8, 0.99), "weight_decay": 0.01, "maximize": True}),
    ("NAdam", {}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.01, "momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {}),
    ("RAdam", {"lr": 0.01, "betas": (0.9, 0.9), "weight_decay": 0.01}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-5, "weight_decay": 0.01, "maximize": True}),
]


@pytest.mark.parametrize(("opt_name", "kwargs"), CONFIGS)
def test_update_matches_torch_given_the_same_gradients(opt_name: str,
                                                       kwargs: dict[str, Any]) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    w = rng.standard_normal((20, 30)).astype(np.float32)
    p, q = rt.tensor(w.copy(), requires_grad=True), torch.tensor(w.copy(), requires_grad=True)
    opt = getattr(optim, opt_name)([p], **kwargs)
    topt = getattr(torch.optim, opt_name)([q], foreach=False, **kwargs)
    for _ in range(12):  # RAdam's rectification starts at step 6 for beta2 = 0.999
        g = rng.standard_normal(w.shape).astype(np.float32)
        p.grad, q.grad = rt.tensor(g), torch.tensor(g)
        opt.step()
        topt.step()
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=2e-6,
                                   atol=1e-6)
    assert opt.state[p].keys() == topt.state[q].keys()
    for key, value in topt.state[q].items():
        np.testing.assert_allclose(opt.state[p][key].numpy(), value.numpy(), rtol=2e-6,
                                   atol=1e-7, err_msg=key)


@pytest.mark.parametrize(("opt_name", "kwargs"), [c for c in CONFIGS if not c[1]])
def test_training_matches_torch(opt_name: str, kwargs: dict[str, Any]) -> None:
    torch = pytest.importorskip("torch")
    ours, theirs = paired(torch, classifier)
    opt = getattr(optim, opt_name)(ours.parameters(), **kwargs)
    topt = getattr(torch.optim, opt_name)(theirs.parameters(), foreach=False, **kwargs)
    train_side_by_side(torch, (ours, theirs), (opt, topt), "CrossEntropyLoss")


@pytest.mark.parametrize(("opt_name", "kwargs", "message"), [
    ("Adamax", {"lr": -1.0}, "Invalid learning rate: -1.0"),
    ("Adamax", {"betas": (1.0, 0.9)}, "Invalid beta parameter at index 0: 1.0"),
    ("NAdam", {"eps": -1.0}, "Invalid epsilon value: -1.0"),
    ("NAdam", {"momentum_decay": -1.0}, "Invalid momentum_decay value: -1.0"),
    ("RAdam", {"betas": (0.9, 1.5)}, "Invalid beta parameter at index 1: 1.5"),
    ("RAdam", {"weight_decay": -1.0}, "Invalid weight_decay value: -1.0"),
    ("Adadelta", {"rho": 1.5}, "Invalid rho value: 1.5"),
])
def test_invalid_arguments_match_torch(opt_name: str, kwargs: dict[str, Any],
                                       message: str) -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError) as ours:
        getattr(optim, opt_name)([nn.Parameter(rt.ones(2))], **kwargs)
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, opt_name)([torch.nn.Parameter(torch.ones(2))], **kwargs)
    assert str(ours.value) == str(theirs.value) == message


@pytest.mark.parametrize("opt_name", ["Adamax", "NAdam", "RAdam", "Adadelta"])
def test_state_dict_round_trip_continues_identically(opt_name: str) -> None:
    rt.manual_seed(0)
    a, b = nn.Linear(6, 3), nn.Linear(6, 3)
    opt_a = getattr(optim, opt_name)(a.parameters())
    x = rt.randn(8, 6)

    def step(model: Any, opt: Any) -> None:
        opt.zero_grad()
        (model(x) ** 2).mean().backward()
        opt.step()

    step(a, opt_a)
    b.load_state_dict(a.state_dict())
    opt_b = getattr(optim, opt_name)(b.parameters())
    opt_b.load_state_dict(opt_a.state_dict())
    for _ in range(3):
        step(a, opt_a)
        step(b, opt_b)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


@pytest.mark.parametrize(("opt_name", "kwargs"), [
    ("Adamax", {"weight_decay": 1e-3}), ("NAdam", {"decoupled_weight_decay": True,
                                                   "weight_decay": 0.1}),
    ("RAdam", {}), ("Adadelta", {"weight_decay": 1e-3})])
def test_compiled_loop_equals_eager(opt_name: str, kwargs: dict[str, Any]) -> None:
    def build() -> tuple[Any, Any]:
        rt.manual_seed(0)
        model = nn.Sequential(nn.Linear(10, 16), nn.Tanh(), nn.Linear(16, 3))
        return model, getattr(optim, opt_name)(model.parameters(), lr=0.01, **kwargs)

    def train(model: Any, opt: Any, x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    (model, opt), (ref, ref_opt) = build(), build()
    step = planner.compile(train)
    rng = np.random.default_rng(0)
    x = rt.from_numpy(rng.standard_normal((12, 10)).astype(np.float32))
    y = rt.from_numpy(rng.standard_normal((12, 3)).astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for i in range(9):  # past RAdam's switch to rectified steps
            for o in (opt, ref_opt):
                o.param_groups[0]["lr"] = 0.01 / (1 + i)
            np.testing.assert_allclose(step(model, opt, x, y).item(),
                                       train(ref, ref_opt, x, y).item(), rtol=1e-5)
    assert (step.captures, step.warmups) == (1, 0)  # state made outside the capture
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-7)
