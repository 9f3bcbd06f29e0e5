"""Optimizers against torch 2.13: ASGD, Rprop and LBFGS (new here) step for step, torch's
implementation flags (foreach/fused/capturable/differentiable) and named parameters, and
state dict round trips that continue training with the same numbers."""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime import optim

RNG = np.random.default_rng(0)
W0, B0 = RNG.standard_normal((4, 3)), RNG.standard_normal(3)
X, Y = RNG.standard_normal((8, 4)), RNG.standard_normal((8, 3))


def _fit(lib: Any, name: str, kwargs: dict[str, Any], steps: int,
         dtype: str = "float64") -> list[np.ndarray]:
    """The parameters after ``steps`` steps of ``name`` on a small tanh regression."""
    dt = getattr(lib, dtype)
    w = lib.tensor(W0, dtype=dt).requires_grad_()
    b = lib.tensor(B0, dtype=dt).requires_grad_()
    x, y = lib.tensor(X, dtype=dt), lib.tensor(Y, dtype=dt)
    opt = getattr(lib.optim, name)([w, b], **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        ((lib.tanh(x @ w + b) - y) ** 2).sum().backward()
        opt.step()
    return [w.detach().numpy(), b.detach().numpy()]


NEW = [("ASGD", {}), ("ASGD", {"lr": 0.01, "lambd": 1e-3, "alpha": 0.5, "t0": 5,
                               "weight_decay": 0.1, "maximize": False}),
       ("Rprop", {}), ("Rprop", {"lr": 0.02, "etas": (0.4, 1.3), "step_sizes": (1e-5, 1)}),
       ("Rprop", {"maximize": True}),
       ("Adafactor", {}), ("Adafactor", {"lr": 0.1, "weight_decay": 0.1}),
       ("Adafactor", {"eps": (1e-30, 1e-2), "d": 2.0, "beta2_decay": -0.5, "maximize": True})]


@pytest.mark.parametrize(("name", "kwargs", "dtype"),
                         [(*case, "float64") for case in NEW]
                         # Rprop's steps follow the gradient's sign: float32 gradients (torch's
                         # backward rounds differently) flip some near zero
                         + [(*case, "float32") for case in NEW if case[0] != "Rprop"])
def test_new_optimizers_match_torch(name: str, kwargs: dict[str, Any], dtype: str) -> None:
    torch = pytest.importorskip("torch")
    tol = 1e-10 if dtype == "float64" else 1e-5
    for ours, theirs in zip(_fit(rt, name, kwargs, 30, dtype),
                            _fit(torch, name, kwargs, 30, dtype), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


def test_rprop_by_hand() -> None:
    p = rt.tensor([1.0, 1.0, 1.0], dtype=rt.float64, requires_grad=True)
    opt = optim.Rprop([p], lr=0.1)
    p.grad = rt.tensor([1.0, -1.0, 0.0], dtype=rt.float64)
    opt.step()  # no previous gradient: every step size stays lr
    np.testing.assert_allclose(p.detach().numpy(), [0.9, 1.1, 1.0])
    p.grad = rt.tensor([1.0, 1.0, 1.0], dtype=rt.float64)
    opt.step()  # same sign: x1.2; flipped: x0.5 and no step; previous zero: x1
    np.testing.assert_allclose(opt.state[p]["step_size"].numpy(), [0.12, 0.05, 0.1])
    np.testing.assert_allclose(p.detach().numpy(), [0.78, 1.1, 0.9])
    np.testing.assert_allclose(opt.state[p]["prev"].numpy(), [1.0, 0.0, 1.0])


def test_asgd_by_hand() -> None:
    p = rt.tensor([1.0, -2.0], dtype=rt.float64, requires_grad=True)
    opt = optim.ASGD([p], lr=0.1, t0=1)
    p.grad = rt.tensor([0.5, 1.0], dtype=rt.float64)
    opt.step()
    eta = float(np.float32(0.1))  # eta is a float32 scalar tensor, as torch's
    expected = np.array([1.0, -2.0]) * (1 - 1e-4 * eta) - eta * np.array([0.5, 1.0])
    np.testing.assert_allclose(p.detach().numpy(), expected, rtol=1e-15)
    np.testing.assert_allclose(opt.state[p]["ax"].numpy(), expected, rtol=0)  # mu was 1
    assert opt.state[p]["eta"].item() == pytest.approx(0.1 / (1 + 1e-4 * 0.1) ** 0.75, 1e-7)
    assert opt.state[p]["mu"].item() == 1.0  # 1 / max(1, step - t0), step 1
    opt.step()
    assert opt.state[p]["mu"].item() == 1.0
    opt.step()
    assert opt.state[p]["mu"].item() == 0.5


def _rosenbrock_fit(lib: Any, kwargs: dict[str, Any], steps: int = 4) -> tuple[Any, ...]:
    w = lib.tensor([-1.5, 2.0, 0.5], dtype=lib.float64, requires_grad=True)
    opt = lib.optim.LBFGS([w], **kwargs)

    def closure() -> Any:
        opt.zero_grad()
        loss = (100 * (w[1:] - w[:-1] ** 2) ** 2 + (1 - w[:-1]) ** 2).sum()
        loss.backward()
        return loss

    losses = [float(opt.step(closure).detach()) for _ in range(steps)]
    state = opt.state[w]
    return w.detach().numpy(), losses, state["func_evals"], state["n_iter"]


@pytest.mark.parametrize("kwargs", [{}, {"line_search_fn": "strong_wolfe"},
                                    {"lr": 0.5, "max_iter": 7, "history_size": 3},
                                    {"line_search_fn": "strong_wolfe", "history_size": 2,
                                     "max_eval": 9}])
def test_lbfgs_matches_torch(kwargs: dict[str, Any]) -> None:
    torch = pytest.importorskip("torch")
    ours, theirs = _rosenbrock_fit(rt, kwargs), _rosenbrock_fit(torch, kwargs)
    # Rosenbrock's valley is ill-conditioned: the last digits of a step grow in the next
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6, atol=1e-12)
    assert ours[2:] == theirs[2:]  # the same number of evaluations and iterations


def test_lbfgs_solves_a_quadratic() -> None:
    w = rt.zeros(3, dtype=rt.float64, requires_grad=True)
    target = rt.tensor([1.0, -2.0, 3.0], dtype=rt.float64)
    opt = optim.LBFGS([w], line_search_fn="strong_wolfe")

    def closure() -> rt.Tensor:
        opt.zero_grad()
        loss = ((w - target) ** 2 * rt.tensor([1.0, 10.0, 100.0], dtype=rt.float64)).sum()
        loss.backward()
        return loss

    assert float(opt.step(closure)) == pytest.approx(1 + 40 + 900)
    np.testing.assert_allclose(w.detach().numpy(), [1.0, -2.0, 3.0], atol=1e-6)
    with pytest.raises(ValueError, match="per-parameter options"):
        optim.LBFGS([{"params": [w]}, {"params": [rt.zeros(1, requires_grad=True)]}])
    w.detach().zero_()
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        optim.LBFGS([w], line_search_fn="armijo").step(closure)


ALL = ["SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "Adadelta", "Adagrad", "RMSprop",
       "ASGD", "Rprop", "LBFGS", "Adafactor"]


@pytest.mark.parametrize("name", ALL)
def test_defaults_are_torchs(name: str) -> None:
    """The same group keys in the same order (a state dict's layout), the same values."""
    torch = pytest.importorskip("torch")
    ours = getattr(optim, name)([rt.ones(2, requires_grad=True)]).param_groups[0]
    theirs = getattr(torch.optim, name)([torch.ones(2, requires_grad=True)]).param_groups[0]
    assert list(ours) == list(theirs)
    assert {k: v for k, v in ours.items() if k != "params"} == \
        {k: v for k, v in theirs.items() if k != "params"}


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad"])
def test_fused_and_foreach_flags(name: str) -> None:
    p = rt.ones(2, requires_grad=True)
    for flags in ({"foreach": True}, {"foreach": False}, {"fused": True}):
        opt = getattr(optim, name)([p], **flags)
        assert all(opt.param_groups[0][k] == v for k, v in flags.items())
        p.grad = rt.ones(2)
        opt.step()  # the same update whichever implementation is asked for
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together."):
        getattr(optim, name)([p], fused=True, foreach=True)
    with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
        getattr(optim, name)([p], fused=True, differentiable=True)
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        getattr(optim, name)([p], differentiable=True)


def test_flags_give_the_same_update_as_torch() -> None:
    torch = pytest.importorskip("torch")
    for flags in ({"fused": True}, {"foreach": True}):
        ours = _fit(rt, "AdamW", {"lr": 0.01, **flags}, 5)
        theirs = _fit(torch, "AdamW", {"lr": 0.01, "foreach": False}, 5)
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    # capturable updates run on accelerators only: torch's assertion on the CPU
    for lib in (rt, torch):
        with pytest.raises(AssertionError, match="If capturable=True, params and state_steps "
                                                 "must be on supported devices"):
            _fit(lib, "AdamW", {"lr": 0.01, "capturable": True}, 1)


def test_named_parameters() -> None:
    a, b = rt.ones(2, requires_grad=True), rt.ones(3, requires_grad=True)
    opt = optim.SGD([("a", a), ("b", b)], lr=0.5)
    assert opt.param_groups[0]["param_names"] == ["a", "b"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["a", "b"]
    a.grad, b.grad = rt.ones(2), rt.ones(3)
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), [0.5, 0.5])
    with pytest.raises(ValueError, match="Some param names are missing"):
        optim.SGD([("a", a), b])
    with pytest.raises(ValueError, match="cannot add param group without names"):
        opt.add_param_group({"params": [rt.ones(1, requires_grad=True)]})


STATEFUL = [("SGD", {"lr": 0.01, "momentum": 0.9, "nesterov": True}),
            ("Adam", {"lr": 0.01, "amsgrad": True}), ("NAdam", {"lr": 0.01}),
            ("Adagrad", {"lr_decay": 0.1}), ("RMSprop", {"centered": True, "momentum": 0.5}),
            ("ASGD", {"t0": 3}), ("Rprop", {})]


def _round_trip(lib: Any, name: str, kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """5 steps, the optimizer's state dict saved and loaded (lib.save / lib.load) into a new
    optimizer over copies of the parameters, then 5 more steps of both; returns (the
    parameters of the first, of the second, the loaded state dict)."""
    x, y = lib.tensor(X), lib.tensor(Y)
    groups = [{"params": [lib.tensor(W0, requires_grad=True)], "lr": 0.05},
              {"params": [lib.tensor(B0, requires_grad=True)]}]
    opt = getattr(lib.optim, name)(groups, **kwargs)

    def steps(opt: Any, n: int) -> list[np.ndarray]:
        w, b = (g["params"][0] for g in opt.param_groups)
        for _ in range(n):
            opt.zero_grad(set_to_none=False)
            ((lib.tanh(x @ w + b) - y) ** 2).sum().backward()
            opt.step()
        return [w.detach().numpy().copy(), b.detach().numpy().copy()]

    steps(opt, 5)
    buffer = io.BytesIO()
    lib.save(opt.state_dict(), buffer)
    buffer.seek(0)
    saved = lib.load(buffer, weights_only=True)
    clone = getattr(lib.optim, name)([{"params": [g["params"][0].detach().clone()
                                                  .requires_grad_()]} for g in groups],
                                     **kwargs)
    clone.load_state_dict(saved)
    assert clone.param_groups[0]["lr"] == 0.05
    return steps(opt, 5), steps(clone, 5), saved


@pytest.mark.parametrize(("name", "kwargs"), STATEFUL)
def test_state_dict_round_trip_continues_training(name: str, kwargs: dict[str, Any]) -> None:
    ours, loaded, saved = _round_trip(rt, name, kwargs)
    assert sorted(saved["state"]) == [0, 1]
    assert [g["params"] for g in saved["param_groups"]] == [[0], [1]]
    # the same numbers (to the rounding of float32 scalar state such as NAdam's mu_product,
    # which loading casts to the parameter's dtype, as torch's load does)
    for a, b in zip(ours, loaded, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    torch = pytest.importorskip("torch")
    theirs, their_loaded, their_saved = _round_trip(torch, name, kwargs)
    assert saved["param_groups"] == their_saved["param_groups"]
    assert [list(s) for s in saved["state"].values()] == \
        [list(s) for s in their_saved["state"].values()]
    for a, b in zip(ours + loaded, theirs + their_loaded, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_duplicate_parameters_warn() -> None:
    p = rt.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([p, p])
    assert math.isclose(optim.SGD([p], lr=0.1).param_groups[0]["lr"], 0.1)


def _hook_log(lib: Any) -> list[Any]:
    p = lib.ones(2, requires_grad=True)
    p.grad = lib.ones(2)
    opt = lib.optim.SGD([p], lr=1.0)
    log: list[Any] = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: log.append(("pre", len(args))))
    post = opt.register_step_post_hook(lambda o, args, kwargs: log.append("post"))
    opt.step()
    pre.remove()
    opt.step()
    post.remove()
    opt.step()
    opt.register_state_dict_pre_hook(lambda o: log.append("state_dict"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    saved = opt.state_dict()
    log.append(sorted(saved))
    opt.register_load_state_dict_pre_hook(
        lambda o, sd: {k: v for k, v in sd.items() if k != "extra"})
    opt.register_load_state_dict_post_hook(lambda o: log.append("loaded"))
    opt.register_load_state_dict_post_hook(lambda o: log.append("first"), prepend=True)
    opt.load_state_dict(saved)
    lbfgs = lib.optim.LBFGS([p], max_iter=1)
    lbfgs.register_step_post_hook(lambda o, args, kwargs: log.append(len(args)))
    lbfgs.step(lambda: (p ** 2).sum())
    return log + [p.detach().numpy().tolist()]


def test_optimizer_hooks() -> None:
    ours = _hook_log(rt)
    assert ours[:-1] == [("pre", 1), "post", "post", "state_dict",
                         ["extra", "param_groups", "state"], "first", "loaded", 2]
    torch = pytest.importorskip("torch")
    assert ours == _hook_log(torch)


def test_global_step_hooks_and_argument_rewrites() -> None:
    from runtime.optim.optimizer import register_optimizer_step_pre_hook

    p = rt.zeros(1, requires_grad=True)
    opt = optim.SGD([p], lr=1.0)
    calls: list[str] = []
    handle = register_optimizer_step_pre_hook(lambda o, a, k: calls.append(type(o).__name__))

    def closure() -> rt.Tensor:
        opt.zero_grad()
        loss = ((p - 3) ** 2).sum()
        loss.backward()
        return loss

    opt.register_step_pre_hook(lambda o, args, kwargs: ((o,), {"closure": closure}))
    assert opt.step() == 9.0  # the hook passed the closure
    handle.remove()
    opt.step()
    # gradient -6 at 0, then 6 at 6: back to 0; the global hook ran once
    assert calls == ["SGD"] and p.item() == 0.0
    opt.register_step_pre_hook(lambda o, args, kwargs: 5)
    with pytest.raises(RuntimeError, match="must return None or a tuple of"):
        opt.step()


def _adagrad_added_group(lib: Any) -> list[Any]:
    p, q, r = (lib.ones(2, requires_grad=True) for _ in range(3))
    opt = lib.optim.Adagrad([{"params": [p]}, {"params": [r], "initial_accumulator_value": 3.0}],
                            lr=0.1, initial_accumulator_value=0.5)
    opt.add_param_group({"params": [q], "lr": 0.2})
    for t in (p, q, r):
        t.grad = lib.ones(2)
    opt.step()
    return [opt.state[t]["sum"].tolist() for t in (p, q, r)] + [q.detach().numpy().tolist()]


def test_adagrad_state_of_an_added_group() -> None:
    """The state of a parameter added later is made at its first step (it raised a
    KeyError), from the optimizer's initial_accumulator_value, as torch's: a group's own
    value is not read (torch's quirk, kept)."""
    ours = _adagrad_added_group(rt)
    assert ours[:3] == [[1.5, 1.5]] * 3
    np.testing.assert_allclose(ours[3], 1 - 0.2 / np.sqrt(1.5), rtol=1e-6)
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(ours, _adagrad_added_group(torch), rtol=1e-7)


def test_adafactor_by_hand() -> None:
    """Step 1 on a vector: beta2-hat is 1 - 1 ** -0.8 = 0, so the variance is g * g and the
    update g / |g| = sign(g), of RMS 1 (not clipped at d = 1); the step is
    max(eps2, RMS(p)) * min(lr, 1)."""
    p = rt.tensor([3.0, -4.0], dtype=rt.float64, requires_grad=True)
    opt = optim.Adafactor([p], lr=0.1)
    p.grad = rt.tensor([0.5, 2.0], dtype=rt.float64)
    opt.step()
    rms = math.sqrt((9 + 16) / 2)
    np.testing.assert_allclose(p.detach().numpy(), [3 - 0.1 * rms, -4 - 0.1 * rms],
                               rtol=1e-12)
    np.testing.assert_allclose(opt.state[p]["variance"].numpy(), [0.25, 4.0])
    w = rt.ones(2, 3, requires_grad=True)
    opt = optim.Adafactor([w])
    w.grad = rt.ones(2, 3)
    opt.step()
    assert opt.state[w]["row_var"].shape == (2, 1) and opt.state[w]["col_var"].shape == (1, 3)
    with pytest.raises(ValueError, match="beta2_decay should be <= 0 but is: 0.5"):
        optim.Adafactor([w], beta2_decay=0.5)
    with pytest.raises(ValueError, match="Clipping threshold d should be >= 1 but is: 0.5"):
        optim.Adafactor([w], d=0.5)


def test_step_hooks_make_a_compiled_step_run_eagerly() -> None:
    """A plan replays tensor ops only: a step with hooks runs eagerly (with the planner's
    warning), so that the hooks run at every step."""
    import planner

    rt.manual_seed(0)
    model = rt.nn.Linear(3, 1)
    opt = optim.SGD(model.parameters(), lr=0.1)
    calls: list[int] = []
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append(1))

    def train(x: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    step = planner.compile(train)
    with pytest.warns(RuntimeWarning, match="SGD.step\\(\\) has step hooks"):
        for i in range(3):
            step(rt.ones(2, 3) * i)
    assert len(calls) == 3


def test_lbfgs_state_dict_round_trip() -> None:
    """LBFGS's state holds lists of tensors (its history): saved, loaded and continued, the
    numbers are those of an uninterrupted run; and a group's param_names survive loading a
    state dict without names, as torch's."""
    def fit(w: rt.Tensor, opt: optim.LBFGS) -> None:
        def closure() -> rt.Tensor:
            opt.zero_grad()
            loss = (100 * (w[1:] - w[:-1] ** 2) ** 2 + (1 - w[:-1]) ** 2).sum()
            loss.backward()
            return loss

        opt.step(closure)

    w = rt.tensor([-1.5, 2.0, 0.5], dtype=rt.float64, requires_grad=True)
    opt = optim.LBFGS([w], max_iter=3)
    fit(w, opt)
    buffer = io.BytesIO()
    rt.save(opt.state_dict(), buffer)
    buffer.seek(0)
    saved = rt.load(buffer)
    assert isinstance(saved["state"][0]["old_dirs"], list)
    w2 = w.detach().clone().requires_grad_()
    opt2 = optim.LBFGS([("w", w2)], max_iter=3)
    opt2.load_state_dict(saved)
    assert opt2.param_groups[0]["param_names"] == ["w"]
    assert opt2.state[w2]["old_dirs"][0] is not saved["state"][0]["old_dirs"][0]
    fit(w, opt)
    fit(w2, opt2)
    np.testing.assert_array_equal(w.detach().numpy(), w2.detach().numpy())
