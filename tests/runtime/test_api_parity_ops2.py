"""PyTorch parity of the second batch of tensor ops: the remaining in-place methods,
unfold/select, NaN-skipping sums, half-precision var/std, ordering reductions and math
functions. Hand-computed expectations run without torch; torch comparisons where installed."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from runtime.autograd.gradcheck import gradcheck

R = np.random.default_rng(7)


def _torch() -> Any:
    return pytest.importorskip("torch")


def _run(lib: Any, fn: Any, arrays: tuple[np.ndarray, ...], dtype: str) -> list[np.ndarray]:
    """fn's outputs and the gradients of the float inputs (cast to ``dtype``) as numpy."""
    xs = [lib.tensor(a.astype(dtype) if a.dtype.kind == "f" else a,
                     requires_grad=a.dtype.kind == "f") for a in arrays]
    out = fn(lib, *xs)
    outs = list(out) if isinstance(out, tuple) else [out]
    diff = [o for o in outs if o.dtype.is_floating_point and o.requires_grad]
    if diff:
        seeds = [lib.tensor(np.linspace(0.5, 1.5, o.numel()).reshape(tuple(o.shape))
                            .astype(dtype)) for o in diff]
        lib.autograd.backward(diff, seeds)
    res = [o.detach().numpy() for o in outs]
    res += [np.zeros_like(x.detach().numpy()) if x.grad is None else x.grad.numpy()
            for x in xs if x.requires_grad]
    return res


def same_as_torch(fn: Any, *arrays: np.ndarray, dtypes: tuple[str, ...] = ("float32", "float64"),
                  tol: float | None = None) -> None:
    torch = _torch()
    for dtype in dtypes:
        ours = _run(rt, fn, arrays, dtype)
        theirs = _run(torch, fn, arrays, dtype)
        assert len(ours) == len(theirs)
        t = tol if tol is not None else (1e-5 if dtype == "float32" else 1e-10)
        for a, b in zip(ours, theirs, strict=True):
            assert a.dtype == b.dtype, (a.dtype, b.dtype)
            np.testing.assert_allclose(a, b, rtol=t, atol=t)


def check_grad(fn: Any, *arrays: np.ndarray) -> None:
    xs = tuple(rt.tensor(a, requires_grad=True) for a in arrays)
    assert gradcheck(fn, xs)


def raises_same(fn: Any) -> None:
    torch = _torch()
    got = []
    for lib in (rt, torch):
        try:
            fn(lib)
        except Exception as e:  # noqa: BLE001 - the type and text are compared
            got.append((type(e).__name__, str(e)))
        else:
            got.append(None)
    assert got[0] == got[1] and got[0] is not None, got


# --- 1. in-place methods ---------------------------------------------------------------------

X = R.standard_normal((3, 4))

UNARY_INPLACE = ["relu_", "sigmoid_", "tanh_", "abs_", "exp_", "sqrt_", "neg_", "floor_",
                 "ceil_", "round_", "log_"]


@pytest.mark.parametrize("name", UNARY_INPLACE)
def test_unary_inplace_matches_torch(name: str) -> None:
    a = np.abs(X) + 0.1 if name in ("sqrt_", "log_") else X

    def fn(m: Any, x: Any) -> Any:
        y = x * 1.5
        getattr(y, name)()
        return y * 2

    same_as_torch(fn, a)


def test_unary_inplace_by_hand() -> None:
    x = rt.tensor([-1.5, 0.4, 2.5], dtype=rt.float64)
    assert x.clone().relu_().tolist() == [0.0, 0.4, 2.5]
    assert x.clone().abs_().tolist() == [1.5, 0.4, 2.5]
    assert x.clone().round_().tolist() == [-2.0, 0.0, 2.0]
    assert x.clone().floor_().tolist() == [-2.0, 0.0, 2.0]
    assert x.clone().clamp_min_(0.0).tolist() == [0.0, 0.4, 2.5]
    assert x.clone().clamp_max_(0.0).tolist() == [-1.5, 0.0, 0.0]
    assert x.clone().clip_(-1, 1).tolist() == [-1.0, 0.4, 1.0]
    leaf = rt.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf.relu_()
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf.unsqueeze_(0)


def test_clamp_min_max_inplace_and_round_decimals() -> None:
    same_as_torch(lambda m, x: (x * 1).clamp_min_(0.2).clamp_max_(0.9) * 3, X)
    same_as_torch(lambda m, x: (x * 1).round_(decimals=2) + x, X)


def test_inplace_view_methods() -> None:
    def fn(m: Any, x: Any) -> Any:
        y = x * 2
        y.unsqueeze_(0)
        assert tuple(y.shape) == (1, 3, 4)
        y.squeeze_(0)
        y.t_()
        y.transpose_(0, 1)
        y.unsqueeze_(-1).squeeze_()
        return y * m.arange(12.0, dtype=y.dtype).reshape(3, 4)

    same_as_torch(fn, X)
    y = rt.ones(2, 3)
    assert y.t_() is y and tuple(y.shape) == (3, 2)

    def of_a_view(m: Any, x: Any) -> Any:  # the view's history follows its new shape
        b = x * 1
        v = b[0]
        v.unsqueeze_(0)
        b.mul_(2)
        assert tuple(v.shape) == (1, 4)
        return v * m.arange(4.0, dtype=x.dtype)

    same_as_torch(of_a_view, X)


def test_index_fill_copy_put() -> None:
    idx = np.array([0, 2])
    same_as_torch(lambda m, x, i: (x * 1).index_fill_(1, i, -1.0) * x, X, idx)
    same_as_torch(lambda m, x, i: (x * 1).index_fill_(0, i, 2.5), X, idx)
    src = R.standard_normal((3, 2))
    same_as_torch(lambda m, x, i, s: (x * 1).index_copy_(1, i, s) * 2, X, idx, src)
    vals = R.standard_normal(3)

    def put(m: Any, x: Any, v: Any) -> Any:
        rows, cols = m.tensor([0, 1, 0]), m.tensor([1, 2, 1])
        a = (x * 1).index_put_((rows, cols), v, accumulate=True)
        b = (x * 1).index_put_((rows[1:], cols[1:]), v[1:])
        return a + b

    same_as_torch(put, X, vals)
    x = rt.zeros(3, 4)
    x.index_fill_(1, rt.tensor([1, -1]), 5.0)
    assert x[0].tolist() == [0.0, 5.0, 0.0, 5.0]
    raises_same(lambda m: m.zeros(3).index_fill_(0, m.tensor([0.0]), 1))
    raises_same(lambda m: m.zeros(3, 4).index_fill_(1, m.tensor([-5]), 1))
    raises_same(lambda m: m.zeros(3, 4).index_copy_(1, m.tensor([-1]), m.ones(3, 1)))
    raises_same(lambda m: m.zeros(3, dtype=m.float64).index_put_((m.tensor([0]),),
                                                                 m.tensor([1.0])))


def test_masked_scatter_fill_diagonal_random() -> None:
    mask = np.array([[1, 0, 1, 0], [0, 1, 1, 1], [0, 0, 0, 1]], dtype=bool)
    src = R.standard_normal(12)
    same_as_torch(lambda m, x, k, s: (x * 1).masked_scatter_(k, s * 1) * x, X, mask, src)
    x = rt.zeros(2, 4)
    x.masked_scatter_(rt.tensor(mask[:2]), rt.arange(10.0))
    assert x.tolist() == [[0, 0, 1, 0], [0, 2, 3, 4]]
    torch = _torch()
    for shape, wrap in [((3, 4), False), ((7, 3), True), ((7, 3), False), ((5, 2), True),
                        ((3, 3, 3), False)]:
        ours = rt.zeros(*shape).fill_diagonal_(2.0, wrap=wrap).numpy()
        theirs = torch.zeros(*shape).fill_diagonal_(2.0, wrap=wrap).numpy()
        np.testing.assert_array_equal(ours, theirs)
    r = rt.zeros(1000).random_(3, 7)
    assert set(r.tolist()) == {3.0, 4.0, 5.0, 6.0}
    assert set(rt.zeros(500, dtype=rt.int64).random_(4).tolist()) == {0, 1, 2, 3}
    assert rt.zeros(100).random_().min().item() >= 0
    raises_same(lambda m: m.zeros(3).random_(5, 2))
    raises_same(lambda m: m.zeros(3).masked_scatter_(m.tensor([True, True, True]),
                                                     m.tensor([1.0, 2.0])))
    raises_same(lambda m: m.zeros(3).masked_scatter_(m.tensor([1, 1, 1]), m.ones(3)))


def test_unfold_select_aliases() -> None:
    same_as_torch(lambda m, x: x.unfold(1, 2, 1) * 2, X)
    same_as_torch(lambda m, x: x.unfold(0, 2, 2), X)
    same_as_torch(lambda m, x: x.select(1, -1) + x.select(0, 2).sum(), X)
    assert rt.arange(10.0).unfold(0, 3, 2).tolist() == [
        [0, 1, 2], [2, 3, 4], [4, 5, 6], [6, 7, 8]]
    same_as_torch(lambda m, x: m.swapdims(x, 0, 1) + x.swapaxes(1, 0) + x.swapdims(0, 1), X)
    y = R.standard_normal((2, 3, 4))
    same_as_torch(lambda m, x: m.moveaxis(x, 0, -1) * x.moveaxis(2, 0).permute(2, 0, 1), y)
    same_as_torch(lambda m, x: m.select(x, 0, 1), X)
    raises_same(lambda m: m.ones(3).unfold(0, 4, 1))
    raises_same(lambda m: m.ones(3, 2).select(1, 2))


def test_nansum_nanmean() -> None:
    a = X.copy()
    a[0, 1] = a[2, 3] = np.nan
    a[1, :3] = np.nan
    assert rt.nansum(rt.tensor([1.0, float("nan"), 2.0])).item() == 3.0
    assert rt.tensor([1.0, float("nan"), 2.0]).nanmean().item() == 1.5
    assert np.isnan(rt.tensor([float("nan")]).nanmean().item())
    same_as_torch(lambda m, x: m.nansum(x) + x.nansum(1).sum(), a)
    same_as_torch(lambda m, x: m.nanmean(x, 1), a)
    same_as_torch(lambda m, x: x.nanmean(0, keepdim=True), a)
    same_as_torch(lambda m, x: x.nanmean(), a)
    check_grad(lambda x: rt.nansum(x, 0) + rt.nanmean(x, 0), a[[0, 2]])


def test_inplace_methods_in_a_compiled_step() -> None:
    def step(x: rt.Tensor, mask: rt.Tensor) -> rt.Tensor:
        y = x * 2
        y.relu_()
        y.abs_()
        y.index_fill_(1, rt.tensor([0]), 0.5)
        y.masked_scatter_(mask, x.flatten() * 3)
        y.clamp_min_(0.1)
        z = y.unfold(1, 2, 2).sum(-1).select(0, 1) + rt.nansum(y)
        loss = z.sum()
        loss.backward()
        return loss

    mask = rt.tensor(X > 0.5)
    eager_x = rt.tensor(X, requires_grad=True)
    expected = step(eager_x, mask)
    compiled = planner.compile(step, fullgraph=True)  # captured whole, no eager fallback
    for _ in range(2):
        cx = rt.tensor(X, requires_grad=True)
        got = compiled(cx, mask)
        np.testing.assert_allclose(got.item(), expected.item(), rtol=1e-12)
        np.testing.assert_allclose(cx.grad.numpy(), eager_x.grad.numpy(), rtol=1e-12)


# --- 2. half-precision var/std -------------------------------------------------------------


def test_half_var_std_accumulate_in_float32() -> None:
    a = np.linspace(200, 400, 50).astype(np.float16)
    x = rt.tensor(a)
    expected = np.float16(np.var(a.astype(np.float32), ddof=1))
    assert x.var().dtype is rt.float16 and x.var().item() == float(expected)
    assert np.isfinite(x.std().item())
    torch = _torch()
    t = torch.tensor(a)
    for name in ("var", "std"):
        assert getattr(x, name)().item() == getattr(t, name)().item()
        assert getattr(x, name)(0, correction=0).item() == getattr(t, name)(
            0, correction=0).item()
    for name in ("var_mean", "std_mean"):
        ours = getattr(rt, name)(x.reshape(5, 10), 1)
        theirs = getattr(torch, name)(t.reshape(5, 10), 1)
        for o, th in zip(ours, theirs, strict=True):
            assert o.dtype is rt.float16
            np.testing.assert_array_equal(o.numpy(), th.numpy())


# --- 3. order statistics, scans, searching and counting ---------------------------------------

NAN = float("nan")
DISTINCT = R.permutation(24).reshape(4, 6).astype(np.float64) / 7 - 1.3
WITH_NAN = np.array([[3.0, NAN, 1.0, NAN], [2.5, 2.0, 1.0, 5.0], [NAN, NAN, NAN, NAN]])


def test_median_kthvalue_by_hand() -> None:
    x = rt.tensor([[4.0, 1.0, 3.0, 2.0], [2.0, 2.0, 1.0, 5.0]])
    v, i = rt.median(x, 1)
    assert v.tolist() == [2.0, 2.0] and i.tolist() == [3, 0]  # even count: the lower median
    assert rt.median(rt.tensor([4, 1, 3, 2])).item() == 2
    assert rt.kthvalue(x, 3, 1).values.tolist() == [3.0, 2.0]
    m = rt.median(x, 0, keepdim=True)
    assert m.values.shape == (1, 4) and m.indices.shape == (1, 4)
    v, i = rt.nanmedian(rt.tensor(WITH_NAN), 1)
    # a row of NaNs only: the index PyTorch's nth_element leaves first (2 of 4)
    assert v.tolist()[:2] == [1.0, 2.0] and i.tolist() == [2, 1, 2] and np.isnan(v[2].item())
    assert np.isnan(rt.tensor(WITH_NAN).median().item())
    assert rt.tensor([[1.0, NAN, 3.0]]).nanmedian().item() == 1.0
    xg = rt.tensor([1.0, 2.0, 2.0, 0.0, 2.0, 5.0], requires_grad=True)
    xg.median().backward()  # global median: shared evenly among the ties
    np.testing.assert_allclose(xg.grad.numpy(), [0, 1 / 3, 1 / 3, 0, 1 / 3, 0])


def test_median_family_matches_torch() -> None:
    same_as_torch(lambda m, x: m.median(x, 1), DISTINCT)
    same_as_torch(lambda m, x: x.median(0, keepdim=True), DISTINCT)
    same_as_torch(lambda m, x: x.median() * 2, DISTINCT)
    same_as_torch(lambda m, x: m.median(x, 1), WITH_NAN)
    same_as_torch(lambda m, x: m.nanmedian(x[:2], 1), WITH_NAN)  # all-NaN row: any index
    same_as_torch(lambda m, x: m.nanmedian(x[:2]), WITH_NAN)
    same_as_torch(lambda m, x: m.kthvalue(x, 2, 0), DISTINCT)
    same_as_torch(lambda m, x: x.kthvalue(5, keepdim=True), DISTINCT)
    ties = np.array([[1.0, 2.0, 2.0, 1.0, 3.0], [5.0, 5.0, 4.0, 4.0, 4.0]])
    same_as_torch(lambda m, x: m.mode(x, 1), ties)
    same_as_torch(lambda m, x: x.mode(0), ties.T.copy())
    check_grad(lambda x: rt.median(x, 1).values * 1.5 + rt.kthvalue(x, 2, 0).values.sum(),
               DISTINCT)
    raises_same(lambda m: m.kthvalue(m.ones(3), 4))
    raises_same(lambda m: m.median(m.ones(3, 0), 1))


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_matches_torch(interpolation: str) -> None:
    same_as_torch(lambda m, x: m.quantile(x, 0.3, 1, interpolation=interpolation), DISTINCT)
    same_as_torch(lambda m, x: x.quantile(m.tensor([0.0, 0.25, 0.5, 1.0], dtype=x.dtype), 0,
                                          keepdim=True, interpolation=interpolation), DISTINCT)
    same_as_torch(lambda m, x: m.quantile(x, 0.7, interpolation=interpolation), DISTINCT)
    same_as_torch(lambda m, x: m.nanquantile(x[:2], 0.4, 1, interpolation=interpolation),
                  WITH_NAN)
    same_as_torch(lambda m, x: m.quantile(x, 0.4, 1, interpolation=interpolation), WITH_NAN)


def test_quantile_by_hand_and_errors() -> None:
    x = rt.tensor([0.0, 10.0, 20.0, 30.0], dtype=rt.float64)
    assert x.quantile(0.5).item() == 15.0
    assert x.quantile(0.5, interpolation="lower").item() == 10.0
    assert x.quantile(0.5, interpolation="higher").item() == 20.0
    assert x.quantile(0.5, interpolation="nearest").item() == 20.0  # 1.5 rounds to even
    check_grad(lambda t: rt.quantile(t, 0.35, 1) + rt.nanquantile(t, 0.8, 0).sum(), DISTINCT)
    raises_same(lambda m: m.quantile(m.ones(3), 1.5))
    raises_same(lambda m: m.quantile(m.ones(3), 0.5, interpolation="cubic"))
    raises_same(lambda m: m.quantile(m.ones(3, dtype=m.int64), 0.5))


def test_cummax_cummin_logcumsumexp() -> None:
    v, i = rt.cummax(rt.tensor([1.0, 3.0, 3.0, NAN, 2.0, NAN]), 0)
    assert i.tolist() == [0, 1, 2, 3, 3, 5]
    v, i = rt.cummin(rt.tensor([[4, 1, 3, 0, 2]]), 1)
    assert v.tolist() == [[4, 1, 1, 0, 0]] and i.tolist() == [[0, 1, 1, 3, 3]]
    same_as_torch(lambda m, x: m.cummax(x, 1), DISTINCT)
    same_as_torch(lambda m, x: x.cummin(0), DISTINCT)
    same_as_torch(lambda m, x: m.cummax(x, 1), WITH_NAN)
    same_as_torch(lambda m, x: m.cummin(x, -1), WITH_NAN)
    same_as_torch(lambda m, x: m.logcumsumexp(x, 1), DISTINCT)
    same_as_torch(lambda m, x: x.logcumsumexp(0), DISTINCT * 300, tol=1e-4)
    out = rt.logcumsumexp(rt.tensor([-1000.0, 0.0, 1.0], dtype=rt.float64), 0)
    np.testing.assert_allclose(out.numpy(), [-1000.0, 0.0, np.log(1 + np.e)], rtol=1e-12)
    check_grad(lambda t: rt.cummax(t, 1).values + rt.logcumsumexp(t, 0), DISTINCT)


def test_searchsorted_bucketize_bincount_histc_aminmax() -> None:
    torch = _torch()
    seq, vals = np.array([1, 3, 5, 7]), np.array([[3, 6], [9, 0]])
    for kw in ({}, {"right": True}, {"side": "right"}, {"side": "left"}):
        for lib_seq, lib_vals in ((seq, vals), (np.sort(R.standard_normal((2, 5)), 1),
                                                R.standard_normal((2, 3)))):
            ours = rt.searchsorted(rt.tensor(lib_seq), rt.tensor(lib_vals), **kw)
            theirs = torch.searchsorted(torch.tensor(lib_seq), torch.tensor(lib_vals), **kw)
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
            assert ours.numpy().dtype == theirs.numpy().dtype
    assert rt.searchsorted(rt.tensor([1, 3, 5]), 4).item() == 2
    for right in (False, True):
        np.testing.assert_array_equal(
            rt.bucketize(rt.tensor([3, 6, 9, 1]), rt.tensor(seq), right=right).numpy(),
            torch.bucketize(torch.tensor([3, 6, 9, 1]), torch.tensor(seq), right=right).numpy())
    raises_same(lambda m: m.searchsorted(m.tensor([1, 2]), m.tensor([1]), right=True,
                                         side="left"))
    idx = np.array([1, 1, 3, 0, 3, 3])
    w = R.standard_normal(6)
    for dt in ("float32", "float64"):
        ours = rt.bincount(rt.tensor(idx), weights=rt.tensor(w.astype(dt)), minlength=7)
        theirs = torch.bincount(torch.tensor(idx), weights=torch.tensor(w.astype(dt)),
                                minlength=7)
        assert ours.numpy().dtype == theirs.numpy().dtype
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    assert rt.bincount(rt.tensor(idx)).tolist() == [1, 2, 0, 3]
    assert rt.bincount(rt.tensor(idx), minlength=6).tolist() == [1, 2, 0, 3, 0, 0]
    raises_same(lambda m: m.bincount(m.tensor([-1, 2])))
    data = R.standard_normal(50)
    for args in ((10, -1.0, 1.0), (7, 0.0, 0.0), (4, 0.0, 3.0)):
        np.testing.assert_array_equal(rt.histc(rt.tensor(data), *args).numpy(),
                                      torch.histc(torch.tensor(data), *args).numpy())
    assert rt.histc(rt.tensor([1.0, 2.0, 1.0, 4.0]), bins=4, min=0, max=3).tolist() == [
        0, 2, 1, 0]
    same_as_torch(lambda m, x: m.aminmax(x), DISTINCT)
    same_as_torch(lambda m, x: m.aminmax(x, dim=1, keepdim=True), DISTINCT)
    mn, mx = rt.aminmax(rt.tensor([[1, 5], [0, 3]]), dim=0)
    assert mn.tolist() == [0, 3] and mx.tolist() == [1, 5]


def test_ordering_ops_in_a_compiled_step() -> None:
    def step(x: rt.Tensor) -> rt.Tensor:
        loss = (rt.median(x, 1).values.sum() + rt.quantile(x, 0.3, 0).sum()
                + rt.cummax(x, 1).values.sum() + rt.logcumsumexp(x, 1).sum()
                + rt.kthvalue(x, 2, 1).values.sum() + rt.searchsorted(
                    rt.tensor([-1.0, 0.0, 1.0], dtype=rt.float64), x).sum())
        loss.backward()
        return loss

    eager = rt.tensor(DISTINCT, requires_grad=True)
    expected = step(eager)
    compiled = planner.compile(step, fullgraph=True)  # captured whole, no eager fallback
    for _ in range(2):
        x = rt.tensor(DISTINCT, requires_grad=True)
        np.testing.assert_allclose(compiled(x).item(), expected.item(), rtol=1e-12)
        np.testing.assert_allclose(x.grad.numpy(), eager.grad.numpy(), rtol=1e-12)


# --- 4. math functions ---------------------------------------------------------------------------

GAMMA_X = np.concatenate([np.linspace(-9.75, 9.9, 40), [0.5, 1.0, 2.0, 1e-3, 30.0]])
UNIT = np.linspace(-0.98, 0.98, 25)
SINC_X = np.linspace(-2.3, 2.4, 21)


@pytest.mark.parametrize("name", ["lgamma", "digamma", "erfinv", "erfc", "sinc", "exp2", "i0"])
def test_unary_math_matches_torch(name: str) -> None:
    a = UNIT if name == "erfinv" else SINC_X if name == "sinc" else GAMMA_X
    # torch's trigamma (digamma's gradient) is off by 5e-10 at negative x (mpmath: ours 4e-16)
    tol = 1e-9 if name == "digamma" else 1e-12
    same_as_torch(lambda m, x: getattr(m, name)(x), a, tol=1e-5)
    same_as_torch(lambda m, x: getattr(x, name)(), a, dtypes=("float64",), tol=tol)


@pytest.mark.parametrize("name", ["gammaln", "digamma", "psi", "erfinv", "erfc", "expit", "i0", "i0e",
                                  "ndtr", "log_ndtr", "entr", "sinc", "exp2", "erf",
                                  "expm1", "log1p"])
def test_special_module_matches_torch(name: str) -> None:
    a = UNIT if name == "erfinv" else np.abs(GAMMA_X) if name == "entr" else GAMMA_X
    tol = 1e-9 if name in ("digamma", "psi") else 1e-12
    same_as_torch(lambda m, x: getattr(m.special, name)(x), a, dtypes=("float64",), tol=tol)


def test_ndtri_matches_torch_into_the_tails() -> None:
    p = np.concatenate([np.logspace(-300, -1, 40), np.linspace(0.02, 0.98, 25),
                        1 - np.logspace(-15, -1, 10)])
    # the gradient exp(y^2 / 2) turns y's last-bit error into 1e-13 at y = -35
    same_as_torch(lambda m, x: m.special.ndtri(x), p, dtypes=("float64",), tol=1e-11)
    same_as_torch(lambda m, x: m.special.ndtri(x), p[40:65], dtypes=("float32",), tol=1e-5)
    got = rt.special.ndtri(rt.tensor([0.0, 1.0, 0.5, 1.5], dtype=rt.float64)).tolist()
    assert got[:3] == [-math.inf, math.inf, 0.0] and math.isnan(got[3])
    assert rt.special.ndtri(rt.tensor(1e-300, dtype=rt.float64)).item() == pytest.approx(
        -37.04709629936120, rel=1e-14)  # mpmath: -37.0470962993611992


def test_special_values_by_hand() -> None:
    f64 = rt.float64
    assert rt.lgamma(rt.tensor([0.0, -2.0, 3.0], dtype=f64)).tolist()[:2] == [math.inf] * 2
    assert abs(rt.lgamma(rt.tensor(5.0, dtype=f64)).item() - math.log(24)) < 1e-14
    assert abs(rt.digamma(rt.tensor(1.0, dtype=f64)).item() + 0.5772156649015329) < 1e-15
    d = rt.digamma(rt.tensor([0.0, -1.0], dtype=f64)).tolist()
    assert d[0] == -math.inf and math.isnan(d[1])
    e = rt.erfinv(rt.tensor([1.0, -1.0, 0.0, 1.5], dtype=f64)).tolist()
    assert e[:3] == [math.inf, -math.inf, 0.0] and math.isnan(e[3])
    for v in (0.3, -0.9, 1 - 1e-12):
        y = rt.erfinv(rt.tensor(v, dtype=f64)).item()
        assert abs(math.erf(y) - v) < 2e-16
    for v in (-3.0, 0.2, 5.0, 12.0, 26.0):
        got = rt.erfc(rt.tensor(v, dtype=f64)).item()
        assert abs(got - math.erfc(v)) <= 2e-13 * math.erfc(v)
    assert rt.special.log_ndtr(rt.tensor(-40.0, dtype=f64)).item() == pytest.approx(
        -804.6084420137538, rel=1e-13)
    assert rt.xlogy(rt.tensor([0.0, 2.0]), rt.tensor([0.0, math.e])).tolist() == [0.0, 2.0]
    assert math.isnan(rt.xlogy(rt.tensor(0.0), rt.tensor(math.nan)).item())
    assert rt.sinc(rt.tensor([0.0, 1.0])).tolist()[0] == 1.0
    assert rt.signbit(rt.tensor([-0.0, 0.0, -2.0, 3.0])).tolist() == [True, False, True, False]
    assert rt.copysign(rt.tensor([1.0, 2.0]), rt.tensor([-0.0, 1.0])).tolist() == [-1.0, 2.0]
    assert rt.heaviside(rt.tensor([-1.0, 0.0, 2.0]), rt.tensor(0.5)).tolist() == [0, 0.5, 1]
    assert rt.float_power(rt.tensor([2, 3]), 2).dtype is rt.float64
    check_grad(lambda x: rt.lgamma(x) + rt.digamma(x), GAMMA_X[:40])
    check_grad(rt.erfinv, UNIT)
    check_grad(lambda x: rt.special.log_ndtr(x) + rt.erfc(x), np.linspace(-30, 5, 15))


def test_binary_math_matches_torch() -> None:
    a = R.standard_normal((3, 4))
    b = np.abs(R.standard_normal((3, 4))) + 0.1
    a0 = a.copy()
    a0[0, :2] = 0.0
    same_as_torch(lambda m, x, y: m.xlogy(x, y), a0, b)
    same_as_torch(lambda m, x, y: m.special.xlog1py(x, y), a0, b)
    same_as_torch(lambda m, x, y: x.xlogy(y) + m.xlogy(2.0, y), a, b)
    same_as_torch(lambda m, x, y: m.copysign(x, y - 0.5) + x.copysign(-1.0), a, b)
    same_as_torch(lambda m, x, y: m.logaddexp2(x, y) + x.logaddexp2(y * 40), a, b)
    same_as_torch(lambda m, x, y: m.float_power(y, x) + x.float_power(2), a, b)
    same_as_torch(lambda m, x: m.logit(x.sigmoid()) + x.sigmoid().logit(eps=0.2), a)
    same_as_torch(lambda m, x: m.special.logit(x.sigmoid(), 0.3), a)
    same_as_torch(lambda m, x: m.sinc(x) * m.special.sinc(x * 0), a)
    same_as_torch(lambda m, x: m.heaviside(x.detach(), m.tensor(0.5, dtype=x.dtype)) + x, a0)
    same_as_torch(lambda m, x: m.signbit(x), a0)
    raises_same(lambda m: m.heaviside(m.ones(2), m.tensor(1)))
    check_grad(lambda x, y: rt.xlogy(x, y) + rt.copysign(x, y) + rt.logaddexp2(x, y), a, b)


def test_math_in_a_compiled_step() -> None:
    def step(x: rt.Tensor) -> rt.Tensor:
        y = x.sigmoid()
        loss = (rt.lgamma(x + 3).sum() + rt.digamma(x + 3).sum() + rt.erfinv(y * 0.9).sum()
                + rt.erfc(x).sum() + rt.xlogy(x, y).sum() + rt.special.log_ndtr(x).sum())
        loss.backward()
        return loss

    a = R.standard_normal((3, 4))
    eager = rt.tensor(a, requires_grad=True)
    expected = step(eager)
    compiled = planner.compile(step, fullgraph=True)  # captured whole, no eager fallback
    for _ in range(2):
        x = rt.tensor(a, requires_grad=True)
        np.testing.assert_allclose(compiled(x).item(), expected.item(), rtol=1e-12)
        np.testing.assert_allclose(x.grad.numpy(), eager.grad.numpy(), rtol=1e-10)


# --- 4b. structured products and index builders ---------------------------------------------

A43 = R.standard_normal((4, 3))
B53 = R.standard_normal((5, 3))


def test_products_match_torch() -> None:
    same_as_torch(lambda m, a, b: m.cross(a[:3], b[:3], dim=1), A43, B53)
    same_as_torch(lambda m, a, b: m.cross(a[:3].T, b[:3].T, dim=0) + a[:3].T.cross(
        b[1:4].T, dim=-2), A43, B53)
    same_as_torch(lambda m, a, b: m.kron(a, b[:2]), A43, B53)
    same_as_torch(lambda m, a, b: m.kron(a[0], b[:2]) + 0, A43, B53)
    for p in (0.0, 1.0, 1.5, 2.0, 3.0, float("inf")):
        same_as_torch(lambda m, a, b, p=p: m.cdist(a, b, p=p), A43, B53)
        if p:  # torch's dist(p=0) backward fails ("Expected a proper Tensor but got None")
            same_as_torch(lambda m, a, b, p=p: m.dist(a, b[:4], p), A43, B53)
    big = R.standard_normal((30, 3))
    same_as_torch(lambda m, a, b: m.cdist(a, b), big, B53)  # PyTorch's matrix-product path
    same_as_torch(lambda m, a, b: m.cdist(a[None], b[None].expand(2, 5, 3),
                                          compute_mode="use_mm_for_euclid_dist"), A43, B53)
    same_as_torch(lambda m, a, b: m.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist"),
                  big, B53)
    same_as_torch(lambda m, a, b: m.ger(a[:, 0], b[:, 1]) + m.outer(a[:, 1], b[:, 0]), A43,
                  B53)
    same_as_torch(lambda m, a, b: m.addmv(a[:, 0], a, b[0], beta=0.5, alpha=2), A43, B53)
    same_as_torch(lambda m, a, b: a.addr(a[:, 0], b[0], beta=0) + m.addr(a, a[:, 1], b[1]),
                  A43, B53)
    same_as_torch(lambda m, a, b: m.baddbmm(a, a[None], b[None, :3], alpha=2), A43, B53)
    same_as_torch(lambda m, a, b: m.addbmm(a, m.stack([a, a * 2]), m.stack([b[:3], b[1:4]]),
                                           beta=0.3), A43, B53)
    same_as_torch(lambda m, a, b: m.cov(a.T), A43, B53)
    same_as_torch(lambda m, a, b: m.cov(a.T, correction=0, fweights=m.tensor([1, 2, 1, 3]),
                                        aweights=m.tensor([0.5, 1.0, 2.0, 1.0],
                                                          dtype=a.dtype)), A43, B53)
    same_as_torch(lambda m, a, b: m.cov(a[:, 0]) + m.corrcoef(b.T).sum(), A43, B53)
    # a zero distance has gradient 0 (PyTorch's cdist backward), not NaN
    x = rt.tensor(A43, requires_grad=True)
    rt.cdist(x, x).sum().backward()
    assert np.isfinite(x.grad.numpy()).all()
    check_grad(lambda a, b: rt.cdist(a, b) + rt.cdist(a, b, p=3), A43, B53)
    check_grad(lambda a, b: rt.kron(a, b).sum() + rt.cross(a[:3], b[:3], dim=1).sum()
               + rt.cov(a).sum() + rt.corrcoef(b).sum(), A43, B53)


def test_index_builders_match_torch() -> None:
    torch = _torch()
    for args in ((3, 4), (3, 4, 1), (4, 3, -1), (0, 3), (5, 5, -10)):
        for name in ("tril_indices", "triu_indices"):
            np.testing.assert_array_equal(getattr(rt, name)(*args).numpy(),
                                          getattr(torch, name)(*args).numpy())
    assert rt.tril_indices(2, 2).tolist() == [[0, 1, 1], [0, 0, 1]]
    assert rt.cartesian_prod(rt.tensor([1, 2]), rt.tensor([3, 4])).tolist() == [
        [1, 3], [1, 4], [2, 3], [2, 4]]
    assert rt.combinations(rt.tensor([1, 2, 3])).tolist() == [[1, 2], [1, 3], [2, 3]]
    same_as_torch(lambda m, a, b: m.cartesian_prod(a[:, 0], b[:, 1], a[:2, 2]), A43, B53)
    for r in (1, 2, 3):
        for rep in (False, True):
            same_as_torch(lambda m, a, b, r=r, rep=rep: m.combinations(
                a[:, 0], r, with_replacement=rep), A43, B53)
    for spec in (3, 4, [1, 3], [2, -1], [0, 9]):
        for dim in (0, 1):
            ours = [t.numpy() for t in rt.tensor_split(rt.tensor(A43), spec, dim)]
            theirs = [t.numpy() for t in torch.tensor_split(torch.tensor(A43), spec, dim)]
            assert len(ours) == len(theirs)
            for o, t in zip(ours, theirs, strict=True):
                np.testing.assert_array_equal(o, t)
    same_as_torch(lambda m, a, b: m.cat(a.tensor_split(m.tensor([1, 2]), 1), 1) * 2, A43, B53)
    same_as_torch(lambda m, a, b: m.take(a, m.tensor([[0, -1], [5, 2]])), A43, B53)
    raises_same(lambda m: m.take(m.ones(2, 3), m.tensor([6])))
    for off, d1, d2 in ((0, -2, -1), (1, 0, 2), (-2, 2, 0), (2, 1, 0)):
        same_as_torch(lambda m, a, b, o=off, x=d1, y=d2: m.diag_embed(a, o, x, y), A43, B53)
    same_as_torch(lambda m, a, b: m.block_diag(a, b[:2, :2], a[0, 0], b[0]), A43, B53)
    assert rt.block_diag(rt.tensor(1), rt.tensor([2, 3])).tolist() == [[1, 0, 0], [0, 2, 3]]
    raises_same(lambda m: m.cross(m.ones(2, 4), m.ones(2, 4), dim=1))
    raises_same(lambda m: m.cdist(m.ones(2, 3), m.ones(2, 4)))


def test_structured_ops_in_a_compiled_step() -> None:
    def step(a: rt.Tensor, b: rt.Tensor) -> rt.Tensor:
        loss = (rt.cdist(a, b).sum() + rt.kron(a, b[:2]).sum() + rt.cov(a).sum()
                + rt.diag_embed(a, 1).sum() + rt.take(a, rt.tensor([0, 5])).sum()
                + rt.block_diag(a, b).sum() + rt.addmv(a[:, 0], a, b[0]).sum())
        loss.backward()
        return loss

    ea, eb = rt.tensor(A43, requires_grad=True), rt.tensor(B53, requires_grad=True)
    expected = step(ea, eb)
    compiled = planner.compile(step, fullgraph=True)  # captured whole, no eager fallback
    for _ in range(2):
        a, b = rt.tensor(A43, requires_grad=True), rt.tensor(B53, requires_grad=True)
        np.testing.assert_allclose(compiled(a, b).item(), expected.item(), rtol=1e-12)
        np.testing.assert_allclose(a.grad.numpy(), ea.grad.numpy(), rtol=1e-10)
        np.testing.assert_allclose(b.grad.numpy(), eb.grad.numpy(), rtol=1e-10)


# --- 5. autograd.Function in the setup_context style ------------------------------------------


def _scale_fn(lib: Any) -> Any:
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(x: Any, k: float) -> Any:
            return x * k

        @staticmethod
        def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
            x, k = inputs
            ctx.save_for_backward(x)
            ctx.k = k

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (x,) = ctx.saved_tensors
            return g * ctx.k + 0 * x, None

    return Scale


def test_function_setup_context_style() -> None:
    same_as_torch(lambda m, x: _scale_fn(m).apply(x, 3.0) * x, X)
    scale = _scale_fn(rt)
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    y = scale.apply(x, 2.5)
    assert y.grad_fn.name() == "ScaleBackward"
    y.sum().backward()
    assert x.grad.tolist() == [2.5, 2.5]


def test_function_backward_returning_a_non_tensor() -> None:
    def nested(m: Any) -> None:
        class Nested(m.autograd.Function):
            @staticmethod
            def forward(x: Any) -> Any:
                return x * 2

            @staticmethod
            def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
                pass

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return ((g * 2,),)

        Nested.apply(m.ones(2, requires_grad=True)).sum().backward()

    def number(m: Any) -> None:
        class Number(m.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return x * 2

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return 3

        Number.apply(m.ones(2, requires_grad=True)).sum().backward()

    # the engine adds the line "raised while running the backward of NestedBackward"
    with pytest.raises(RuntimeError, match=r"^expected Variable or None \(got tuple\)\n"):
        nested(rt)
    with pytest.raises(RuntimeError, match=r"^expected Variable or None \(got int\)\n"):
        number(rt)
    torch = _torch()
    with pytest.raises(RuntimeError, match=r"^expected Variable or None \(got tuple\)$"):
        nested(torch)

    def no_ctx(m: Any) -> None:
        class NoCtx(m.autograd.Function):
            @staticmethod
            def forward(x: Any) -> Any:
                return x

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g

        NoCtx.apply(m.ones(2))

    raises_same(no_ctx)


# --- 6. linear algebra -------------------------------------------------------------------------

SQ = R.standard_normal((2, 3, 3)) + 2 * np.eye(3)
SPD = SQ @ SQ.transpose(0, 2, 1) + np.eye(3)


def test_linalg_matches_torch() -> None:
    same_as_torch(lambda m, a: m.linalg.inv(a), SQ)
    same_as_torch(lambda m, a: m.linalg.det(a) + m.det(a[0]) + a[1].det(), SQ)
    same_as_torch(lambda m, a: m.linalg.slogdet(a), SQ)
    same_as_torch(lambda m, a: m.logdet(a @ a.mT) + m.inverse(a).sum(), SQ)
    same_as_torch(lambda m, a: m.linalg.cholesky(a), SPD)
    same_as_torch(lambda m, a: m.linalg.cholesky(a, upper=True), SPD)
    same_as_torch(lambda m, a, b: m.linalg.solve(a, b), SQ, R.standard_normal((2, 3, 2)))
    same_as_torch(lambda m, a, b: m.linalg.solve(a, b), SQ, R.standard_normal((2, 3)))
    same_as_torch(lambda m, a, b: m.linalg.solve(a[0], b), SQ, R.standard_normal(3))
    same_as_torch(lambda m, a, b: m.linalg.solve(a, b, left=False), SQ,
                  R.standard_normal((2, 4, 3)))
    for n in (-3, -1, 0, 1, 2, 5):
        same_as_torch(lambda m, a, n=n: m.linalg.matrix_power(a, n) + m.matrix_power(a, n),
                      SQ)
    for ord in ("fro", 1, -1, math.inf, -math.inf):
        same_as_torch(lambda m, a, o=ord: m.linalg.matrix_norm(a, o), SQ)
        same_as_torch(lambda m, a, o=ord: m.linalg.matrix_norm(a, o, dim=(0, 2),
                                                               keepdim=True), SQ)
        same_as_torch(lambda m, a, o=ord: m.linalg.norm(a[0], o), SQ)
    same_as_torch(lambda m, a: m.linalg.norm(a) + m.linalg.norm(a, dim=1).sum(), SQ)
    same_as_torch(lambda m, a: m.linalg.norm(a[0, 0], 3) + m.linalg.norm(a, 1, dim=(1, 2)).sum(),
                  SQ)
    same_as_torch(lambda m, a: m.linalg.vector_norm(a, 2, dtype=m.float64), SQ)
    check_grad(lambda a: rt.linalg.inv(a).sum() + rt.linalg.det(a).sum()
               + rt.linalg.slogdet(a)[1].sum(), SQ)
    check_grad(lambda a: rt.linalg.cholesky(a @ a.mT + rt.eye(3, dtype=rt.float64)), SQ)


def test_eigh_matches_torch() -> None:
    # eigenvectors are defined up to sign: compare sign-free functions of them
    wt = R.standard_normal((3, 3))

    def fn(m: Any, a: Any) -> Any:
        w, v = m.linalg.eigh(a + a.mT)
        return w * 2 + (v * v * m.tensor(wt, dtype=a.dtype)).sum(-1) + m.linalg.eigvalsh(
            a + a.mT, "U")

    same_as_torch(fn, SQ, tol=1e-4)
    same_as_torch(fn, SQ, dtypes=("float64",), tol=1e-10)
    w, v = rt.linalg.eigh(rt.tensor(SPD))
    np.testing.assert_allclose((v @ rt.diag_embed(w) @ v.mT).numpy(), SPD, atol=1e-12)
    check_grad(lambda a: rt.linalg.eigh(a + a.mT).eigenvalues, SQ)
    check_grad(lambda a: rt.linalg.eigh(a + a.mT).eigenvectors ** 2, SQ)


@pytest.mark.parametrize("shape", [(2, 4, 4), (3, 5), (5, 3)])
def test_svd_family_matches_torch(shape: tuple[int, ...]) -> None:
    a = R.standard_normal(shape)
    wt = R.standard_normal(shape)

    def fn(m: Any, x: Any) -> Any:  # U and Vh up to sign: U @ Vh and squares are sign-free
        u, s, vh = m.linalg.svd(x, full_matrices=False)
        return (s * 2 + ((u @ vh) * m.tensor(wt, dtype=x.dtype)).sum() + (u * u).sum()
                + m.linalg.svdvals(x) ** 2)

    same_as_torch(fn, a, tol=1e-4)
    same_as_torch(fn, a, dtypes=("float64",), tol=1e-10)
    same_as_torch(lambda m, x: m.linalg.pinv(x) + m.pinverse(x) * 2, a, dtypes=("float64",),
                  tol=1e-10)
    for ord in ("nuc", 2, -2):
        same_as_torch(lambda m, x, o=ord: m.linalg.matrix_norm(x, o), a, dtypes=("float64",),
                      tol=1e-10)
        same_as_torch(lambda m, x, o=ord: m.linalg.matrix_norm(x, o, dim=(-1, -2),
                                                               keepdim=True), a,
                      dtypes=("float64",), tol=1e-10)
    u, s, vh = rt.linalg.svd(rt.tensor(a), full_matrices=False)
    np.testing.assert_allclose((u @ rt.diag_embed(s) @ vh).numpy(), a, atol=1e-12)
    k = min(shape[-2:])

    def full(m: Any, x: Any) -> Any:  # square U and Vh: the gradient reads k of their columns
        u, s, vh = m.linalg.svd(x)
        assert tuple(u.shape[-2:]) == (shape[-2],) * 2 and tuple(vh.shape[-2:]) == (shape[-1],) * 2
        return s + (u * u).sum() + (vh * vh).sum() + ((u[..., :k] @ vh[..., :k, :]) * 2).sum()

    same_as_torch(full, a, dtypes=("float64",), tol=1e-10)
    check_grad(lambda x: rt.linalg.svdvals(x) + rt.linalg.pinv(x).sum(), a)


@pytest.mark.parametrize("shape", [(2, 4, 4), (5, 3), (3, 5)])
def test_qr_lstsq_match_torch(shape: tuple[int, ...]) -> None:
    a = R.standard_normal(shape)
    b = R.standard_normal((*shape[:-1], 2))
    same_as_torch(lambda m, x: m.linalg.qr(x), a)
    same_as_torch(lambda m, x: m.linalg.qr(x.detach(), mode="r").R.sum() + x, a)
    # a float32 least-squares solution is good to about cond(a) * eps: LAPACK's blocking and
    # threads (numpy's and torch's differ) move it by 1e-5 on these random systems
    for dtype, tol in (("float32", 1e-4), ("float64", 1e-10)):
        same_as_torch(lambda m, x, y: m.linalg.lstsq(x, y).solution, a, b, dtypes=(dtype,),
                      tol=tol)
        same_as_torch(lambda m, x, y: m.linalg.lstsq(x, y[..., 0]).solution, a, b,
                      dtypes=(dtype,), tol=tol)
    res = rt.linalg.lstsq(rt.tensor(a), rt.tensor(b))
    assert res.rank.tolist() == _torch().linalg.lstsq(_torch().tensor(a),
                                                       _torch().tensor(b)).rank.tolist()
    q, r = rt.linalg.qr(rt.tensor(a))
    np.testing.assert_allclose((q @ r).numpy(), a, atol=1e-12)
    check_grad(lambda x: rt.linalg.qr(x), a)


def test_linalg_small_composites_match_torch() -> None:
    same_as_torch(lambda m, a: m.linalg.cond(a) + m.linalg.cond(a, -2), SQ,
                  dtypes=("float64",), tol=1e-10)
    # torch's cond(p) backward fails for the norm-based p ("modified by an inplace operation")
    same_as_torch(lambda m, a: m.linalg.cond(a.detach(), "fro") + m.linalg.cond(
        a.detach(), 1) + a.sum(), SQ, dtypes=("float64",), tol=1e-10)
    check_grad(lambda a: rt.linalg.cond(a, "fro") + rt.linalg.cond(a, 1), SQ)
    same_as_torch(lambda m, a: m.linalg.vecdot(a, a * 2) + m.linalg.cross(a, a.flip(-1)).sum(-1),
                  SQ)
    same_as_torch(lambda m, a: m.linalg.multi_dot([a[0], a[1], a[0, 0]]), SQ)
    low_rank = SQ[0] @ np.diag([1.0, 1.0, 0.0])
    assert rt.linalg.matrix_rank(rt.tensor(low_rank)).item() == 2
    assert rt.linalg.matrix_rank(rt.tensor(SQ)).tolist() == [3, 3]


def test_linalg_errors_match_torch() -> None:
    torch = _torch()

    def msg(fn: Any, lib: Any) -> str:
        with pytest.raises(RuntimeError) as info:
            fn(lib)
        return str(info.value)

    for fn in (lambda m: m.linalg.inv(m.tensor([[1.0, 2.0], [2.0, 4.0]])),
               lambda m: m.linalg.inv(m.zeros(2, 2, 2)),
               lambda m: m.linalg.cholesky(m.tensor([[1.0, 2.0], [2.0, 1.0]])),
               lambda m: m.linalg.inv(m.ones(2, 3)),
               lambda m: m.linalg.det(m.ones(2, 2, dtype=m.int64)),
               lambda m: m.linalg.matrix_norm(m.ones(3), 1)):
        assert msg(fn, rt) == msg(fn, torch)
    with pytest.raises(rt.linalg.LinAlgError):
        rt.linalg.inv(rt.zeros(2, 2))


def test_linalg_in_a_compiled_step() -> None:
    def step(a: rt.Tensor) -> rt.Tensor:
        loss = (rt.linalg.inv(a).sum() + rt.linalg.det(a).sum()
                + rt.linalg.slogdet(a).logabsdet.sum() + rt.linalg.solve(a, a[:, 0]).sum()
                + rt.linalg.cholesky(a @ a.mT).sum() + rt.linalg.matrix_norm(a, 1).sum())
        loss.backward()
        return loss

    ea = rt.tensor(SQ, requires_grad=True)
    expected = step(ea)
    compiled = planner.compile(step, fullgraph=True)  # captured whole, no eager fallback
    for _ in range(2):
        a = rt.tensor(SQ, requires_grad=True)
        np.testing.assert_allclose(compiled(a).item(), expected.item(), rtol=1e-12)
        np.testing.assert_allclose(a.grad.numpy(), ea.grad.numpy(), rtol=1e-10)
