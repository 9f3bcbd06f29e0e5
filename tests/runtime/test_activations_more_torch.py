"""More activations and GroupNorm against PyTorch: values and gradients (kinks included),
module reprs and parameters, error texts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

UNARY = [("elu", {}), ("elu", {"alpha": 0.5}), ("celu", {"alpha": 2.0}), ("selu", {}),
         ("hardtanh", {}), ("hardtanh", {"min_val": -0.5, "max_val": 2.0}), ("relu6", {}),
         ("hardsigmoid", {}), ("hardswish", {}), ("mish", {}), ("logsigmoid", {}),
         ("softsign", {}), ("tanhshrink", {}), ("threshold", {"threshold": 0.1, "value": 2.0})]


def _x() -> np.ndarray:
    g = np.random.default_rng(0)
    x = g.uniform(-9, 9, 64)
    # the kinks themselves: PyTorch's gradient there is a convention, and must be ours
    x[:16] = [0.0, 0.1, -0.5, 1.0, -1.0, 2.0, 3.0, -3.0, 6.0, 30.0, -30.0, 1e-8, -1e-8, 0.5,
              -100.0, 100.0]
    return x


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("name", "kw"), UNARY)
def test_unary_matches_torch(name: str, kw: dict[str, Any], dtype: str) -> None:
    x = _x().astype(dtype)
    up = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    xr, xt = rt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    a = getattr(rt.nn.functional, name)(xr, **kw)
    b = getattr(torch.nn.functional, name)(xt, **kw)
    (a * rt.tensor(up)).sum().backward()
    (b * torch.tensor(up)).sum().backward()
    tol = {"rtol": 1e-12, "atol": 1e-14} if dtype == "float64" else {"rtol": 2e-6,
                                                                       "atol": 1e-6}
    if name in ("hardsigmoid", "hardswish") and dtype == "float64":
        tol = {"rtol": 1e-7, "atol": 1e-14}  # PyTorch's backward multiplies by a float 1/6
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **tol)
    np.testing.assert_allclose(xr.grad.numpy(), xt.grad.numpy(), **tol)


@pytest.mark.parametrize(("dim", "weight"), [(-1, 1), (1, 4)])
def test_glu_and_prelu_match_torch(dim: int, weight: int) -> None:
    g = np.random.default_rng(2)
    x = g.standard_normal((3, 4, 6))
    w = g.standard_normal(weight)
    xr, xt = rt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    wr, wt = rt.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    a = rt.nn.functional.glu(xr, dim) .sum() + rt.nn.functional.prelu(xr, wr).square().sum()
    b = torch.nn.functional.glu(xt, dim).sum() + torch.nn.functional.prelu(xt, wt).square().sum()
    np.testing.assert_allclose(a.item(), b.item(), rtol=1e-12)
    a.backward()
    b.backward()
    np.testing.assert_allclose(xr.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(wr.grad.numpy(), wt.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(4, 6), (2, 6, 5), (2, 6, 3, 4)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_matches_torch(shape: tuple[int, ...], affine: bool) -> None:
    g = np.random.default_rng(3)
    x = g.standard_normal(shape) * 3 + 1
    ours, theirs = rt.nn.GroupNorm(3, 6, affine=affine).double(), \
        torch.nn.GroupNorm(3, 6, affine=affine).double()
    if affine:
        w, b = g.standard_normal(6), g.standard_normal(6)
        ours.load_state_dict({"weight": rt.tensor(w), "bias": rt.tensor(b)})
        theirs.load_state_dict({"weight": torch.tensor(w), "bias": torch.tensor(b)})
    xr, xt = rt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    up = g.standard_normal(shape)
    a, b_ = ours(xr), theirs(xt)
    np.testing.assert_allclose(a.detach().numpy(), b_.detach().numpy(), rtol=1e-10, atol=1e-12)
    (a * rt.tensor(up)).sum().backward()
    (b_ * torch.tensor(up)).sum().backward()
    np.testing.assert_allclose(xr.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-11)
    if affine:
        np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(),
                                   rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize(("name", "args"), [
    ("ELU", ()), ("ELU", (0.5, True)), ("CELU", (2.0,)), ("SELU", ()), ("SELU", (True,)),
    ("Hardtanh", ()), ("Hardtanh", (-2.0, 3.0)), ("ReLU6", ()), ("ReLU6", (True,)),
    ("Hardsigmoid", ()), ("Hardswish", ()), ("Mish", ()), ("LogSigmoid", ()),
    ("Softsign", ()), ("Tanhshrink", ()), ("Threshold", (0.1, 20.0)), ("GLU", ()),
    ("GLU", (1,)), ("PReLU", ()), ("PReLU", (3, 0.1)), ("GroupNorm", (2, 6)),
    ("GroupNorm", (3, 6, 1e-3, False))])
def test_module_reprs_and_parameters_match_torch(name: str, args: tuple[Any, ...]) -> None:
    ours, theirs = getattr(rt.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    mine = {n: p.detach().numpy() for n, p in ours.named_parameters()}
    want = {n: p.detach().numpy() for n, p in theirs.named_parameters()}
    assert mine.keys() == want.keys()
    for n in mine:
        np.testing.assert_array_equal(mine[n], want[n])


def _message(fn: Any) -> tuple[type, str]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e), str(e)
    raise AssertionError("no error")


@pytest.mark.parametrize("case", ["glu", "group_norm", "groupnorm_module", "prelu"])
def test_errors_match_torch(case: str) -> None:
    def call(lib: Any) -> Any:
        if case == "glu":
            return lib.nn.functional.glu(lib.zeros(2, 3), 1)
        if case == "group_norm":
            return lib.nn.functional.group_norm(lib.zeros(2, 6, 3), 4)
        if case == "groupnorm_module":
            return lib.nn.GroupNorm(4, 6)
        return lib.nn.functional.prelu(lib.zeros(2, 3), lib.ones(4))

    assert _message(lambda: call(rt)) == _message(lambda: call(torch))
