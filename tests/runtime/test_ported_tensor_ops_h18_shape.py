"""PyTorch's test/test_shape_ops.py, ported by hand for device 'cpu' and the
float32/float64/int64/bool dtypes with ``import runtime as torch`` (helpers and the list of
what is left out in tests/runtime/test_ported_tensor_ops_h18.py).

Left out here: the quantized halves of test_flip, the channels_last inputs of test_flip,
test_complex_rot90 and the cdouble dtypes (complex), test_flip_large_tensor (CUDA, 17 GB),
test_flip_unsupported_dtype (quantized), the torch.jit half of test_nonzero_astuple_out,
test_sparse_dense_dim (sparse), test_unfold_backward_errors (torch.ops.aten), and
``torch.Storage(list)`` in test_tolist.
"""

from __future__ import annotations

import random
import warnings
from itertools import chain, combinations, permutations, product
from typing import Any

import numpy as np
import pytest

import runtime as torch
from tests.runtime.test_ported_tensor_ops_h18 import ALL, assert_equal, make_tensor

# PyTorch's own tests write into outs of another shape, and get its resize warning
pytestmark = pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")


def _generate_input(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    if shape == ():
        return torch.tensor((), dtype=dtype)
    if dtype.is_floating_point:
        x = torch.randn(*shape, dtype=dtype) * random.randint(30, 100)
        x[torch.randn(*shape) > 0.5] = 0
        return x
    if dtype == torch.bool:
        x = torch.zeros(shape, dtype=dtype)
        x[torch.randn(*shape) > 0.5] = True
        return x
    return torch.randint(15, 100, shape, dtype=dtype)


def _rand_shape(dim: int, lo: int, hi: int) -> tuple[int, ...]:
    return tuple(random.randint(lo, hi) for _ in range(dim))


def test_unbind() -> None:
    x = torch.rand(2, 3, 4, 5)
    for dim in range(4):
        res, res2 = torch.unbind(x, dim), x.unbind(dim)
        assert x.size(dim) == len(res) == len(res2)
        for i in range(dim):
            assert_equal(x.select(dim, i), res[i])
            assert_equal(x.select(dim, i), res2[i])


def test_tolist() -> None:
    assert torch.tensor([]).tolist() == []
    assert torch.tensor([1.0, 2.0, 3.0]).tolist() == [1.0, 2.0, 3.0]
    assert torch.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    t3 = torch.tensor([[[1, 2], [3, 4]], [[5, 6], [7, 8]]])
    nc = t3.select(1, 1)
    assert not nc.is_contiguous()
    assert nc.tolist() == [[3, 4], [7, 8]]


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32])
@pytest.mark.parametrize("fn", ["movedim", "moveaxis"])
def test_movedim_invalid(dtype: torch.dtype, fn: str) -> None:
    x = _generate_input(_rand_shape(4, 5, 10), dtype)
    f = getattr(torch, fn)
    with pytest.raises(IndexError, match="Dimension out of range"):
        f(x, 5, 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        f(x, 0, 5)
    with pytest.raises(RuntimeError, match="movedim: Invalid source or destination dims:"):
        f(x, (1, 0), (0,))
    for src, dst in (((0, 0), (0, 1)), ((0, 1, 0), (0, 1, 2))):
        with pytest.raises(RuntimeError, match="movedim: repeated dim in `source`"):
            f(x, src, dst)
    for src, dst in (((0, 1), (1, 1)), ((0, 1, 2), (1, 0, 1))):
        with pytest.raises(RuntimeError, match="movedim: repeated dim in `destination`"):
            f(x, src, dst)


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32])
@pytest.mark.parametrize("fn", ["movedim", "moveaxis"])
def test_movedim(dtype: torch.dtype, fn: str) -> None:
    f = getattr(torch, fn)
    for nd in range(5):
        x = _generate_input(_rand_shape(nd, 2, 4), dtype)
        for src, dst in permutations(range(nd), r=2):
            for s, d in ((src, dst), (src - nd, dst), (src, dst - nd)):
                assert_equal(f(x, source=s, destination=d), np.moveaxis(x.numpy(), s, d))
        for r in range(1, nd + 1):
            for src_seq in permutations(range(nd), r=r):
                dst_seq = tuple(random.sample(range(nd), len(src_seq)))
                neg = tuple(s - nd if i == 0 else s for i, s in enumerate(src_seq))
                for s in (src_seq, neg):
                    assert_equal(f(x, source=s, destination=dst_seq),
                                 np.moveaxis(x.numpy(), s, dst_seq))
    x = torch.randn(2, 3, 5, 7, 11)
    for s, d in (((0, 1), (0, 1)), (1, 1), ((), ())):
        assert_equal(f(x, source=s, destination=d), np.moveaxis(x.numpy(), s, d))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bool])
def test_diag(dtype: torch.dtype) -> None:
    x = torch.rand(100, 100) >= 0.5 if dtype == torch.bool else torch.rand(100, 100, dtype=dtype)
    res2 = torch.tensor((), dtype=dtype)
    torch.diag(x, out=res2)
    assert_equal(torch.diag(x), res2)


def test_diagonal() -> None:
    x = torch.randn((100, 100))
    assert_equal(torch.diagonal(x), torch.diag(x))
    assert_equal(torch.diagonal(x, 17), torch.diag(x, 17))


def test_diagonal_multidim() -> None:
    x = torch.randn(10, 11, 12, 13)
    xn = x.numpy()
    for args in [(2, 2, 3), (2,), (-2, 1, 2), (0, -2, -1)]:
        assert_equal(torch.diagonal(x, *args), xn.diagonal(*args))
    xp = x.permute(1, 2, 3, 0)
    assert_equal(torch.diagonal(xp, 0, -2, -1), xp.numpy().diagonal(0, -2, -1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32,
                                   torch.int16, torch.int8, torch.uint8])
def test_trace(dtype: torch.dtype) -> None:
    for shape in ([10, 1], [1, 10], [100, 100], [20, 100], [100, 20]):
        t = make_tensor(shape, dtype, low=0 if dtype == torch.uint8 else -9)
        want_dtype = t.sum().dtype
        np_dtype = torch.empty((), dtype=want_dtype).numpy().dtype
        assert_equal(t.trace(), torch.tensor(np.trace(t.numpy(), dtype=np_dtype)))


def _clamp_baseline(dtype: torch.dtype, min_val: Any, max_val: Any, with_nans: bool
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.rand(100).mul(50).add(-25).to(dtype)
    if with_nans:
        x[torch.randint(0, 2, x.shape, dtype=torch.bool)] = float("nan")
    return x, torch.tensor(np.clip(x.numpy(), a_min=min_val, a_max=max_val))


_CLAMP_OPS = [("clamp", True), ("clamp", False), ("clamp_", False), ("clip", True),
              ("clip", False), ("clip_", False)]


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32])
@pytest.mark.parametrize(("name", "free"), _CLAMP_OPS)
def test_clamp(dtype: torch.dtype, name: str, free: bool) -> None:
    op = getattr(torch, name) if free else getattr(torch.Tensor, name)
    for min_val, max_val in product((-10, None), (10, None)):
        if min_val is None and max_val is None:
            continue
        x, want = _clamp_baseline(dtype, min_val, max_val, False)
        assert_equal(op(x.clone(), min_val, max_val), want)
        if free:
            out = torch.empty_like(x)
            op(x, min=min_val, max=max_val, out=out)
            assert_equal(out, want)


@pytest.mark.parametrize(("name", "free"), _CLAMP_OPS)
def test_clamp_propagates_nans(name: str, free: bool) -> None:
    op = getattr(torch, name) if free else getattr(torch.Tensor, name)
    for min_val, max_val in product((-10, None), (10, None)):
        if min_val is None and max_val is None:
            continue
        x, want = _clamp_baseline(torch.float32, min_val, max_val, True)
        assert_equal(torch.isnan(op(x.clone(), min_val, max_val)), torch.isnan(want))
        if free:
            out = torch.empty_like(x)
            op(x, min_val, max_val, out=out)
            assert_equal(torch.isnan(out), torch.isnan(want))


def test_clamp_scalar_nan_bounds() -> None:
    x = torch.ones(3)
    assert torch.isnan(torch.clamp(x, None, float("nan"))).all()
    assert torch.isnan(torch.clamp(x, float("nan"), None)).all()


def test_clamp_raises_arg_errors() -> None:
    x = torch.randn(100)
    msg = "At least one of 'min' or 'max' must not be None"
    for call in (x.clamp, x.clamp_, lambda: torch.clamp(x)):
        with pytest.raises(RuntimeError, match=msg):
            call()


@pytest.mark.parametrize("dtype", ALL)
def test_flip(dtype: torch.dtype) -> None:
    def data(values: list[int]) -> torch.Tensor:
        return torch.tensor(values, dtype=dtype)

    def check(in_t: torch.Tensor, dims: Any, out_t: torch.Tensor) -> None:
        assert_equal(in_t.flip(dims), out_t)
        n = in_t.ndim
        if not isinstance(dims, tuple):
            assert_equal(in_t.flip(-n + dims), out_t)
            return
        for p in permutations(dims):
            assert_equal(in_t.flip(p), out_t)
            if p:
                assert_equal(in_t.flip((-n + p[0],) + p[1:]), out_t)

    def cases() -> Any:
        base = data([1, 2, 3, 4, 5, 6, 7, 8]).view(2, 2, 2)
        nonctg = torch.empty(2, 2, 4, dtype=dtype)[..., ::2].copy_(base)
        results = ((0, [5, 6, 7, 8, 1, 2, 3, 4]), (1, [3, 4, 1, 2, 7, 8, 5, 6]),
                   (2, [2, 1, 4, 3, 6, 5, 8, 7]), ((0, 1), [7, 8, 5, 6, 3, 4, 1, 2]),
                   ((0, 1, 2), [8, 7, 6, 5, 4, 3, 2, 1]))
        for t, (dims, out) in product((base, nonctg), results):
            yield t, dims, data(out).view(2, 2, 2)
        t = data([1, 2, 3]).view(3, 1).expand(3, 2)
        yield t, 0, data([3, 3, 2, 2, 1, 1]).view(3, 2)
        yield t, 1, t
        t = data([1, 2, 3, 4, 5, 6, 7, 8]).view(2, 2, 2).transpose(0, 1)
        yield t, (0, 1, 2), data([8, 7, 4, 3, 6, 5, 2, 1]).view(2, 2, 2)
        t = data([1, 2, 3, 4, 5, 6]).view(2, 3)
        yield t, 0, data([[4, 5, 6], [1, 2, 3]])
        yield t, 1, data([[3, 2, 1], [6, 5, 4]])
        for c in (2, 3, 8, 16):
            t = make_tensor((2, c, 32, 32), dtype)
            yield t, 3, torch.from_numpy(t.numpy()[:, :, :, ::-1].copy())
            yield t, 2, torch.from_numpy(t.numpy()[:, :, ::-1, :].copy())
            for tt in (t[..., ::2, :], t[..., ::2]):
                yield tt, 3, torch.from_numpy(tt.numpy()[:, :, :, ::-1].copy())
        t = data([])
        yield t, 0, t
        yield t, (), t
        t = make_tensor((3, 2, 1), dtype)
        yield t, (), t
        t = make_tensor((3, 0, 2), dtype)
        for i in range(t.ndim):
            yield t, i, t
        t = make_tensor((), dtype)
        yield t, 0, t
        t = make_tensor((1,), dtype)
        yield t, 0, t

    for in_t, dims, out_t in cases():
        check(in_t, dims, out_t)
    d = make_tensor([2, 3, 4], dtype)
    for dims in chain(combinations(range(3), 1), combinations(range(3), 2)):
        assert list(d.flip(dims).size()) == [2, 3, 4]


@pytest.mark.parametrize("dtype", ALL)
def test_flip_errors(dtype: torch.dtype) -> None:
    data = make_tensor((2, 2, 2), dtype)
    with pytest.raises(RuntimeError):
        data.flip(0, 1, 1)
    with pytest.raises(TypeError):
        data.flip()
    with pytest.raises(IndexError):
        data.flip(0, 1, 2, 3)
    with pytest.raises(IndexError):
        data.flip(3)


@pytest.mark.parametrize("dtype", ALL)
def test_flip_numpy(dtype: torch.dtype) -> None:
    for ndim in (3, 4):
        data = make_tensor(_rand_shape(ndim, 2, 5), dtype)
        for i in range(1, ndim + 1):
            for dims in combinations(range(ndim), i):
                assert_equal(torch.flip(data, dims=dims), np.flip(data.numpy(), axis=dims))


@pytest.mark.parametrize("dtype", [torch.int64, torch.float64])
def test_fliplr_flipud(dtype: torch.dtype) -> None:
    for fn, lo in (("fliplr", 2), ("flipud", 1)):
        for dim in range(lo, 5):
            shape = _rand_shape(dim, 2, 5)
            data = torch.randn(*shape, dtype=dtype) if dtype.is_floating_point else \
                torch.randint(0, 10, shape, dtype=dtype)
            assert_equal(getattr(torch, fn)(data), getattr(np, fn)(data.numpy()))


@pytest.mark.parametrize("dtype", [torch.int64, torch.float64])
def test_fliplr_flipud_invalid(dtype: torch.dtype) -> None:
    with pytest.raises(RuntimeError, match="Input must be >= 2-d."):
        torch.fliplr(torch.randn(42).to(dtype))
    with pytest.raises(RuntimeError, match="Input must be >= 2-d."):
        torch.fliplr(torch.tensor(42, dtype=dtype))
    with pytest.raises(RuntimeError, match="Input must be >= 1-d."):
        torch.flipud(torch.tensor(42, dtype=dtype))


def test_rot90() -> None:
    data = torch.arange(1, 5).view(2, 2)
    for k, values in ((0, [1, 2, 3, 4]), (1, [2, 4, 1, 3]), (2, [4, 3, 2, 1]), (3, [3, 1, 4, 2])):
        assert_equal(torch.tensor(values).view(2, 2), data.rot90(k, [0, 1]))
    assert_equal(data.rot90(), data.rot90(1, [0, 1]))
    assert_equal(data.rot90(3, [0, 1]), data.rot90(1, [1, 0]))
    assert_equal(data.rot90(5, [0, 1]), data.rot90(1, [0, 1]))
    assert_equal(data.rot90(3, [0, 1]), data.rot90(-1, [0, 1]))
    assert_equal(data.rot90(-5, [0, 1]), data.rot90(-1, [0, 1]))
    for dims in ([0, -3], [0, 2]):  # PyTorch 2.13: IndexError (the file's RuntimeError is older)
        with pytest.raises(IndexError, match="Dimension out of range"):
            data.rot90(1, dims)
    data = torch.arange(1, 9).view(2, 2, 2)
    assert_equal(torch.tensor([2, 4, 1, 3, 6, 8, 5, 7]).view(2, 2, 2), data.rot90(1, [1, 2]))
    assert_equal(data.rot90(1, [1, -1]), data.rot90(1, [1, 2]))
    with pytest.raises(IndexError, match="Dimension out of range"):
        data.rot90(1, [0, 3])
    for dims in ([1, 1], [0, 1, 2], [0]):
        with pytest.raises(RuntimeError):
            data.rot90(1, dims)


def test_nonzero_no_warning() -> None:
    t = torch.randn((2, 2))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        torch.nonzero(t)
        t.nonzero()
    assert not w


@pytest.mark.parametrize("dtype", ALL)
def test_nonzero(dtype: torch.dtype) -> None:
    for shape in ((12,), (12, 1), (1, 12), (6, 2), (3, 2, 2), (5, 5, 5)):
        tensor = torch.randint(2, shape, dtype=dtype)
        dst1 = torch.nonzero(tensor, as_tuple=False)
        dst2 = tensor.nonzero(as_tuple=False)
        dst3 = torch.empty([], dtype=torch.long)
        torch.nonzero(tensor, out=dst3)
        with pytest.raises(RuntimeError, match="^nonzero: Expected out tensor to have scalar type "
                                               "Long but got scalar typeFloat$"):
            torch.nonzero(tensor, out=torch.empty([], dtype=torch.float))
        want = torch.from_numpy(np.stack(tensor.numpy().nonzero())).t()
        for got in (dst1, dst2, dst3, torch.stack(torch.nonzero(tensor, as_tuple=True)).t(),
                    torch.stack(tensor.nonzero(as_tuple=True)).t()):
            assert_equal(got, want, atol=0, rtol=0)


def test_nonzero_astuple_out() -> None:
    t = torch.randn((3, 3, 3))
    out = torch.empty_like(t, dtype=torch.long)
    with pytest.raises(RuntimeError, match="nonzero does not support the out kwarg when as_tuple "
                                           "is True"):
        torch.nonzero(t, as_tuple=True, out=out)
    assert_equal(torch.nonzero(t, as_tuple=False, out=out), torch.nonzero(t, out=out))


def test_nonzero_discontiguous() -> None:
    tensor = torch.randint(2, (4, 4))
    tensor_nc = torch.empty(4, 8)[:, ::2].copy_(tensor)
    dst1 = tensor.nonzero(as_tuple=False)
    assert_equal(dst1, tensor_nc.nonzero(as_tuple=False), atol=0, rtol=0)
    dst3 = torch.empty_like(dst1)
    ptr = dst3.data_ptr()
    torch.nonzero(tensor, out=dst3)
    assert ptr == dst3.data_ptr()
    assert_equal(dst1, dst3, atol=0, rtol=0)
    dst4 = torch.empty(dst1.size(0), dst1.size(1) * 2, dtype=torch.long)[:, ::2]
    ptr, strides = dst4.data_ptr(), dst4.stride()
    torch.nonzero(tensor, out=dst4)
    assert ptr == dst4.data_ptr()
    assert_equal(dst1, dst4, atol=0, rtol=0)
    assert strides == dst4.stride()


def test_nonzero_non_diff() -> None:
    assert not torch.randn(10, requires_grad=True).nonzero().requires_grad


@pytest.mark.parametrize("dtype", ALL)
def test_unfold_all_dtypes(dtype: torch.dtype) -> None:
    assert torch.empty((0, 1, 3, 0), dtype=dtype).unfold(2, 3, 2).shape == (0, 1, 1, 0, 3)


def test_unfold_scalars() -> None:
    x = torch.tensor(0.5)
    assert_equal(torch.empty(0), x.unfold(0, 0, 1))
    assert_equal(torch.empty(0), x.unfold(0, 0, 2))
    assert_equal(torch.tensor([0.5]), x.unfold(0, 1, 1))


def test_unfold_errors() -> None:
    x = torch.arange(1.0, 8)
    with pytest.raises(RuntimeError, match="size is -1 but must be >= 0"):
        x.unfold(0, -1, 1)
    with pytest.raises(RuntimeError, match="step is -1 but must be > 0"):
        x.unfold(0, 1, -1)
