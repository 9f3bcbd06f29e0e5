"""rt.optim.Muon against torch 2.13's: the Newton-Schulz orthogonalization bit for bit (both
in bfloat16), steps on the same weights and gradients, each option, the group layout, state
dict round trips, errors, and a compiled step equal to the eager one."""

from __future__ import annotations

import warnings

from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime import optim
from runtime.optim.muon import zeropower_via_newtonschulz

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)
W0, V0 = RNG.standard_normal((6, 4)), RNG.standard_normal((4, 10))
X, Y = RNG.standard_normal((16, 6)), RNG.standard_normal((16, 10))


@pytest.mark.parametrize("shape", [(16, 32), (40, 12), (8, 8), (1, 5), (64, 64)])
def test_newton_schulz_as_torchs(shape: tuple[int, int]) -> None:
    """Both run in bfloat16 with float32 products rounded once (torch's CPU addmm), so they
    agree but for the products' float32 summation order, which tips a bfloat16 rounding now
    and then; the iteration's gain (a = 3.4) carries such a tip on."""
    from torch.optim._muon import _zeropower_via_newtonschulz

    g = RNG.standard_normal(shape).astype(np.float32)
    coefficients = (3.4445, -4.7750, 2.0315)
    ours = zeropower_via_newtonschulz(rt.tensor(g), coefficients, 5, 1e-7)
    theirs = _zeropower_via_newtonschulz(torch.tensor(g), coefficients, 5, 1e-7)
    assert ours.dtype is rt.bfloat16
    diff = np.abs(ours.float().numpy() - theirs.float().numpy())
    assert diff.max() <= 2 ** -5 and diff.mean() <= 2 ** -8


def test_newton_schulz_orthogonalizes() -> None:
    g = RNG.standard_normal((12, 12)).astype(np.float32)
    o = zeropower_via_newtonschulz(rt.tensor(g), (3.4445, -4.7750, 2.0315), 5, 1e-7)
    s = np.linalg.svd(o.float().numpy(), compute_uv=False)
    assert s.min() > 0.3 and s.max() < 1.3  # S' ~ U(0.5, 1.5) around 1, as torch documents


def _steps(lib: Any, kwargs: dict[str, Any], groups: list[dict[str, Any]], dtype: str
           ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Parameters and momentum buffers after steps on the same gradients (GRADS)."""
    dt = getattr(lib, dtype)
    params = [lib.tensor(W0, dtype=dt).requires_grad_(), lib.tensor(V0, dtype=dt).requires_grad_()]
    opt = lib.optim.Muon([{**g, "params": [params[i] for i in g["params"]]} for g in groups],
                         **kwargs)
    for grads in GRADS:
        for p, g in zip(params, grads):
            p.grad = lib.tensor(g, dtype=dt)
        opt.step()
    return ([p.detach().numpy() for p in params],
            [opt.state[p]["momentum_buffer"].numpy() for p in params])


GRADS = [(RNG.standard_normal((6, 4)), RNG.standard_normal((4, 10))) for _ in range(6)]
CASES = [{}, {"lr": 0.02}, {"lr": 0.02, "nesterov": False, "momentum": 0.9},
         {"lr": 0.01, "weight_decay": 0.0}, {"lr": 0.01, "adjust_lr_fn": "match_rms_adamw"},
         {"lr": 0.01, "adjust_lr_fn": "original", "ns_steps": 3, "eps": 1e-5},
         {"lr": 0.01, "ns_coefficients": (2.0, -1.5, 0.5)}, {"lr": 0.05, "momentum": 0.0}]


def _close(ours: list[np.ndarray], theirs: list[np.ndarray], lr: float) -> None:
    """Within what the orthogonalized updates' rare bfloat16 tips allow (an element of an
    update off by up to 2^-5, test_newton_schulz_as_torchs), scaled by the steps' lr; the
    shape adjustment of match_rms_adamw (0.2 sqrt(10)) stays below 1."""
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=len(GRADS) * lr * 2 ** -5 * 1.5)


@pytest.mark.parametrize("kwargs", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_steps_match_torch(kwargs: dict[str, Any], dtype: str) -> None:
    groups = [{"params": [0, 1]}]
    (ours, ours_bufs), (theirs, theirs_bufs) = (_steps(rt, kwargs, groups, dtype),
                                                _steps(torch, kwargs, groups, dtype))
    _close(ours, theirs, kwargs.get("lr", 1e-3))
    for a, b in zip(ours_bufs, theirs_bufs, strict=True):  # plain float arithmetic
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_param_groups_with_their_own_settings() -> None:
    groups = [{"params": [0], "lr": 0.05, "weight_decay": 0.0},
              {"params": [1], "nesterov": False}]
    ours, theirs = _steps(rt, {"lr": 0.01}, groups, "float32"), _steps(
        torch, {"lr": 0.01}, groups, "float32")
    _close(ours[0], theirs[0], 0.05)


def test_a_step_is_the_orthogonalized_gradient_times_the_adjusted_lr() -> None:
    """From a zero parameter without weight decay one step is -lr sqrt(max(1, A / B)) times
    U S' V^T, U and V the gradient's singular vectors, S' near 1 (torch's documented
    U(0.5, 1.5) spread)."""
    g = RNG.standard_normal((12, 3))
    w = rt.zeros(12, 3, dtype=rt.float64, requires_grad=True)
    w.grad = rt.tensor(g)
    optim.Muon([w], lr=0.1, weight_decay=0.0).step()
    moved = -w.detach().numpy() / (0.1 * np.sqrt(12 / 3))
    u, _, vt = np.linalg.svd(g, full_matrices=False)
    inner = u.T @ moved @ vt.T  # diag(S') where moved = U S' V^T
    assert np.abs(inner - np.diag(np.diag(inner))).max() < 0.05
    assert np.all((np.diag(inner) > 0.3) & (np.diag(inner) < 1.5))


def test_defaults_are_torchs() -> None:
    ours = optim.Muon([rt.ones(2, 2, requires_grad=True)]).param_groups[0]
    theirs = torch.optim.Muon([torch.ones(2, 2, requires_grad=True)]).param_groups[0]
    assert list(ours) == list(theirs)
    assert {k: v for k, v in ours.items() if k != "params"} == \
        {k: v for k, v in theirs.items() if k != "params"}


def test_state_dict_round_trip_continues_the_same() -> None:
    w = rt.tensor(W0, requires_grad=True)
    opt = optim.Muon([w], lr=0.02)
    x = rt.tensor(X)

    def step(o: Any, p: Any) -> None:
        o.zero_grad()
        (rt.tanh(x @ p) ** 2).sum().backward()
        o.step()

    for _ in range(3):
        step(opt, w)
    sd = opt.state_dict()
    assert set(sd["state"][0]) == {"momentum_buffer"}
    w2 = rt.tensor(w.detach().numpy().copy(), requires_grad=True)
    opt2 = optim.Muon([w2], lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.02
    for _ in range(3):
        step(opt, w)
        step(opt2, w2)
    np.testing.assert_array_equal(w.detach().numpy(), w2.detach().numpy())


def test_state_dict_loads_into_torch() -> None:
    w = rt.tensor(W0, requires_grad=True)
    opt = optim.Muon([w], lr=0.02)
    w.grad = rt.tensor(np.linspace(-1.0, 1.0, 24).reshape(6, 4))
    opt.step()
    sd = opt.state_dict()
    tw = torch.tensor(W0, requires_grad=True)
    topt = torch.optim.Muon([tw], lr=0.02)
    topt.load_state_dict({"state": {0: {"momentum_buffer": torch.tensor(
        sd["state"][0]["momentum_buffer"].numpy())}}, "param_groups": sd["param_groups"]})
    np.testing.assert_array_equal(topt.state[tw]["momentum_buffer"].numpy(),
                                  sd["state"][0]["momentum_buffer"].numpy())


@pytest.mark.parametrize(("kwargs", "params"), [
    ({"lr": -1.0}, None), ({"momentum": -0.1}, None), ({"weight_decay": -1.0}, None),
    ({"adjust_lr_fn": "sqrt"}, None), ({}, (3,)), ({}, (2, 3, 4)),
])
def test_errors_as_torch(kwargs: dict[str, Any], params: Any) -> None:
    shape = params or (2, 2)
    with pytest.raises(ValueError) as expected:
        torch.optim.Muon([torch.ones(*shape, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as got:
        optim.Muon([rt.ones(*shape, requires_grad=True)], **kwargs)
    assert str(got.value) == str(expected.value)


def test_newton_schulz_errors() -> None:
    g = rt.ones(2, 2)
    with pytest.raises(ValueError, match="less than 100"):
        zeropower_via_newtonschulz(g, (1.0, 1.0, 1.0), 100, 1e-7)
    with pytest.raises(ValueError, match="exactly 3 values"):
        zeropower_via_newtonschulz(g, (1.0, 1.0), 5, 1e-7)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="2D matrix"):
        zeropower_via_newtonschulz(rt.ones(3), (1.0, 1.0, 1.0), 5, 1e-7)


@pytest.mark.parametrize("backend", ["interpreter", "llvm"])
def test_compiled_step_matches_eager(backend: str) -> None:
    """The bfloat16 Newton-Schulz iteration planned: as eager computes it where its steps
    are no kernels (the interpreter), within bfloat16's rounding where fused kernels compute
    it in float32 and round once (eager rounds after every op)."""
    planner = pytest.importorskip("planner")
    results = []
    for compiled in (False, True):
        w = rt.tensor(W0.astype(np.float32), requires_grad=True)
        opt = optim.Muon([w], lr=0.02)
        x = rt.tensor(X.astype(np.float32))

        def train(xb: Any) -> Any:
            opt.zero_grad()
            loss = (rt.tanh(xb @ w) ** 2).sum()
            loss.backward()
            opt.step()
            return loss

        run = planner.compile(train, backend=backend) if compiled else train
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # a fallback to eager warns
            for _ in range(4):
                run(x)
        results.append(w.detach().numpy().copy())
    # 4 updates of lr 0.02 an element, each within a few bfloat16 roundings of eager's
    atol = 1e-6 if backend == "interpreter" else 4 * 0.02 * 2 ** -4
    np.testing.assert_allclose(results[0], results[1], rtol=0, atol=atol)
