"""The optimizers' eager updates bit for bit as torch's single-tensor (for-loop) updates on CPU
float32: 20 steps of each optimizer and option combination from the same weights, with the
same gradients each step (made in numpy from the weights, so only the updates' arithmetic is
compared), and the parameters compared with ``np.array_equal``.

torch's float32 ``sqrt`` on this CPU is its vectorized one, which is not correctly rounded (one
ulp off in about one element in six, with AVX-512), where numpy's and the runtime's are: on the
torch side ``Tensor.sqrt``/``sqrt_`` are replaced by a correctly rounded square root (a test
below shows the two differ only there), so that the rest of each update, the order of its
operations and where it rounds, is compared bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

STEPS = 20
R = np.random.default_rng(1235)
W0 = [R.standard_normal((5, 4)).astype(np.float32), R.standard_normal(4).astype(np.float32)]
C = [R.standard_normal((5, 4)).astype(np.float32), R.standard_normal(4).astype(np.float32)]
SCALE = np.float32(0.3)

CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "sgd": ("SGD", {"lr": 0.1}),
    "sgd_momentum": ("SGD", {"lr": 0.05, "momentum": 0.9}),
    "sgd_dampening": ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.1,
                              "weight_decay": 0.01}),
    "sgd_nesterov": ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True}),
    "sgd_maximize": ("SGD", {"lr": 0.05, "momentum": 0.5, "maximize": True}),
    "adam": ("Adam", {"lr": 0.01}),
    "adam_wd": ("Adam", {"lr": 0.01, "weight_decay": 0.05, "betas": (0.8, 0.95)}),
    "adam_amsgrad": ("Adam", {"lr": 0.02, "amsgrad": True, "eps": 1e-6}),
    "adam_maximize": ("Adam", {"lr": 0.01, "maximize": True}),
    "adamw": ("AdamW", {"lr": 0.01}),
    "adamw_amsgrad": ("AdamW", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}),
    "rmsprop": ("RMSprop", {"lr": 0.01}),
    "rmsprop_centered": ("RMSprop", {"lr": 0.01, "centered": True, "alpha": 0.9}),
    "rmsprop_momentum": ("RMSprop", {"lr": 0.01, "momentum": 0.9, "weight_decay": 0.01}),
    "rmsprop_centered_momentum": ("RMSprop", {"lr": 0.005, "momentum": 0.5,
                                              "centered": True}),
    "adagrad": ("Adagrad", {"lr": 0.1}),
    "adagrad_lr_decay": ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.01}),
    "adagrad_initial": ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.1,
                                    "eps": 1e-6}),
    "adamax": ("Adamax", {"lr": 0.02}),
    "adamax_wd": ("Adamax", {"lr": 0.02, "weight_decay": 0.05, "betas": (0.8, 0.99)}),
    "nadam": ("NAdam", {"lr": 0.01}),
    "nadam_wd": ("NAdam", {"lr": 0.01, "weight_decay": 0.05, "momentum_decay": 0.01}),
    "nadam_decoupled": ("NAdam", {"lr": 0.01, "weight_decay": 0.05,
                                  "decoupled_weight_decay": True}),
    "adadelta": ("Adadelta", {}),
    "adadelta_wd": ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.05, "eps": 1e-5}),
    "radam": ("RAdam", {"lr": 0.01}),
    "radam_wd": ("RAdam", {"lr": 0.01, "weight_decay": 0.05}),
    "radam_decoupled": ("RAdam", {"lr": 0.01, "weight_decay": 0.05,
                                  "decoupled_weight_decay": True}),
}


def _rounded_sqrt(t: Any) -> Any:
    return torch.from_numpy(np.sqrt(t.detach().numpy()))


def _rounded_sqrt_(t: Any) -> Any:
    return t.copy_(_rounded_sqrt(t))


@pytest.fixture
def exact_torch_sqrt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.Tensor, "sqrt", _rounded_sqrt)
    monkeypatch.setattr(torch.Tensor, "sqrt_", _rounded_sqrt_)


def test_torch_sqrt_differs_from_the_rounded_one_by_an_ulp_at_most() -> None:
    """What the fixture replaces: torch's own sqrt is within an ulp of the correctly rounded
    one (numpy's), which the runtime's equals bit for bit."""
    x = (np.abs(R.standard_normal(4096)) + 0.1).astype(np.float32)
    exact = np.sqrt(x)
    assert np.array_equal(rt.tensor(x).sqrt().numpy(), exact)
    theirs = torch.tensor(x).sqrt().numpy()
    assert np.abs(theirs.view(np.int32) - exact.view(np.int32)).max() <= 1


def _run(lib: Any, name: str, options: dict[str, Any]) -> list[np.ndarray]:
    params = [lib.tensor(w.copy(), requires_grad=True) for w in W0]
    extra = {"foreach": False} if lib is torch else {}
    opt = getattr(lib.optim, name)(params, **options, **extra)
    for _ in range(STEPS):
        for p, c in zip(params, C):
            w = p.detach().numpy()
            # a bounded, nonlinear pull towards c: the same float32 bits on both sides
            p.grad = lib.tensor((w - c) + SCALE * np.sin(np.float32(3) * w))
        opt.step()
    return [p.detach().numpy().copy() for p in params]


@pytest.mark.usefixtures("exact_torch_sqrt")
@pytest.mark.parametrize("case", sorted(CASES))
def test_parameters_bitwise_equal_to_torch(case: str) -> None:
    name, options = CASES[case]
    ours, theirs = _run(rt, name, options), _run(torch, name, options)
    moved = [not np.array_equal(w, t) for w, t in zip(W0, theirs)]
    assert all(moved)  # the steps did something
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype == np.float32
        assert np.array_equal(a, b), (case, np.abs(a - b).max(), np.argwhere(a != b)[:5])
