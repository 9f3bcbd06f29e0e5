"""In-place Tensor methods (tan_, lt_, tril_, copysign_ ...) and torch-level in-place
functions (torch.abs_) against PyTorch: values, gradients, node names, versions, errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

g = np.random.default_rng(0)
X = g.uniform(0.1, 0.9, (3, 4))
Y = g.uniform(-2, 2, (3, 4))

# each: the in-place call on a non-leaf y, given the module (rt or torch) and the other operand
CASES: dict[str, Callable[[Any, Any, Any], Any]] = {
    "acos_": lambda m, y, o: y.acos_(),
    "asin_": lambda m, y, o: y.arcsin_(),
    "atan_": lambda m, y, o: y.atan_(),
    "erf_": lambda m, y, o: y.erf_(),
    "log2_": lambda m, y, o: y.log2_(),
    "log10_": lambda m, y, o: y.log10_(),
    "tan_": lambda m, y, o: y.tan_(),
    "deg2rad_": lambda m, y, o: y.deg2rad_(),
    "rad2deg_": lambda m, y, o: y.rad2deg_(),
    "reciprocal_": lambda m, y, o: y.reciprocal_(),
    "fix_": lambda m, y, o: y.mul_(5).fix_(),
    "negative_": lambda m, y, o: y.negative_(),
    "atan2_": lambda m, y, o: y.atan2_(o),
    "arctan2_": lambda m, y, o: y.arctan2_(o),
    "copysign_": lambda m, y, o: y.copysign_(o),
    "multiply_": lambda m, y, o: y.multiply_(o),
    "subtract_": lambda m, y, o: y.subtract_(o, alpha=2),
    "tril_": lambda m, y, o: y.tril_(1),
    "triu_": lambda m, y, o: y.triu_(-1),
    "addmv_": lambda m, y, o: y[:, 0].addmv_(o, o[1], beta=0.5),
    "addr_": lambda m, y, o: y.addr_(o[:, 0], o[0], alpha=2),
    "renorm_": lambda m, y, o: y.renorm_(2, 0, 0.5),
    "swapaxes_": lambda m, y, o: y.swapaxes_(0, 1) * o.t(),
    "swapdims_": lambda m, y, o: y.swapdims_(1, 0) * o.t(),
    "float_power_": lambda m, y, o: y.float_power_(2),
    "float_power_tensor": lambda m, y, o: y.float_power_(o),
}


def _run(module: Any, name: str) -> tuple[Any, Any, Any]:
    x = module.tensor(X, requires_grad=True)
    o = module.tensor(Y, requires_grad=True)
    y = x * 1.0
    out = CASES[name](module, y, o)
    out.sum().backward()
    return out, x.grad, o.grad


@pytest.mark.parametrize("name", sorted(CASES))
def test_inplace_matches_torch(name: str) -> None:
    ours, gx, go = _run(rt, name)
    theirs, tgx, tgo = _run(torch, name)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6,
                               atol=1e-8)
    for a, b in ((gx, tgx), (go, tgo)):
        if b is None:
            assert a is None or not np.any(a.numpy())
        else:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["tan_", "erf_", "copysign_", "reciprocal_", "multiply_"])
def test_inplace_node_name(name: str) -> None:
    ours, _, _ = _run(rt, name)
    theirs, _, _ = _run(torch, name)
    assert ours.grad_fn.name() == theirs.grad_fn.name()


@pytest.mark.parametrize("op", ["eq_", "ne_", "lt_", "le_", "gt_", "ge_", "greater_",
                                "greater_equal_", "less_", "less_equal_", "not_equal_"])
@pytest.mark.parametrize("other", ["scalar", "tensor"])
def test_comparison_inplace(op: str, other: str) -> None:
    results = []
    for m in (rt, torch):
        x = m.tensor(X, requires_grad=True)
        y = x * 2.0
        arg = 1.0 if other == "scalar" else m.tensor(np.full(4, 1.0))
        version = y._version
        out = getattr(y, op)(arg)
        assert out is y and y._version == version + 1 and y.dtype == m.float64
        y.sum().backward()
        results.append((y.detach().numpy(), x.grad.numpy(), y.grad_fn.name()))
    (a, ga, na), (b, gb, nb) = results
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ga, gb)
    assert na == nb


def test_comparison_inplace_keeps_integer_dtype() -> None:
    x = rt.tensor([1, 5, 3])
    x.gt_(2)
    assert x.dtype is rt.int64 and x.tolist() == [0, 1, 1]


@pytest.mark.parametrize("op,args", [("floor_divide_", (2,)), ("gcd_", (6,)), ("lcm_", (4,)),
                                     ("logical_xor_", (1,)), ("heaviside_", (None,))])
def test_integer_inplace(op: str, args: tuple[Any, ...]) -> None:
    vals = [[6, -4, 9], [0, 3, 12]]
    res = []
    for m in (rt, torch):
        x = m.tensor(vals)
        a = tuple(m.tensor(a) if isinstance(a, int) else m.tensor([1, 0, 2]) for a in args)
        getattr(x, op)(*a)
        res.append(x.tolist())
    assert res[0] == res[1]


def test_ldexp_nextafter_inplace() -> None:
    for op, other in (("ldexp_", [1, 2, 3]), ("nextafter_", [1.0, -1.0, 0.0])):
        ours = rt.tensor([0.5, 1.5, 2.0])
        theirs = torch.tensor([0.5, 1.5, 2.0])
        getattr(ours, op)(rt.tensor(other))
        getattr(theirs, op)(torch.tensor(other))
        assert ours.tolist() == theirs.tolist()


def _error(fn: Callable[[Any], Any]) -> tuple[type, str]:
    texts = []
    for m in (rt, torch):
        with pytest.raises(Exception) as info:
            fn(m)
        texts.append((info.type, str(info.value)))
    assert texts[0] == texts[1]
    return texts[0]


def test_inplace_errors_as_torch() -> None:
    _error(lambda m: m.tensor([1, 2]).tan_())
    _error(lambda m: m.tensor([1.0, 2.0]).lt_(m.tensor([[1.0, 2.0], [3.0, 4.0]])))
    _error(lambda m: m.tensor([1.0, 2.0], requires_grad=True).tan_())
    _error(lambda m: m.tensor([1.0, 2.0]).float_power_(2))
    _error(lambda m: m.tensor([1, 2]).copysign_(m.tensor([1.0, -1.0])))


@pytest.mark.parametrize("name,aten", [("acosh_", "acosh"), ("asinh_", "asinh"),
                                       ("atanh_", "atanh"), ("arccosh_", "acosh"),
                                       ("arcsinh_", "asinh"), ("arctanh_", "atanh")])
def test_inverse_hyperbolic_inplace_has_no_derivative(name: str, aten: str) -> None:
    values, names = [], []
    for m in (rt, torch):
        x = m.tensor(X, requires_grad=True)
        y = x * 0.5 + (1.5 if aten == "acosh" else 0.0)
        getattr(y, name)()
        values.append(y.detach().numpy())
        names.append(y.grad_fn.name())
        with pytest.raises(NotImplementedError,
                           match=f"the derivative for 'inplace version of {aten}' is not "):
            y.sum().backward()
    np.testing.assert_allclose(values[0], values[1])
    assert names[0] == names[1]


def test_view_of_leaf_inplace_error() -> None:
    _error(lambda m: m.tensor([[1.0, 2.0]], requires_grad=True)[0].erf_())


@pytest.mark.parametrize("write", [lambda y: y[1].tan_(), lambda y: y[:, 2].lt_(0.5),
                                   lambda y: y.t()[1:].copysign_(-1.0)])
def test_inplace_on_view_rebases_base(write: Callable[[Any], Any]) -> None:
    grads = []
    for m in (rt, torch):
        x = m.tensor(X, requires_grad=True)
        y = x * 1.0
        write(y)
        (y * m.tensor(Y)).sum().backward()
        grads.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0])
    np.testing.assert_allclose(grads[0][1], grads[1][1])


@pytest.mark.parametrize("name,args", [
    ("abs_", ()), ("acos_", ()), ("ceil_", ()), ("clamp_", (0.2, 0.6)), ("clamp_min_", (0.5,)),
    ("clip_", (None, 0.4)), ("cos_", ()), ("erfc_", ()), ("exp_", ()), ("exp2_", ()),
    ("fill_", (3.0,)), ("fix_", ()), ("frac_", ()), ("i0_", ()), ("log_", ()), ("logit_", ()),
    ("neg_", ()), ("negative_", ()), ("rad2deg_", ()), ("reciprocal_", ()), ("relu_", ()),
    ("round_", ()), ("rsqrt_", ()), ("sigmoid_", ()), ("sinc_", ()), ("sqrt_", ()),
    ("square_", ()), ("tanh_", ()), ("trunc_", ()), ("xlogy_", (2.0,)), ("zero_", ()),
    ("nan_to_num_", ()),
])
def test_torch_level_inplace(name: str, args: tuple[Any, ...]) -> None:
    results = []
    for m in (rt, torch):
        x = m.tensor(X)
        out = getattr(m, name)(x, *args)
        assert out is x and x._version == 1
        results.append(x.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-7)


def test_torch_level_inplace_gradcheck() -> None:
    def fn(x: Any) -> Any:
        y = x * 1.0
        rt.tan_(y)
        y.atan_()
        return rt.sinh_(y * 1.0)

    x = rt.tensor(X, requires_grad=True)
    assert rt.autograd.gradcheck(fn, (x,))


def test_torch_level_inplace_refuses_non_tensor() -> None:
    with pytest.raises(TypeError, match="must be Tensor, not list"):
        rt.abs_([1.0])


@pytest.mark.parametrize("name,args", [
    ("square_", ()), ("rsqrt_", ()), ("sinh_", ()), ("cosh_", ()), ("hypot_", ("other",)),
    ("remainder_", (0.7,)), ("fmod_", (0.7,)), ("cumsum_", (0,)), ("cumprod_", (1,)),
    ("erfc_", ()), ("logit_", ()), ("addmm_", ())])
def test_inplace_methods_named_as_their_op(name: str, args: tuple[Any, ...]) -> None:
    names, grads = [], []
    for m in (rt, torch):
        x = m.tensor(X, requires_grad=True)
        y = x * 0.5 + 0.1
        values = [x.detach() if a == "other" else a for a in args]
        if name == "addmm_":
            y = (x[:, :3] * 0.5 + 0.1)
            values = [m.tensor(X[:, :3]), m.tensor(Y[:3, :3])]
        getattr(y, name)(*values)
        names.append(y.grad_fn.name())
        y.sum().backward()
        grads.append(x.grad.numpy())
    assert names[0] == names[1]
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-7)
