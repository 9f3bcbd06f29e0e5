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
                  {"beta2_decay": -1.0}, {"d": 1.5}, {"eps": (1e-4, 1e-3)}],
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
        for key, tv in tgroup.items():
            _check_setting(key, rgroup[key], tv)


def _check_setting(key: str, ours: Any, theirs: Any) -> None:
    """A group's setting as torch's: a tensor of its shape and value, a list or tuple as
    such, element by element, a number or flag equal."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, rt.Tensor), key
        assert tuple(ours.shape) == tuple(theirs.shape), key
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs), (key, ours, theirs)
        for o, t in zip(ours, theirs, strict=True):
            _check_setting(key, o, t)
    else:
        assert ours == theirs, (key, ours, theirs)


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
    """The first three option sets of each optimizer in float64."""
    for kwargs in OPTIM_INPUTS[name][:3]:
        pair = _Pair(name, kwargs, "float64", seed=1)
        for _ in range(5):
            pair.step()
        pair.check()


@pytest.mark.parametrize("name", list(OPTIM_INPUTS))
def test_one_element_tensor_lr_of_any_shape(name: str) -> None:
    """torch's _to_scalar: an lr of shape (1, 1) (or (1,)) acts as a 0-d one; here it
    broadcast the update of a parameter of another shape into an error."""
    pair = _Pair(name, {"lr": _T(0.01, (1, 1))})
    for _ in range(3):
        pair.step()
    pair.check()


SEQUENCE_SETTINGS: list[tuple[str, dict[str, Any]]] = [
    ("Adam", {"betas": [0.8, 0.99]}), ("Adamax", {"betas": [0.8, 0.99]}),
    ("NAdam", {"betas": [0.8, 0.99]}), ("RAdam", {"betas": [0.8, 0.99]}),
    ("Rprop", {"etas": [0.4, 1.3], "step_sizes": [1e-5, 10]}),
    ("Adafactor", {"eps": [None, 1e-3]}), ("Muon", {"ns_coefficients": [3.4, -4.7, 2.0]})]


@pytest.mark.parametrize(("name", "kwargs"), SEQUENCE_SETTINGS,
                         ids=[n for n, _ in SEQUENCE_SETTINGS])
def test_sequence_settings_as_torch_keeps_them(name: str, kwargs: dict[str, Any]) -> None:
    """A list given for betas, etas or step_sizes stays a list in the group, as torch's
    (Adam alone makes its betas a tuple); here Adamax, NAdam, RAdam and Rprop made them
    tuples."""
    pair = _Pair(name, kwargs)
    for _ in range(3):
        pair.step()
    pair.check()


_IMPL = [(name, flags) for name, sets in IMPL_FLAGS.items() for flags in sets]


@pytest.mark.parametrize(("name", "flags"), _IMPL, ids=[f"{n}-{f}" for n, f in _IMPL])
def test_impl_flags_match_torch(name: str, flags: dict[str, Any]) -> None:
    """foreach and fused, on each option set torch's test_foreach_matches_forloop and
    test_fused_matches_forloop pair them with (those torch accepts with them): the first
    three, and a tensor lr's where the optimizer's sets have one."""
    sets = OPTIM_INPUTS[name]
    for kwargs in sets[:3] + [k for k in sets[3:] if isinstance(k.get("lr"), _T)]:
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


# ---- state dicts --------------------------------------------------------------------------

# one option set per optimizer with the most state (amsgrad, momentum, centered, ...)
RICH: dict[str, dict[str, Any]] = {
    "SGD": {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1},
    "Adam": {"weight_decay": 0.1, "amsgrad": True}, "AdamW": {"amsgrad": True},
    "Adamax": {"weight_decay": 0.1}, "NAdam": {"weight_decay": 0.1, "momentum_decay": 6e-3},
    "RAdam": {"weight_decay": 0.1}, "Adagrad": {"lr_decay": 0.5, "weight_decay": 0.1},
    "Adadelta": {"weight_decay": 0.1}, "RMSprop": {"centered": True, "momentum": 0.1},
    "Rprop": {}, "ASGD": {"t0": 2}, "Adafactor": {"weight_decay": 0.1}, "Muon": {},
}


def _grads_for(params: list[Any], rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.standard_normal(tuple(p.shape)) for p in params]


def _set_grads(params: list[Any], grads: list[np.ndarray]) -> None:
    for p, g in zip(params, grads, strict=True):
        p.grad = rt.tensor(g, dtype=p.dtype)


@pytest.mark.parametrize("name", list(RICH))
def test_state_dict_round_trip_mid_training(name: str) -> None:
    """torch's test_state_dict_deterministic: a state dict loaded (a deep copy) into a new
    optimizer over copies of the parameters continues with the same bits; both state dicts
    then equal, and match torch's optimizer on the same gradients. The new optimizer's
    parameters are named for every other optimizer (names or not, the same)."""
    named = list(RICH).index(name) % 2 == 1
    pair = _Pair(name, RICH[name])
    for _ in range(3):
        pair.step()
    copies = [rt.nn.Parameter(p.detach().clone()) for p in pair.rp]
    params = [(f"name{i}", p) for i, p in enumerate(copies)] if named else copies
    resumed = getattr(rt.optim, name)(params, **_kwargs(RICH[name], rt))
    resumed.load_state_dict(copy.deepcopy(pair.ropt.state_dict()))
    for _ in range(3):
        grads = _grads_for(pair.rp, pair.rng)
        _set_grads(copies, grads)
        resumed.step()
        pair.step(grads)
        for a, b in zip(pair.rp, copies, strict=True):
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    pair.check()
    ours, theirs = resumed.state_dict(), pair.ropt.state_dict()
    for index, state in theirs["state"].items():
        for key, value in state.items():
            if isinstance(value, rt.Tensor):
                np.testing.assert_array_equal(ours["state"][index][key].numpy(), value.numpy())


@pytest.mark.parametrize("name", list(RICH))
def test_load_state_dict_casts_state_to_param_dtype(name: str) -> None:
    """A float32 optimizer's state loaded into one over float64 parameters: each state
    tensor takes the parameter's dtype, ``step`` keeps its own (torch's _process_value_
    according_to_param_policy); what torch's load gives, entry by entry."""
    pair = _Pair(name, RICH[name])
    pair.step()
    loaded = {}
    for lib, opt in (("torch", pair.topt), ("rt", pair.ropt)):
        mod = torch if lib == "torch" else rt
        params = [p.detach().double().requires_grad_() for p in
                  (pair.tp if lib == "torch" else pair.rp)]
        other = getattr(mod.optim, name)(params, **_kwargs(RICH[name], mod))
        other.load_state_dict(copy.deepcopy(opt.state_dict()))
        loaded[lib] = other.state_dict()
    _check_state(loaded["torch"], loaded["rt"], "float32")


@pytest.mark.parametrize("name", list(RICH))
def test_load_nontensor_step(name: str) -> None:
    """torch's test_load_nontensor_step: a state dict whose steps are Python numbers (an
    older torch's) loads, each step made a float32 0-d tensor, and training goes on as
    torch's."""
    pair = _Pair(name, RICH[name])
    pair.step()
    for opt in (pair.topt, pair.ropt):
        state_dict = copy.deepcopy(opt.state_dict())
        for state in state_dict["state"].values():
            if "step" in state:
                state["step"] = float(state["step"])
        opt.load_state_dict(state_dict)
    pair.check()
    pair.step()
    pair.check()


# OptimizerInfo.not_og_supported_flags: the flags an older torch's state dict lacks
NOT_OG_SUPPORTED_FLAGS: dict[str, tuple[str, ...]] = {
    name: ("foreach", "differentiable", "maximize", "capturable")
    + (("fused",) if name in ("Adam", "AdamW", "SGD", "Adagrad") else ())
    for name in RICH if name not in ("Adafactor", "Muon")}
NOT_OG_SUPPORTED_FLAGS["Adafactor"] = ("foreach",)


@pytest.mark.parametrize("name", list(RICH))
def test_can_load_older_state_dict(name: str) -> None:
    """torch's test_can_load_older_state_dict: groups missing the flags newer torches added
    (foreach, maximize, capturable, differentiable, fused) load with torch's defaults for
    them."""
    pair = _Pair(name, RICH[name])
    pair.step()
    new_flags = NOT_OG_SUPPORTED_FLAGS.get(name, ())
    for opt in (pair.topt, pair.ropt):
        state_dict = copy.deepcopy(opt.state_dict())
        for group in state_dict["param_groups"]:
            for flag in new_flags:
                if flag in group and flag not in RICH[name]:
                    del group[flag]
        opt.load_state_dict(state_dict)
    pair.step()
    pair.check()
    tgroup, rgroup = pair.topt.param_groups[0], pair.ropt.param_groups[0]
    assert {k: v for k, v in rgroup.items() if k != "params"} == \
        {k: v for k, v in tgroup.items() if k != "params"}


# ---- construction errors ------------------------------------------------------------------

def _both_raise(make: Callable[[Any], Any]) -> None:
    """``make(lib)`` raises torch's exception, with its text, in both libraries (a type
    named there as ``torch.FloatTensor`` is ``runtime.FloatTensor`` here)."""
    with pytest.raises(Exception) as theirs:  # noqa: PT011 (whatever torch raises)
        make(torch)
    text = str(theirs.value).replace("torch.", "runtime.")
    with pytest.raises(type(theirs.value), match=_escaped(text)):
        make(rt)


def _param(lib: Any, *shape: int) -> Any:
    return lib.nn.Parameter(lib.ones(*shape))


@pytest.mark.parametrize("name", [*RICH, "LBFGS"])
def test_param_group_errors(name: str) -> None:
    """get_error_inputs_for_all_optims: a tensor for params, a parameter in two groups,
    a Tensor lr of two elements, names given for some parameters or groups only; a non-leaf
    tensor; lr < 0 (its text is each optimizer's own)."""
    cls = {lib: getattr(lib.optim, name) for lib in (torch, rt)}
    p1 = {lib: _param(lib, 1, 1) for lib in (torch, rt)}
    p2 = {lib: _param(lib, 1, 1) for lib in (torch, rt)}
    _both_raise(lambda lib: cls[lib](p1[lib]))
    _both_raise(lambda lib: cls[lib]([{"params": p1[lib]}, {"params": p1[lib]}]))
    _both_raise(lambda lib: cls[lib]([p1[lib]], lr=lib.tensor([0.001, 0.001])))
    _both_raise(lambda lib: cls[lib]([("weight", p1[lib]), p2[lib]]))
    _both_raise(lambda lib: cls[lib]([{"params": [p1[lib]], "lr": 1e-2},
                                      {"params": [("weight", p2[lib])]}]))
    _both_raise(lambda lib: cls[lib]([p1[lib] * 2]))
    _both_raise(lambda lib: cls[lib]([p1[lib]], lr=-1.0))
    _both_raise(lambda lib: cls[lib]([]))
    with pytest.warns(UserWarning, match="a parameter group with duplicate parameters"):
        cls[rt]([p1[rt], p1[rt]])


# optim_error_inputs_func_* for the CPU, past the ones every optimizer shares (above)
ERROR_INPUTS: list[tuple[str, dict[str, Any]]] = [
    ("Adadelta", {"lr": 0.01, "rho": 1.1}),
    ("Adafactor", {"eps": (-1e-30, 1e-3)}), ("Adafactor", {"d": 0.0}),
    ("Adafactor", {"beta2_decay": 0.8}),
    ("Adagrad", {"lr": 0.01, "lr_decay": -0.5}),
    *[(name, kwargs) for name in ("Adam", "AdamW") for kwargs in (
        {"lr": 0.01, "betas": (1.0, 0.0)}, {"lr": 0.01, "weight_decay": -1},
        {"lr": _T(0.001), "foreach": True}, {"lr": 0.01, "betas": (0.9, _T(0.99))},
        {"lr": 0.01, "betas": (_T(0.9), 0.99)},
        {"lr": 0.01, "betas": (_T(0.9), _T(0.99)), "foreach": True})],
    ("Adamax", {"lr": 0.01, "betas": (0.0, 1.0)}),
    ("ASGD", {"lr": 0.01, "weight_decay": -0.5}),
    ("Muon", {"adjust_lr_fn": "arbitrary"}),
    ("NAdam", {"lr": 0.01, "betas": (1.0, 0.0)}), ("NAdam", {"lr": 0.01, "momentum_decay": -0.2}),
    ("RAdam", {"lr": 0.01, "betas": (1.0, 0.0)}), ("RAdam", {"lr": 0.01, "weight_decay": -1}),
    ("RMSprop", {"lr": 0.01, "momentum": -1.0}),
    ("Rprop", {"lr": 0.01, "etas": (1.0, 0.5)}),
    ("SGD", {"lr": 0.01, "momentum": -0.5}),
]


@pytest.mark.parametrize(("name", "kwargs"), ERROR_INPUTS,
                         ids=[f"{n}-{k}" for n, k in ERROR_INPUTS])
def test_error_inputs(name: str, kwargs: dict[str, Any]) -> None:
    _both_raise(lambda lib: getattr(lib.optim, name)([_param(lib, 1, 1)],
                                                    **_kwargs(kwargs, lib)))


def test_muon_rejects_other_than_2d_parameters() -> None:
    with pytest.raises(ValueError, match=r"^Muon only supports 2D parameters whereas we found "
                                         r"a parameter with size: torch.Size\(\[2, 3, 4\]\)$"):
        rt.optim.Muon([_param(rt, 2, 3, 4)])


@pytest.mark.parametrize("name", [n for n in RICH if n not in ("Muon", "Adafactor")])
def test_differentiable_is_not_implemented(name: str) -> None:
    """differentiable=True (a step that autograd records) cannot run here, where a step runs
    under no_grad: refused with a clear error, not accepted and ignored."""
    with pytest.raises(NotImplementedError, match="differentiable=True is not supported"):
        getattr(rt.optim, name)([_param(rt, 2)], differentiable=True)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD", "Adagrad", "Adamax", "NAdam",
                                  "RAdam", "RMSprop", "Rprop", "ASGD", "Adadelta"])
def test_capturable_on_cpu_raises_torchs_error(name: str) -> None:
    """capturable=True with CPU parameters: torch's assertion at the step (or its
    constructor's error where the optimizer has no capturable), with its text."""
    def make(lib: Any) -> None:
        p = _param(lib, 2)
        opt = getattr(lib.optim, name)([p], capturable=True)
        p.grad = lib.ones(2)
        opt.step()
    _both_raise(make)


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam", "RMSprop", "Rprop", "ASGD",
                                  "Adadelta", "Adafactor", "Muon", "LBFGS"])
def test_fused_where_unsupported_raises_torchs_error(name: str) -> None:
    _both_raise(lambda lib: getattr(lib.optim, name)([_param(lib, 2, 2)], fused=True))


@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD", "Adagrad"])
def test_fused_with_foreach_or_differentiable_raises(name: str) -> None:
    _both_raise(lambda lib: getattr(lib.optim, name)([_param(lib, 2)], fused=True,
                                                    foreach=True))
    _both_raise(lambda lib: getattr(lib.optim, name)([_param(lib, 2)], fused=True,
                                                    differentiable=True))


# ---- steps --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(RICH))
def test_step_is_noop_when_params_have_no_grad(name: str) -> None:
    """Parameters without a gradient (requires_grad False, or grad None) are skipped: no
    change, no state made (Adagrad's, made at construction as torch's, untouched); the
    closure's loss is returned."""
    frozen = rt.randn(2, 2)
    unset = rt.nn.Parameter(rt.randn(2, 2))
    old = [frozen.clone(), unset.detach().clone()]
    opt = getattr(rt.optim, name)([frozen, unset], **_kwargs(RICH[name], rt))
    loss = opt.step(lambda: rt.tensor([1.0]))
    assert loss.tolist() == [1.0]
    for p, o in zip((frozen, unset), old, strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), o.numpy())
    steps = [opt.state[p]["step"].item() for p in (frozen, unset) if p in opt.state]
    assert steps == ([0.0, 0.0] if name == "Adagrad" else [])


# ASGD decays its parameters by lambd * eta at every step, gradient or not (torch's
# OptimizerInfo skips it here: "ASGD internally changes the weights even with zero grad")
@pytest.mark.parametrize("name", [n for n in OPTIM_INPUTS if n != "ASGD"])
def test_step_is_noop_for_zero_grads(name: str) -> None:
    """torch's test_step_is_noop_for_zero_grads: a zero gradient leaves the parameter as it
    is, within torch's assertEqual tolerance (option sets without weight decay; AdamW's lr
    made 1e-5: its default weight decay moves the parameter by 1e-7 of itself)."""
    shape = (5, 1) if name != "Muon" else (5, 2)
    for kwargs in OPTIM_INPUTS[name]:
        if kwargs.get("weight_decay", 0) != 0 or name == "Muon":
            continue
        kwargs = _kwargs(kwargs, rt)
        if name == "AdamW":
            kwargs["lr"] = rt.tensor(1e-5) if isinstance(kwargs.get("lr"), rt.Tensor) else 1e-5
        param = rt.randn(*shape, requires_grad=True)
        old = param.detach().clone()
        opt = getattr(rt.optim, name)([param], **kwargs)
        param.grad = rt.zeros_like(param)
        opt.step(lambda: rt.tensor([1.0]))
        np.testing.assert_allclose(param.detach().numpy(), old.numpy(), rtol=1.3e-6, atol=1e-5)


@pytest.mark.parametrize("name", list(RICH))
def test_step_with_closure_matches_torch(name: str) -> None:
    """A closure that recomputes the loss and its gradients: the step returns the loss,
    torch's trajectory over 5 steps."""
    pair = _Pair(name, RICH[name])
    target = [np.full(tuple(p.shape), 0.5) for p in pair.tp]

    def closure_for(lib: Any, params: list[Any], opt: Any) -> Callable[[], Any]:
        def closure() -> Any:
            opt.zero_grad()
            loss = sum(((p - lib.tensor(t, dtype=p.dtype)) ** 2).sum()
                       for p, t in zip(params, target, strict=True))
            loss.backward()
            return loss
        return closure

    tclosure = closure_for(torch, pair.tp, pair.topt)
    rclosure = closure_for(rt, pair.rp, pair.ropt)
    for _ in range(5):
        tloss, rloss = pair.topt.step(tclosure), pair.ropt.step(rclosure)
        np.testing.assert_allclose(rloss.item(), tloss.item(), rtol=2e-5)
    pair.check()


@pytest.mark.parametrize("name", [n for n in RICH if n != "Muon"])  # Muon takes 2-D only
def test_param_groups_lr(name: str) -> None:
    """torch's test_param_groups_lr: a group's own lr (and Rprop's step sizes) over the
    optimizer's near-zero one; the other group's parameter barely moves; torch's values."""
    outer: dict[str, Any] = {"lr": 1e-28}
    if name == "Rprop":
        outer["step_sizes"] = (0, 50)
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s) for s in ((4, 2), (4,), (4, 2))]
    results = {}
    for lib in (torch, rt):
        weight, bias, irrelevant = (lib.nn.Parameter(lib.tensor(a, dtype=lib.float32))
                                    for a in arrays)
        opt = getattr(lib.optim, name)(
            [{"params": [weight, bias], "lr": 1e-3, **_kwargs(RICH[name], lib)},
             {"params": [irrelevant]}], **outer)
        x = lib.tensor(np.array([1.0, -2.0]), dtype=lib.float32)
        for i in range(5):
            opt.zero_grad()
            (weight.mv(x) + bias).pow(2).sum().backward()
            irrelevant.grad = lib.full((4, 2), 0.1 * (i + 1))
            opt.step()
        results[lib] = [p.detach().numpy().copy() for p in (weight, bias, irrelevant)]
    for ours, theirs in zip(results[rt], results[torch], strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad(set_to_none: bool) -> None:
    """zero_grad(set_to_none): grads set to None, or zeroed in place (the same tensor, its
    grad_fn-less leaf kept); torch's."""
    p = rt.nn.Parameter(rt.ones(3))
    opt = rt.optim.SGD([p], lr=0.1)
    (p * 2).sum().backward()
    grad = p.grad
    opt.zero_grad(set_to_none=set_to_none)
    if set_to_none:
        assert p.grad is None
    else:
        assert p.grad is grad
        assert p.grad.tolist() == [0.0, 0.0, 0.0]
    opt.step()
    assert p.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("name", list(RICH))
def test_add_param_group_matches_torch(name: str) -> None:
    """A group added mid-training takes the optimizer's defaults where it sets none, its own
    settings where it does; both groups then step as torch's."""
    pair = _Pair(name, RICH[name])
    pair.step()
    rng = np.random.default_rng(5)
    extra = rng.standard_normal((2, 3))
    tnew = torch.tensor(extra, dtype=torch.float32, requires_grad=True)
    rnew = rt.tensor(extra, dtype=rt.float32, requires_grad=True)
    pair.topt.add_param_group({"params": [tnew], "lr": 0.05})
    pair.ropt.add_param_group({"params": [rnew], "lr": 0.05})
    pair.tp.append(tnew)
    pair.rp.append(rnew)
    for _ in range(3):
        pair.step()
    pair.check()
    assert [sorted(g) for g in pair.ropt.param_groups] == \
        [sorted(g) for g in pair.topt.param_groups]
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter "
                                         "group"):
        pair.ropt.add_param_group({"params": [rnew]})


def test_optimizer_repr_matches_torch() -> None:
    for name, kwargs in RICH.items():
        pair = _Pair(name, kwargs)
        assert repr(pair.ropt) == repr(pair.topt)


# ---- hooks --------------------------------------------------------------------------------

ALL = [*RICH, "LBFGS"]


def _one(name: str) -> Any:
    """An optimizer of ``name`` over one 2x3 parameter (a closure for LBFGS's step)."""
    param = rt.rand(2, 3, requires_grad=True)
    return getattr(rt.optim, name)([param], **_kwargs(RICH.get(name, {}), rt))


def _closure(name: str) -> Callable[[], Any] | None:
    return (lambda: 1) if name == "LBFGS" else None


def _state_dict_pre_hook(optimizer: Any) -> None:
    optimizer.state["test"] = 1


def _state_dict_post_hook(optimizer: Any, state_dict: dict[str, Any]) -> dict[str, Any]:
    if "test" in state_dict["state"]:
        state_dict["state"].pop("test")
        state_dict["ran_state_dict_pre_hook"] = True
    else:
        state_dict["ran_state_dict_pre_hook"] = False
    return state_dict


@pytest.mark.parametrize("name", ALL)
def test_state_dict_hooks(name: str) -> None:
    """torch's test_state_dict_pre_hook, _post_hook and _pre_post_hook."""
    optim = _one(name)
    optim.register_state_dict_pre_hook(_state_dict_pre_hook)
    assert optim.state_dict()["state"]["test"] == 1
    optim = _one(name)
    optim.register_state_dict_post_hook(_state_dict_post_hook)
    assert optim.state_dict()["ran_state_dict_pre_hook"] is False
    optim = _one(name)
    optim.register_state_dict_pre_hook(_state_dict_pre_hook)
    optim.register_state_dict_post_hook(_state_dict_post_hook)
    state_dict = optim.state_dict()
    assert "test" not in state_dict["state"]
    assert state_dict["ran_state_dict_pre_hook"] is True


def _load_pre_hook1(optimizer: Any, state_dict: dict[str, Any]) -> None:
    state_dict["param_groups"][0]["lr"] = 0.002


def _load_pre_hook2(optimizer: Any, state_dict: dict[str, Any]) -> dict[str, Any]:
    my_state_dict = copy.deepcopy(state_dict)
    my_state_dict["param_groups"][0]["lr"] = 0.003
    return my_state_dict


def _load_post_hook(optimizer: Any) -> None:
    optimizer.state["ran_load_state_dict_pre_hook2"] = optimizer.param_groups[0]["lr"] == 0.003
    optimizer.state["ran_load_state_dict_post_hook"] = True


@pytest.mark.parametrize("name", ALL)
def test_load_state_dict_hooks(name: str) -> None:
    """torch's test_load_state_dict_pre_hook_and_prepend, _post_hook and _pre_post_hook."""
    optim = _one(name)
    state_dict = optim.state_dict()
    optim.register_load_state_dict_pre_hook(_load_pre_hook1)
    optim.load_state_dict(state_dict)
    assert optim.param_groups[0]["lr"] == 0.002
    optim.register_load_state_dict_pre_hook(_load_pre_hook2, prepend=True)
    optim.load_state_dict(state_dict)
    assert optim.param_groups[0]["lr"] == 0.002  # hook1, run last, has the final word

    optim = _one(name)
    optim.register_load_state_dict_post_hook(_load_post_hook)
    optim.load_state_dict(optim.state_dict())
    assert optim.state["ran_load_state_dict_pre_hook2"] is False
    assert optim.state["ran_load_state_dict_post_hook"] is True

    optim = _one(name)
    optim.register_load_state_dict_pre_hook(_load_pre_hook2)
    optim.register_load_state_dict_post_hook(_load_post_hook)
    optim.load_state_dict(optim.state_dict())
    assert optim.state["ran_load_state_dict_pre_hook2"] is True
    assert optim.state["ran_load_state_dict_post_hook"] is True


@pytest.mark.parametrize("name", ALL)
def test_step_pre_and_post_hooks(name: str) -> None:
    """torch's test_step_pre_hook and test_step_post_hook: each runs at each step until its
    handle is removed."""
    data = {"pre": 5, "post": 2}

    def pre_hook(opt: Any, args: Any, kwargs: Any) -> None:
        data["pre"] += 2

    def post_hook(opt: Any, args: Any, kwargs: Any) -> None:
        data["post"] += 2

    optim = getattr(rt.optim, name)([rt.tensor([[1.0, 1.0]])])
    pre, post = optim.register_step_pre_hook(pre_hook), optim.register_step_post_hook(post_hook)
    optim.step(_closure(name))
    optim.step(_closure(name))
    assert data == {"pre": 9, "post": 6}
    pre.remove()
    post.remove()
    optim.step(_closure(name))
    assert data == {"pre": 9, "post": 6}


@pytest.mark.parametrize("name", ALL)
def test_step_all_hooks(name: str) -> None:
    """torch's test_step_all_hooks: global pre, local pre, local post, global post, for
    every optimizer; none after their handles are removed."""
    from runtime.optim.optimizer import (register_optimizer_step_post_hook,
                                         register_optimizer_step_pre_hook)
    data: list[int] = []
    params = [rt.tensor([[1.0, 1.0]])]  # 2-D, for Muon
    optim = getattr(rt.optim, name)(params)
    optim2 = rt.optim.SGD(params)
    handles = [register_optimizer_step_pre_hook(lambda *a: data.append(0)),
               register_optimizer_step_post_hook(lambda *a: data.append(5))]
    try:
        for opt in (optim, optim2):
            handles.append(opt.register_step_pre_hook(lambda *a: data.append(1)))
            handles.append(opt.register_step_post_hook(lambda *a: data.append(2)))
        optim.step(_closure(name))
        assert data == [0, 1, 2, 5]
        optim2.step()
        optim.step(_closure(name))
        assert data == [0, 1, 2, 5] * 3
    finally:
        for handle in handles:
            handle.remove()
    optim.step(_closure(name))
    optim2.step()
    assert data == [0, 1, 2, 5] * 3


def _hook_order(lib: Any) -> list[str]:
    p = lib.nn.Parameter(lib.ones(2))
    opt = lib.optim.SGD([p], lr=0.1)
    calls: list[str] = []
    opt.register_state_dict_pre_hook(lambda o: calls.append("pre1"))
    opt.register_state_dict_pre_hook(lambda o: calls.append("pre0"), prepend=True)
    opt.register_state_dict_post_hook(lambda o, sd: calls.append("post1"))
    opt.register_state_dict_post_hook(lambda o, sd: calls.append("post0"), prepend=True)
    opt.register_load_state_dict_post_hook(lambda o: calls.append("load_post1"))
    opt.register_load_state_dict_post_hook(lambda o: calls.append("load_post0"), prepend=True)
    handle = opt.register_load_state_dict_pre_hook(lambda o, sd: calls.append("load_pre"))
    opt.load_state_dict(opt.state_dict())
    handle.remove()
    opt.load_state_dict(opt.state_dict())
    return calls


def test_state_dict_hooks_order_with_prepend() -> None:
    """prepend=True puts a state dict or load hook first; a removed one runs no more; the
    order torch's runs them in."""
    assert _hook_order(rt) == _hook_order(torch)


def _hooked_subclass_calls(lib: Any) -> list[str]:
    """The hooks run by one step of an optimizer whose step calls ``super().step()`` of a
    base class with a step of its own that no optimizer was made of."""
    class Base(lib.optim.Optimizer):
        def __init__(self, params: Any) -> None:
            super().__init__(params, {"lr": 0.1})

        def step(self, closure: Any = None) -> None:
            with lib.no_grad():
                for p in self.param_groups[0]["params"]:
                    p.sub_(p.grad * self.param_groups[0]["lr"])

    class Sub(Base):
        def step(self, closure: Any = None) -> None:
            return super().step(closure)

    calls: list[str] = []
    p = lib.nn.Parameter(lib.ones(2))
    opt = Sub([p])
    p.grad = lib.ones(2)
    opt.register_step_pre_hook(lambda *a: calls.append("pre"))
    opt.register_step_post_hook(lambda *a: calls.append("post"))
    opt.step()
    return calls


def test_step_hooks_run_once_for_a_subclass_calling_super_step() -> None:
    """torch patches the step of an optimizer's class when one is made
    (_patch_step_function): a subclass's step calling its base's runs the hooks once; here
    every class's own step was wrapped when defined, and the hooks ran twice."""
    assert _hooked_subclass_calls(rt) == _hooked_subclass_calls(torch) == ["pre", "post"]


def test_step_pre_hook_replaces_args() -> None:
    """A pre-hook returning (args, kwargs) replaces the step's arguments (here, the
    closure); any other non-None value is torch's RuntimeError."""
    p = rt.nn.Parameter(rt.ones(2))
    opt = rt.optim.SGD([p], lr=0.5)
    handle = opt.register_step_pre_hook(lambda o, args, kwargs: (args, {"closure": lambda: 7}))
    assert opt.step() == 7
    handle.remove()
    opt.register_step_pre_hook(lambda o, args, kwargs: 3)
    with pytest.raises(RuntimeError, match="must return None or a tuple of "
                                           r"\(new_args, new_kwargs\), but got 3"):
        opt.step()


@pytest.mark.parametrize("name", ALL)
def test_deepcopy_copies_all_public_attrs(name: str) -> None:
    params = [rt.nn.Parameter(rt.randn(2, 3)) for _ in range(2)]
    for p in params:
        p.grad = rt.rand_like(p)
    optimizer = getattr(rt.optim, name)(params, **_kwargs(RICH.get(name, {}), rt))
    for _ in range(3):
        optimizer.step(_closure(name))

    def public(obj: Any) -> set[str]:
        return {k for k in obj.__dict__ if not k.startswith("_")}

    assert public(optimizer) == public(copy.deepcopy(optimizer))


@pytest.mark.parametrize("name", ALL)
def test_non_empty_state(name: str) -> None:
    """Each parameter stepped has state (torch's test_non_empty_state), with torch's keys."""
    states = {}
    for lib in (torch, rt):
        lib.manual_seed(0)
        model = lib.nn.Linear(5, 5)
        opt = getattr(lib.optim, name)([model.weight] if name == "Muon"
                                       else model.parameters())
        model(lib.rand(2, 5)).sum().backward()
        opt.step(lambda: 1.0) if name == "LBFGS" else opt.step()
        states[lib] = [sorted(s) for s in opt.state.values()]
        assert all(states[lib])
    assert states[rt] == states[torch]


# ---- swa_utils (torch's test/optim/test_swa_utils.py, smaller sizes) -------------------------

def _swa_dnn() -> Any:
    return rt.nn.Sequential(rt.nn.Conv2d(1, 5, kernel_size=3), rt.nn.ReLU(),
                            rt.nn.MaxPool2d(kernel_size=2), rt.nn.BatchNorm2d(5, momentum=0.3),
                            rt.nn.Conv2d(5, 2, kernel_size=3), rt.nn.ReLU(),
                            rt.nn.Linear(5, 5), rt.nn.ReLU(), rt.nn.Linear(5, 10))


def _assert_close(actual: Any, expected: Any, **tol: float) -> None:
    np.testing.assert_allclose(actual.detach().numpy(), expected.detach().numpy(),
                               **(tol or {"rtol": 1.3e-6, "atol": 1e-5}))


@pytest.mark.parametrize("ema", [True, False])
def test_averaged_model_all_devices(ema: bool) -> None:
    from runtime.optim.swa_utils import (AveragedModel, get_ema_multi_avg_fn,
                                         get_swa_multi_avg_fn)
    dnn = _swa_dnn()
    decay = 0.999
    fn = get_ema_multi_avg_fn(decay) if ema else get_swa_multi_avg_fn()
    averaged_dnn = AveragedModel(dnn, device=rt.device("cpu"), multi_avg_fn=fn)
    averaged = [rt.zeros_like(p) for p in dnn.parameters()]
    n_updates = 10
    for i in range(n_updates):
        for p, p_avg in zip(dnn.parameters(), averaged, strict=True):
            p.detach().add_(rt.randn_like(p))
            if ema:
                p_avg += p.detach() * decay ** (n_updates - i - 1) * ((1 - decay) if i else 1.0)
            else:
                p_avg += p.detach() / n_updates
        averaged_dnn.update_parameters(dnn)
    for p_avg, p_swa in zip(averaged, averaged_dnn.parameters(), strict=True):
        _assert_close(p_swa, p_avg)
        assert p_swa.device == rt.device("cpu")
    assert averaged_dnn.n_averaged.device == rt.device("cpu")


def test_averaged_model_state_dict() -> None:
    from runtime.optim.swa_utils import AveragedModel
    dnn = rt.nn.Sequential(rt.nn.Conv2d(1, 5, kernel_size=3), rt.nn.Linear(5, 10))
    averaged_dnn, averaged_dnn2 = AveragedModel(dnn), AveragedModel(dnn)
    for _ in range(10):
        for p in dnn.parameters():
            p.detach().add_(rt.randn_like(p))
        averaged_dnn.update_parameters(dnn)
    averaged_dnn2.load_state_dict(averaged_dnn.state_dict())
    for p_swa, p_swa2 in zip(averaged_dnn.parameters(), averaged_dnn2.parameters(),
                             strict=True):
        np.testing.assert_array_equal(p_swa.detach().numpy(), p_swa2.detach().numpy())
    assert bool(averaged_dnn.n_averaged == averaged_dnn2.n_averaged)


def test_averaged_model_default_avg_fn_picklable() -> None:
    import pickle

    from runtime.optim.swa_utils import AveragedModel
    dnn = rt.nn.Sequential(rt.nn.Conv2d(1, 5, kernel_size=3), rt.nn.BatchNorm2d(5),
                           rt.nn.Linear(5, 5))
    pickle.dumps(AveragedModel(dnn))


@pytest.mark.parametrize("use_multi_avg_fn", [True, False])
@pytest.mark.parametrize("use_buffers", [True, False])
def test_averaged_model_exponential(use_multi_avg_fn: bool, use_buffers: bool) -> None:
    import itertools

    from runtime.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
    dnn = rt.nn.Sequential(rt.nn.Conv2d(1, 5, kernel_size=3),
                           rt.nn.BatchNorm2d(5, momentum=0.3), rt.nn.Linear(5, 10))
    decay = 0.9
    if use_multi_avg_fn:
        averaged_dnn = AveragedModel(dnn, multi_avg_fn=get_ema_multi_avg_fn(decay),
                                     use_buffers=use_buffers)
    else:
        def avg_fn(p_avg: Any, p: Any, n_avg: Any) -> Any:
            return decay * p_avg + (1 - decay) * p
        averaged_dnn = AveragedModel(dnn, avg_fn=avg_fn, use_buffers=use_buffers)
    dnn_params = (list(itertools.chain(dnn.parameters(), dnn.buffers())) if use_buffers
                  else list(dnn.parameters()))
    averaged = [rt.zeros_like(p) for p in dnn_params if p.size() != ()]
    for i in range(10):
        updated = []
        for p, p_avg in zip([p for p in dnn_params if p.size() != ()], averaged, strict=True):
            p.detach().add_(rt.randn_like(p))
            updated.append(p.clone() if i == 0 else (p_avg * decay + p * (1 - decay)).clone())
        averaged_dnn.update_parameters(dnn)
        averaged = updated
    if use_buffers:
        swa = [p for p in itertools.chain(averaged_dnn.module.parameters(),
                                          averaged_dnn.module.buffers()) if p.size() != ()]
        for p_avg, p_swa in zip(averaged, swa, strict=True):
            _assert_close(p_swa, p_avg)
    else:
        for p_avg, p_swa in zip(averaged, averaged_dnn.parameters(), strict=True):
            _assert_close(p_swa, p_avg)
        for b_avg, b_swa in zip(dnn.buffers(), averaged_dnn.module.buffers(), strict=True):
            _assert_close(b_swa, b_avg)


class _SWATestDNN(rt.nn.Module):
    def __init__(self, input_features: int) -> None:
        super().__init__()
        self.n_features = 10
        self.fc1 = rt.nn.Linear(input_features, self.n_features)
        self.bn = rt.nn.BatchNorm1d(self.n_features)

    def compute_preactivation(self, x: Any) -> Any:
        return self.fc1(x)

    def forward(self, x: Any) -> Any:
        return self.bn(self.fc1(x))


class _SWATestCNN(rt.nn.Module):
    def __init__(self, input_channels: int) -> None:
        super().__init__()
        self.n_features = 10
        self.conv1 = rt.nn.Conv2d(input_channels, self.n_features, kernel_size=3, padding=1)
        self.bn = rt.nn.BatchNorm2d(self.n_features, momentum=0.3)

    def compute_preactivation(self, x: Any) -> Any:
        return self.conv1(x)

    def forward(self, x: Any) -> Any:
        return self.bn(self.conv1(x))


def _test_update_bn(dnn: Any, dl_x: Any, dl_xy: Any) -> None:
    from runtime.optim.swa_utils import update_bn
    total, total_sq, count = rt.zeros(dnn.n_features), rt.zeros(dnn.n_features), 0
    for (x,) in dl_x:
        dnn.forward(x)
        pre = dnn.compute_preactivation(x)
        if len(pre.shape) == 4:
            pre = pre.transpose(1, 3)
        pre = pre.contiguous().view(-1, dnn.n_features)
        count += pre.shape[0]
        total += rt.sum(pre, dim=0)
        total_sq += rt.sum(pre ** 2, dim=0)
    mean = total / count
    var = total_sq / count - mean ** 2

    def reset_bn(module: Any) -> None:
        if isinstance(module, rt.nn.modules.batchnorm._BatchNorm):
            module.running_mean = rt.zeros_like(module.running_mean)
            module.running_var = rt.ones_like(module.running_var)

    for loader, reset in ((dl_xy, False), (dl_xy, True), (dl_x, True)):
        if reset:
            dnn.apply(reset_bn)
        update_bn(loader, dnn, device=x.device)
        _assert_close(dnn.bn.running_mean, mean)
        _assert_close(dnn.bn.running_var, var, atol=1e-1, rtol=0)


@pytest.mark.parametrize("cnn", [False, True])
def test_update_bn(cnn: bool) -> None:
    """torch's test_update_bn_dnn and test_update_bn_cnn: update_bn's running statistics
    are the whole loader's (with (x,) or (x, y) batches, after a reset too); training mode
    kept."""
    from runtime.utils.data import DataLoader, TensorDataset
    x = rt.rand(20, 3, 5, 5) if cnn else rt.rand(20, 5)
    y = rt.rand(20)
    dl_x = DataLoader(TensorDataset(x), batch_size=5, shuffle=True)
    dl_xy = DataLoader(TensorDataset(x, y), batch_size=5, shuffle=True)
    model = _SWATestCNN(3) if cnn else _SWATestDNN(5)
    model.train()
    _test_update_bn(model, dl_x, dl_xy)
    assert model.training


def test_bn_update_eval_momentum() -> None:
    from runtime.optim.swa_utils import update_bn
    from runtime.utils.data import DataLoader, TensorDataset
    dl_x = DataLoader(TensorDataset(rt.rand(20, 3, 5, 5)), batch_size=5, shuffle=True)
    cnn = _SWATestCNN(3)
    cnn.eval()
    update_bn(dl_x, cnn)
    assert not cnn.training
    assert cnn.bn.momentum == 0.3


def test_swalr_errors_and_schedule_match_torch() -> None:
    """SWALR's checks (anneal_strategy, anneal_epochs, swa_lr per group) with torch's texts;
    its cos and linear schedules torch's lr by lr."""
    for kwargs in ({"swa_lr": 0.1, "anneal_strategy": "exp"},
                   {"swa_lr": 0.1, "anneal_epochs": -1},
                   {"swa_lr": 0.1, "anneal_epochs": 1.5},
                   {"swa_lr": [0.1, 0.2]}):
        _both_raise(lambda lib, kwargs=kwargs: lib.optim.swa_utils.SWALR(
            lib.optim.SGD([_param(lib, 2)], lr=1.0), **kwargs))
    for strategy in ("cos", "linear"):
        lrs = {}
        for lib in (torch, rt):
            opt = lib.optim.SGD([_param(lib, 2)], lr=1.0)
            sched = lib.optim.swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=3,
                                              anneal_strategy=strategy)
            lrs[lib] = []
            for _ in range(5):
                opt.step()
                sched.step()
                lrs[lib].append(sched.get_last_lr()[0])
        np.testing.assert_allclose(lrs[rt], lrs[torch], rtol=1e-12)


# ---- LBFGS --------------------------------------------------------------------------------

LBFGS_INPUTS: list[dict[str, Any]] = [
    {}, {"lr": 0.01}, {"lr": _T(0.001)}, {"tolerance_grad": 1e-6},
    {"line_search_fn": "strong_wolfe"}, {"history_size": 2, "max_iter": 5}]


@pytest.mark.parametrize("kwargs", LBFGS_INPUTS, ids=[str(k) for k in LBFGS_INPUTS])
def test_lbfgs_matches_torch(kwargs: dict[str, Any]) -> None:
    """optim_inputs_func_lbfgs: 3 steps (each up to max_iter closure evaluations) on a
    smooth convex function in float64 (not Rosenbrock's valley, where a last-bit difference
    of a gradient grows to 1e-7 in 40 iterations): torch's losses, parameters and state."""
    results = {}
    weights, centre = np.array([1.0, 3.0, 0.5]), np.array([0.5, -1.0, 2.0])
    for lib in (torch, rt):
        x = lib.tensor(np.array([-1.5, 1.2, 0.3]), dtype=lib.float64, requires_grad=True)
        opt = lib.optim.LBFGS([x], **_kwargs(kwargs, lib))
        w, c = lib.tensor(weights), lib.tensor(centre)

        def closure(x: Any = x, opt: Any = opt, w: Any = w, c: Any = c) -> Any:
            opt.zero_grad()
            loss = (w * (x - c) ** 2).sum() + 0.1 * (x ** 4).sum()
            loss.backward()
            return loss
        losses = [float(opt.step(closure).detach()) for _ in range(3)]
        state = opt.state[x]
        results[lib] = (losses, x.detach().numpy().copy(), state["func_evals"],
                        state["n_iter"], len(state["old_dirs"]))
    ours, theirs = results[rt], results[torch]
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-9, atol=1e-12)
    assert ours[2:] == theirs[2:]


def test_second_order_optims_return_consistent_types() -> None:
    """torch's: whether LBFGS stops at once (tolerance_grad inf) or not, its step returns
    the closure's first loss, of the same type."""
    params = [rt.randn(10, 5), rt.randn(10)]

    def closure() -> Any:
        return rt.tensor([10.0])

    res1 = rt.optim.LBFGS(params, tolerance_grad=float("inf")).step(closure)
    res2 = rt.optim.LBFGS(params, tolerance_grad=-float("inf")).step(closure)
    assert type(res1) is type(res2)


@pytest.mark.parametrize("name", list(RICH))
def test_save_load_equality_with_weights_only(name: str) -> None:
    """torch's test_save_load_equality_with_weights_only: a state dict saved and loaded
    (weights_only) is the same; and one torch saved, loaded here into an optimizer over the
    same parameters, goes on as torch's own."""
    import io
    pair = _Pair(name, RICH[name])
    pair.step()
    buf = io.BytesIO()
    rt.save(pair.ropt.state_dict(), buf)
    buf.seek(0)
    _check_state(pair.topt.state_dict(), rt.load(buf, weights_only=True), "float32")
    buf = io.BytesIO()
    torch.save(pair.topt.state_dict(), buf)
    buf.seek(0)
    pair.ropt.load_state_dict(rt.load(buf, weights_only=True))
    pair.check()
    for _ in range(2):
        pair.step()
    pair.check()


@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD", "Adagrad"])
def test_load_state_dict_makes_a_fused_groups_step_float32(name: str) -> None:
    """torch's _process_value_according_to_param_policy: the step of a group saved with
    fused=True loads as float32 (a float64 step, as made under a float64 default dtype),
    other groups' steps as they are; what torch's load gives."""
    kwargs = {"momentum": 0.9} if name == "SGD" else {}
    loaded = {}
    for lib in (torch, rt):
        params = [lib.nn.Parameter(lib.ones(2, dtype=lib.float64))]
        opt = getattr(lib.optim, name)(params, fused=True, **kwargs)
        params[0].grad = lib.ones(2, dtype=lib.float64)
        opt.step()
        state_dict = copy.deepcopy(opt.state_dict())
        for state in state_dict["state"].values():
            if "step" in state:
                state["step"] = state["step"].double()
        for fused in (True, False):
            state_dict["param_groups"][0]["fused"] = fused
            other = getattr(lib.optim, name)(params, fused=True, **kwargs)
            other.load_state_dict(copy.deepcopy(state_dict))
            loaded[lib, fused] = other.state_dict()
    for fused in (True, False):
        _check_state(loaded[torch, fused], loaded[rt, fused], "float64")
