"""PyTorch's test/test_sort_and_select.py, ported by hand for device 'cpu' and the
float32/float64/int64/bool dtypes with ``import runtime as torch`` (helpers and the list of
what is left out in tests/runtime/test_ported_tensor_ops_h18.py).

Left out here: the CUDA-only tests (test_sort_large, test_sort_discontiguous) and complex
dtypes; test_sort_discontiguous_slow runs with a smaller last size (2049 -> 9: the CPU path
has no size threshold).
"""

from __future__ import annotations

import random
from itertools import permutations
from typing import Any

import numpy as np
import pytest

import runtime as torch
from tests.runtime.test_ported_tensor_ops_h18 import assert_equal, make_tensor


def _assert_is_ordered(order: str, x: torch.Tensor, mxx: torch.Tensor, ixx: torch.Tensor
                       ) -> None:
    def ordered(a: torch.Tensor, b: torch.Tensor) -> bool:
        if order == "descending":
            return bool(((a != a) | (a >= b)).all().item())
        return bool(((b != b) | (a <= b)).all().item())

    for k in range(1, x.size(1)):
        assert ordered(mxx[:, k - 1], mxx[:, k])
    xs, ms, ixs = x.tolist(), mxx.tolist(), ixx.tolist()
    for k in range(x.size(0)):
        seen = set()
        for j in range(x.size(-1)):
            a, b = xs[k][ixs[k][j]], ms[k][j]
            assert a == b or (a != a and b != b)
            seen.add(ixs[k][j])
        assert len(seen) == x.size(-1)


@pytest.mark.parametrize("size", [4, 2049])
def test_sort(size: int) -> None:
    x = torch.rand(4, size)
    res1val, res1ind = torch.sort(x)
    res2val, res2ind = torch.tensor(()), torch.tensor((), dtype=torch.long)
    torch.sort(x, out=(res2val, res2ind))
    assert_equal(res1val, res2val, atol=0, rtol=0)
    assert_equal(res1ind, res2ind, atol=0, rtol=0)
    assert_equal(torch.argsort(x), res1ind)
    assert_equal(x.argsort(), res1ind)
    _assert_is_ordered("ascending", x, res2val, res2ind)
    assert_equal(torch.sort(torch.tensor((50, 40, 30, 20, 10)))[0],
                 torch.tensor((10, 20, 30, 40, 50)))
    x = torch.floor(torch.rand(4, size) * 10)
    torch.sort(x, out=(res2val, res2ind))
    _assert_is_ordered("ascending", x, res2val, res2ind)
    x = torch.rand(4, size)
    res1val, res1ind = torch.sort(x, x.dim() - 1, True)
    res2val, res2ind = torch.tensor(()), torch.tensor((), dtype=torch.long)
    torch.sort(x, x.dim() - 1, True, out=(res2val, res2ind))
    assert_equal(res1val, res2val, atol=0, rtol=0)
    assert_equal(res1ind, res2ind, atol=0, rtol=0)
    assert_equal(torch.argsort(x, x.dim() - 1, True), res1ind)
    assert_equal(x.argsort(x.dim() - 1, True), res1ind)
    _assert_is_ordered("descending", x, res2val, res2ind)
    assert_equal(torch.sort(torch.tensor((10, 20, 30, 40, 50)), 0, True)[0],
                 torch.tensor((50, 40, 30, 20, 10)))
    x = torch.rand(4, size)
    x[1][2] = float("NaN")
    x[3][0] = float("NaN")
    torch.sort(x, out=(res2val, res2ind))
    _assert_is_ordered("ascending", x, res2val, res2ind)
    torch.sort(x, out=(res2val, res2ind), descending=True)
    _assert_is_ordered("descending", x, res2val, res2ind)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32,
                                   torch.int8, torch.uint8, torch.float16, torch.bfloat16])
def test_stable_sort(dtype: torch.dtype) -> None:
    for n in (100, 1000, 10000):
        _, idx = torch.tensor([0, 1] * n, dtype=dtype).sort(stable=True)
        assert_equal(idx[:n], torch.arange(start=0, end=2 * n, step=2))
        assert_equal(idx[n:], torch.arange(start=1, end=2 * n, step=2))


def test_sort_discontiguous() -> None:
    for shape in permutations((5, 7, 9)):
        for perm in permutations((0, 1, 2)):
            for dim in range(3):
                t = torch.randn(shape).permute(perm)
                r1, r2 = t.sort(dim=dim), t.contiguous().sort(dim=dim)
                assert_equal(r1.values, r2.values)
                assert_equal(r1.indices, r2.indices)
                n = t.size(dim)
                assert (r1.values.narrow(dim, 1, n - 1) >= r1.values.narrow(dim, 0, n - 1)).all()
                assert (t.unsqueeze(-1).transpose(dim, -1) == r1.values.unsqueeze(-1)).any(
                    dim=dim).any(dim=-1).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int16,
                                   torch.uint8, torch.float16, torch.bfloat16])
def test_stable_sort_against_numpy(dtype: torch.dtype) -> None:
    from itertools import chain, combinations

    if dtype.is_floating_point:
        inf, neg_inf, nan = float("inf"), -float("inf"), float("nan")
    else:
        inf, neg_inf = torch.iinfo(dtype).max, torch.iinfo(dtype).min
        nan = inf

    def samples() -> Any:
        for size in (1025, 10000):
            yield torch.tensor([0, 1] * size, dtype=dtype), 0
        yield torch.tensor([0, 1] * 100, dtype=dtype), 0
        for sizes in ((1, 10), (10, 1), (10, 10), (10, 10, 10)):
            size = min(*sizes)
            x = (torch.randn(*sizes) * size).to(dtype)
            yield x, 0
            for dim in range(len(sizes)):
                idxs = [torch.randint(high=size, size=(size // 10,)) for _ in range(3)]
                pairs = list(zip(idxs, (inf, neg_inf, nan), strict=True))
                for subset in chain.from_iterable(combinations(pairs, r) for r in range(1, 4)):
                    res = x
                    for idx, val in subset:
                        res = res.index_fill(dim, idx, val)
                    yield res, dim

    for sample, dim in samples():
        _, idx = sample.sort(dim=dim, stable=True)
        ref = sample.float().numpy() if dtype is torch.bfloat16 else sample.numpy()
        assert_equal(idx, np.argsort(ref, axis=dim, kind="stable"), exact_dtype=False)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32,
                                   torch.uint8, torch.float16, torch.bfloat16])
def test_msort(dtype: torch.dtype) -> None:
    for shape in ([], [0], [20], [1, 20], [30, 30], [10, 20, 30]):
        t = make_tensor(shape, dtype, low=0 if dtype == torch.uint8 else -9, high=9)
        if t.dim():
            ref = t.float().numpy() if dtype is torch.bfloat16 else t.numpy()
            expected = torch.from_numpy(np.sort(ref, axis=0)).to(dtype)
        else:
            expected = t
        result = torch.msort(t)
        assert_equal(result, expected)
        out = torch.empty_like(result)
        torch.msort(t, out=out)
        assert_equal(out, expected)


def test_topk() -> None:
    def check(t: torch.Tensor, k: int, dim: int, largest: bool) -> None:
        vals, inds = t.topk(k, dim, largest, True)
        s_vals, s_inds = t.sort(dim, largest)
        s_vals, s_inds = s_vals.narrow(dim, 0, k), s_inds.narrow(dim, 0, k)
        assert_equal(s_vals, vals, atol=0, rtol=0)
        if not s_inds.eq(inds).all():
            assert_equal(s_vals, t.gather(dim, inds), atol=0, rtol=0)

    t = torch.rand(random.randint(1, 30), random.randint(1, 30), random.randint(1, 30))
    for _ in range(3):
        for _ in range(3):
            for transpose in (True, False):
                for largest in (True, False):
                    tt = t
                    if transpose:
                        d1, d2 = random.sample(range(3), 2)
                        tt = t.transpose(d1, d2)
                    dim = random.randrange(tt.ndimension())
                    check(tt, random.randint(1, tt.size(dim)), dim, largest)


def test_topk_arguments() -> None:
    q = torch.randn(10, 2, 10)
    with pytest.raises(TypeError):
        q.topk(4, True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.uint8,
                                   torch.bool])
def test_unique_dim(dtype: torch.dtype) -> None:
    assert not hasattr(torch, "unique_dim")

    def t(values: Any, dt: torch.dtype = dtype) -> torch.Tensor:
        return torch.tensor(values, dtype=dt)

    x = t([[[1., 1.], [0., 1.], [2., 1.], [0., 1.]], [[1., 1.], [0., 1.], [2., 1.], [0., 1.]]])
    boolean = dtype == torch.bool
    u0 = t([[[1., 1.], [0., 1.], [2., 1.], [0., 1.]]])
    u1 = t([[[False, True], [True, True]], [[False, True], [True, True]]]) if boolean else \
        t([[[0., 1.], [1., 1.], [2., 1.]], [[0., 1.], [1., 1.], [2., 1.]]])
    inv1 = torch.tensor([1, 0, 1, 0] if boolean else [1, 0, 2, 0])
    cnt1 = torch.tensor([2, 2] if boolean else [2, 1, 1])
    expected = {0: (u0, torch.tensor([0, 0]), torch.tensor([2])), 1: (u1, inv1, cnt1),
                2: (x, torch.tensor([0, 1]), torch.tensor([1, 1]))}
    for dim, (u, inv, cnt) in expected.items():
        assert_equal(torch.unique(x, dim=dim), u)
        got_u, got_inv = torch.unique(x, return_inverse=True, dim=dim)
        assert_equal(got_u, u)
        assert_equal(got_inv, inv)
        got_u, got_cnt = torch.unique(x, return_inverse=False, return_counts=True, dim=dim)
        assert_equal(got_u, u)
        assert_equal(got_cnt, cnt)
        got_u, got_inv, got_cnt = torch.unique(x, return_inverse=True, return_counts=True,
                                               dim=dim)
        assert_equal(got_u, u)
        assert_equal(got_inv, inv)
        assert_equal(got_cnt, cnt)
    u, inv, cnt = torch.unique(torch.empty(5, 0, dtype=dtype), return_inverse=True,
                               return_counts=True, dim=1)
    assert_equal(u, torch.empty(5, 0, dtype=dtype))  # PyTorch 2.13: x's shape (the file: [])
    assert_equal(inv, torch.tensor([], dtype=torch.long))
    assert_equal(cnt, torch.tensor([], dtype=torch.long))
    for f in (torch.unique, torch.unique_consecutive):
        with pytest.raises(RuntimeError, match="^Number of zero sized dimensions is more than "
                                               "one, so unique cannot be applied $"):
            f(torch.empty(5, 0, 0, dtype=dtype), return_inverse=True, return_counts=True, dim=1)
        with pytest.raises(RuntimeError, match="^There are 0 sized dimensions, and they aren't "
                                               "selected, so unique cannot be applied$"):
            f(torch.empty(5, 0, 5, dtype=dtype), return_inverse=True, return_counts=True, dim=2)
    y = t([[0, 1], [0, 1], [0, 1], [1, 2], [1, 2], [3, 4], [0, 1], [0, 1], [3, 4], [1, 2]])
    _, y_inv, y_cnt = torch.unique_consecutive(y, return_inverse=True, return_counts=True, dim=0)
    if boolean:
        assert_equal(y_inv, torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 3, 3]))
        assert_equal(y_cnt, torch.tensor([3, 3, 2, 2]))
    else:
        assert_equal(y_inv, torch.tensor([0, 0, 0, 1, 1, 2, 3, 3, 4, 5]))
        assert_equal(y_cnt, torch.tensor([3, 2, 1, 2, 1, 1]))


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32,
                                   torch.int64])
def test_topk_integral(dtype: torch.dtype) -> None:
    info = torch.iinfo(dtype)
    a = torch.randint(info.min, info.max, size=(10,), dtype=dtype)
    sort_topk = a.sort()[0][-5:].flip(0)
    topk = a.topk(5)
    assert_equal(sort_topk, topk[0])
    assert_equal(sort_topk, a[topk[1]])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_topk_nonfinite(dtype: torch.dtype) -> None:
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([nan, inf, 1e4, 0, -1e4, -inf], dtype=dtype)
    val, idx = x.topk(4)
    assert_equal(val, torch.tensor([nan, inf, 1e4, 0], dtype=dtype))
    assert idx.tolist() == [0, 1, 2, 3]
    val, idx = x.topk(4, largest=False)
    assert_equal(val, torch.tensor([-inf, -1e4, 0, 1e4], dtype=dtype))
    assert idx.tolist() == [5, 4, 3, 2]


def test_topk_4d() -> None:
    x = torch.ones(2, 3072, 2, 2)
    x[:, 1, :, :] *= 2.
    x[:, 10, :, :] *= 1.5
    val, ind = torch.topk(x, k=2, dim=1)
    expected_ind = torch.ones(2, 2, 2, 2, dtype=torch.long)
    expected_ind[:, 1, :, :] = 10
    expected_val = torch.ones(2, 2, 2, 2)
    expected_val[:, 0, :, :] *= 2.
    expected_val[:, 1, :, :] *= 1.5
    assert_equal(val, expected_val, atol=0, rtol=0)
    assert_equal(ind, expected_ind, atol=0, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32,
                                   torch.uint8])
def test_topk_zero(dtype: torch.dtype) -> None:
    val, idx = torch.topk(torch.rand(2, 2).to(dtype=dtype), k=0, largest=False)
    assert val.size() == torch.Size([2, 0])
    assert idx.size() == torch.Size([2, 0])


def _unique_scalar_empty(dtype: torch.dtype, f: Any) -> None:
    u, inv, cnt = f(torch.tensor(0, dtype=dtype), return_inverse=True, return_counts=True)
    assert_equal(u, torch.tensor([0], dtype=dtype))
    assert_equal(inv, torch.tensor(0))
    assert_equal(cnt, torch.tensor([1]))
    u, inv, cnt = f(torch.zeros((0, 0, 3), dtype=dtype), return_inverse=True, return_counts=True)
    assert_equal(u, torch.tensor([], dtype=dtype))
    assert_equal(inv, torch.empty((0, 0, 3), dtype=torch.long))
    assert_equal(cnt, torch.tensor([], dtype=torch.long))


def _as_tuple(x: Any) -> tuple[Any, ...]:
    return (x,) if isinstance(x, torch.Tensor) else tuple(x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32,
                                   torch.uint8, torch.bool])
def test_unique(dtype: torch.dtype) -> None:
    if dtype is torch.bool:
        x = torch.tensor([True, False, False, False, True, False, True, False])
        u, inv, cnt = (torch.tensor([False, True]), torch.tensor([1, 0, 0, 0, 1, 0, 1, 0]),
                       torch.tensor([5, 3]))
    else:
        x = torch.tensor([1, 2, 3, 2, 8, 5, 2, 3], dtype=dtype)
        u, inv, cnt = (torch.tensor([1, 2, 3, 5, 8], dtype=dtype),
                       torch.tensor([0, 1, 2, 1, 4, 3, 1, 2]), torch.tensor([1, 3, 2, 1, 1]))
    sorted_fns = [lambda x, **kw: torch.unique(x, sorted=True, **kw),
                  lambda x, **kw: x.unique(sorted=True, **kw)]
    for f in sorted_fns:
        for ri in (True, False):
            for rc in (True, False):
                ret = _as_tuple(f(x, return_inverse=ri, return_counts=rc))
                assert len(ret) == 1 + int(ri) + int(rc)
                assert_equal(ret[0], u)
                if ri:
                    assert_equal(ret[1], inv)
                if rc:
                    assert_equal(ret[1 + int(ri)], cnt)
                yu, yi, yc = f(x.view(2, 2, 2), return_inverse=True, return_counts=True)
                assert_equal(yu, u)
                assert_equal(yi, inv.view(2, 2, 2))
                assert_equal(yc, cnt)
        _unique_scalar_empty(dtype, f)
    unsorted_fns = [lambda x, **kw: torch.unique(x, sorted=False, **kw),
                    lambda x, **kw: x.unique(sorted=False, **kw)]
    for f in unsorted_fns:
        _unique_scalar_empty(dtype, f)
        for ri in (True, False):
            for rc in (True, False):
                ret = _as_tuple(f(x, return_inverse=ri, return_counts=rc))
                xs, us = x.tolist(), ret[0].tolist()
                assert sorted(us) == u.tolist()
                if ri:
                    assert all(xs[i] == us[j] for i, j in enumerate(ret[1].tolist()))
                if rc:
                    assert [xs.count(v) for v in us] == ret[1 + int(ri)].tolist()
