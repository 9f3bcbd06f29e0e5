"""PyTorch's test/test_reductions.py (its non-OpInfo tests), ported by hand for device 'cpu'
and the float32/float64/int64/bool dtypes with ``import runtime as torch`` (helpers and the
list of what is left out in tests/runtime/test_ported_tensor_ops_h18.py).

Left out here: the ReductionOpInfo tests (checked instead by a sweep of the same rules:
tests/runtime/test_ported_tensor_ops_h18_reductions.py::test_reduction_rules_match_torch), the
65-dim limit tests (numpy arrays stop at 64 dims, so no such tensor is made here),
logsumexp without a dim (a newer PyTorch than the 2.13 reference), complex logsumexp /
logcumsumexp, and CUDA-only mode tests.
"""

from __future__ import annotations

import math
import random
import warnings
from typing import Any

import numpy as np
import pytest

import runtime as torch
from tests.runtime.test_ported_tensor_ops_h18 import assert_equal, make_tensor


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dim_reduction_lastdim(dtype: torch.dtype) -> None:
    x = torch.randn(3, 5, 40, dtype=dtype)[:, :, 0:40:2]
    x2 = x.contiguous()
    for op in (torch.norm, torch.argmax, torch.argmin):
        assert_equal(op(x, dim=-1), op(x2, dim=-1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_logsumexp(dtype: torch.dtype) -> None:
    logsumexp = pytest.importorskip("scipy.special").logsumexp
    a = torch.randn(5, 4, dtype=dtype)
    a[1, :] = -math.inf
    expected = logsumexp(a.numpy(), 1)
    assert_equal(a.logsumexp(1), expected)
    b = torch.zeros(5, 2, dtype=dtype)
    c = b[:, 0]
    torch.logsumexp(a, 1, out=c)
    assert_equal(b[:, 0], expected)


def test_logsumexp_integral_promotion() -> None:
    logsumexp = pytest.importorskip("scipy.special").logsumexp
    e = torch.randint(-100, 100, [5, 4])
    assert_equal(e.logsumexp(1).to(torch.float64), logsumexp(e.numpy(), 1), rtol=1e-6)


def test_all_any_with_dim() -> None:
    x = torch.tensor([[0, 0, 0], [0, 0, 1], [0, 1, 1], [1, 1, 1]], dtype=torch.uint8)
    r1, r2 = x.prod(dim=0, keepdim=False).byte(), x.all(dim=0, keepdim=False)
    assert r1.shape == r2.shape and (r1 == r2).all()
    r3, r4 = x.sum(dim=1, keepdim=True).clamp(0, 1).byte(), x.any(dim=1, keepdim=True)
    assert r3.shape == r4.shape and (r3 == r4).all()


def test_numpy_named_args() -> None:
    """(torch.add(x1=, x2=), numpy's names for input/other, is left out: not taken here.)"""
    x1 = torch.randn(10, 10, 10)
    assert_equal(x1.sum(dim=(0, 2), keepdim=True), x1.sum(axis=(0, 2), keepdims=True))


def _make_tensors(shape: tuple[int, ...], floating: bool = True, integral: bool = True
                  ) -> dict[str, list[torch.Tensor]]:
    types = ([torch.double, torch.float] if floating else []) + \
        ([torch.int64, torch.int32, torch.int16] if integral else [])

    def contiguous(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        if dtype.is_floating_point:
            val = torch.randn(shape, dtype=dtype) * (200 / (math.pi * 2.0)) + 100
            return torch.clamp(val, min=-100, max=100)
        return torch.randint(-100, 100, shape, dtype=dtype)

    def non_contiguous(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        nc = torch.empty(shape + (2, 2), dtype=dtype)[..., 0].select(-1, -1)
        nc.copy_(contiguous(shape, dtype))
        assert not nc.is_contiguous()
        return nc

    out: dict[str, list[torch.Tensor]] = {"cont": [], "noncont": [], "slice": []}
    for dtype in types:
        out["cont"].append(contiguous(shape, dtype))
        out["noncont"].append(non_contiguous(shape, dtype))
        out["slice"].append(contiguous((1, sum(shape)), dtype))
    return out


def _test_dim_ops(torch_op: Any, numpy_op: Any, floating: bool = True,
                  integral: bool = True) -> None:
    for shape, dim in (((5, 4000), 1), ((3, 5, 7), 0), ((3, 5, 7), 1), ((3, 5, 7), 2),
                       ((10000,), -1), ((20, 20, 20), (1, 2)), ((20, 20, 20), (1, -1)),
                       ((20, 20, 20), (0, 2)), ((20, 20, 20), (0, 2, 1))):
        for category, tensors in _make_tensors(shape, floating, integral).items():
            d = 0 if category == "slice" else dim
            for t in tensors:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    expected = numpy_op(t.numpy(), d)
                got = torch_op(t, d)
                assert got.shape == expected.shape
                if t.dtype == torch.float:
                    assert_equal(got, expected, rtol=1e-3, atol=1e-5, exact_dtype=False)
                else:
                    assert_equal(got, expected, exact_dtype=False)


def test_sum_dim() -> None:
    _test_dim_ops(lambda t, d: t.sum(d), lambda n, d: n.sum(d))


def test_mean_dim() -> None:
    _test_dim_ops(lambda t, d: t.mean(d), lambda n, d: n.mean(d), integral=False)


@pytest.mark.parametrize("unbiased", [False, True])
def test_std_var_dim(unbiased: bool) -> None:
    _test_dim_ops(lambda t, d: t.std(d, unbiased=unbiased),
                  lambda n, d: n.std(d, ddof=1 if unbiased else 0), integral=False)
    _test_dim_ops(lambda t, d: t.var(d, unbiased=unbiased),
                  lambda n, d: n.var(d, ddof=1 if unbiased else 0), integral=False)


def test_logsumexp_dim() -> None:
    logsumexp = pytest.importorskip("scipy.special").logsumexp
    _test_dim_ops(lambda t, d: t.logsumexp(d), lambda n, d: logsumexp(n, d), integral=False)


def test_mean_int_with_optdtype() -> None:
    a = make_tensor((3, 4, 5), torch.int64)
    assert_equal(a.to(torch.float32).mean(), a.mean(dtype=torch.float32))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_mean_out_is_alias_of_return(dtype: torch.dtype) -> None:
    a = torch.tensor([[[1.0] * 4], [[2.0] * 4], [[3.0] * 4]], dtype=dtype)
    out = torch.empty((1, 1, 4), dtype=dtype)
    ret = torch.mean(a, dim=0, keepdim=True, out=out)
    assert ret is out or ret.data_ptr() == out.data_ptr()
    assert torch.allclose(out, torch.tensor([[[2.0] * 4]], dtype=dtype))


_MATH_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float32,
                torch.float64, torch.bfloat16]


def _test_reduce_integer_upcast(fn: Any, has_out: bool = True) -> None:
    shape = (3, 4, 5)
    reduced = fn(torch.ones(shape)).shape
    for dtype in _MATH_DTYPES:
        x = torch.ones(shape, dtype=dtype)
        expected = dtype if dtype.is_floating_point else torch.int64
        assert fn(x).dtype is expected
        assert_equal(fn(x.to(expected)), fn(x))
        other = (torch.float32 if dtype == torch.float64 else torch.float64) \
            if dtype.is_floating_point else (torch.int32 if dtype != torch.int32 else torch.int16)
        assert fn(x, dtype=other).dtype is other
        assert_equal(fn(x.to(other)), fn(x, dtype=other), exact_dtype=False)
        for mixed in ([torch.int32] if dtype.is_floating_point else [torch.float32]):
            assert fn(x, dtype=mixed).dtype is mixed
            assert_equal(fn(x.to(mixed)), fn(x, dtype=mixed), exact_dtype=False)
            if not has_out:
                continue
            for out_dtype in (other, mixed):
                out = torch.ones(reduced, dtype=dtype)
                result = fn(x, out=out)
                assert out.dtype is result.dtype
                assert_equal(fn(x.to(dtype)), result, exact_dtype=False)
                result = fn(x, out=out, dtype=dtype)
                assert out.dtype is result.dtype
                with pytest.raises(RuntimeError):
                    fn(x, out=out, dtype=out_dtype)


def test_sum_integer_upcast() -> None:
    _test_reduce_integer_upcast(lambda x, **kw: torch.sum(x, **kw), False)
    _test_reduce_integer_upcast(lambda x, **kw: torch.sum(x, 0, **kw))


def test_prod_integer_upcast() -> None:
    _test_reduce_integer_upcast(lambda x, **kw: torch.prod(x, **kw), False)
    _test_reduce_integer_upcast(lambda x, **kw: torch.prod(x, 0, **kw))


def test_cumsum_cumprod_integer_upcast() -> None:
    _test_reduce_integer_upcast(lambda x, **kw: torch.cumsum(x, 0, **kw))
    _test_reduce_integer_upcast(lambda x, **kw: torch.cumprod(x, 0, **kw))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.uint8,
                                   torch.int32])
def test_mode(dtype: torch.dtype) -> None:
    size = 10
    x = torch.arange(1., size * size + 1, dtype=dtype).clone().resize_(size, size)
    x[:2] = 1
    x[:, :2] = 1
    x0 = x.clone()
    val = torch.ones(size, dtype=dtype)
    ind = torch.ones(size, dtype=torch.long)
    ind[0] = ind[1] = size - 1
    v, i = torch.mode(x, keepdim=False)
    assert_equal(v, val, atol=0, rtol=0)
    assert_equal(i, ind, atol=0, rtol=0)
    v, i = torch.tensor((), dtype=dtype), torch.tensor((), dtype=torch.long)
    torch.mode(x, keepdim=False, out=(v, i))
    assert_equal(v, val, atol=0, rtol=0)
    assert_equal(i, ind, atol=0, rtol=0)
    v, i = torch.mode(x, 0, False)
    assert_equal(v, val, atol=0, rtol=0)
    assert_equal(i, ind, atol=0, rtol=0)
    assert_equal(x, x0, atol=0, rtol=0)


def test_mode_boolean() -> None:
    for shape in ((10, 10), (4, 2048), (1, 4096)):
        a = torch.zeros(shape, dtype=torch.bool)
        a[:, (shape[1] - 1) // 2:] = True
        values, indices = a.mode(-1)
        assert_equal(values, torch.ones(shape[0], dtype=torch.bool))
        assert_equal(values, a.gather(1, indices.unsqueeze(1)).squeeze(1))
        a.fill_(False)
        a[:, shape[1] // 2 + 1:] = True
        values, indices = a.mode(-1)
        assert_equal(values, torch.zeros(shape[0], dtype=torch.bool))
        assert_equal(values, a.gather(1, indices.unsqueeze(1)).squeeze(1))


_REDUCTIONS = ["sum", "prod", "mean", "amax", "amin", "argmax", "argmin", "all", "any", "nansum",
               "nanmean", "logsumexp", "std", "var", "count_nonzero", "norm", "max", "min",
               "median", "nanmedian", "mode", "std_mean", "var_mean", "aminmax"]
_DIM_KWARGS = [{}, {"dim": 0}, {"dim": -1, "keepdim": True}, {"dim": [0, 2]},
               {"dim": [2, 0, 1]}, {"dim": []}, {"dim": [0, 0]}, {"dim": 3}, {"dim": None},
               {"dim": None, "keepdim": True}]


def _outcome(lib: Any, name: str, t: Any, kwargs: dict[str, Any]) -> Any:
    try:
        r = getattr(lib, name)(t, **kwargs)
    except TypeError:
        return "TypeError"
    except Exception as e:  # noqa: BLE001 - the exception's type and text are compared
        return type(e).__name__, str(e)
    rs = tuple(r) if isinstance(r, tuple) else (r,)
    return [(tuple(x.shape), str(x.dtype).split(".")[-1],
             np.array2string(x.detach().numpy().astype(float), precision=4)) for x in rs]


@pytest.mark.parametrize("name", _REDUCTIONS)
def test_reduction_rules_match_torch(name: str) -> None:
    """The ReductionOpInfo tests' rules (dim defaults, dim=[], unsorted and duplicate dims,
    out-of-range dims, result dtypes, empty slices), each case checked against torch."""
    pt = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    cases = [(rng.random((2, 3, 4), dtype=np.float32), kw) for kw in _DIM_KWARGS]
    for dt in (np.float32, np.float64, np.int64, np.bool_):
        values = (rng.random(5) * 10).astype(dt)
        cases += [(values, {}), (values, {"dim": 0})]
    empty = np.zeros((0, 2, 3), np.float32)
    cases += [(empty, kw) for kw in ({"dim": 0}, {"dim": [0, 2]}, {"dim": 1}, {"dim": [1, 2]},
                                     {})]
    cases.append((np.array(3.0), {"dim": 0}))
    for arr, kwargs in cases:
        want = _outcome(pt, name, pt.tensor(arr), kwargs)
        assert _outcome(torch, name, torch.tensor(arr), kwargs) == want, (arr.dtype, kwargs)


def test_mode_wrong_dtype() -> None:
    def check(x_ty: torch.dtype, v_ty: torch.dtype, i_ty: torch.dtype, which: str) -> None:
        x, v, i = (torch.ones(10, dtype=t) for t in (x_ty, v_ty, i_ty))
        with pytest.raises(RuntimeError, match=f"expected scalar type .* but got .* for {which}"):
            torch.mode(x, -1, True, out=(v, i))

    for x_ty, v_ty in ((torch.uint8, torch.int8), (torch.int8, torch.int16),
                       (torch.int32, torch.float32), (torch.float32, torch.float64)):
        check(x_ty, v_ty, torch.long, "values")
    for x_ty, i_ty in ((torch.uint8, torch.int8), (torch.int8, torch.int16),
                       (torch.int32, torch.float32), (torch.float32, torch.float64)):
        check(x_ty, x_ty, i_ty, "indices")


def test_accreal_type() -> None:
    x = torch.ones(2, 3, 4)
    assert isinstance(x.double().sum().item(), float)
    assert isinstance(x.float().sum().item(), float)
    for conv in ("long", "int", "short", "char", "byte"):
        assert isinstance(getattr(x, conv)().sum().item(), int)


def test_var_mean_some_dims() -> None:
    from itertools import combinations

    x = torch.rand((4, 6, 7, 5, 3))
    for r in range(2, 5):
        for dim in combinations(range(5), r=r):
            for unbiased in (False, True):
                for keepdim in (False, True):
                    var1, mean1 = torch.var_mean(x, dim=dim, unbiased=unbiased, keepdim=keepdim)
                    assert_equal(var1, x.var(dim=dim, unbiased=unbiased, keepdim=keepdim))
                    assert_equal(mean1, x.mean(dim=dim, keepdim=keepdim))


def test_all_any_empty() -> None:
    for x in (torch.ByteTensor(), torch.BoolTensor()):
        assert x.all()
        assert not x.any()


def test_all_issue117215() -> None:
    a = torch.randint(0, 255, (73, 11, 3, 17), dtype=torch.uint8)
    assert torch.ne(torch.all(a, dim=0), a.to(torch.bool).all(dim=0)).sum().item() == 0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_max_min_with_inf(dtype: torch.dtype) -> None:
    inf = math.inf
    a = torch.tensor([[-inf, -inf, inf, 3], [inf, inf, -inf, -1]], dtype=dtype)
    assert torch.all(torch.max(a, dim=1).values == inf).item()
    assert torch.all(torch.amax(a, dim=1) == inf).item()
    assert torch.max(a).item() == inf and torch.amax(a).item() == inf
    assert torch.all(torch.min(a, dim=1).values == -inf).item()
    assert torch.all(torch.amin(a, dim=1) == -inf).item()
    assert torch.min(a).item() == -inf and torch.amin(a).item() == -inf


def _create_input(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    if dtype.is_floating_point:
        return torch.randn(*shape, dtype=dtype)
    lo, hi = (0, 2) if dtype == torch.bool else (-1000, 1000)
    return torch.randint(lo, hi, shape, dtype=dtype)


def _values(x: Any) -> Any:
    return x[0] if isinstance(x, tuple) else x


def _test_minmax(torchfn: Any, reffn: Any, dtype: torch.dtype, skip_indices: bool = False
                 ) -> None:
    for x in (_create_input((100, 100), dtype), _create_input((10, 10, 10), dtype)[:, 4]):
        assert_equal(torchfn(x), reffn(x.numpy()), exact_dtype=False)
    if not skip_indices:
        size = 5
        x = _create_input((size, size), dtype)
        for xinp in (x, x.t()):
            for d in (0, 1):
                result = torchfn(xinp, d, False)
                assert_equal(_values(result), reffn(xinp.numpy(), d, keepdims=False),
                             exact_dtype=False)
                if isinstance(result, tuple):
                    v, i = result
                    picked = xinp[torch.arange(size), i] if d == 1 else \
                        xinp[i, torch.arange(size)]
                    assert_equal(picked, v, atol=0, rtol=0)
    if dtype.is_floating_point:
        for index in (0, 4, 99):
            x = _create_input((100,), dtype)
            x[index] = math.nan
            if not skip_indices:
                result = torchfn(x, 0)
                assert math.isnan(_values(result).item())
                if isinstance(result, tuple):
                    assert result[1].item() == index
            assert math.isnan(torchfn(x).item())


_MINMAX_DTYPES = [torch.float32, torch.float64, torch.int64, torch.bool, torch.float16]


@pytest.mark.parametrize("dtype", _MINMAX_DTYPES)
@pytest.mark.parametrize(("name", "ref"), [("max", np.amax), ("min", np.amin),
                                           ("amax", np.amax), ("amin", np.amin)])
def test_minmax(dtype: torch.dtype, name: str, ref: Any) -> None:
    _test_minmax(getattr(torch, name), ref, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_aminmax(dtype: torch.dtype) -> None:
    def amin(x: Any, dim: Any = None, keepdims: bool = False) -> Any:
        return torch.aminmax(x, dim=dim, keepdim=keepdims)[0]

    def amax(x: Any, dim: Any = None, keepdims: bool = False) -> Any:
        return torch.aminmax(x, dim=dim, keepdim=keepdims)[1]

    if dtype == torch.bfloat16:  # numpy's reference has no bfloat16: compare in float32
        for fn, ref in ((amin, torch.amin), (amax, torch.amax)):
            x = _create_input((10, 10), dtype)
            assert_equal(fn(x), ref(x))
            assert_equal(fn(x, 1), ref(x, 1))
        return
    _test_minmax(amin, np.amin, dtype)
    _test_minmax(amax, np.amax, dtype)


def test_bincount() -> None:
    with pytest.raises(RuntimeError, match="1-d non-negative integral"):
        torch.bincount(torch.tensor([1, -1]))
    with pytest.raises(RuntimeError, match="1-d non-negative integral"):
        torch.bincount(torch.tensor([[1, 2], [3, 4]]))
    # PyTorch 2.13: its dispatch's NotImplementedError (a RuntimeError) before the 1-d check
    with pytest.raises(NotImplementedError, match="\"bincount_cpu\" not implemented for 'Float'"):
        torch.bincount(torch.tensor([1., 0.3]))
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        torch.bincount(torch.tensor([[True]]))
    with pytest.raises(RuntimeError, match="minlength should be >= 0"):
        torch.bincount(torch.tensor([1, 3]), torch.tensor([.2, .2]), minlength=-1)
    with pytest.raises(RuntimeError, match="1-d"):
        torch.bincount(torch.tensor([1, 0]), torch.tensor([[1., 0.3], [1., 0.3]]))
    with pytest.raises(RuntimeError, match="same length"):
        torch.bincount(torch.tensor([1, 0]), torch.tensor([1., 0.3, 0.5]))
    assert_equal(torch.bincount(torch.tensor([], dtype=torch.long)),
                 torch.zeros(0, dtype=torch.long))
    assert_equal(torch.bincount(torch.tensor([], dtype=torch.long), minlength=10),
                 torch.zeros(10, dtype=torch.long))
    assert_equal(torch.tensor([0, 3, 2, 1, 3], dtype=torch.uint8).bincount(),
                 torch.tensor([1, 1, 1, 2], dtype=torch.int64))
    assert_equal(torch.tensor([0, 1, 2, 3, 255], dtype=torch.uint8).bincount(),
                 torch.tensor([0, 1, 2, 3, 255], dtype=torch.int16).bincount())
    assert_equal(torch.bincount(torch.tensor([1, 1, 1, 1]), minlength=5),
                 torch.tensor([0, 4, 0, 0, 0], dtype=torch.int64))
    assert_equal(torch.bincount(torch.tensor([0, 1, 1, 1, 4]),
                                torch.tensor([.1, .2, .3, .4, .5])),
                 torch.tensor([0.1, 0.9, 0, 0, 0.5]))
    assert_equal(torch.bincount(torch.tensor([0, 1, 1, 1, 4]),
                                torch.tensor([1, 2, 3, 4, 5], dtype=torch.int8)),
                 torch.tensor([1, 9, 0, 0, 5], dtype=torch.float64))
    inputs = torch.tensor([[0, 0], [3, 1], [2, 1], [1, 1], [3, 4]])
    weights = torch.tensor([[.1, 1], [.2, 2], [.3, 3], [.4, 4], [.5, 5]])
    assert_equal(inputs[:, 0].bincount(), torch.tensor([1, 1, 1, 2]))
    assert_equal(inputs[:, 1].bincount(weights[:, 1]),
                 torch.tensor([1, 9, 0, 0, 5], dtype=torch.float32))
    assert_equal(inputs[:, 1].contiguous().bincount(weights[:, 1]),
                 torch.tensor([1, 9, 0, 0, 5], dtype=torch.float32))
    assert_equal(torch.zeros((32, 2), dtype=torch.int64)[:, 0].bincount(), torch.tensor([32]))
    assert_equal(torch.ones((32, 2), dtype=torch.int64)[:, 0].bincount(), torch.tensor([0, 32]))
    big_exp = torch.zeros(1000000)
    big_exp[-1] = 50.0
    assert_equal(torch.tensor([999999] * 100).bincount(torch.tensor([.5] * 100)), big_exp)
    big_exp = torch.zeros(2, dtype=torch.int64)
    big_exp[1] = 1000000
    assert_equal(torch.ones(1000000, dtype=torch.int8).bincount(), big_exp)


def test_var_stability2() -> None:
    tensor = torch.FloatTensor([2281.5, 2281.25])
    assert tensor.var(0).item() == 0.03125
    assert tensor.var().item() == 0.03125
    assert tensor.unsqueeze(1).var(0).item() == 0.03125


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_sum_noncontig_lowp(dtype: torch.dtype) -> None:
    from itertools import combinations, permutations

    for shape in ((10, 10), (10, 10, 10), (6, 8, 6, 6)):
        n = len(shape)
        for i in range(1, n + 1):
            for dims in combinations(range(n), i):
                for perm in permutations(range(n)):
                    x = torch.ones(shape, dtype=dtype)[(slice(None, None, 2),) * n].permute(perm)
                    assert_equal(torch.sum(x, dims), torch.sum(x.float(), dims).to(dtype))


@pytest.mark.parametrize("dtype", [torch.bool, torch.float64])
def test_sum_all(dtype: torch.dtype) -> None:
    def check(t: torch.Tensor) -> None:
        assert abs(t.sum().item() - sum(t.reshape(-1).tolist())) < 1e-6 * max(1, t.numel())

    if dtype == torch.bool:
        check(torch.tensor([True, False, True], dtype=torch.bool))
        return
    check(torch.tensor([1, 2, 3, 4, 5], dtype=dtype))
    check(torch.randn(200000, dtype=dtype))
    check(torch.randn(2000, 2, dtype=dtype)[:, 0])


def test_sum_out_and_prod_out() -> None:
    x = torch.rand(100, 100, dtype=torch.double)
    res2 = torch.tensor((), dtype=torch.double)
    torch.sum(x, 1, out=res2)
    assert_equal(torch.sum(x, 1), res2)
    x = torch.rand(20, 20, 20, dtype=torch.double)
    res2 = torch.tensor((), dtype=torch.double)
    torch.sum(x, (2, 1), out=res2)
    assert_equal(x.sum(2).sum(1), res2)
    x = torch.rand(100, 100)
    res2 = torch.tensor(())
    torch.prod(x, 1, out=res2)
    assert_equal(torch.prod(x, 1), res2)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_prod_lowp(dtype: torch.dtype) -> None:
    x = torch.rand(100, 100, dtype=dtype)
    for d in (1, 0):
        assert_equal(torch.prod(x, d), torch.prod(x.float(), d).to(dtype))


def test_prod_bool() -> None:
    for val in ([True, True], [True, False], [False, False], [], [False] * 256):
        assert torch.prod(torch.tensor(val), dtype=torch.bool).item() == \
            np.prod(np.array(val), dtype=bool)
        assert torch.prod(torch.tensor(val)).item() == np.prod(np.array(val))


def test_bucketization(monkeypatch: pytest.MonkeyPatch) -> None:
    from runtime.ops import ordering

    monkeypatch.setattr(ordering, "_SEARCHSORTED_WARNED", set())  # (its warnings: once a process)
    values_1d = torch.tensor([1, 2, 3, 4, 5, 6, 7, 8, 9])
    values_3d = torch.tensor([[[1, 3, 5], [2, 4, 6]], [[1, 2, 3], [4, 5, 6]]])
    boundaries = torch.tensor([1, 2, 3, 4, 5, 6])
    expected = torch.tensor([[[0, 2, 4], [1, 3, 5]], [[0, 1, 2], [3, 4, 5]]])
    output = torch.empty(2, 2, 3, dtype=torch.int64)
    assert_equal(torch.bucketize(values_3d, boundaries), expected)
    assert_equal(torch.bucketize(values_3d, boundaries, out=output), expected)
    expected = torch.tensor([[[1, 3, 5], [2, 4, 6]], [[1, 2, 3], [4, 5, 6]]])
    assert_equal(torch.bucketize(values_3d, boundaries, right=True), expected)
    assert_equal(torch.bucketize(values_3d, boundaries, out=output, right=True), expected)
    for dtype in (torch.float32, torch.float16):
        v = values_1d.to(dtype)
        b = torch.tensor([0.9, 1, 2, 2, 3, 3, 4, 4.1, 9, 9], dtype=dtype)
        expected = torch.tensor([1, 2, 4, 6, 8, 8, 8, 8, 8], dtype=torch.int32)
        assert_equal(torch.searchsorted(b, v, out_int32=True), expected)
        assert_equal(torch.bucketize(v, b, out_int32=True), expected)
    boundaries = torch.tensor([1, 2, 3, 4, 5, 6], dtype=torch.int64)
    empty = torch.tensor([[[]]], dtype=torch.int64)
    assert_equal(torch.searchsorted(boundaries, empty), empty)
    assert_equal(torch.bucketize(empty, boundaries), empty)
    nan = float("nan")
    values_nan = torch.tensor([1.0, nan, 2.0, nan], dtype=torch.float64)
    boundaries = torch.tensor([0.0, 1.0, 2.0, 3.0], dtype=torch.float64)
    assert_equal(torch.searchsorted(boundaries, values_nan), torch.tensor([1, 4, 2, 4]))
    assert_equal(torch.searchsorted(boundaries, values_nan, right=True), torch.tensor([2, 4, 3, 4]))
    assert_equal(torch.searchsorted(boundaries, values_nan, side="right"),
                 torch.tensor([2, 4, 3, 4]))
    v3p = values_3d.permute(2, 1, 0).to(torch.int32)
    b3p = values_3d.permute(2, 1, 0).to(torch.float64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert_equal(torch.searchsorted(b3p, v3p),
                     torch.tensor([[[0, 0], [0, 1]], [[2, 0], [0, 1]], [[2, 0], [0, 0]]]))
        torch.searchsorted(b3p, v3p)  # once a process: no second pair
    assert [str(w.message).split(",")[0] for w in caught] == [
        "torch.searchsorted(): input value tensor is non-contiguous",
        "torch.searchsorted(): boundary tensor is non-contiguous"]
    boundaries = torch.tensor([1.5, 2.5, 3.5])
    assert_equal(torch.searchsorted(boundaries, 2), torch.tensor(1))
    assert_equal(torch.bucketize(torch.tensor(2), boundaries), torch.tensor(1))
    assert_equal(torch.searchsorted(boundaries, torch.tensor(nan)), torch.tensor(3))
    assert_equal(torch.bucketize(nan, boundaries, right=True), torch.tensor(3))
    boundaries = torch.tensor([[1, 2, 3], [4, 5, 6]])
    with pytest.raises(RuntimeError, match="first N-1 dimensions of boundaries tensor and input "
                                           "value tensor must match"):
        torch.searchsorted(boundaries, values_3d)
    with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension"):
        torch.bucketize(values_3d, boundaries)
    with pytest.raises(RuntimeError, match="only when boundaries tensor dimension is 1"):
        torch.searchsorted(boundaries, 1)
    for dtype, is_int32 in ((torch.float32, False), (torch.int32, False), (torch.int64, True)):
        with pytest.raises(RuntimeError, match="output tensor's dtype is wrong"):
            torch.searchsorted(values_1d, values_1d, out=values_1d.to(dtype), out_int32=is_int32)
    with pytest.raises(RuntimeError, match="side can only be 'left' or 'right'"):
        torch.searchsorted(values_1d, values_1d, side="bad")
    sequence = torch.rand_like(values_1d, dtype=torch.float)
    _, sorted_idx = torch.sort(sequence)
    with pytest.raises(RuntimeError, match="boundary and sorter must have the same size"):
        torch.searchsorted(sequence, values_1d, sorter=sorted_idx[:-1])
    with pytest.raises(RuntimeError, match="sorter must be a tensor of long dtype"):
        torch.searchsorted(sequence, values_1d, sorter=sorted_idx.to(torch.float32))
    for sorter in ([0, 1, 3], [-1, 1, 2]):
        with pytest.raises(RuntimeError, match="sorter index out of range"):
            torch.searchsorted(torch.tensor([1, 2, 3]), 2.5, sorter=torch.tensor(sorter))
    for v_bf16, b_bf16 in ((True, False), (False, True), (True, True)):
        v = values_1d.to(torch.bfloat16 if v_bf16 else torch.float32)
        b = torch.tensor([0.9, 1, 2, 2, 3, 3, 4, 4.1, 9, 9],
                         dtype=torch.bfloat16 if b_bf16 else torch.float32)
        assert_equal(torch.bucketize(v, b, out_int32=True),
                     torch.tensor([1, 2, 4, 6, 8, 8, 8, 8, 8], dtype=torch.int32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.float16,
                                   torch.bfloat16])
def test_nansum(dtype: torch.dtype) -> None:
    zero = torch.zeros((), dtype=dtype)
    for noncontiguous in (True, False):
        for dim in (0, 1, None):
            scale = random.randint(10, 100)
            x = make_tensor((17, 34) if noncontiguous else (17, 17), dtype, low=-scale,
                            high=scale)
            if noncontiguous:
                x = x[:, ::2]
            if dtype.is_floating_point:
                nan_mask = x < 0.2 * scale
                x_nonan = torch.where(nan_mask, zero, x)
                x[nan_mask] = np.nan
            else:
                x_nonan = x
            kw = {} if dim is None else {"dim": dim}
            assert_equal(torch.nansum(x, **kw), torch.sum(x_nonan, **kw),
                         rtol=1e-2 if dtype in (torch.float16, torch.bfloat16) else None,
                         atol=1e-1 if dtype in (torch.float16, torch.bfloat16) else None)


def test_searchsorted_checks_in_torch_order() -> None:
    """(Not in PyTorch's file.) searchsorted_pre_check's order, each text torch's."""
    pt = pytest.importorskip("torch")

    def outcome(lib: Any, call: Any) -> str:
        try:
            call(lib)
        except RuntimeError as e:
            return str(e)
        return "no error"

    b, v = [[1, 2, 3], [4, 5, 6]], [1., 2., 3.]
    calls = [
        lambda L: L.searchsorted(L.tensor(v), L.tensor(v), sorter=L.arange(2.)),
        lambda L: L.searchsorted(L.tensor(b), 1, out=L.empty(0)),
        lambda L: L.searchsorted(L.tensor(b), L.tensor([1]), out=L.empty(0)),
        lambda L: L.searchsorted(L.tensor(1.), L.tensor([1.])),
        lambda L: L.searchsorted(L.tensor(1.), 1.),
        lambda L: L.searchsorted(L.tensor(v), L.tensor(v), sorter=L.tensor([5, 0])),
        lambda L: L.searchsorted(L.tensor(b), L.tensor([1]), sorter=L.arange(2.)),
        lambda L: L.searchsorted(L.tensor(b), L.tensor([[1]]),
                                 sorter=L.tensor([[0, 1, 2], [0, 1, 2]]).float()),
        lambda L: L.bucketize(L.tensor([1]), L.tensor(1.)),
        lambda L: L.bucketize(L.tensor([1]), L.tensor(v), out=L.empty(0)),
        lambda L: L.bucketize(L.tensor([1]), L.tensor(v), out=L.empty(0, dtype=L.int32),
                              out_int32=True),
    ]
    for call in calls:
        assert outcome(torch, call) == outcome(pt, call)
