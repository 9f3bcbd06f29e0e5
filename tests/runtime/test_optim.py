"""runtime.optim: optimizer bookkeeping (structural) and training parity with torch.optim."""

from __future__ import annotations

import copy
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime import nn, optim


def arr(t: Any) -> np.ndarray:
    """A numpy view of a runtime or torch tensor (detached first: numpy() refuses grad tensors)."""
    return t.detach().numpy()


# ---- bookkeeping ---------------------------------------------------------------------------------


def quadratic_step(opt: optim.Optimizer, params: list[nn.Parameter]) -> None:
    opt.zero_grad()
    sum((p * p).sum() for p in params).backward()
    opt.step()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda ps: optim.SGD(ps, lr=-1), "Invalid learning rate: -1"),
        (lambda ps: optim.SGD(ps, momentum=-0.5), "Invalid momentum value: -0.5"),
        (lambda ps: optim.SGD(ps, weight_decay=-1.0), "Invalid weight_decay value: -1.0"),
        (
            lambda ps: optim.SGD(ps, nesterov=True),
            "Nesterov momentum requires a momentum and zero dampening",
        ),
        (
            lambda ps: optim.SGD(ps, momentum=0.9, dampening=0.1, nesterov=True),
            "Nesterov momentum requires a momentum and zero dampening",
        ),
        (lambda ps: optim.Adam(ps, lr=-1e-3), "Invalid learning rate: -0.001"),
        (lambda ps: optim.Adam(ps, eps=-1.0), "Invalid epsilon value: -1.0"),
        (lambda ps: optim.Adam(ps, betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
        (lambda ps: optim.Adam(ps, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
        (lambda ps: optim.AdamW(ps, weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
        (lambda ps: optim.SGD([], lr=0.1), "optimizer got an empty parameter list"),
    ],
)
def test_invalid_arguments(
    make: Callable[[list[nn.Parameter]], optim.Optimizer], message: str
) -> None:
    with pytest.raises(ValueError) as err:
        make([nn.Parameter(rt.ones(2))])
    assert str(err.value) == message


def test_params_validation() -> None:
    p = nn.Parameter(rt.ones(2))
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        optim.SGD(p, lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([p * 2], lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        optim.SGD([1.0], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {p}}], lr=0.1)
    opt = optim.SGD([p], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": p})


def test_param_groups_and_defaults() -> None:
    a, b, c = (nn.Parameter(rt.ones(2)) for _ in range(3))
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5, "momentum": 0.9}], lr=0.1)
    assert len(opt.param_groups) == 2
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["momentum"] == 0
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["params"] == [b]
    opt.add_param_group({"params": [c], "lr": 0.25})
    assert opt.param_groups[2]["lr"] == 0.25 and opt.param_groups[2]["nesterov"] is False
    quadratic_step(opt, [a, b, c])
    np.testing.assert_allclose(arr(a), 1 - 0.1 * 2)
    np.testing.assert_allclose(arr(b), 1 - 0.5 * 2)
    np.testing.assert_allclose(arr(c), 1 - 0.25 * 2)
    assert "momentum_buffer" in opt.state[b] and a not in opt.state
    assert repr(opt).startswith("SGD (\nParameter Group 0\n    dampening: 0\n")


def test_step_is_in_place_and_skips_params_without_grad() -> None:
    a, b = nn.Parameter(rt.ones(3)), nn.Parameter(rt.ones(3))
    opt = optim.Adam([a, b], lr=0.1)
    version = a._version
    (a * a).sum().backward()
    opt.step()
    assert a._version > version  # updated in place, same object
    np.testing.assert_array_equal(arr(b), 1.0)
    assert b not in opt.state
    assert set(opt.state[a]) == {"step", "exp_avg", "exp_avg_sq"}
    assert opt.state[a]["step"].item() == 1.0
    assert a.requires_grad and a.is_leaf and a.grad_fn is None


def test_amsgrad_state() -> None:
    a = nn.Parameter(rt.ones(3))
    opt = optim.AdamW([a], amsgrad=True)
    quadratic_step(opt, [a])
    assert set(opt.state[a]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}


def test_closure_and_maximize() -> None:
    p = nn.Parameter(rt.tensor([1.0, -2.0]))
    opt = optim.SGD([p], lr=0.1, maximize=True)

    def closure() -> rt.Tensor:
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with rt.no_grad():  # the closure still runs with grad enabled, as in torch
        assert opt.step(closure).item() == pytest.approx(5.0)
    np.testing.assert_allclose(arr(p), [1.2, -2.4], rtol=1e-6)


def test_zero_grad_modes() -> None:
    p = nn.Parameter(rt.ones(2))
    opt = optim.SGD([p], lr=0.1)
    (p * 3).sum().backward()
    grad = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is grad
    np.testing.assert_array_equal(arr(p.grad), 0.0)
    opt.zero_grad()
    assert p.grad is None


def test_state_dict_round_trip_continues_identically() -> None:
    rt.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    x, y = rt.randn(16, 4), rt.randn(16, 2)
    opt = optim.Adam(model.parameters(), lr=0.05, amsgrad=True)

    def train(m: nn.Module, o: optim.Optimizer, steps: int) -> None:
        for _ in range(steps):
            o.zero_grad()
            nn.MSELoss()(m(x), y).backward()
            o.step()

    train(model, opt, 3)
    clone = copy.deepcopy(model)
    opt2 = optim.Adam(clone.parameters(), lr=0.05, amsgrad=True)
    sd = opt.state_dict()
    assert sorted(sd) == ["param_groups", "state"]
    assert sd["param_groups"][0]["params"] == [0, 1, 2, 3]
    assert sorted(sd["state"]) == [0, 1, 2, 3]
    opt2.load_state_dict(sd)
    assert opt2.state[next(clone.parameters())]["step"].item() == 3.0
    assert opt2.state[next(clone.parameters())]["exp_avg"] is not sd["state"][0]["exp_avg"]
    train(model, opt, 3)
    train(clone, opt2, 3)
    for a, b in zip(model.parameters(), clone.parameters()):
        np.testing.assert_array_equal(arr(a), arr(b))


def test_load_state_dict_restores_hyperparameters_and_checks_sizes() -> None:
    a, b = nn.Parameter(rt.ones(2)), nn.Parameter(rt.ones(2))
    src = optim.SGD([a], lr=0.3, momentum=0.5)
    dst = optim.SGD([b], lr=0.1)
    dst.load_state_dict(src.state_dict())
    assert dst.param_groups[0]["lr"] == 0.3 and dst.param_groups[0]["momentum"] == 0.5
    assert dst.param_groups[0]["params"] == [b]
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(src.state_dict())
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        optim.SGD([a, b], lr=0.1).load_state_dict(src.state_dict())


# ---- parity with torch.optim ---------------------------------------------------------------------


def classifier(lib: ModuleType) -> Any:
    return lib.Sequential(
        lib.Linear(10, 32),
        lib.ReLU(),
        lib.Linear(32, 32),
        lib.GELU(),
        lib.LayerNorm(32),
        lib.Linear(32, 5),
    )


def regressor(lib: ModuleType) -> Any:
    return lib.Sequential(
        lib.Linear(10, 16), lib.Tanh(), lib.Linear(16, 16), lib.Sigmoid(), lib.Linear(16, 3)
    )


OPTIMIZERS: list[tuple[str, dict[str, Any]]] = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.2, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.05}),
    ("SGD", {"lr": 0.01, "momentum": 0.5, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "eps": 1e-6}),
    ("Adam", {"lr": 0.005, "maximize": True}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}),
]


def paired(torch: ModuleType, arch: Callable[[ModuleType], Any]) -> tuple[Any, Any]:
    """The same architecture in runtime and torch, with the runtime model's initial weights."""
    rt.manual_seed(0)
    ours, theirs = arch(nn), arch(torch.nn)
    theirs.load_state_dict(
        {k: torch.from_numpy(np.array(arr(v), copy=True)) for k, v in ours.state_dict().items()}
    )
    return ours, theirs


def train_side_by_side(
    torch: ModuleType,
    models: tuple[Any, Any],
    optimizers: tuple[optim.Optimizer, Any],
    loss_name: str,
    dtype: type = np.float32,
    steps: int = 6,
    atol: tuple[float, float] = (2e-6, 1e-7),
) -> None:
    """Run `steps` training steps in both libraries; losses, parameters and state must match
    (``atol``: the parameters' and the optimizer state's absolute tolerances)."""
    (ours, theirs), (opt, topt) = models, optimizers
    rng = np.random.default_rng(0)
    x = rng.standard_normal((24, 10)).astype(dtype)
    classes = theirs[-1].out_features
    y = (
        rng.integers(0, classes, 24)
        if loss_name == "CrossEntropyLoss"
        else rng.standard_normal((24, classes)).astype(dtype)
    )
    loss_fn, tloss_fn = getattr(nn, loss_name)(), getattr(torch.nn, loss_name)()
    for step in range(steps):
        opt.zero_grad()
        topt.zero_grad()
        loss = loss_fn(ours(rt.tensor(x)), rt.tensor(y))
        tloss = tloss_fn(theirs(torch.from_numpy(x)), torch.from_numpy(y))
        np.testing.assert_allclose(
            loss.item(), tloss.item(), rtol=1e-5, err_msg=f"loss at step {step}"
        )
        loss.backward()
        tloss.backward()
        opt.step()
        topt.step()
    for (name, p), tp in zip(ours.named_parameters(), theirs.parameters()):
        # atol: 6 float32 steps whose matmuls split over BLAS threads differently per library
        np.testing.assert_allclose(arr(p), arr(tp), rtol=1e-5, atol=atol[0], err_msg=name)
    for p, tp in zip(ours.parameters(), theirs.parameters()):
        for key, value in topt.state[tp].items():
            np.testing.assert_allclose(
                arr(opt.state[p][key]), arr(value), rtol=1e-5, atol=atol[1], err_msg=key
            )


@pytest.mark.parametrize(
    ("arch", "loss_name"), [(classifier, "CrossEntropyLoss"), (regressor, "MSELoss")]
)
@pytest.mark.parametrize(("opt_name", "kwargs"), OPTIMIZERS)
def test_training_matches_torch(
    arch: Callable[[ModuleType], Any], loss_name: str, opt_name: str, kwargs: dict[str, Any]
) -> None:
    torch = pytest.importorskip("torch")
    ours, theirs = paired(torch, arch)
    opt = getattr(optim, opt_name)(ours.parameters(), **kwargs)
    topt = getattr(torch.optim, opt_name)(theirs.parameters(), foreach=False, **kwargs)
    train_side_by_side(torch, (ours, theirs), (opt, topt), loss_name)


@pytest.mark.parametrize("opt_name", ["SGD", "Adam", "AdamW"])
def test_param_groups_match_torch(opt_name: str) -> None:
    torch = pytest.importorskip("torch")
    ours, theirs = paired(torch, classifier)

    def groups(model: Any) -> list[dict[str, Any]]:
        first, rest = list(model[0].parameters()), list(model[2:].parameters())
        return [{"params": first, "lr": 0.02, "weight_decay": 0.05}, {"params": rest}]

    extra = {"momentum": 0.9} if opt_name == "SGD" else {"betas": (0.85, 0.995)}
    opt = getattr(optim, opt_name)(groups(ours), lr=0.05, **extra)
    topt = getattr(torch.optim, opt_name)(groups(theirs), lr=0.05, foreach=False, **extra)
    train_side_by_side(torch, (ours, theirs), (opt, topt), "CrossEntropyLoss")


@pytest.mark.parametrize("opt_name", ["SGD", "AdamW"])
def test_float64_training_matches_torch(opt_name: str) -> None:
    torch = pytest.importorskip("torch")
    ours, theirs = paired(torch, regressor)
    ours.double()
    theirs.double()
    kwargs = {"lr": 0.05, "momentum": 0.9, "nesterov": True} if opt_name == "SGD" else {"lr": 0.01}
    opt = getattr(optim, opt_name)(ours.parameters(), **kwargs)
    topt = getattr(torch.optim, opt_name)(theirs.parameters(), foreach=False, **kwargs)
    train_side_by_side(torch, (ours, theirs), (opt, topt), "MSELoss", dtype=np.float64)
    assert all(p.dtype == rt.float64 for p in ours.parameters())
    assert all(s["exp_avg"].dtype == rt.float64 for s in opt.state.values() if "exp_avg" in s)
