"""PyTorch's own tensor-op tests (test/test_view_ops.py, test_indexing.py, test_reductions.py,
test_shape_ops.py, test_sort_and_select.py, test_binary_ufuncs.py, test_unary_ufuncs.py,
test_type_promotion.py, test_tensor_creation_ops.py), ported by hand for device 'cpu' and the
float32/float64/int64/bool dtypes with ``import runtime as torch``.

Left out, as outside this project's scope: CUDA/meta/lazy devices, sparse, complex (view_as_real,
view_as_complex, conj/imag views, set_real_imag), quantized (the quantized halves of ravel/flatten),
named tensors, torch.jit/compile, memory-format (channels_last) specifics, float8, nested tensors,
and out= variants of ops that have no out= here (view_copy's out=, split_copy's out=).
Not ported: test_view_ops' test_contiguous (``x.set_(storage, offset, size, stride)``, which
the runtime refuses with a NotImplementedError: its storages are arrays without offsets).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

import runtime as torch


def _np(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def assert_equal(actual: Any, expected: Any, *, exact_dtype: bool = True,
                 rtol: float | None = None, atol: float | None = None) -> None:
    """PyTorch's ``TestCase.assertEqual`` for tensors: same shape, same dtype (when both are
    tensors and ``exact_dtype``), values equal within the dtype's default tolerance, nan == nan."""
    if isinstance(actual, torch.Tensor) and isinstance(expected, torch.Tensor) and exact_dtype:
        assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    a, e = _np(actual), _np(expected)
    if isinstance(actual, torch.Tensor) or isinstance(expected, torch.Tensor):
        assert a.shape == e.shape or a.size == e.size == 1 and (a.ndim == 0 or e.ndim == 0), (
            a.shape, e.shape)
    if any(d.kind in "fc" or d.name == "bfloat16" for d in (a.dtype, e.dtype)):
        tol = 1e-7 if np.float64 in (a.dtype, e.dtype) else 1.3e-6
        np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64),
                                   rtol=tol if rtol is None else rtol,
                                   atol=1e-5 if atol is None else atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(a, e)


def make_tensor(shape: Any, dtype: torch.dtype, low: float = -9, high: float = 9,
                requires_grad: bool = False) -> torch.Tensor:
    """``torch.testing.make_tensor``'s values for the dtypes ported here."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if dtype == torch.bool:
        t = torch.randint(0, 2, shape).to(torch.bool)
    elif dtype.is_floating_point:
        t = torch.rand(shape, dtype=dtype) * (high - low) + low
    else:
        t = torch.randint(int(low), int(high), shape, dtype=dtype)
    return t.requires_grad_(requires_grad)


def is_view_of(base: torch.Tensor, other: torch.Tensor) -> bool:
    if not other._is_view() or other is base or other._base is not base:
        return False
    return base.untyped_storage().data_ptr() == other.untyped_storage().data_ptr()


def is_view_of_same_base(v1: torch.Tensor, v2: torch.Tensor) -> bool:
    if not v1._is_view() or v1 is v2:
        return False
    return is_view_of(v1._base, v2)


ALL = [torch.float32, torch.float64, torch.int64, torch.bool]
FLOATS = [torch.float32, torch.float64]


# ---------------------------------------------------------------- test_view_ops.py: TestViewOps

def test_conj_self() -> None:
    t = torch.ones(5, 5)
    assert t.conj() is t


@pytest.mark.parametrize("dtype", ALL)
def test_view_tensor_split(dtype: torch.dtype) -> None:
    a = make_tensor((40, 30), dtype)
    for dim in (0, 1):
        for piece in a.tensor_split(7, dim):
            assert is_view_of(a, piece)


@pytest.mark.parametrize(("fn", "where"), [
    ("hsplit", (1, 2, 0, 2)), ("vsplit", (1, 0, 2, 2)), ("dsplit", (1, 2, 2, 0))])
@pytest.mark.parametrize("dtype", ALL)
def test_view_tensor_hvdsplit(fn: str, where: tuple[int, ...], dtype: torch.dtype) -> None:
    t = make_tensor((4, 4, 4), dtype)
    pieces = getattr(torch, fn)(t, 2)
    for piece in pieces:
        assert is_view_of(t, piece)
    t[2, 2, 2] = 7
    assert_equal(pieces[where[0]][where[1:]], t[2, 2, 2])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_imag_noncomplex(dtype: torch.dtype) -> None:
    with pytest.raises(RuntimeError):
        torch.imag(torch.ones((5, 5), dtype=dtype))


def test_diagonal_view() -> None:
    t = torch.ones((5, 5))
    v = torch.diagonal(t)
    assert is_view_of(t, v)
    v[0] = 0
    assert_equal(t[0, 0], v[0])
    t = torch.ones((3, 3, 3))
    v = torch.diagonal(t, offset=1, dim1=1, dim2=2)
    assert is_view_of(t, v)
    v[0, 0] = 0
    assert_equal(t[0, 0, 1], v[0, 0])


def test_select_view() -> None:
    t = torch.ones((5, 5))
    v = t.select(0, 2)
    assert is_view_of(t, v)
    v[0] = 0
    assert_equal(t[2, 0], v[0])


def test_unbind_view() -> None:
    t = torch.zeros((5, 5))
    for idx, v in enumerate(torch.unbind(t)):
        assert is_view_of(t, v)
        v[0] = idx + 1
        assert_equal(t[idx, 0], v[0])


def test_unbind() -> None:
    stacked = torch.randn(3, 10, 10, requires_grad=True)
    x, y, z = stacked.unbind()
    grad = torch.randn(3, 10, 10)
    torch.autograd.backward([x, y, z], grad.unbind())
    assert_equal(stacked.grad, grad)
    for i in range(3):
        stacked = torch.randn(3, 10, 10, requires_grad=True)
        outs = stacked.unbind()
        gi = grad.unbind()[i]
        g, = torch.autograd.grad(outs[i], stacked, gi)
        expected = torch.stack([gi if j == i else torch.zeros_like(gi) for j in range(3)], dim=0)
        assert_equal(g, expected)
    stacked = torch.randn(3, 4, 4, dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: x.unbind(), (stacked,))


def test_expand_view() -> None:
    t = torch.ones((5, 1))
    v = t.expand(5, 5)
    assert is_view_of(t, v)
    v[2, 2] = 0
    assert_equal(t[2, 0], v[2, 2])


def test_expand_as_view() -> None:
    t = torch.ones((5, 1))
    v = t.expand_as(torch.empty((5, 5)))
    assert is_view_of(t, v)
    v[2, 2] = 0
    assert_equal(t[2, 0], v[2, 2])


def test_narrow_view() -> None:
    t = torch.ones((5, 5))
    v = torch.narrow(t, 1, 2, 2)
    assert is_view_of(t, v)
    v[0, 0] = 0
    assert_equal(t[0, 2], v[0, 0])


def test_permute_view() -> None:
    t = torch.ones((5, 5))
    v = t.permute(1, 0)
    assert is_view_of(t, v)
    v[0, 1] = 0
    assert_equal(t[1, 0], v[0, 1])


@pytest.mark.parametrize("fn", ["swapdims", "swapaxes", "transpose"])
def test_transpose_view(fn: str) -> None:
    t = torch.ones((5, 5))
    v = getattr(torch, fn)(t, 0, 1)
    assert is_view_of(t, v)
    v[0, 1] = 0
    assert_equal(t[1, 0], v[0, 1])


@pytest.mark.parametrize("fn", ["swapdims_", "swapaxes_", "transpose_"])
def test_transpose_inplace_view(fn: str) -> None:
    t = torch.ones(5, 5)
    v = t.view_as(t)
    v = getattr(v, fn)(0, 1)
    assert is_view_of(t, v)
    v[0, 1] = 0
    assert_equal(t[1, 0], v[0, 1])


def test_t_view() -> None:
    t = torch.ones((5, 5))
    v = t.t()
    assert is_view_of(t, v)
    v[0, 1] = 0
    assert_equal(t[1, 0], v[0, 1])


def test_t_inplace_view() -> None:
    t = torch.ones(5, 5)
    v = t.view_as(t).t_()
    assert is_view_of(t, v)
    v[0, 1] = 0
    assert_equal(t[1, 0], v[0, 1])


@pytest.mark.parametrize("op", ["T", "H", "mT", "mH"])
def test_T_view(op: str) -> None:
    t = torch.ones((5, 5))
    v = getattr(t, op)
    assert is_view_of(t, v)
    v[0, 1] = 0
    assert_equal(t[1, 0], v[0, 1])


def test_unfold_view() -> None:
    t = torch.ones(10)
    v = t.unfold(0, 3, 2)
    assert is_view_of(t, v)
    v[1, 0] = 0
    assert_equal(t[2], v[1, 0])


def test_squeeze_view() -> None:
    t = torch.ones(5, 1, 5)
    v = torch.squeeze(t)
    assert is_view_of(t, v)
    v[0, 1] = 0
    assert_equal(t, v._base)


def test_squeeze_inplace_view() -> None:
    t = torch.ones(5, 5)
    v = t.view_as(t).squeeze_()
    assert is_view_of(t, v)
    v[0, 1] = 0
    assert_equal(t, v._base)


def test_unsqueeze_view() -> None:
    t = torch.ones(5, 5)
    v = torch.unsqueeze(t, 1)
    assert is_view_of(t, v)
    v[0, 0, 1] = 0
    assert_equal(t[0, 1], v[0, 0, 1])


def test_unsqueeze_inplace_view() -> None:
    t = torch.ones(5, 5)
    v = t.view_as(t).unsqueeze_(1)
    assert is_view_of(t, v)
    v[0, 0, 1] = 0
    assert_equal(t[0, 1], v[0, 0, 1])


def test_as_strided_view() -> None:
    t = torch.ones(5, 5)
    v = torch.as_strided(t, (25,), (1,))
    assert is_view_of(t, v)
    v[6] = 0
    assert_equal(t[1, 1], v[6])


def test_as_strided_inplace_view() -> None:
    t = torch.ones(5, 5)
    v = t.view_as(t).as_strided_((25,), (1,))
    assert is_view_of(t, v)
    v[6] = 0
    assert_equal(t[1, 1], v[6])


@pytest.mark.parametrize(("make", "prepro", "size", "strides", "offset"), [
    (lambda: torch.arange(0, 25), lambda x: x.view(5, 5), [3, 3], [6, 2], 2),
    (lambda: torch.randn(12), None, [1, 2, 1, 5], [0, 5, 100, 1], 2),
    (lambda: torch.randn(5), None, [3, 3, 3], [0, 1, 0], 2),
    (lambda: torch.randn(5), None, [3, 3, 3], [0, 0, 0], 4),
    (lambda: torch.randn(5), lambda x: x.expand(5, 5), [5, 5], [0, 1], 0),
    (lambda: torch.randn(35), None, [6, 6], [5, 1], 2),
    (lambda: torch.randn(15), None, [3, 2], [3, 6], 2),
    (lambda: torch.randn(3, 4), None, [4, 3], [1, 4], None),
    (lambda: torch.randn(6, 2)[3:], None, [3, 2], [2, 1], 0),
    (lambda: torch.randn(2, 3), lambda x: x.expand(10, 2, 3), [2, 3], [3, 1], 0),
])
def test_as_strided_gradients(make: Any, prepro: Any, size: list[int], strides: list[int],
                              offset: int | None) -> None:
    x = make().to(torch.double).detach().requires_grad_()

    def closure(x: torch.Tensor) -> torch.Tensor:
        if prepro is not None:
            x = prepro(x)
        return x.as_strided(size, strides, offset)

    assert torch.autograd.gradcheck(closure, [x])
    assert torch.autograd.gradgradcheck(closure, [x])


def test_as_strided_outside_the_input() -> None:
    x = torch.randn(6, 2)
    assert_equal(x[3:].as_strided([3, 2], [2, 1], 0), x[:3])


def test_view_view() -> None:
    t = torch.ones(5, 5)
    v = t.view(25)
    assert is_view_of(t, v)
    v[6] = 0
    assert_equal(t[1, 1], v[6])


def test_view_as_view() -> None:
    t = torch.ones(5, 5)
    v = t.view_as(torch.empty((25,)))
    assert is_view_of(t, v)
    v[6] = 0
    assert_equal(t[1, 1], v[6])


def test_contiguous_self() -> None:
    t = torch.ones(5, 5)
    assert t.contiguous() is t


def test_contiguous_nonview() -> None:
    t = torch.ones(5, 5)
    nv = t.t().contiguous()
    assert not is_view_of(t, nv)
    nv[0, 0] = 0
    assert t[0, 0].item() != nv[0, 0].item()


def test_reshape_view() -> None:
    t = torch.ones(5, 5)
    v = torch.reshape(t, (25,))
    assert is_view_of(t, v)
    v[6] = 0
    assert_equal(t[1, 1], v[6])


def test_reshape_as_view() -> None:
    t = torch.ones(5, 5)
    v = t.reshape_as(torch.empty((25,)))
    assert is_view_of(t, v)
    v[6] = 0
    assert_equal(t[1, 1], v[6])


def test_reshape_nonview() -> None:
    t = torch.ones(5, 5)
    nv = torch.reshape(t.t(), (25,))
    assert not is_view_of(t, nv)
    nv[6] = 0
    assert t[1, 1].item() != nv[6].item()


def _writes_propagate(t: torch.Tensor, v: torch.Tensor) -> None:
    idx_t, idx_v = (0,) * t.ndim, (0,) * v.ndim
    v[idx_v] = 0
    assert_equal(t[idx_t], v[idx_v])


def test_flatten_view() -> None:
    t = torch.ones(1, 2, 3, 4)
    v = t.flatten()
    assert is_view_of(t, v)
    _writes_propagate(t, v)
    t = torch.tensor(1)
    v = t.flatten()
    _writes_propagate(t, v)
    assert is_view_of(t, v)
    t = torch.ones(1, 2, 3, 4).transpose(2, 3)
    v = t.flatten(0, 1)
    _writes_propagate(t, v)
    assert is_view_of_same_base(t, v)
    t = torch.ones(720).as_strided((2, 3, 2, 3, 5, 4), (6, 2, 15, 5, 1, 0))
    v1 = t.flatten(0, 1)
    v2 = v1.flatten(1, 3)
    v3 = v2.flatten(2, 2)
    for v in (v1, v2, v3):
        _writes_propagate(t, v)
        assert is_view_of_same_base(t, v)


def test_flatten_nonview() -> None:
    def assert_is_nonview(t: torch.Tensor, nv: torch.Tensor) -> None:
        idx_t, idx_nv = (0,) * t.ndim, (0,) * nv.ndim
        assert not nv._is_view()
        nv[idx_nv] = 0
        assert t[idx_t].item() != nv[idx_nv].item()

    assert_is_nonview(t := torch.ones(2, 3, 2, 3).transpose(2, 3), t.flatten(1, 3))
    assert_is_nonview(t := torch.ones(2, 2).T, t.flatten())
    t = torch.ones(2, 2)
    assert t.flatten(1, 1) is t


def test_basic_indexing_slice_view() -> None:
    t = torch.ones(5, 5)
    v = t[:2, :3]
    assert is_view_of(t, v)
    v[0, 0] = 0
    assert_equal(t[0, 0], v[0, 0])


def test_basic_indexing_ellipses_view() -> None:
    t = torch.ones(5, 5)
    v = t[..., :2]
    assert is_view_of(t, v)
    v[0, 0] = 0
    assert_equal(t[0, 0], v[0, 0])


def test_basic_indexing_newaxis_view() -> None:
    t = torch.ones(5, 5)
    v = t[None, :2, 3]
    assert is_view_of(t, v)
    v[0, 0] = 0
    assert_equal(t[0, 3], v[0, 0])


def test_advanced_indexing_nonview() -> None:
    t = torch.ones(3, 3)
    rows = torch.tensor([[0, 0], [2, 2]])
    cols = torch.tensor([[0, 1], [2, 2]])
    nv = t[rows, cols]
    assert not is_view_of(t, nv)
    nv[1, 1] = 0
    assert t[2, 2].item() != nv[1, 1].item()


def test_advanced_indexing_assignment() -> None:
    t = torch.ones(3, 3)
    t[torch.tensor([[0, 0], [2, 2]]), torch.tensor([[0, 1], [2, 2]])] = 0
    assert t[2, 2].item() == 0


@pytest.mark.parametrize("fn", ["movedim", "moveaxis"])
@pytest.mark.parametrize(("source", "destination"), [((0, 1), (1, 0)), (0, 1)])
def test_movedim_view(fn: str, source: Any, destination: Any) -> None:
    t = torch.zeros(3, 3)
    out = getattr(torch, fn)(t, source=source, destination=destination)
    assert is_view_of(t, out)
    for _ in range(3):
        i, j = random.randint(0, 2), random.randint(0, 2)
        out[i, j] = random.random()
        assert_equal(t[j, i], out[i, j])


def test_view_copy() -> None:
    a = torch.randn(4, requires_grad=True)
    a_ref = a.clone().detach().requires_grad_()
    a_view = a_ref.view(2, 2)
    a_view_copy = torch.view_copy(a, (2, 2))
    assert is_view_of(a_ref, a_view)
    assert not is_view_of(a, a_view_copy)
    a_view_copy.sum().backward()
    a_view.sum().backward()
    assert_equal(a_view_copy, a_view)
    assert_equal(a.grad, a_ref.grad)


# ---------------------------------------------------------------- test_view_ops.py: TestOldViewOps

def test_ravel() -> None:
    def check(tensors: list[torch.Tensor], size: int, nc: bool = False) -> None:
        for src in tensors:
            flat = src.ravel()
            assert flat.shape == torch.Size([size])
            assert_equal(src.view(-1), flat)
            assert flat._base is src
            assert flat.is_contiguous()
            if nc:
                nc_src = src.t()
                nc_flat = nc_src.ravel()
                assert nc_flat.shape == torch.Size([size])
                assert_equal(nc_src.contiguous().view(-1), nc_flat)
                assert nc_flat._base is not src
                assert nc_flat.is_contiguous()

    zero_dim = torch.tensor(123)
    flat0 = zero_dim.ravel()
    one_dim = torch.tensor([123])
    flat1 = zero_dim.ravel()
    flat2 = torch.ones(10)[::2].ravel()
    assert zero_dim.shape == torch.Size([])
    assert flat0.shape == flat1.shape == torch.Size([1])
    assert flat2.shape == torch.Size([5])
    assert_equal(flat0, one_dim)
    assert_equal(flat0, flat1)
    assert flat0.is_contiguous() and flat1.is_contiguous() and flat2.is_contiguous()
    check([torch.randn(5, 5, 5, 5)], 625)
    check([torch.randn(0, 2, 3), torch.randn(3, 0, 2)], 0)
    check([torch.randn(5, 5)], 25, True)


def test_empty_reshape() -> None:
    x = torch.randn(0, 6)
    assert x.reshape(1, 0, 6, 1, 1).shape == (1, 0, 6, 1, 1)
    assert x.data_ptr() == x.reshape(1, 0, 6, 1, 1).data_ptr()
    with pytest.raises(RuntimeError):
        x.reshape(0, -1)


def test_expand() -> None:
    tensor = torch.rand(1, 8, 1)
    tensor2 = torch.rand(5)
    template = torch.rand(4, 8, 5)
    target = template.size()
    for t in (tensor, tensor2):
        assert t.expand_as(template).size() == target
        assert t.expand(4, 8, 5).size() == target
        assert t.expand(target).size() == target
    assert_equal(tensor2.expand(1, 5).expand(2, 2, 5), tensor2.repeat(2, 2, 1))
    noncontig = torch.randn(5, 2, 1, 3)[:, 0]
    assert not noncontig.is_contiguous()
    assert_equal(noncontig.expand(2, 5, 4, 3), noncontig.contiguous().repeat(2, 1, 4, 1))
    expanded = tensor2.expand(1, 1, 5)
    unsqueezed = tensor2.unsqueeze(0).unsqueeze(1)
    assert_equal(expanded, unsqueezed)
    assert expanded.stride() == unsqueezed.stride()
    assert_equal(tensor.expand(4, -1, 5), tensor.expand(4, 8, 5))
    with pytest.raises(RuntimeError):
        tensor2.expand(-1, -1)
    assert_equal(torch.zeros(0).expand((0,)), torch.zeros(0))


def test_view_empty() -> None:
    assert torch.randn(0, 6).view(1, 0, 6, 1, 1).shape == (1, 0, 6, 1, 1)


def test_reshape() -> None:
    x = torch.randn(3, 3)
    assert x.data_ptr() == x.reshape(-1).data_ptr()
    assert x.data_ptr() == x.reshape(1, 9, 1).data_ptr()
    assert_equal(torch.reshape(x, (9,)), x.reshape(9))
    with pytest.raises(RuntimeError):
        x.reshape(-1, -1)
    y = torch.randn(4, 4, 4)[:, 0, :]
    assert y.data_ptr() != y.reshape(-1).data_ptr()
    assert_equal(y.contiguous().view(-1), y.reshape(-1))
    assert y.reshape(2, 2, 4).data_ptr() == y.data_ptr()
    s = torch.randn(())
    assert s.data_ptr() == s.reshape(()).data_ptr()
    assert s.reshape(-1).shape == (1,)
    with pytest.raises(RuntimeError):
        s.reshape(2)
    empty = torch.tensor([])
    assert_equal(empty, empty.reshape(-1))
    assert_equal(empty, empty.reshape([0]))
    assert empty.reshape([0, 1]).shape == (0, 1)
    assert empty.reshape([1, -1]).shape == (1, 0)
    with pytest.raises(RuntimeError):
        empty.reshape(1)
    x = torch.randn(3, 3)
    assert x.data_ptr() == x.reshape_as(torch.rand(9)).data_ptr()
    assert x.data_ptr() == x.reshape_as(torch.rand(1, 9, 1)).data_ptr()
    with pytest.raises(RuntimeError):
        x.reshape_as(torch.rand(10))


def test_flatten() -> None:
    zero_dim = torch.tensor(123)
    flat0 = zero_dim.flatten()
    assert flat0.shape == torch.Size([1])
    assert_equal(flat0, torch.tensor([123]))
    src = torch.randn(5, 5, 5, 5)
    for (s, e), shape in {(0, -1): [625], (0, 2): [125, 5], (0, 1): [25, 5, 5],
                          (1, 2): [5, 25, 5], (2, 3): [5, 5, 25], (-2, -1): [5, 5, 25]}.items():
        flat = src.flatten(s, e)
        assert flat.shape == torch.Size(shape)
        assert_equal(src.view(-1), flat.view(-1))
    assert_equal(src.flatten(2, 2), src)
    with pytest.raises(IndexError, match="Dimension out of range"):
        src.flatten(5, 10)
    with pytest.raises(RuntimeError, match="start_dim cannot come after end_dim"):
        src.flatten(2, 0)


def test_narrow() -> None:
    x = torch.tensor([[0, 1, 2], [3, 4, 5], [6, 7, 8]])
    assert_equal(x.narrow(0, 0, 1), torch.tensor([[0, 1, 2]]))
    assert_equal(x.narrow(0, 0, 2), torch.tensor([[0, 1, 2], [3, 4, 5]]))
    assert_equal(x.narrow(0, 1, 1), torch.tensor([[3, 4, 5]]))
    assert_equal(x.narrow(0, -1, 1), torch.tensor([[6, 7, 8]]))
    assert_equal(x.narrow(0, -2, 2), torch.tensor([[3, 4, 5], [6, 7, 8]]))
    assert_equal(x.narrow(0, -3, 3), torch.tensor([[0, 1, 2], [3, 4, 5], [6, 7, 8]]))
    assert_equal(x.narrow(-1, -1, 1), torch.tensor([[2], [5], [8]]))
    assert_equal(x.narrow(-2, -1, 1), torch.tensor([[6, 7, 8]]))


def test_narrow_tensor() -> None:
    x = torch.tensor([[0, 1, 2], [3, 4, 5], [6, 7, 8]])
    assert_equal(x.narrow(0, torch.tensor(0), 1), torch.tensor([[0, 1, 2]]))
    for bad in (torch.tensor(0.), torch.tensor([0]), torch.tensor([0, 1])):
        with pytest.raises(Exception):
            x.narrow(0, bad, 1)


def test_t() -> None:
    x = torch.randn(())
    assert_equal(x, x.t())
    x = torch.arange(4)
    assert_equal(x, x.t())
    x = torch.rand((2, 2))
    assert_equal(x.t(), x.transpose(0, 1))
    with pytest.raises(RuntimeError, match="expects a tensor with <= 2 dimensions, but self is 3D"):
        torch.rand((2, 2, 2)).t()


def _check_pieces(tensor: torch.Tensor, pieces: Any, targets: Any, dim: int) -> None:
    start = 0
    for target, piece in zip(targets, pieces, strict=True):
        assert piece.size() == torch.Size(target)
        assert_equal(tensor.narrow(dim, start, target[dim]), piece, atol=0, rtol=0)
        start += target[dim]


def test_split() -> None:
    tensor = torch.rand(7, 4)
    _check_pieces(tensor, tensor.split(3, 0), ([3, 4], [3, 4], [1, 4]), 0)
    tensor = torch.randn(20, 10)
    _check_pieces(tensor, tensor.split([5, 5, 10], 0), ([5, 10], [5, 10], [10, 10]), 0)
    _check_pieces(tensor, tensor.split([2, 2, 6], 1), ([20, 2], [20, 2], [20, 6]), 1)


def test_chunk() -> None:
    tensor = torch.rand(4, 7)
    _check_pieces(tensor, tensor.chunk(3, 1), ([4, 3], [4, 3], [4, 1]), 1)
    for bad in (0, -2):
        with pytest.raises(RuntimeError, match="chunk expects.*greater than 0"):
            tensor.chunk(bad)


def test_unsqueeze() -> None:
    x = torch.randn(2, 3, 4)
    assert_equal(x.unsqueeze(1), x.view(2, 1, 3, 4))
    assert_equal(x.clone().unsqueeze_(2), x.view(2, 3, 1, 4))
    x = x[:, 1]
    assert not x.is_contiguous()
    assert_equal(x.unsqueeze(1), x.contiguous().view(2, 1, 4))
    assert_equal(x.clone().unsqueeze_(2), x.contiguous().view(2, 4, 1))


def test_big_transpose() -> None:
    t = torch.rand(456, 789)
    assert_equal(t.t().contiguous(), torch.from_numpy(t.numpy().transpose()))


def test_T() -> None:
    a = torch.randn(2, 3, 4)
    assert_equal(a.permute(2, 1, 0), a.T)
    b = torch.randn(10)
    assert_equal(b, b.T)
    scalar = torch.tensor(5)
    assert_equal(scalar, scalar.T)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", ["T", "H", "mT", "mH", "adjoint"])
def test_transposes(dtype: torch.dtype, op: str) -> None:
    shapes = ((), (2, 3), (2, 3, 4)) if op[0] == "m" or op == "adjoint" else ((), (2, 3))
    for shape in shapes:
        a = make_tensor(shape, dtype)
        t1 = getattr(a, op)
        if op == "adjoint":
            t1 = t1()
        t2 = a.transpose(-2, -1) if a.ndim else a
        assert_equal(t2, t1)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", ["H", "mT", "mH", "adjoint"])
def test_transposes_errors(dtype: torch.dtype, op: str) -> None:
    for shape in ((2,), (2, 3, 4)) if op == "H" else ((2,),):
        a = make_tensor(shape, dtype)
        with pytest.raises(RuntimeError, match="only supported on matrices"):
            t1 = getattr(a, op)
            if op == "adjoint":
                t1()


def test_python_types() -> None:
    assert torch.randn((1, 2), dtype=torch.float64).dtype == torch.randn((1, 2), dtype=float).dtype
    assert torch.arange(10, 20, dtype=torch.int64).dtype == torch.arange(10, 20, dtype=int).dtype
    assert torch.tensor([True, False], dtype=torch.bool).dtype == \
        torch.tensor([True, False], dtype=bool).dtype


def test_resize_as_preserves_strides() -> None:
    x = torch.empty(2, 3).t()
    old = x.stride()
    x.resize_as_(x)
    assert x.stride() == old
    assert x._version == 0


def test_resize_keeps_the_storage() -> None:
    """(Not in PyTorch's file.) A resize_ that fits keeps the storage (a view sees the writes
    after it); one that does not gets a new storage at the same offset, starting with the old
    storage's elements in storage order."""
    x = torch.zeros(2, 3)
    v = x.view(6)
    x.resize_(2, 2)
    x.fill_(1)
    assert_equal(v, torch.tensor([1., 1., 1., 1., 0., 0.]))
    assert (x.stride(), x._version) == ((2, 1), 2)
    x = torch.arange(6.)[2:]
    x.resize_(2, 3)
    assert x.storage_offset() == 2
    assert_equal(x[0], torch.tensor([2., 3., 4.]))
    x = torch.arange(6.).view(2, 3).t()
    x.resize_(7)
    assert x.is_contiguous()
    assert_equal(x[:6], torch.arange(6.))


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32])
@pytest.mark.parametrize("fn", ["swapdims", "swapaxes", "transpose"])
def test_transpose_invalid(dtype: torch.dtype, fn: str) -> None:
    x = make_tensor((5, 6, 7, 8), dtype)
    with pytest.raises(IndexError, match="Dimension out of range"):
        getattr(torch, fn)(x, 5, 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        getattr(torch, fn)(x, 0, 5)


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32])
@pytest.mark.parametrize(("fn", "names"), [
    ("swapdims", ("dim0", "dim1")), ("swapaxes", ("axis0", "axis1")),
    ("transpose", ("dim0", "dim1"))])
def test_transpose_vs_numpy(dtype: torch.dtype, fn: str, names: tuple[str, str]) -> None:
    from itertools import permutations

    for nd in range(5):
        x = make_tensor(tuple(random.randint(2, 4) for _ in range(nd)), dtype)
        for src, dst in permutations(range(nd), r=2):
            for s, d in ((src, dst), (src - nd, dst), (src, dst - nd), (src - nd, dst - nd)):
                got = getattr(torch, fn)(x, **{names[0]: s, names[1]: d})
                assert_equal(got, np.swapaxes(x.numpy(), s, d))
    x = torch.randn(2, 3, 5, 7, 11)
    assert_equal(getattr(torch, fn)(x, **{names[0]: 0, names[1]: 0}), x)


@pytest.mark.filterwarnings("ignore:The use of `x.T` on tensors")
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("n", [1, 2, 3])
def test_atleast(dtype: torch.dtype, n: int) -> None:
    torch_fn, np_fn = getattr(torch, f"atleast_{n}d"), getattr(np, f"atleast_{n}d")
    for ndims in range(5):
        shape = tuple(random.randint(2, 4) for _ in range(ndims))
        for transposed in (False, True):
            x = make_tensor(shape, dtype)
            if transposed:
                x = x.T
            assert_equal(torch_fn(x), np_fn(x.numpy()))
            seq = (x,) * random.randint(3, 5)
            got, want = torch_fn(*seq), np_fn(*(x.numpy() for x in seq))
            assert len(got) == len(want)
            for g, w in zip(got, want, strict=True):
                assert_equal(g, w)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_atleast_gradient(n: int) -> None:
    fn = getattr(torch, f"atleast_{n}d")
    s = torch.tensor(0.5, dtype=torch.double, requires_grad=True)
    a = torch.rand(4, dtype=torch.double, requires_grad=True)
    for x in (s, a):
        assert torch.autograd.gradcheck(lambda x: fn(x), (x,))
        assert torch.autograd.gradgradcheck(lambda x: fn(x), (x,))
    inputs = (s, a, *(torch.rand(*shape, dtype=torch.double, requires_grad=True)
                      for shape in ((4, 3), (4, 3, 2), (4, 3, 2, 1))))
    assert torch.autograd.gradcheck(lambda *xs: fn(*xs), inputs)
    assert torch.autograd.gradgradcheck(lambda *xs: fn(*xs), inputs)


def test_broadcast_tensors() -> None:
    ys = torch.broadcast_tensors(torch.randn(2, 1, 3), torch.randn(3), torch.randn(3, 1))
    assert all(y.size() == (2, 3, 3) for y in ys)


def test_broadcast_shapes() -> None:
    examples = [(), (1,), (2,), (1, 1), (3, 1), (3, 2), (4, 1, 1), (4, 3, 2)]
    for s0 in examples:
        x0 = torch.randn(s0)
        assert torch.broadcast_tensors(x0)[0].shape == torch.broadcast_shapes(s0)
        for s1 in examples:
            x1 = torch.randn(s1)
            assert torch.broadcast_tensors(x0, x1)[0].shape == torch.broadcast_shapes(s0, s1)
    for ints in ([1, 4], [4, 1], [1, 1, 3]):
        assert torch.broadcast_shapes(*ints) == \
            torch.broadcast_tensors(*map(torch.empty, ints))[0].shape
    # PyTorch 2.13's texts (torch._refs._broadcast_shapes): a ValueError for a negative size,
    # "Attempting to broadcast a dimension of length ..." for sizes that do not broadcast
    for ints in ([1, 1, -12], [-1, 1], [-11]):
        with pytest.raises(ValueError, match="Attempting to broadcast a dimension with negative "
                                             "length!"):
            torch.broadcast_shapes(*ints)
    with pytest.raises(RuntimeError, match=r"^Attempting to broadcast a dimension of length 4 at "
                       r"-2! Mismatching argument at index 1 had \(2, 4, 1\); but expected shape "
                       r"should be broadcastable to \[1, 3, 5\]$"):
        torch.broadcast_shapes((3, 5), (2, 4, 1))
    with pytest.raises(RuntimeError, match="Attempting to broadcast a dimension of length 4 at -1"):
        torch.broadcast_shapes(3, 4)
    negative = [(-1,), (1, -12), (4, -11), (-4, 1), (1, 1, -2)]
    for s0 in negative:
        with pytest.raises(ValueError, match="negative length"):
            torch.broadcast_shapes(s0)
        for s1 in negative:
            with pytest.raises(ValueError, match="negative length"):
                torch.broadcast_shapes(s0, s1)
    assert torch.broadcast_shapes((2,), None, (3, 1)) == (3, 2)
    assert torch.broadcast_shapes() == torch.Size([])
    for case in ((1.1, 2.0), (1.1, 1.0)):
        for f in case:
            with pytest.raises(RuntimeError, match="Input shapes should be of type ints, a tuple "
                                                   "of ints, or a list of ints"):
                torch.broadcast_shapes(f)
    for mixed in ((1, (5,)), (3, (1,)), (1, (3, 4))):
        assert torch.broadcast_shapes(*mixed) == \
            torch.broadcast_tensors(*map(torch.empty, mixed))[0].shape


@pytest.mark.parametrize("dtype", ALL)
def test_broadcast_to(dtype: torch.dtype) -> None:
    from itertools import combinations

    def can_broadcast(s0: tuple[int, ...], s1: tuple[int, ...]) -> bool:
        return all(a == 1 or a == b for a, b in zip(reversed(s0), reversed(s1)))

    sizes = ((), (1,), (2,), (1, 1), (3, 1), (3, 2), (4, 1, 1), (4, 3, 2))
    for s0, s1 in combinations(sizes, r=2):
        t = make_tensor(s0, dtype)
        if can_broadcast(s0, s1):
            assert_equal(torch.broadcast_to(t, s1), np.broadcast_to(t.numpy(), s1))
        else:
            with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(\d\) "
                                                   r"must match the existing size \(\d\)"):
                torch.broadcast_to(t, s1)


def test_view() -> None:
    tensor = torch.rand(15)
    template = torch.rand(3, 5)
    empty = torch.empty(0)
    target = template.size()
    assert tensor.view_as(template).size() == target
    assert tensor.view(3, 5).size() == target
    assert tensor.view(torch.Size([3, 5])).size() == target
    assert tensor.view(-1, 5).size() == target
    assert tensor.view(3, -1).size() == target
    tensor.view(5, 3).fill_(random.uniform(0, 1))
    assert_equal(empty.view_as(empty), empty)
    assert_equal(empty.view(0), empty)
    assert empty.view(0, 3, 0, 1).size() == torch.Size([0, 3, 0, 1])
    assert_equal(empty.view(0, 3, 0, 1).view(0), empty)
    assert empty.view(-1).size() == torch.Size([0])
    assert empty.view(10, 3, -1).size() == torch.Size([10, 3, 0])
    for shape in ((-1, 0), (3, 0, -1, 0)):
        with pytest.raises(RuntimeError,
                           match="because the unspecified dimension size -1 can be any value"):
            empty.view(*shape)
    for shape in ((15, 0), (7, -1), (15, -1, -1)):
        with pytest.raises(RuntimeError):
            tensor.view(*shape)
    tensor = torch.rand(4, 2, 5, 1, 6, 2, 9, 3).transpose(-1, 2).transpose(-2, 3)
    contig = tensor.clone()
    for size in ([8, 1, 3, 3, 3, 4, 1, 3, 5], [2, 4, 3, 1, 9, 2, 2, 3, 5, 1],
                 [1, 1, 2, 1, 4, 3, 1, 1, 9, 1, 2, 1, 2, 3, 1, 5, 1, 1]):
        assert_equal(tensor.view(*size), contig.view(*size))
    for size in ((-1,), (24, 9, 6, 2, 1, 5), (8, 3, 9, 6, 10), (8, 3, 54, 2, 1, 5)):
        with pytest.raises(RuntimeError):
            tensor.view(*size)
    tensor = torch.empty(1, 1).expand(3, 4)
    contig = tensor.clone()
    for size in ((-1,), (1, -1, 1), (-1, 1), (6, 2, 1), (1, 6, 2, 1)):
        assert_equal(tensor.view(*size), contig.view(*size))


@pytest.mark.parametrize("dtype", ALL)
def test_reshape_view_semantics(dtype: torch.dtype) -> None:
    tensor = make_tensor((15, 4), dtype)
    view = tensor.reshape((20, 3))
    assert view.size() == (20, 3)
    assert tensor.untyped_storage().data_ptr() == view.untyped_storage().data_ptr()
    copy = tensor.transpose(0, 1).reshape((20, 3))
    assert copy.size() == (20, 3)
    assert tensor.untyped_storage().data_ptr() != copy.untyped_storage().data_ptr()


_SPLIT_SIZES = [(0,), (10,), (10, 0), (0, 10), (4, 10), (12, 3)]


def _split_inputs(dtype: torch.dtype) -> Any:
    for size in _SPLIT_SIZES:
        base = make_tensor(size, dtype)
        yield from ([base, base.t()] if base.dim() == 2 else [base])


def _assert_pieces(got: Any, want: Any, dtype: torch.dtype) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == dtype
        assert_equal(g, w)


@pytest.mark.parametrize("dtype", ALL)
def test_tensor_split_sections(dtype: torch.dtype) -> None:
    for a in _split_inputs(dtype):
        for dim in range(-a.dim(), a.dim()):
            for sections in range(1, 2 * a.size(dim)):
                want = np.array_split(a.numpy(), sections, dim)
                _assert_pieces(torch.tensor_split(a, sections, dim), want, dtype)
                _assert_pieces(torch.tensor_split(a, torch.tensor(sections, dtype=torch.int64),
                                                  dim), want, dtype)


@pytest.mark.parametrize("dtype", ALL)
def test_tensor_split_indices(dtype: torch.dtype) -> None:
    indices_args = [(), (0,), (3,), (10,), (-1,), (-10,), (2, -1), (3, 4, 10), (0, -1, 0, 10),
                    (1, 5, 2, 8)]
    for a in _split_inputs(dtype):
        for dim in range(-a.dim(), a.dim()):
            for indices in indices_args:
                want = np.array_split(a.numpy(), indices, dim)
                _assert_pieces(torch.tensor_split(a, indices, dim), want, dtype)
                _assert_pieces(torch.tensor_split(a, torch.tensor(indices, dtype=torch.int64),
                                                  dim), want, dtype)


def test_tensor_split_errors() -> None:
    cases = [
        ((10,), 10, 1, IndexError, r"Dimension out of range"),
        ((), 10, 0, RuntimeError, r"tensor_split expected at least a 1-dimensional tensor, but "
                                  r"got a tensor with 0 dims"),
        ((10,), (10,), 1, IndexError, r"Dimension out of range"),
        ((), (10,), 0, RuntimeError, r"tensor_split expected at least a 1-dimensional tensor, "
                                     r"but got a tensor with 0 dims"),
        ((10,), 0, 0, RuntimeError, r"number of sections must be larger than 0, got 0"),
        ((10,), -1, 0, RuntimeError, r"number of sections must be larger than 0, got -1"),
    ]
    for size, arg, dim, err, msg in cases:
        a = torch.randn(size)
        with pytest.raises(err, match=msg):
            torch.tensor_split(a, arg, dim)
        with pytest.raises(err, match=msg):
            torch.tensor_split(a, torch.tensor(arg), dim)
    with pytest.raises(RuntimeError, match="tensor_split expected tensor_indices_or_sections to "
                                           "have dtype of long, but got Float"):
        torch.tensor_split(a, torch.tensor(1.1), dim)
    with pytest.raises(RuntimeError, match="tensor_split expected tensor_indices_or_sections to "
                       "be a zero-dimensional or one-dimensional tensor, but got a tensor with 2 "
                       "dims"):
        torch.tensor_split(torch.rand(10), torch.tensor(((1,),)), 0)


@pytest.mark.parametrize("dtype", ALL)
def test_resize_and_view_all_dtypes(dtype: torch.dtype) -> None:
    x = torch.tensor([[1, 2], [3, 4], [5, 6]], dtype=dtype)
    assert x.view(6).shape == (6,)
    x.resize_((2, 2))
    assert x.shape == (2, 2)
    x = torch.tensor([[1, 2], [3, 4], [5, 6]], dtype=dtype)
    y = torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=dtype)
    x.resize_as_(y)
    assert x.shape == y.shape


def test_resize_overflow() -> None:
    x = torch.empty((), dtype=torch.float64)
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        x.resize_([2, 4, 2**29, 2**29])
    with pytest.raises(RuntimeError, match="overflow"):
        x.resize_([8, 8, 2**29, 2**29])


_VIEW_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool]


@pytest.mark.parametrize("dtype", ALL)
def test_view_dtype_new(dtype: torch.dtype) -> None:
    def inputs() -> Any:
        yield make_tensor((4, 4, 64), dtype, low=-5, high=5)
        yield make_tensor((4, 4, 64), dtype, low=-5, high=5).permute(1, 0, 2)
        yield make_tensor((4, 64, 4), dtype, low=-5, high=5).permute(2, 0, 1)
        yield make_tensor((1, 5, 1), dtype, low=-5, high=5).expand(5, 5, 64)
        yield make_tensor((2, 5, 256), dtype, low=-5, high=5)[1::2, 1:, ::2]
        yield make_tensor((0, 5, 64), dtype, low=-5, high=5)
        yield make_tensor((), dtype, low=-5, high=5)

    def expected(a: torch.Tensor, view_dtype: torch.dtype) -> tuple[Any, Any]:
        size, view_size = a.element_size(), torch.empty((), dtype=view_dtype).element_size()
        if size == view_size:
            return a.size(), a.stride()
        shape, stride = list(a.size()), list(a.stride())
        if size > view_size:
            ratio = size // view_size
            shape[-1] *= ratio
            stride = [s * ratio for s in stride]
        else:
            ratio = view_size // size
            shape[-1] //= ratio
            stride = [s // ratio for s in stride]
        stride[-1] = 1
        return torch.Size(shape), tuple(stride)

    for a in inputs():
        a_np, a_np_contig = a.numpy(), a.contiguous().numpy()
        for view_dtype in _VIEW_DTYPES:
            if view_dtype == torch.bool:
                continue  # PyTorch's test leaves bool out of the targets (numpy reads any byte)
            same = a.element_size() == torch.empty((), dtype=view_dtype).element_size()
            if not same and a.dim() == 0:
                with pytest.raises(RuntimeError, match=r"self.dim\(\) cannot be 0"):
                    a.view(view_dtype)
                continue
            if not same and a.stride(-1) != 1:
                with pytest.raises(RuntimeError, match=r"self.stride\(-1\) must be 1"):
                    a.view(view_dtype)
                continue
            v = a.view(view_dtype)
            assert v.dtype == view_dtype
            assert a.data_ptr() == v.data_ptr()
            assert (v.size(), v.stride()) == expected(a, view_dtype)
            assert_equal(v.view(dtype), a, rtol=0, atol=0)
            if view_dtype == torch.bfloat16:
                continue  # numpy has no bfloat16
            np_dtype = torch.empty((), dtype=view_dtype).numpy().dtype
            want = (a_np if same else a_np_contig).view(np_dtype)
            assert_equal(v, want)
    if dtype.is_floating_point:
        for view_dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
            t = make_tensor((5, 5, 64), dtype, low=-5, high=5, requires_grad=True)
            assert not t.view(view_dtype).requires_grad


@pytest.mark.parametrize("dtype", ALL)
def test_view_dtype_upsize_errors(dtype: torch.dtype) -> None:
    size = torch.empty((), dtype=dtype).element_size()
    for view_dtype in _VIEW_DTYPES:
        view_size = torch.empty((), dtype=view_dtype).element_size()
        if view_size <= size:
            continue
        ratio = view_size // size
        a = make_tensor((4, 4, ratio + 1), dtype, low=-5, high=5)
        with pytest.raises(RuntimeError, match=rf"self.size\(-1\) must be divisible by {ratio}"):
            a.view(view_dtype)
        with pytest.raises(RuntimeError,
                           match=rf"self.storage_offset\(\) must be divisible by {ratio}"):
            a[:, :, 1:].view(view_dtype)
        a = make_tensor((4, 4, ratio), dtype, low=-5, high=5)
        a = a.as_strided((4, 4, ratio), (ratio, 1, 1))
        with pytest.raises(RuntimeError, match=rf"self.stride\(1\) must be divisible by {ratio}"):
            a.view(view_dtype)
