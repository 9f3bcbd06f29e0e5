"""rt.optim.swap_in_optimizer_params_and_state against torch 2.13's: a step on swapped-in
parameters and state gives torch's numbers, in-place state updates reach the caller's dict,
the live optimizer is restored, and torch's checks and texts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(4)
W, B = RNG.standard_normal((3, 2)), RNG.standard_normal(2)


def _setup(lib: Any, name: str, kwargs: dict[str, Any]) -> tuple[Any, list[Any]]:
    """An optimizer of two groups, stepped once (its state made)."""
    w = lib.tensor(W, requires_grad=True)
    b = lib.tensor(B, requires_grad=True)
    opt = getattr(lib.optim, name)([{"params": [w]}, {"params": [b], "lr": 0.05}], **kwargs)
    w.grad, b.grad = lib.ones_like(w), lib.ones_like(b)
    opt.step()
    return opt, [w, b]


@pytest.mark.parametrize(("name", "kwargs"), [("SGD", {"lr": 0.1, "momentum": 0.9}),
                                              ("Adam", {"lr": 0.01}),
                                              ("AdamW", {"lr": 0.01, "amsgrad": True})])
def test_a_swapped_in_step_is_torchs(name: str, kwargs: dict[str, Any]) -> None:
    results = []
    for lib in (rt, torch):
        opt, live = _setup(lib, name, kwargs)
        live_before = [p.detach().clone() for p in live]
        state = opt.state_dict()
        state = {"state": {k: {n: v.clone() if isinstance(v, lib.Tensor) else v
                               for n, v in s.items()} for k, s in state["state"].items()},
                 "param_groups": [dict(g) for g in state["param_groups"]]}
        state["param_groups"][0]["lr"] = 0.2
        params = {"w": lib.tensor(W * 2, requires_grad=True),
                  "b": lib.tensor(B * 2, requires_grad=True)}
        params["w"].grad = lib.full_like(params["w"], 0.5)
        params["b"].grad = lib.full_like(params["b"], -0.5)
        with lib.optim.swap_in_optimizer_params_and_state(opt, params, state):
            assert opt.param_groups[0]["lr"] == 0.2
            opt.step()
        assert opt.param_groups[0]["lr"] == kwargs["lr"]
        assert opt.param_groups[0]["params"][0] is live[0]
        for p, before in zip(live, live_before):
            np.testing.assert_array_equal(p.detach().numpy(), before.numpy())
        first = state["state"][0]
        buf = first.get("momentum_buffer", first.get("exp_avg"))
        results.append([params["w"].detach().numpy(), params["b"].detach().numpy(),
                        buf.numpy()])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("change", [
    lambda sd: sd.update(state=[1]),
    lambda sd: sd["state"].update({7: {}}),
    lambda sd: sd["state"].update({0: 3}),
    lambda sd: sd.update(param_groups={}),
    lambda sd: sd["param_groups"].pop(),
    lambda sd: sd["param_groups"][0]["params"].append(5),
    lambda sd: sd["param_groups"][0].update(params=["a"]),
    lambda sd: sd["param_groups"][0].pop("momentum"),
    lambda sd: sd["param_groups"][1].update(extra=1),
])
def test_errors_as_torch(change: Any) -> None:
    texts = []
    for lib in (rt, torch):
        opt, _ = _setup(lib, "SGD", {"lr": 0.1, "momentum": 0.9})
        sd = opt.state_dict()
        sd = {"state": dict(sd["state"]), "param_groups": [
            {**g, "params": list(g["params"])} for g in sd["param_groups"]]}
        change(sd)
        params = {"w": lib.zeros(3, 2), "b": lib.zeros(2)}
        with pytest.raises(RuntimeError) as e:
            with lib.optim.swap_in_optimizer_params_and_state(opt, params, sd):
                pass
        texts.append(str(e.value))
    assert texts[0] == texts[1]


def test_needs_a_state_and_enough_parameters() -> None:
    for lib in (rt, torch):
        w = lib.zeros(2, requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1)
        with pytest.raises(RuntimeError, match="requires initialized optimizer state"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {}, opt.state_dict()):
                pass
        opt, _ = _setup(lib, "Adam", {})
        with pytest.raises(RuntimeError, match="match optimizer.param_groups ordering"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {"w": lib.zeros(3, 2)},
                                                              opt.state_dict()):
                pass
