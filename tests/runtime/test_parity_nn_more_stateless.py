"""nn.utils.stateless.functional_call against torch: the module called with replaced
parameters and buffers (nested names, gradients to the replacements, the module unchanged
after), tied weights, strict keys, its deprecation warning and errors."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _net(lib: Any) -> Any:
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))
    rng = np.random.default_rng(9)  # the same weights in both libraries
    net.load_state_dict({k: lib.tensor(rng.random(tuple(v.shape)) + 0.5) if v.is_floating_point()
                         else v for k, v in net.state_dict().items()})
    return net.double().eval()


def _call(lib: Any, **kw: Any) -> tuple[Any, Any, list[str]]:
    net = _net(lib)
    before = {k: v.detach().numpy().copy() for k, v in net.state_dict().items()}
    rng = np.random.default_rng(0)
    w0 = lib.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    mean = lib.tensor(rng.standard_normal(4))
    x = lib.tensor(rng.standard_normal((5, 3)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = lib.nn.utils.stateless.functional_call(
            net, {"0.weight": w0, "1.running_mean": mean}, (x,), **kw)
    out.sum().backward()
    after = net.state_dict()
    for k, v in before.items():  # the module's own tensors are back, unchanged
        np.testing.assert_array_equal(after[k].detach().numpy(), v)
    assert isinstance(net[0].weight, lib.nn.Parameter)
    return out.detach().numpy(), w0.grad.numpy(), [str(w.message) for w in caught]


def test_functional_call_matches_torch():
    (t_out, t_grad, t_warn), (r_out, r_grad, r_warn) = _call(torch), _call(rt)
    np.testing.assert_allclose(r_out, t_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(r_grad, t_grad, rtol=1e-10, atol=1e-12)
    assert r_warn == t_warn and len(r_warn) == 1


def _tied(lib: Any) -> Any:
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(3, 3, bias=False), lib.nn.Linear(3, 3, bias=False))
    net[1].weight = net[0].weight
    with lib.no_grad():
        net[0].weight.copy_(lib.tensor(np.arange(9.0).reshape(3, 3)))
    return net.double()


@pytest.mark.parametrize("tie_weights", [True, False])
def test_tied_weights_are_replaced_together_as_torch(tie_weights):
    outs = []
    for lib in (torch, rt):
        net, x = _tied(lib), lib.tensor(np.eye(3))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outs.append(lib.nn.utils.stateless.functional_call(
                net, {"0.weight": lib.tensor(np.full((3, 3), 2.0))}, x,
                tie_weights=tie_weights).detach().numpy())
    np.testing.assert_allclose(outs[1], outs[0])


@pytest.mark.parametrize("case", ["tied twice", "strict", "strict unexpected"])
def test_functional_call_errors_match_torch(case):
    def run(lib: Any) -> str:
        net = _tied(lib)
        given = {"0.weight": lib.ones(3, 3, dtype=lib.float64)}
        kw: dict[str, Any] = {}
        if case == "tied twice":
            given["1.weight"] = lib.zeros(3, 3, dtype=lib.float64)
        else:
            kw["strict"] = True
            if case == "strict unexpected":
                given["2.bias"] = lib.ones(3)
            net = _net(lib)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(Exception) as info:
                lib.nn.utils.stateless.functional_call(net, given, lib.ones(2, 3), **kw)
        return f"{type(info.value).__name__}: {info.value}"

    assert run(rt) == run(torch)
