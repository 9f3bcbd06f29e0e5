"""Regression tests for the differences from PyTorch that the op parity sweep found: each
compares the runtime with torch on the input that showed it."""

from __future__ import annotations

import math

import numpy as np
import pytest

import runtime as rt
import runtime.nn.functional as RF

torch = pytest.importorskip("torch")
TF = torch.nn.functional

_EDGE = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -3.0, 3.0, 1e-3]


def _same(got: rt.Tensor, want: torch.Tensor) -> None:
    """Equal values, NaNs in the same places, zeros of the same sign, the same dtype."""
    g, w = got.detach().numpy(), want.detach().numpy(force=True)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert g.shape == w.shape
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
    fin = ~np.isnan(w)
    tol = 1e-12 if w.dtype == np.float64 else 2e-6  # float32: torch's kernels are an ulp off
    np.testing.assert_allclose(g[fin], w[fin], rtol=tol, atol=tol * 1e-3)
    zero = (w == 0) & (g == 0)
    np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(w[zero]))


def _both(values: list[float], dtype: str = "float64", grad: bool = False
          ) -> tuple[rt.Tensor, torch.Tensor]:
    a = np.array(values, dtype=dtype)
    return rt.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)


# --- special functions: values at edges ------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_log_ndtr_of_nan_is_nan(dtype: str) -> None:
    r, t = _both(_EDGE, dtype)
    _same(rt.special.log_ndtr(r), torch.special.log_ndtr(t))  # NaN gave -454


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_digamma_at_signed_zeros(dtype: str) -> None:
    r, t = _both(_EDGE, dtype)
    _same(rt.digamma(r), torch.digamma(t))  # digamma(-0.0) is +inf


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_erfinv_keeps_the_sign_of_zero(dtype: str) -> None:
    r, t = _both([-0.0, 0.0, 0.5, -0.5, 1.0, -1.0, math.nan], dtype)
    _same(rt.erfinv(r), torch.erfinv(t))


def test_erfinv_gradient_at_zero() -> None:
    r, t = _both([-0.0, 0.0, 0.25], grad=True)
    rg, = rt.autograd.grad(rt.erfinv(r).sum(), r)
    tg, = torch.autograd.grad(torch.erfinv(t).sum(), t)
    _same(rg, tg)
    assert rt.autograd.gradcheck(rt.erfinv, (rt.tensor([0.0, 0.3, -0.6], dtype=rt.float64,
                                                      requires_grad=True),))


# --- integer pow -------------------------------------------------------------------------------


@pytest.mark.parametrize(("da", "db"), [("int64", "int64"), ("int32", "int64"),
                                        ("uint8", "int8"), ("bool", "int64"), ("int8", "int8")])
def test_integer_pow_with_negative_exponent_tensor(da: str, db: str) -> None:
    """PyTorch: 1 ** -n is 1, (-1) ** -n is +-1 by parity, any other base 0 (numpy raises)."""
    base = [2, -2, 1, -1, 0, 3, -1, 0, 5] if da not in ("uint8", "bool") else [2, 0, 1, 1, 0]
    base = [bool(b) for b in base] if da == "bool" else base
    exp = [-1, -1, -2, -3, -1, 2, -4, 0, 3][:len(base)]
    a, b = np.array(base, dtype=da), np.array(exp, dtype=db)
    got = rt.tensor(a) ** rt.tensor(b)
    want = torch.tensor(a) ** torch.tensor(b)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_integer_pow_scalar_base_and_0d_exponent() -> None:
    e = np.array([-1, -2, -3, 0, 2])
    for base in (2, -1, 1, 0):
        np.testing.assert_array_equal(rt.pow(base, rt.tensor(e)).numpy(),
                                      torch.pow(base, torch.tensor(e)).numpy())
    np.testing.assert_array_equal((rt.tensor([2, -1, 1]) ** rt.tensor(-1)).numpy(),
                                  (torch.tensor([2, -1, 1]) ** torch.tensor(-1)).numpy())
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        rt.tensor([2]) ** -1


# --- where, uint8 masks ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["int64", "int32", "float32", "float64", "int8"])
def test_where_non_bool_condition_error(dtype: str) -> None:
    cond = np.array([1, 0], dtype=dtype)
    with pytest.raises(RuntimeError) as want:
        torch.where(torch.tensor(cond), torch.ones(2), torch.zeros(2))
    with pytest.raises(RuntimeError) as got:
        rt.where(rt.tensor(cond), rt.ones(2), rt.zeros(2))
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("value", [5.0, 5, "0d", "1elem"])
def test_uint8_mask_setitem_with_one_value_raises_as_torch(value: object) -> None:
    """PyTorch's index_put_ makes ``t[uint8_mask] = v`` with one value a masked_fill_, which
    takes bool masks only."""
    def run(m: object) -> None:
        x = m.arange(6.0).reshape(3, 2)
        v = {"0d": m.tensor(5.0), "1elem": m.tensor([5.0])}.get(value, value)
        x[m.tensor([1, 0, 1], dtype=m.uint8)] = v

    with pytest.raises(RuntimeError) as want:
        run(torch)
    with pytest.raises(RuntimeError) as got:
        run(rt)
    assert str(got.value) == str(want.value)


def test_uint8_mask_setitem_with_values_and_getitem_warn() -> None:
    for m in (torch, rt):
        x = m.arange(3.0)
        with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
            x[m.tensor([1, 0, 1], dtype=m.uint8)] = m.tensor([5.0, 6.0])
        assert x.tolist() == [5.0, 1.0, 6.0]
        with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
            assert x[m.tensor([0, 1, 1], dtype=m.uint8)].tolist() == [1.0, 6.0]


def _mod(x: object) -> object:
    return rt if isinstance(x, rt.Tensor) else torch


# --- std at zero spread ------------------------------------------------------------------------


@pytest.mark.parametrize("call", [lambda x: x.std(), lambda x: x.std(0).sum(),
                                  lambda x: x.std(1, correction=0).sum(),
                                  lambda x: _mod(x).std_mean(x, 0)[0].sum()])
def test_std_backward_at_zero_spread_is_zero(call: object) -> None:
    a = np.array([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    a[1, 1] = 5.0
    r, t = _both(a.tolist(), grad=True)
    rg, = rt.autograd.grad(call(r), r)
    tg, = torch.autograd.grad(call(t), t)
    _same(rg, tg)
    assert rt.autograd.gradcheck(lambda x: x.std(1), (rt.tensor(a, requires_grad=True),))


# --- numpy's floating-point warnings -----------------------------------------------------------

_SILENT = """
import warnings, numpy as np, runtime as rt, runtime.nn.functional as RF
x = rt.tensor([0.0, -1.0, 1e308], requires_grad=True)
rt.log(x).sum()
(x * 10).exp()
RF.cross_entropy(rt.randn(2, 3), rt.tensor([-100, -100]))
rt.tensor([0.0]) ** -1.0
rt.ones(3, requires_grad=True).std().backward()
rt.tensor([float("inf"), -float("inf")]).sum()
rt.tensor([float("inf"), 0.0, 1.0]).cumprod(0)
rt.ones(0).mean(), rt.ones(0, 3).var(0)
try:
    np.log(np.zeros(1))
except RuntimeWarning as e:
    print("user:", e)
"""


def test_numpy_warnings_silent_in_the_runtime_only() -> None:
    """The runtime's inf and nan come silently, as PyTorch's (numpy warned: a log of 0, 0/0 in a
    cross_entropy whose targets are all ignored); a user's own numpy still warns. In a fresh
    interpreter: pytest's warning capture resets filters around collection."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", _SILENT],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "user: divide by zero encountered in log"


# --- activations: double backward, gradients at edges ------------------------------------------

_PIECEWISE = {
    "relu": lambda F, x: F.relu(x),
    "leaky_relu": lambda F, x: F.leaky_relu(x, 0.2),
    "hardtanh": lambda F, x: F.hardtanh(x, -0.5, 2.0),
    "relu6": lambda F, x: F.relu6(x),
    "threshold": lambda F, x: F.threshold(x, 0.5, -2.0),
    "hardshrink": lambda F, x: F.hardshrink(x),
    "softshrink": lambda F, x: F.softshrink(x),
}


def _functional(x: object) -> object:
    return RF if isinstance(x, rt.Tensor) else TF


@pytest.mark.parametrize("name", list(_PIECEWISE))
def test_piecewise_linear_double_backward_is_zero(name: str) -> None:
    """PyTorch's gradient of relu (threshold_backward and friends) is a function of x with a
    zero derivative: under create_graph it requires grad, and double backward gives zeros."""
    fn = _PIECEWISE[name]
    vals = [-1.5, -0.3, 0.0, 0.3, 0.7, 2.5, 7.0]
    for m in (rt, torch):
        x = m.tensor(vals, dtype=m.float64, requires_grad=True)
        y = fn(_functional(x), x)
        g, = m.autograd.grad((y * y).sum(), x, create_graph=True)
        assert g.requires_grad
        gg, = m.autograd.grad(g.sum(), x)
        if m is rt:
            got = (g.detach().numpy(), gg.numpy(), type(y.grad_fn).__name__)
        else:
            want = (g.detach().numpy(), gg.numpy(), type(y.grad_fn).__name__)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    assert got[2] == want[2]


def test_relu_double_backward_reaches_parameters() -> None:
    """A gradient penalty through a ReLU layer: d/dw of |d out/d x|^2."""
    rng = np.random.default_rng(1)
    xa, wa = rng.normal(size=(4, 3)), rng.normal(size=(3, 5))
    grads = []
    for m, F in ((rt, RF), (torch, TF)):
        x = m.tensor(xa, requires_grad=True)
        w = m.tensor(wa, requires_grad=True)
        out = F.relu(x @ w).sum()
        gx, = m.autograd.grad(out, x, create_graph=True)
        gw, = m.autograd.grad((gx * gx).sum(), w)
        grads.append(gw.detach().numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


_SMOOTH = {
    "softplus": lambda F, x: F.softplus(x),
    # PyTorch's double backward is 0 from beta x == threshold on (x < threshold), its backward
    # takes the curve there (x > threshold: linear): 1.5 * 2 == 3.5 is avoided
    "softplus_beta": lambda F, x: F.softplus(x, beta=2.0, threshold=3.5),
    "logsigmoid": lambda F, x: F.logsigmoid(x),
    "elu": lambda F, x: F.elu(x, 2.0),
    "selu": lambda F, x: F.selu(x),
    "celu": lambda F, x: F.celu(x, 0.5),
    "mish": lambda F, x: F.mish(x),
}


@pytest.mark.parametrize("name", list(_SMOOTH))
def test_smooth_activation_second_derivative_at_edges(name: str) -> None:
    """At 0 (softplus and logsigmoid went through max/abs kinks: a second derivative of 0;
    PyTorch's ELU double backward takes x < 0: 0 at 0), at +-inf and NaN."""
    fn = _SMOOTH[name]
    vals = [-0.0, 0.0, -30.0, -2.0, 0.5, 1.5, 2.0, 30.0, math.inf, -math.inf, math.nan]
    res = []
    for m in (rt, torch):
        x = m.tensor(vals, dtype=m.float64, requires_grad=True)
        y = fn(_functional(x), x)
        g, = m.autograd.grad(y.sum(), x, create_graph=True)
        gg, = m.autograd.grad(g.sum(), x)
        res.append((y.detach(), g.detach(), gg))
    for got, want in zip(res[0], res[1]):
        _same(got, want)
    x = rt.tensor([-2.0, -0.5, 0.3, 1.7], dtype=rt.float64, requires_grad=True)
    assert rt.autograd.gradgradcheck(lambda t: fn(RF, t), (x,))


@pytest.mark.parametrize("name", ["hardswish", "hardsigmoid", "hardshrink", "softshrink"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_hard_activations_values_and_gradients(name: str, dtype: str) -> None:
    """hardswish's gradient at +-inf and NaN (NaN: 0 * NaN from the branch not taken), at
    -3 and 3 (PyTorch's x / 3 + 0.5 inside (-3, 3) only); hardshrink / softshrink give +0 (not
    -0) inside [-lambd, lambd]. One NaN alone: PyTorch's vectorized loops give NaN a zero
    gradient where its scalar loop (a tensor this short) gives the gradient."""
    vals = [-4.0, -3.0, -2.0, -0.3, -0.0, 0.0, 0.3, 0.5, 2.0, 3.0, 4.0, math.inf, -math.inf]
    res = []
    for m in (rt, torch):
        x = m.tensor(vals, dtype=getattr(m, dtype), requires_grad=True)
        y = getattr(_functional(x), name)(x)
        g, = m.autograd.grad(y.sum(), x)
        res.append((y, g))
        xn = m.tensor([math.nan], dtype=getattr(m, dtype), requires_grad=True)
        yn = getattr(_functional(xn), name)(xn)
        res.append((yn, m.autograd.grad(yn.sum(), xn)[0]))
    for got, want in zip(res[:2], res[2:]):
        if name == "softshrink":  # PyTorch's zero is -0 in its scalar loop, +0 vectorized
            got = tuple(rt.where(t == 0, 0.0, t) for t in got)
            want = tuple(torch.where(t == 0, 0.0, t) for t in want)
        _same(got[0], want[0])
        if name == "hardsigmoid" and dtype == "float64":  # PyTorch's 1/6 is a float32 one
            np.testing.assert_allclose(got[1].numpy(), want[1].numpy(), rtol=5e-8)
        else:
            _same(got[1], want[1])


# --- max() / min() / median() over all elements ------------------------------------------------

_OVER_ALL = {
    "max": lambda x: x.max(),
    "min": lambda x: x.min(),
    "median": lambda x: x.median(),
    "nanmedian": lambda x: x.nanmedian(),
}


@pytest.mark.parametrize("name", list(_OVER_ALL))
@pytest.mark.parametrize("vals", [[math.nan, 1.0, 3.0, math.nan], [math.inf, math.inf, 1.0],
                                  [-math.inf, -math.inf, 2.0, 5.0], [2.0, 2.0, 1.0, 3.0, 3.0],
                                  [math.nan, math.nan]])
def test_reduction_over_all_values_and_gradients(name: str, vals: list[float]) -> None:
    """The gradient shared among the elements equal to the result, NaN equal to NaN (amax's
    mask missed them: all NaN), and the value exact: median of [inf, inf, 1] was NaN once it
    recorded a gradient (inf - inf)."""
    r, t = _both(vals, grad=True)
    ry, ty = _OVER_ALL[name](r), _OVER_ALL[name](t)
    _same(ry, ty)
    assert type(ry.grad_fn).__name__ == type(ty.grad_fn).__name__
    _same(rt.autograd.grad(ry, r)[0], torch.autograd.grad(ty, t)[0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sigmoid_gradient_finite_for_large_negative_inputs(dtype: str) -> None:
    """1 / (1 + exp(-x)) overflowed exp below -88 (float32): its gradient was 0 * inf, NaN."""
    vals = [-1000.0, -100.0, -89.0, -50.0, -3.0, -0.0, 0.0, 3.0, 100.0, math.inf, -math.inf]
    r, t = _both(vals, dtype, grad=True)
    rg, = rt.autograd.grad(rt.sigmoid(r).sum(), r)
    tg, = torch.autograd.grad(torch.sigmoid(t).sum(), t)
    assert np.isfinite(rg.numpy()).all()
    np.testing.assert_allclose(rg.numpy(), tg.numpy(), rtol=2e-6, atol=1e-37)
    np.testing.assert_allclose(rt.sigmoid(r).detach().numpy(), torch.sigmoid(t).detach().numpy(),
                               rtol=2e-7, atol=1e-37)
    assert rt.autograd.gradgradcheck(rt.sigmoid, (rt.tensor([-2.0, 0.0, 1.5], dtype=rt.float64,
                                                            requires_grad=True),))


@pytest.mark.parametrize("name", ["median", "nanmedian"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool"])
@pytest.mark.parametrize("shape", [(0,), (0, 2), (3,)])
def test_median_of_empty_and_of_bools(name: str, dtype: str, shape: tuple[int, ...]) -> None:
    """PyTorch's median of nothing is NaN (integers: the dtype's least value; bools: True); of
    bools its error (it raised 'input tensor cannot be empty' / gave a bool)."""
    a = np.ones(shape, dtype=dtype)
    results = []
    for m in (rt, torch):
        try:
            results.append(getattr(m, name)(m.tensor(a)))
        except Exception as e:  # noqa: BLE001 - compared below
            results.append((type(e).__name__, str(e)))
    got, want = results
    if isinstance(want, tuple):
        assert got == want
    else:
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("fn", [
    lambda x: RF.hardswish(x), lambda x: RF.hardsigmoid(x), lambda x: RF.softshrink(x),
    lambda x: RF.hardshrink(x), lambda x: RF.logsigmoid(x), lambda x: RF.softplus(x, 2.0, 3.0),
    lambda x: RF.elu(x, 2.0), lambda x: RF.celu(x, 0.5), lambda x: RF.selu(x),
    lambda x: x.max(), lambda x: x.min(), lambda x: x.median(), lambda x: x.nanmedian(),
    lambda x: x.std(), lambda x: rt.pow(x, 3)])
def test_changed_ops_gradcheck(fn: object) -> None:
    """Numeric gradients of the rewritten ops away from their kinks."""
    x = rt.tensor([-3.7, -1.3, -0.4, 0.35, 0.9, 2.2, 4.1], dtype=rt.float64,
                  requires_grad=True)
    assert rt.autograd.gradcheck(fn, (x,))


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_and_bucketize_put_nan_last(right: bool) -> None:
    """A NaN value goes after every boundary, as PyTorch's (it went first: no number is less
    than NaN)."""
    vals = np.array([math.nan, -math.inf, -1.0, 0.0, 2.5, math.inf], dtype=np.float32)
    bounds = np.array([-1.0, 0.0, 0.0, 2.5], dtype=np.float32)
    got = rt.searchsorted(rt.tensor(bounds), rt.tensor(vals), right=right)
    want = torch.searchsorted(torch.tensor(bounds), torch.tensor(vals), right=right)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    got = rt.bucketize(rt.tensor(vals), rt.tensor(bounds), right=right)
    want = torch.bucketize(torch.tensor(vals), torch.tensor(bounds), right=right)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("ord_", [math.inf, -math.inf])
@pytest.mark.parametrize("dim", [None, 0, 1])
def test_inf_norm_gradient_with_nan_and_ties(ord_: float, dim: object) -> None:
    """vector_norm(x, inf): the gradient shared among the elements at the norm, 0 where it is
    NaN (it was NaN everywhere), and PyTorch's errors over nothing."""
    vals = [[math.nan, 1.0, -3.0], [2.0, -2.0, 1.0]]
    r, t = _both(vals, grad=True)
    ry, ty = rt.linalg.vector_norm(r, ord_, dim), torch.linalg.vector_norm(t, ord_, dim)
    _same(ry, ty)
    _same(rt.autograd.grad(ry.sum(), r)[0], torch.autograd.grad(ty.sum(), t)[0])
    _same(r.norm(ord_, dim), t.norm(ord_, dim))
    for shape, d in (((0,), None), ((3, 0), 1)):
        with pytest.raises(RuntimeError) as want:
            torch.linalg.vector_norm(torch.ones(shape), ord_, d)
        with pytest.raises(RuntimeError) as got:
            rt.linalg.vector_norm(rt.ones(shape), ord_, d)
        assert str(got.value) == str(want.value)


def test_lgamma_gradient_at_poles_infinities_and_nan() -> None:
    """PyTorch's lgamma gradient is digamma: +-inf at the poles (by the sign of zero), NaN at
    the negative integers and -inf; the constant branch gave 0. Its second derivative away
    from them is unchanged."""
    vals = [math.nan, math.inf, -math.inf, -0.0, 0.0, -1.0, -2.0, 0.5, -2.5, 3.0]
    r, t = _both(vals, grad=True)
    ry, ty = rt.lgamma(r), torch.lgamma(t)
    assert type(ry.grad_fn).__name__ == type(ty.grad_fn).__name__
    rg, = rt.autograd.grad(ry.sum(), r, create_graph=True)
    tg, = torch.autograd.grad(ty.sum(), t, create_graph=True)
    _same(rg, tg)
    # PyTorch's zeros for the other elements are 0 * trigamma there (NaN at its poles); its
    # trigamma is 5e-10 off (this runtime's is the derivative of its digamma, 4e-16)
    np.testing.assert_allclose(rt.autograd.grad(rg[7:].sum(), r)[0][7:].numpy(),
                               torch.autograd.grad(tg[7:].sum(), t)[0][7:].numpy(), rtol=1e-8)
