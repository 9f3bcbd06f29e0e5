"""PyTorch 2.13's test/test_optim.py, its OptimizerInfo-driven checks ported by hand for the
CPU: each optimizer's option sets (torch/testing/_internal/common_optimizers.py,
``optim_inputs_func_*`` for device "cpu", plus the flags its tests add: foreach, fused,
capturable) run step by step against torch's optimizer on the same parameters and
gradients; state dicts (their keys and dtypes, a round trip mid-training, casting on load);
param group errors; zero_grad, closures, parameters without gradients; the hooks; and
swa_utils.

Left out: complex parameters, CUDA-only configurations (capturable on an accelerator),
SparseAdam (sparse gradients), and differentiable=True (a step here runs under no_grad: it
raises NotImplementedError, tested below)."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


class _T:
    """A 0-d (or given-shape) tensor setting, made in whichever library runs the option
    set."""

    def __init__(self, value: float, shape: tuple[int, ...] = ()) -> None:
        self.value, self.shape = value, shape

    def __repr__(self) -> str:
        return f"T({self.value}, {self.shape})" if self.shape else f"T({self.value})"

    def make(self, lib: Any) -> Any:
        return lib.full(self.shape, self.value)


def _setting(value: Any, lib: Any) -> Any:
    if isinstance(value, _T):
        return value.make(lib)
    if isinstance(value, tuple):
        return tuple(_setting(v, lib) for v in value)
    return value


def _kwargs(kwargs: dict[str, Any], lib: Any) -> dict[str, Any]:
    return {k: _setting(v, lib) for k, v in kwargs.items()}


# common_optimizers.py's optim_inputs_func_* for the CPU, with the CPU-runnable parts of the
# accelerator sets (tensor lr and betas without capturable, decoupled weight decay)
OPTIM_INPUTS: dict[str, list[dict[str, Any]]] = {
    "SGD": [{}, {"lr": 1e-2}, {"lr": _T(0.001)}, {"weight_decay": 0.5}, {"momentum": 0.9},
            {"weight_decay": 0.1, "maximize": True}, {"momentum": 0.9, "dampening": 0.5},
            {"momentum": 0.9, "weight_decay": 0.1},
            {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1}],
    "Adam": [{}, {"lr": 0.01}, {"weight_decay": 0.1}, {"weight_decay": 0.1, "maximize": True},
             {"weight_decay": 0.1, "amsgrad": True}, {"lr": _T(0.01)},
             {"lr": _T(0.001), "betas": (_T(0.9), _T(0.99)), "amsgrad": True},
             {"lr": _T(0.001), "betas": (_T(0.9, (1, 1, 1)), _T(0.99, (1, 1)))},
             {"weight_decay": 0.1, "decoupled_weight_decay": True}],
    "AdamW": [{}, {"lr": 0.01}, {"weight_decay": 0.1},
              {"weight_decay": 0.1, "maximize": True}, {"weight_decay": 0.1, "amsgrad": True},
              {"lr": _T(0.01)}],
    "Adamax": [{}, {"lr": 0.1}, {"weight_decay": 0.1}, {"maximize": True},
               {"weight_decay": 0.1, "maximize": True}, {"lr": _T(0.01)}],
    "NAdam": [{}, {"lr": 1e-3}, {"momentum_decay": 6e-3},
              {"weight_decay": 0.1, "momentum_decay": 6e-3},
              {"weight_decay": 0.1, "momentum_decay": 6e-3, "decoupled_weight_decay": True},
              {"weight_decay": 0.1, "maximize": True}, {"lr": _T(0.01)}],
    "RAdam": [{}, {"lr": 2e-3}, {"eps": 1e-6}, {"weight_decay": 0.1},
              {"weight_decay": 0.1, "decoupled_weight_decay": True},
              {"weight_decay": 0.1, "maximize": True}, {"lr": _T(0.01)}],
    "Adagrad": [{}, {"weight_decay": 0.1}, {"weight_decay": 0.1, "maximize": True},
                {"lr": 0.1}, {"initial_accumulator_value": 0.1, "weight_decay": 0.1},
                {"lr": 0.1, "lr_decay": 0.5, "weight_decay": 0.1}, {"lr": _T(0.001)}],
    "Adadelta": [{}, {"lr": 0.01}, {"weight_decay": 0.1}, {"maximize": True},
                 {"weight_decay": 0.1, "maximize": True}, {"rho": 0.95, "weight_decay": 0.9},
                 {"lr": _T(0.01)}],
    "RMSprop": [{}, {"lr": 1e-3}, {"weight_decay": 0.1}, {"maximize": True},
                {"weight_decay": 0.1, "centered": True},
                {"maximize": True, "weight_decay": 0.1},
                {"weight_decay": 0.1, "centered": True, "momentum": 0.1},
                {"weight_decay": 0.1, "centered": True, "momentum": 0.1, "maximize": True},
                {"lr": _T(0.001)}],
    "Rprop": [{}, {"lr": 2e-4}, {"etas": (0.5, 1.5)}, {"step_sizes": (2e-6, 100)},
              {"maximize": True}, {"lr": _T(0.001)}],
    "ASGD": [{}, {"lambd": 0.1}, {"lr": 0.02}, {"t0": 100}, {"maximize": True},
             {"weight_decay": 0.1}, {"weight_decay": 0.1, "maximize": True},
             {"t0": 2, "lr": _T(0.01)}],
    "Adafactor": [{}, {"weight_decay": 0.1, "lr": 0.01}, {"weight_decay": 0.1, "maximize": True},
                  {"beta2_decay": -1.0}, {"d": 1.5}, {"eps": (1e-30, 1e-3)}],
    "Muon": [{}, {"lr": 0.01}, {"lr": _T(0.001)}, {"weight_decay": 0.2}, {"momentum": 0.8},
             {"ns_steps": 6}, {"nesterov": False},
             {"adjust_lr_fn": "match_rms_adamw"}],
}

# the implementation flags torch's tests add to each set (test_foreach_matches_forloop,
# test_fused_matches_forloop): one update serves them all here, with torch's results
IMPL_FLAGS: dict[str, list[dict[str, Any]]] = {
    "SGD": [{"foreach": True}, {"foreach": False}, {"fused": True}],
    "Adam": [{"foreach": False}, {"fused": True}],
    "AdamW": [{"foreach": False}, {"fused": True}],
    "Adagrad": [{"foreach": True}, {"fused": True}],
    "RMSprop": [{"foreach": True}], "Adamax": [{"foreach": True}],
    "NAdam": [{"foreach": True}], "RAdam": [{"foreach": True}],
    "Adadelta": [{"foreach": True}], "Rprop": [{"foreach": True}],
    "ASGD": [{"foreach": False}], "Adafactor": [{"foreach": False}],
}


def _shapes(name: str) -> list[tuple[int, ...]]:
    return [(3, 4), (2, 3)] if name == "Muon" else [(3, 4), (4,), (2, 1, 3)]


class _Pair:
    """The same optimizer over the same parameters in torch and here; ``step`` gives both
    the same gradients."""

    def __init__(self, name: str, kwargs: dict[str, Any], dtype: str = "float32",
                 seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.dtype = dtype
        init = [self.rng.standard_normal(s) for s in _shapes(name)]
        self.tp = [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True)
                   for a in init]
        self.rp = [rt.tensor(a, dtype=getattr(rt, dtype), requires_grad=True) for a in init]
        self.topt = getattr(torch.optim, name)(self.tp, **_kwargs(kwargs, torch))
        self.ropt = getattr(rt.optim, name)(self.rp, **_kwargs(kwargs, rt))

    def step(self, grads: list[np.ndarray] | None = None) -> None:
        if grads is None:
            grads = [self.rng.standard_normal(tuple(p.shape)) for p in self.tp]
        for tp, rp, g in zip(self.tp, self.rp, grads, strict=True):
            tp.grad = torch.tensor(g, dtype=tp.dtype)
            rp.grad = rt.tensor(g, dtype=rp.dtype)
        self.topt.step()
        self.ropt.step()

    def check(self) -> None:
        _check_params(self.tp, self.rp, self.dtype)
        _check_state(self.topt.state_dict(), self.ropt.state_dict(), self.dtype)


def _tol(dtype: str) -> dict[str, float]:
    return {"rtol": 2e-5, "atol": 2e-6} if dtype == "float32" else {"rtol": 1e-7, "atol": 1e-7}


def _dtype_name(t: Any) -> str:
    return str(t.dtype).rsplit(".", 1)[-1]


def _check_params(tp: list[Any], rp: list[Any], dtype: str) -> None:
    for t, r in zip(tp, rp, strict=True):
        assert _dtype_name(r) == _dtype_name(t)
        np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), **_tol(dtype))


def _check_state(tsd: dict[str, Any], rsd: dict[str, Any], dtype: str) -> None:
    """Each parameter's state: torch's keys in its order, each tensor of its dtype and shape
    (``step`` a float32 0-d tensor) and value; the groups' keys."""
    assert list(rsd["state"]) == list(tsd["state"])
    for index, tstate in tsd["state"].items():
        rstate = rsd["state"][index]
        assert list(rstate) == list(tstate)
        for key, tv in tstate.items():
            rv = rstate[key]
            if isinstance(tv, torch.Tensor):
                assert isinstance(rv, rt.Tensor), key
                assert (_dtype_name(rv), tuple(rv.shape)) == (_dtype_name(tv), tuple(tv.shape)), key
                np.testing.assert_allclose(rv.numpy().astype(np.float64),
                                           tv.numpy().astype(np.float64), **_tol(dtype))
            else:
                assert rv == tv, key
    for tgroup, rgroup in zip(tsd["param_groups"], rsd["param_groups"], strict=True):
        assert sorted(rgroup) == sorted(tgroup)


_CASES = [(name, kwargs) for name, sets in OPTIM_INPUTS.items() for kwargs in sets]


@pytest.mark.parametrize(("name", "kwargs"), _CASES, ids=[f"{n}-{k}" for n, k in _CASES])
def test_optim_inputs_match_torch_float32(name: str, kwargs: dict[str, Any]) -> None:
    pair = _Pair(name, kwargs)
    for _ in range(5):
        pair.step()
        _check_params(pair.tp, pair.rp, "float32")
    pair.check()


@pytest.mark.parametrize("name", list(OPTIM_INPUTS))
def test_optim_inputs_match_torch_float64(name: str) -> None:
    """Every option set of each optimizer in float64, one after another on the same
    parameters' pairs (cheap: the sets share nothing)."""
    for kwargs in OPTIM_INPUTS[name]:
        pair = _Pair(name, kwargs, "float64", seed=1)
        for _ in range(5):
            pair.step()
        pair.check()


@pytest.mark.parametrize("name", list(OPTIM_INPUTS))
def test_one_element_tensor_lr_of_any_shape(name: str) -> None:
    """torch's _to_scalar: an lr of shape (1, 1) (or (1,)) acts as a 0-d one; here it
    broadcast the update of a parameter of another shape into an error."""
    for shape in ((1,), (1, 1)):
        pair = _Pair(name, {"lr": _T(0.01, shape)})
        for _ in range(3):
            pair.step()
        pair.check()


_IMPL = [(name, flags) for name, sets in IMPL_FLAGS.items() for flags in sets]


@pytest.mark.parametrize(("name", "flags"), _IMPL, ids=[f"{n}-{f}" for n, f in _IMPL])
def test_impl_flags_match_torch(name: str, flags: dict[str, Any]) -> None:
    """foreach and fused, on each option set torch's test_foreach_matches_forloop and
    test_fused_matches_forloop pair them with (those torch accepts with them)."""
    for kwargs in OPTIM_INPUTS[name]:
        merged = {**kwargs, **flags}
        try:
            getattr(torch.optim, name)([torch.zeros(2, 2, requires_grad=True)],
                                       **_kwargs(merged, torch))
        except (ValueError, RuntimeError) as e:
            with pytest.raises(type(e), match=_escaped(str(e))):
                getattr(rt.optim, name)([rt.zeros(2, 2, requires_grad=True)],
                                        **_kwargs(merged, rt))
            continue
        pair = _Pair(name, merged)
        for _ in range(5):
            pair.step()
        pair.check()


def _escaped(text: str) -> str:
    import re
    return "^" + re.escape(text) + "$"
