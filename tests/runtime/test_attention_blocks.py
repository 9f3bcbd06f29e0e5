"""The transformer building blocks beside attention: RMSNorm, SiLU, LeakyReLU and Softplus
against PyTorch (values, gradients, defaults, reprs, errors), eagerly and compiled."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

torch = pytest.importorskip("torch")
TOL = dict(rtol=1e-5, atol=1e-6)

# (name, positional args after the input); x spans large values, so softplus's threshold and
# its far-negative tail are both exercised
CASES = [("silu", ()), ("leaky_relu", ()), ("leaky_relu", (0.2,)), ("softplus", ()),
         ("softplus", (2.0, 5.0)), ("softplus", (0.5, 3.0)), ("rms_norm", ((7,),)),
         ("rms_norm", ((3, 7), None, 1e-3))]


@pytest.mark.parametrize(("name", "args"), CASES)
def test_functional_matches_torch(name: str, args: tuple[Any, ...]) -> None:
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((2, 3, 7)) * 12).astype(np.float32)
    x[0, 0, :3] = [0.0, 20.0, -100.0]
    up = rng.standard_normal(x.shape).astype(np.float32)
    xr, xt = rt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    a = getattr(rt.nn.functional, name)(xr, *args)
    b = getattr(torch.nn.functional, name)(xt, *args)
    (a * rt.tensor(up)).sum().backward()
    (b * torch.tensor(up)).sum().backward()
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **TOL)
    np.testing.assert_allclose(xr.grad.numpy(), xt.grad.numpy(), **TOL)


@pytest.mark.parametrize(("name", "kwargs"), [
    ("SiLU", {}), ("LeakyReLU", {}), ("LeakyReLU", {"negative_slope": 0.1, "inplace": True}),
    ("Softplus", {"beta": 2.0, "threshold": 10.0}), ("RMSNorm", {"normalized_shape": 4}),
    ("RMSNorm", {"normalized_shape": [4], "eps": 1e-6, "elementwise_affine": False})])
def test_module_repr_and_parameters_match_torch(name: str, kwargs: dict[str, Any]) -> None:
    ours, theirs = getattr(rt.nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    assert repr(ours) == repr(theirs)
    assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in theirs.named_parameters()]
    for (n, p), q in zip(ours.named_parameters(), theirs.parameters(), strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=n)


def test_rmsnorm_module_with_weight_matches_torch() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5, 8)).astype(np.float32)
    w = rng.standard_normal(8).astype(np.float32)
    ours, theirs = rt.nn.RMSNorm(8), torch.nn.RMSNorm(8)
    with rt.no_grad():
        ours.weight.copy_(rt.tensor(w))
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(w))
    (ours(rt.tensor(x)) ** 3).sum().backward()
    (theirs(torch.tensor(x)) ** 3).sum().backward()
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-4)


def test_inplace_activations_overwrite_their_input_as_torch() -> None:
    x = np.array([-2.0, -0.5, 0.0, 1.5], np.float32)
    for name in ("silu", "leaky_relu"):
        xr = rt.tensor(x, requires_grad=True)
        xt = torch.tensor(x, requires_grad=True)
        hr, ht = xr * 1.0, xt * 1.0  # non-leaf: in-place is allowed
        outr = getattr(rt.nn.functional, name)(hr, inplace=True)
        outt = getattr(torch.nn.functional, name)(ht, inplace=True)
        assert outr is hr
        np.testing.assert_allclose(hr.detach().numpy(), ht.detach().numpy(), **TOL)
        outr.sum().backward()
        outt.sum().backward()
        np.testing.assert_allclose(xr.grad.numpy(), xt.grad.numpy(), **TOL)


def test_rms_norm_shape_error_is_torch_text() -> None:
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.RMSNorm(4)(torch.tensor(x))
    with pytest.raises(RuntimeError) as ours:
        rt.nn.RMSNorm(4)(rt.tensor(x))
    assert str(ours.value) == str(theirs.value)


def test_compiled_block_step_equals_eager_without_fallback() -> None:
    rng = np.random.default_rng(2)
    x = rt.tensor(rng.standard_normal((16, 8)).astype(np.float32))
    nets = []
    for _ in range(2):
        rt.manual_seed(3)
        nets.append(rt.nn.Sequential(rt.nn.RMSNorm(8), rt.nn.Linear(8, 8), rt.nn.SiLU(),
                                     rt.nn.Linear(8, 8), rt.nn.LeakyReLU(0.05),
                                     rt.nn.Linear(8, 8), rt.nn.Softplus(beta=2.0)))
    opts = [rt.optim.SGD(n.parameters(), lr=0.1) for n in nets]

    def make(net: Any, opt: Any) -> Any:
        def step(x: rt.Tensor) -> rt.Tensor:
            opt.zero_grad()
            loss = net(x).mean()
            loss.backward()
            opt.step()
            return loss
        return step

    eager, compiled = make(nets[0], opts[0]), planner.compile(make(nets[1], opts[1]))
    for _ in range(3):
        want = float(eager(x))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert float(compiled(x)) == pytest.approx(want, rel=1e-5)
    for a, b in zip(nets[0].parameters(), nets[1].parameters(), strict=True):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5, atol=1e-6)
