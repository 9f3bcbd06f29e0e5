"""PyTorch's test/test_tensor_creation_ops.py, ported by hand for device 'cpu' and the
float32/float64/int64/bool dtypes with ``import runtime as torch`` (helpers and the list of
what is left out in tests/runtime/test_ported_tensor_ops_h18.py).

Left out here: complex dtypes (vander's and roll's complex cases), chalf, dlpack, and
test_like_fn_stride_proparation_vs_tensoriterator_unary_op (the *_like functions here return
contiguous strides for a permuted input, where PyTorch's preserve_format keeps the input's: a
known gap).
"""

from __future__ import annotations

import math
from itertools import product
from typing import Any

import numpy as np
import pytest

import runtime as torch
from tests.runtime.test_ported_tensor_ops_h18 import assert_equal


def test_diag_embed() -> None:
    x = torch.arange(3 * 4, dtype=torch.float).view(3, 4)
    assert_equal(torch.diag_embed(x), torch.stack([torch.diag(r) for r in x], 0))
    assert_equal(torch.diag_embed(x, offset=1, dim1=0, dim2=2),
                 torch.stack([torch.diag(r, 1) for r in x], 1))


def test_cat_mem_overlap() -> None:
    x = torch.rand((1, 3)).expand((6, 3))
    y = torch.rand((3, 3))
    with pytest.raises(RuntimeError, match="unsupported operation"):
        torch.cat([y, y], out=x)


def test_vander() -> None:
    x = torch.tensor([1, 2, 3, 5])
    assert torch.vander(torch.tensor([]), 0).shape == (0, 0)
    with pytest.raises(RuntimeError, match="N must be non-negative."):
        torch.vander(x, N=-1)
    with pytest.raises(RuntimeError, match="x must be a one-dimensional tensor."):
        torch.vander(torch.stack((x, x)))


_NP = {torch.bool: np.bool_, torch.uint8: np.uint8, torch.int8: np.int8, torch.short: np.int16,
       torch.int: np.int32, torch.long: np.int64, torch.float: np.float32,
       torch.double: np.float64}


@pytest.mark.parametrize("dtype", list(_NP))
def test_vander_types(dtype: torch.dtype) -> None:
    if dtype is torch.uint8:
        xs = [[1, 2, 3, 5], [0, 1 / 3, 1, math.pi, 3 / 7]]
    elif dtype is torch.bool:
        xs = [[True, True, True, True], [False, True, True, True, True]]
    else:
        xs = [[1, 2, 3, 5], [-math.pi, 0, 1 / 3, 1, math.pi, 3 / 7]]
    for x, n, inc in product(xs, [None, 0, 1, 3], [False, True]):
        pt_x = torch.tensor(x, dtype=dtype)
        np_x = np.array(x, dtype=_NP[dtype]) if dtype is not torch.bool else \
            np.array(x).astype(np.int64)
        got = torch.vander(pt_x, increasing=inc) if n is None else torch.vander(pt_x, n, inc)
        assert_equal(got, torch.from_numpy(np.vander(np_x, n, inc)), atol=1e-3, rtol=0,
                     exact_dtype=False)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool,
                                   torch.float16, torch.bfloat16, torch.uint8, torch.int8])
def test_cat_and_fill_all_dtypes(dtype: torch.dtype) -> None:
    x = torch.tensor([[1, 2], [3, 4]], dtype=dtype)
    assert_equal(torch.cat((x, x), 0), torch.tensor([[1, 2], [3, 4], [1, 2], [3, 4]], dtype=dtype))
    assert_equal(torch.cat((x, x), 1), torch.tensor([[1, 2, 1, 2], [3, 4, 3, 4]], dtype=dtype))
    for t in (torch.tensor((10, 10), dtype=dtype), torch.empty(10000, dtype=dtype)):
        bound = 100 if dtype in (torch.uint8, torch.int8) else 2000
        for n in range(-bound, bound, bound // 10):
            if dtype is torch.uint8 and n < 0:
                continue  # (PyTorch 2.13 refuses a negative fill of uint8: overflow)
            t.fill_(n)
            assert_equal(t, torch.tensor([n] * t.numel(), dtype=dtype))


def test_roll() -> None:
    numbers = torch.arange(1, 9)
    assert_equal(numbers.roll(1, 0), torch.tensor([8, 1, 2, 3, 4, 5, 6, 7]))
    assert_equal(numbers.roll(-2, 0), torch.tensor([3, 4, 5, 6, 7, 8, 1, 2]))
    data = numbers.view(2, 2, 2)
    assert_equal(data.roll(1, 0), torch.tensor([5, 6, 7, 8, 1, 2, 3, 4]).view(2, 2, 2))
    data = data.view(2, 4)
    assert_equal(data, data.roll(2, 0).roll(4, 1))
    assert_equal(data, data.roll(-20, 0).roll(-40, 1))
    strided = numbers.view(2, 4).transpose(0, 1)
    assert not strided.is_contiguous()
    assert_equal(strided.roll(1, 0), torch.tensor([4, 8, 1, 5, 2, 6, 3, 7]).view(4, 2))
    expected = numbers.roll(1, 0).view(2, 4)
    assert_equal(expected, data.roll(1))
    assert_equal(expected, data.roll(1, dims=None))
    assert_equal(data.roll(shifts=(2, -1), dims=(1, 0)), torch.tensor([[7, 8, 5, 6], [3, 4, 1, 2]]))
    for shifts, dims in (((), ()), ((), 1)):
        with pytest.raises(RuntimeError, match="required"):
            data.roll(shifts=shifts, dims=dims)
    for shifts, dims in (((1, 2), (1,)), ((1,), (1, 2))):
        with pytest.raises(RuntimeError, match="align"):
            data.roll(shifts=shifts, dims=dims)
    t = torch.zeros(6, dtype=torch.bool)
    t[0] = True
    t[3] = True
    assert_equal(torch.tensor([False, True, False, False, True, False]), t.roll(1, 0))


def _tri_mask(shape: tuple[int, ...], diagonal: int, upper: bool) -> torch.Tensor:
    rows, cols = shape[-2:]
    i = np.arange(rows)[:, None]
    j = np.arange(cols)[None, :]
    cond = (j - i < diagonal) if upper else (j - i > diagonal)
    return torch.from_numpy(np.broadcast_to(cond, shape).copy())


_TRI_SHAPES = [(3, 3), (5, 3, 3), (7, 3), (5, 7, 3), (3, 7), (5, 3, 7), (3, 0), (0, 3, 3),
               (3, 3, 0, 0), (3, 1), (5, 3, 1), (1, 3), (5, 1, 3), (1, 3, 3, 3)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool,
                                   torch.float16])
def test_triu_tril(dtype: torch.dtype) -> None:
    for shape, diagonal in product(_TRI_SHAPES, [-2, -1, 0, 1, 2]):
        x = torch.empty(*shape, dtype=dtype).fill_(2)
        for upper in (True, False):
            fn = torch.triu if upper else torch.tril
            res1 = fn(x, diagonal=diagonal)
            res2 = torch.empty(0, dtype=dtype)
            fn(x, diagonal=diagonal, out=res2)
            expected = torch.where(_tri_mask(shape, diagonal, upper), torch.tensor(0).type_as(x), x)
            assert_equal(res1, res2, atol=0, rtol=0)
            assert_equal(expected, res1, atol=0, rtol=0)
            if 0 not in shape:
                for s in range(-len(shape), -1):
                    x_nc = x.clone().transpose(s, s + 1)
                    exp_nc = torch.where(_tri_mask(tuple(x_nc.shape), diagonal, upper),
                                         torch.tensor(0).type_as(x), x_nc)
                    assert_equal(fn(x_nc, diagonal), exp_nc, atol=0, rtol=0)
                    was_contiguous = x_nc.is_contiguous()
                    inplace = x_nc.triu_(diagonal) if upper else x_nc.tril_(diagonal)
                    assert_equal(inplace, exp_nc, atol=0, rtol=0)
                    assert x_nc.is_contiguous() == was_contiguous
                expanded = x.clone().expand((x.size(0),) + tuple(x.size()))
                out = fn(expanded, diagonal)
                assert_equal(out, expected.expand((x.size(0),) + tuple(x.size())))
            np_fn = np.triu if upper else np.tril
            assert_equal(res1, np_fn(x.float().numpy(), diagonal).astype(res1.numpy().dtype))


def test_triu_tril_bfloat16() -> None:
    for fn in (torch.tril, torch.triu):
        inp = torch.randn(3, 3).bfloat16().requires_grad_(True)
        inp2 = inp.detach().clone().float().requires_grad_(True)
        out = fn(inp)
        out.sum().backward()
        out2 = fn(inp2)
        out2.sum().backward()
        assert out.dtype == torch.bfloat16
        assert inp.grad.dtype == torch.bfloat16
        assert_equal(out, out2.bfloat16())
        assert_equal(inp.grad, inp2.grad.bfloat16(), atol=0.01, rtol=0)


def test_vander_integer_result_is_int64() -> None:
    """(Beside test_vander_types.) PyTorch promotes an integer or bool x with int64: int8
    powers past 127 do not wrap."""
    for dtype in (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32):
        assert torch.vander(torch.tensor([1, 0], dtype=dtype)).dtype == torch.int64
    assert torch.vander(torch.tensor([-3, 2], dtype=torch.int8), 6)[0, 0].item() == -243
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        assert torch.vander(torch.tensor([1, 2], dtype=dtype)).dtype == dtype


def test_roll_empty_dims_flattens() -> None:
    data = torch.arange(1, 9).view(2, 4)
    for shifts in (1, (1,)):
        assert_equal(data.roll(shifts=shifts, dims=()), data.roll(1))


def test_diagflat() -> None:
    x = torch.randn((100,))
    assert_equal(torch.diagflat(x), torch.diag(x))
    assert_equal(torch.diagflat(x, 17), torch.diag(x, 17))
    x = torch.randn((2, 3, 4))
    assert_equal(torch.diagflat(x), torch.diag(x.contiguous().view(-1)))
    x = torch.randn((2, 3, 4)).transpose(2, 0)
    assert not x.is_contiguous()
    assert_equal(torch.diagflat(x), torch.diag(x.contiguous().view(-1)))


def test_block_diag() -> None:
    def workaround(*arrs: torch.Tensor) -> torch.Tensor:
        expanded = [a if a.dim() == 2 else a.expand(1, a.size(0)) if a.dim() == 1
                    else a.expand(1, 1) for a in arrs]
        shapes = torch.tensor([list(a.shape) for a in expanded])
        out = torch.zeros(torch.sum(shapes, dim=0).tolist(), dtype=expanded[0].dtype)
        r = c = 0
        for a, (rr, cc) in zip(expanded, shapes.tolist(), strict=True):
            out[r:r + rr, c:c + cc] = a
            r, c = r + rr, c + cc
        return out

    tensors = [torch.rand((2, 2)), torch.rand((2, 3)), torch.rand(10), torch.rand((8, 1)),
               torch.rand(1)[0]]
    assert_equal(torch.block_diag(*tensors), workaround(*tensors))
    t = torch.rand(1)[0]
    assert_equal(torch.block_diag(t), t.expand(1, 1))
    t = torch.rand(10)
    assert_equal(torch.block_diag(t), t.expand(1, t.size(0)))
    result = torch.block_diag()
    assert_equal(result, torch.empty(1, 0))
    assert result.device.type == "cpu"
    dtypes = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float32,
              torch.float64]
    for dt1, dt2 in product(dtypes, dtypes):
        a, b = torch.tensor(1, dtype=dt1), torch.tensor(2, dtype=dt2)
        assert_equal(torch.block_diag(a, b),
                     torch.tensor([[1, 0], [0, 2]], dtype=torch.result_type(a, b)))
    with pytest.raises(RuntimeError, match="torch.block_diag: Input tensors must have 2 or fewer "
                                           "dimensions. Input 1 has 3 dimensions"):
        torch.block_diag(torch.tensor(5), torch.tensor([[[6]]]))
    with pytest.raises(RuntimeError, match="torch.block_diag: Input tensors must have 2 or fewer "
                                           "dimensions. Input 0 has 4 dimensions"):
        torch.block_diag(torch.tensor([[[[6]]]]))


def test_block_diag_scipy() -> None:
    scipy_linalg = pytest.importorskip("scipy.linalg")
    cases = [([1, [2], [], [3, 4, 5], [[], []], [[6], [7.3]]], torch.float32),
             ([[[1, 2], [3, 4]], [1]], torch.int64), ([], torch.float32)]
    for arrays, torch_type in cases:
        result = torch.block_diag(*[torch.tensor(a) for a in arrays])
        assert result.dtype == torch_type
        assert_equal(result, torch.tensor(scipy_linalg.block_diag(*arrays)).to(torch_type))


def test_cat_empty_legacy() -> None:
    x = torch.randn((4, 3, 32, 32))
    empty = torch.randn((0,))
    assert_equal(torch.cat([x, empty], dim=1), torch.cat([empty, x], dim=1))
    assert_equal(torch.cat([empty, empty], dim=1), empty)
    with pytest.raises(ValueError, match="non-empty list of Tensors"):  # PyTorch 2.13's type
        torch.cat([], dim=1)
    for dim in (5, -3):  # all legacy empties: no dim check (PyTorch's legacy_cat_wrap_dim)
        assert torch.cat([empty, empty], dim=dim).shape == (0,)


def test_cat_empty() -> None:
    x = torch.randn((4, 3, 32, 32))
    empty = torch.randn((4, 0, 32, 32))
    assert_equal(torch.cat([x, empty], dim=1), torch.cat([empty, x], dim=1))
    assert_equal(torch.cat([empty, empty], dim=1), empty)
    for empty in (torch.randn((4, 0, 31, 32)), torch.randn((4, 0))):
        with pytest.raises(RuntimeError):
            torch.cat([x, empty], dim=1)
        with pytest.raises(RuntimeError):
            torch.cat([empty, x], dim=1)


def test_cat_out() -> None:
    x = torch.zeros((0))
    y = torch.randn((4, 6))
    text = ("unsupported operation: some elements of the input tensor and the written-to tensor "
            "refer to a single memory location.")
    with pytest.raises(RuntimeError, match=text):
        torch.cat([x, y], dim=0, out=x)
    with pytest.raises(RuntimeError, match=text):
        torch.cat([x, y], dim=0, out=y)
    z = torch.zeros((4, 6))
    with pytest.raises(RuntimeError, match=text):
        torch.cat([y, z], out=z[:2, :])
    w = y.view(-1).clone()
    a = torch.cat([w[:2], w[4:6]])
    b = torch.cat([w[:2], w[4:6]], out=w[6:10])
    assert_equal(a, b)
    assert_equal(w[:6], y.view(-1)[:6])
    for dim in (0, 1):
        x = torch.zeros((10, 5, 2))
        length = 3
        y = x.narrow(dim, 0, x.shape[dim] - length)
        val = torch.full_like(y[0], 3.)
        assert y.is_contiguous() == (dim == 0)
        torch.cat((val[None],) * y.shape[0], dim=0, out=y)
        expected_y = torch.cat((val[None],) * y.shape[0], dim=0)
        expected_x = torch.zeros((10, 5, 2))
        if dim == 0:
            expected_x[:x.shape[dim] - length, :, :] = expected_y
        else:
            expected_x[:, :x.shape[dim] - length, :] = expected_y
        assert_equal(y, expected_y)
        assert_equal(x, expected_x)


def test_cat_split_chunk_roundtrip() -> None:
    for dim in range(-3, 3):
        pos = dim if dim >= 0 else 3 + dim
        x, y, z = (torch.rand(n, 10, 10).transpose(0, pos) for n in (13, 17, 19))
        res = torch.cat((x, y, z), dim)
        assert_equal(res.narrow(pos, 0, 13), x, atol=0, rtol=0)
        assert_equal(res.narrow(pos, 13, 17), y, atol=0, rtol=0)
        assert_equal(res.narrow(pos, 30, 19), z, atol=0, rtol=0)
    x = torch.randn(20, 10, 10)
    assert_equal(torch.cat(torch.split(x, 7)), x)
    assert_equal(torch.cat(torch.chunk(x, 7)), x)
    assert torch.cat([x, torch.randn(1, 10, 10)]).size() == (21, 10, 10)


def test_rounding_half_to_even() -> None:
    a = [-5.8, -3.5, -2.3, -1.5, -0.5, 0.5, 1.5, 2.3, 3.5, 5.8]
    assert_equal(torch.tensor(a).round(),
                 torch.tensor([-6., -4., -2., -2., -0., 0., 2., 2., 4., 6.]))


def _hvd_split(torch_fn: Any, np_fn: Any, name: str, inputs: Any, dtype: torch.dtype,
               dim: int) -> None:
    for shape, arg in inputs:
        direction = dim - (len(shape) == 1 and dim == 1)
        bound = dim + 2 * (dim == 0) + (dim == 2)
        error = len(shape) < bound or (not isinstance(arg, list) and shape[direction] % arg != 0)
        t = torch.randn(shape).to(dtype) if shape else torch.tensor(1.0).to(dtype)
        if not error:
            got, want = torch_fn(t, arg), np_fn(t.numpy(), arg)
            assert len(got) == len(want)
            for g, w in zip(got, want, strict=True):
                assert_equal(g, w)
            continue
        text = f"{name} requires a tensor with at least " if len(shape) < bound else \
            f"{name} attempted to split along dimension "
        with pytest.raises(RuntimeError, match=text):
            torch_fn(t, arg)


@pytest.mark.parametrize("dtype", [torch.long, torch.float32])
def test_hsplit(dtype: torch.dtype) -> None:
    inputs = (((), 3), ((), [2, 4, 6]), ((6,), 2), ((6,), 4), ((6,), [2, 5]), ((6,), [7, 9]),
              ((3, 8), 4), ((3, 8), 5), ((3, 8), [1, 5]), ((3, 8), [3, 8]), ((5, 5, 5), 2),
              ((5, 5, 5), [1, 4]), ((5, 0, 5), 3), ((5, 5, 0), [2, 6]))
    _hvd_split(torch.hsplit, np.hsplit, "torch.hsplit", inputs, dtype, 1)


@pytest.mark.parametrize("dtype", [torch.long, torch.float32])
def test_vsplit(dtype: torch.dtype) -> None:
    inputs = (((6,), 2), ((6,), 4), ((6, 5), 2), ((6, 5), 4), ((6, 5), [1, 2, 3]),
              ((6, 5), [1, 5, 9]), ((6, 5, 5), 2), ((6, 0, 5), 2), ((5, 0, 5), [1, 5]))
    _hvd_split(torch.vsplit, np.vsplit, "torch.vsplit", inputs, dtype, 0)


@pytest.mark.parametrize("dtype", [torch.long, torch.float32])
def test_dsplit(dtype: torch.dtype) -> None:
    inputs = (((6,), 4), ((6, 6), 3), ((5, 5, 6), 2), ((5, 5, 6), 4), ((5, 5, 6), [1, 2, 3]),
              ((5, 5, 6), [1, 5, 9]), ((5, 5, 0), 2), ((5, 0, 6), 4), ((5, 0, 6), [1, 2, 3]))
    _hvd_split(torch.dsplit, np.dsplit, "torch.dsplit", inputs, dtype, 2)


def _special_stacks(dim: int, at_least: int, torch_fn: Any, np_fn: Any,
                    dtype: torch.dtype) -> None:
    import random

    t = torch.randn(10)
    with pytest.raises(TypeError, match="must be tuple of Tensors, not Tensor"):
        torch_fn(t)
    inputs = [torch.tensor(random.uniform(0, 10)).to(dtype) for _ in range(random.randint(1, 5))]
    assert_equal(torch_fn(inputs), np_fn([i.numpy() for i in inputs]))
    for ndims in range(1, 5):
        base = [random.randint(1, 5) for _ in range(ndims)]
        for i in range(ndims):
            shape = list(base)
            tensors = []
            for _ in range(random.randint(1, 5)):
                shape[i] = random.randint(1, 5)
                tensors.append((torch.rand(tuple(shape)) * 50).to(dtype))
            valid = all(not ((ndims < at_least or d != dim)
                             and tensors[k].size()[d] != tensors[k + 1].size()[d])
                        for k in range(len(tensors) - 1) for d in range(ndims))
            if valid or (torch_fn is torch.hstack and ndims == 1):
                assert_equal(torch_fn(tensors), np_fn([x.numpy() for x in tensors]))
            else:
                with pytest.raises(RuntimeError, match="Sizes of tensors must match except in "
                                                       "dimension"):
                    torch_fn(tensors)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_hstack_column_stack(dtype: torch.dtype) -> None:
    for torch_op, np_op in ((torch.hstack, np.hstack), (torch.column_stack, np.column_stack)):
        _special_stacks(1, 1, torch_op, np_op, dtype)
    one = torch.arange(0, 10).to(dtype=dtype)
    two = torch.arange(0, 100).to(dtype=dtype).reshape(10, 10)
    inputs = two, one, two, one
    assert_equal(torch.column_stack(inputs), np.column_stack([i.numpy() for i in inputs]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_vstack_row_stack(dtype: torch.dtype) -> None:
    import random

    with pytest.raises(TypeError, match="^row_stack\\(\\): argument 'tensors'"):
        torch.row_stack(torch.randn(3))
    with pytest.raises(TypeError, match="^stack\\(\\): argument 'tensors'"):
        torch.stack(torch.randn(3))
    for torch_op, np_op in ((torch.vstack, np.vstack), (torch.row_stack, np.vstack)):
        _special_stacks(0, 2, torch_op, np_op, dtype)
        for _ in range(5):
            n = random.randint(1, 10)
            pair = [(torch.rand(n) * 9).to(dtype), (torch.rand(1, n) * 9).to(dtype)]
            assert_equal(torch_op(pair), np_op([p.numpy() for p in pair]))
