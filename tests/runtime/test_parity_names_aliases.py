"""PyTorch's aliases and small functions the runtime lacked (rsub, row_stack, sum_to_size,
Tensor.new, torch.range, the *_copy views, diagonal_scatter, index_reduce ...) against
PyTorch: values, gradients, warnings and error texts."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

g = np.random.default_rng(1)
A = g.standard_normal((3, 4))
B = g.standard_normal((3, 4))


def _both(fn: Callable[[Any], Any]) -> tuple[Any, Any]:
    return fn(rt), fn(torch)


def _same(a: Any, b: Any) -> None:
    if isinstance(b, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    assert tuple(a.shape) == tuple(b.shape)
    assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-7, atol=1e-12)


def _error(fn: Callable[[Any], Any]) -> None:
    texts = []
    for m in (rt, torch):
        with pytest.raises(Exception) as info:
            fn(m)
        texts.append((info.type.__name__, str(info.value)))
    assert texts[0] == texts[1]


VALUES: dict[str, Callable[[Any, Any, Any], Any]] = {
    "multiply": lambda m, a, b: a.multiply(b),
    "subtract": lambda m, a, b: m.subtract(a, b, alpha=3),
    "subtract_method": lambda m, a, b: a.subtract(b, alpha=2),
    "negative": lambda m, a, b: a.negative(),
    "rsub": lambda m, a, b: m.rsub(a, b, alpha=2),
    "rsub_scalar": lambda m, a, b: m.rsub(a, 1.5),
    "row_stack": lambda m, a, b: m.row_stack([a, b[0]]),
    "sum_to_size": lambda m, a, b: a.sum_to_size(1, 4),
    "sum_to_size_lead": lambda m, a, b: (a * b).sum_to_size([4]),
    "sum_to_size_same": lambda m, a, b: (a * b).sum_to_size(3, 4),
    "sum_to_size_col": lambda m, a, b: a.sum_to_size(m.Size([3, 1])),
    "split_with_sizes": lambda m, a, b: m.split_with_sizes(a, [1, 3], 1),
    "unsafe_split": lambda m, a, b: m.unsafe_split(a * b, 2, 1),
    "unsafe_split_method": lambda m, a, b: (a * b).unsafe_split(2),
    "unsafe_chunk": lambda m, a, b: m.unsafe_chunk(a, 2, 1),
    "unsafe_split_with_sizes": lambda m, a, b: a.unsafe_split_with_sizes([2, 1]),
    "diagonal_scatter": lambda m, a, b: m.diagonal_scatter(a, b[0, :3]),
    "diagonal_scatter_offset": lambda m, a, b: a.diagonal_scatter(b[:2, 0], 2),
    "diagonal_scatter_neg": lambda m, a, b: a.diagonal_scatter(b[0, :2], -1),
    "diagonal_scatter_dims": lambda m, a, b: m.diagonal_scatter(
        a.reshape(2, 3, 2), b.reshape(-1)[:6].reshape(3, 2), 0, 0, 2),
    "select_scatter": lambda m, a, b: a.select_scatter(b[1], 0, 2),
    "slice_scatter": lambda m, a, b: a.slice_scatter(b[:, :2], 1, 1, 3),
    "put": lambda m, a, b: m.put(a, m.tensor([0, 5, 11]), b[0, :3]),
    "put_accumulate": lambda m, a, b: a.put(m.tensor([1, 1, 2]), b[1, :3], True),
    "index_reduce_prod": lambda m, a, b: a.index_reduce(0, m.tensor([0, 2, 0]), b, "prod"),
    "index_reduce_mean": lambda m, a, b: a.index_reduce(1, m.tensor([0, 3, 0, 1]), b, "mean"),
    "index_reduce_amax": lambda m, a, b: m.index_reduce(a, 0, m.tensor([1, 1, 0]), b, "amax",
                                                        include_self=False),
    "index_reduce_amin": lambda m, a, b: a.index_reduce(0, m.tensor([2, 1, 0]), b, "amin"),
    "fill": lambda m, a, b: m.fill(a, 2.5),
    "resize_as_same_numel": lambda m, a, b: a.resize_as(b.reshape(4, 3)),
}
COPIES: dict[str, Callable[[Any, Any], Any]] = {
    "transpose_copy": lambda m, a: m.transpose_copy(a, 0, 1),
    "permute_copy": lambda m, a: m.permute_copy(a, (1, 0)),
    "t_copy": lambda m, a: m.t_copy(a),
    "diagonal_copy": lambda m, a: m.diagonal_copy(a, 1),
    "unsqueeze_copy": lambda m, a: m.unsqueeze_copy(a, 1),
    "squeeze_copy": lambda m, a: m.squeeze_copy(a[:1], 0),
    "select_copy": lambda m, a: m.select_copy(a, 1, 2),
    "slice_copy": lambda m, a: m.slice_copy(a, 1, 1, 4, 2),
    "expand_copy": lambda m, a: m.expand_copy(a[:1], (2, 3, 4)),
    "view_copy": lambda m, a: m.view_copy(a, (2, 6)),
    "unbind_copy": lambda m, a: m.unbind_copy(a, 1),
    "split_copy": lambda m, a: m.split_copy(a, 2, 1),
    "split_with_sizes_copy": lambda m, a: m.split_with_sizes_copy(a, [2, 1]),
    "alias_copy": lambda m, a: m.alias_copy(a),
    "unfold_copy": lambda m, a: m.unfold_copy(a, 1, 2, 1),
}


def _grads(m: Any, fn: Callable[..., Any], *args: Any) -> tuple[Any, list[Any]]:
    a = m.tensor(A, requires_grad=True)
    b = m.tensor(B, requires_grad=True)
    out = fn(m, a, b, *args)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    total = sum((o * (i + 1)).sum() for i, o in enumerate(outs) if o.requires_grad)
    if not isinstance(total, int):
        total.backward()
    return out, [a.grad, b.grad]


@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_and_grads(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (ours, og), (theirs, tg) = _both(lambda m: _grads(m, VALUES[name]))
    _same(ours, theirs)
    for a, b in zip(og, tg):
        assert (a is None) == (b is None)
        if b is not None:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("name", sorted(COPIES))
def test_view_copies(name: str) -> None:
    (ours, og), (theirs, tg) = _both(lambda m: _grads(m, lambda m_, a, b: COPIES[name](m_, a)))
    _same(ours, theirs)
    outs = ours if isinstance(ours, tuple) else (ours,)
    for o in outs:  # new memory: a write leaves A unchanged
        o.detach().zero_() if o.numel() else None
    np.testing.assert_array_equal(rt.tensor(A).numpy(), A)
    np.testing.assert_allclose(og[0].numpy(), tg[0].numpy())


def test_detach_copy_has_no_derivative() -> None:
    for m in (rt, torch):
        x = m.tensor(A, requires_grad=True)
        y = m.detach_copy(x)
        assert y.requires_grad
        np.testing.assert_array_equal(y.detach().numpy(), A)
        with pytest.raises(RuntimeError, match="derivative for aten::detach_copy is not "
                                               "implemented"):
            y.sum().backward()


def test_gradcheck_scatters() -> None:
    a = rt.tensor(A, requires_grad=True)
    b = rt.tensor(B, requires_grad=True)
    assert rt.autograd.gradcheck(lambda x, y: rt.diagonal_scatter(x, y[1, :3] * 2), (a, b))
    assert rt.autograd.gradcheck(
        lambda x, y: x.index_reduce(0, rt.tensor([0, 2, 0]), y, "prod"), (a, b))
    assert rt.autograd.gradcheck(
        lambda x, y: x.index_reduce(1, rt.tensor([3, 0, 3, 1]), y, "mean"), (a, b))
    assert rt.autograd.gradcheck(lambda x, y: x.sum_to_size(3, 1) * y, (a, b))
    assert rt.autograd.gradcheck(lambda x, y: rt.rsub(x, y, alpha=0.5), (a, b))


def test_index_reduce_inplace() -> None:
    (ours, og), (theirs, tg) = _both(lambda m: _grads(
        m, lambda m_, a, b: (a * 1.0).index_reduce_(0, m_.tensor([0, 2, 0]), b, "amax")))
    _same(ours, theirs)
    assert ours.grad_fn.name() == theirs.grad_fn.name()
    for x, y in zip(og, tg):
        np.testing.assert_allclose(x.numpy(), y.numpy())


def test_errors_as_torch() -> None:
    _error(lambda m: m.tensor(A).sum_to_size(4, 1))
    _error(lambda m: m.tensor(A).sum_to_size(5))
    _error(lambda m: m.tensor(A).index_reduce(0, m.tensor([0]), m.tensor(B[:1]), "sum"))
    _error(lambda m: m.tensor(A).imag)
    _error(lambda m: m.tensor(A).resize(5))
    _error(lambda m: m.tensor(A).diagonal_scatter(m.tensor(B[0])))


def test_predicates() -> None:
    for m in (rt, torch):
        x = m.tensor(A)
        assert x.is_cpu and m.is_same_size(x, x * 2) and not x.is_same_size(x[0])
        assert m.is_signed(x) and not m.tensor([1], dtype=m.uint8).is_signed()
        assert m.tensor([1], dtype=m.int8).is_signed() and not m.tensor([True]).is_signed()
        assert not m.is_conj(x) and not x.is_neg() and not m.is_inference(x)
        assert x.real is x
        with m.inference_mode():
            y = m.ones(2)
        assert m.is_inference(y)


def test_new() -> None:
    for m in (rt, torch):
        x = m.tensor(A)
        assert tuple(x.new().shape) == (0,) and x.new().dtype == m.float64
        assert tuple(x.new(2, 5).shape) == (2, 5) and x.new(2, 5).dtype == m.float64
        assert tuple(x.new(m.Size([2, 3])).shape) == (2, 3)
        assert x.new([1, 2]).tolist() == [1.0, 2.0] and x.new([1, 2]).dtype == m.float64
        assert x.new((2, 3)).tolist() == [2.0, 3.0]


def test_range_deprecated() -> None:
    for args, kwargs in (((0, 3), {}), ((1, 2, 0.25), {}), ((5, 1, -2), {}),
                         ((0, 4), {"dtype": "int64"})):
        outs = []
        for m in (rt, torch):
            kw = {k: getattr(m, v) for k, v in kwargs.items()}
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                outs.append(m.range(*args, **kw))
            assert any("torch.range is deprecated" in str(x.message) for x in w)
        _same(*outs)
    _error(lambda m: m.range(0, 3, 0))
    _error(lambda m: m.range(3, 0, 1))


def test_resize_deprecated() -> None:
    for m in (rt, torch):
        x = m.tensor(A, requires_grad=True)
        with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
            y = x.resize(2, 6)
        with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
            z = x.resize_as(y)
        assert tuple(y.shape) == (2, 6) and tuple(z.shape) == (2, 6)
        (y * 2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.full((3, 4), 2.0))


def test_scalar_tensor_and_empty_strided() -> None:
    for m in (rt, torch):
        assert m.scalar_tensor(1).dtype == m.float32 and m.scalar_tensor(1).ndim == 0
        assert m.scalar_tensor(3, dtype=m.int64).item() == 3
        assert m.scalar_tensor(True).item() == 1.0
        e = m.empty_strided((2, 3), (1, 2))
        assert tuple(e.shape) == (2, 3) and e.stride() == (1, 2)
        e.copy_(m.tensor(A[:2, :3]))
        np.testing.assert_allclose(e.numpy(), A[:2, :3])
        assert m.empty_strided((2, 3), (3, 1), dtype=m.float64).dtype == m.float64


def test_frombuffer_shares_memory() -> None:
    buf = bytearray(np.arange(6, dtype=np.float32).tobytes())
    ours = rt.frombuffer(buf, dtype=rt.float32, count=4, offset=4)
    theirs = torch.frombuffer(bytearray(buf), dtype=torch.float32, count=4, offset=4)
    assert ours.tolist() == theirs.tolist() == [1.0, 2.0, 3.0, 4.0]
    ours[0] = 10.0
    assert np.frombuffer(buf, dtype=np.float32)[1] == 10.0
    with pytest.warns(UserWarning, match="The given buffer is not writable"):
        assert rt.frombuffer(b"\x01\x02", dtype=rt.uint8).tolist() == [1, 2]
    _error(lambda m: m.frombuffer(bytearray(b"\x01\x02\x03"), dtype=m.int16))


def test_asarray() -> None:
    x = rt.tensor(A)
    assert rt.asarray(x) is x
    assert rt.asarray(x, copy=True) is not x
    arr = np.arange(3.0)
    shared = rt.asarray(arr)
    arr[0] = 7.0
    assert shared.tolist() == [7.0, 1.0, 2.0]
    assert rt.asarray(arr, copy=True).tolist() == [7.0, 1.0, 2.0]
    assert rt.asarray([1, 2], dtype=rt.float64).dtype is rt.float64
    y = rt.asarray([1.0, 2.0], requires_grad=True)
    assert y.requires_grad and y.is_leaf
    t = torch.asarray([1, 2])
    assert rt.asarray([1, 2]).dtype is rt.int64 and t.dtype == torch.int64


def test_detach_fill_functions() -> None:
    x = rt.tensor(A, requires_grad=True)
    y = x * 2
    assert not rt.detach(y).requires_grad
    rt.detach_(y)
    assert not y.requires_grad and y.grad_fn is None
    f = rt.fill(x, 1.5)
    assert f.tolist() == torch.fill(torch.tensor(A), 1.5).tolist()


@pytest.mark.parametrize("args", [((3, 2), (4, 1)), ((2, 2), (1, 2), 1), ((2, 3), (4, 1)),
                                  ((4,), (3,), 0)])
def test_as_strided_copy_and_scatter(args: tuple[Any, ...]) -> None:
    results = []
    for m in (rt, torch):
        x = m.arange(12.0, dtype=m.float64).requires_grad_()
        src = m.tensor(np.arange(100.0, 100.0 + np.prod(args[0])).reshape(args[0]),
                       requires_grad=True)
        copy = m.as_strided_copy(x, *args)
        scattered = m.as_strided_scatter(x.detach(), src, *args)
        (copy * m.tensor(B.reshape(-1)[:copy.numel()].reshape(args[0]))).sum().backward()
        (scattered * m.arange(12.0)).sum().backward()
        results.append((copy, scattered, x.grad, src.grad))
    assert copy.grad_fn is not None
    for a, b in zip(results[0], results[1]):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy())


def test_as_strided_copy_overlapping() -> None:
    grads = []
    for m in (rt, torch):
        x = m.arange(12.0, dtype=m.float64).requires_grad_()
        copy = m.as_strided_copy(x, (3, 4), (2, 1))
        (copy * m.tensor(B, dtype=m.float64)).sum().backward()
        grads.append((copy.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0])
    np.testing.assert_allclose(grads[0][1], grads[1][1])


def test_as_strided_scatter_input_gradient() -> None:
    """The derivative: the gradient outside the written elements, zero inside (PyTorch
    2.13's formula gives the written elements' gradient instead, that of src)."""
    x = rt.arange(12.0, dtype=rt.float64).requires_grad_()
    src = rt.zeros(4, dtype=rt.float64, requires_grad=True)
    assert rt.autograd.gradcheck(
        lambda a, b: rt.as_strided_scatter(a * 2.0, b, (4,), (3,), 1), (x, src))
    out = rt.as_strided_scatter(x * 1.0, src.detach(), (4,), (3,), 0)
    (out * rt.arange(12.0)).sum().backward()
    assert x.grad.tolist() == [0.0 if i % 3 == 0 else float(i) for i in range(12)]


def test_as_strided_errors() -> None:
    _error(lambda m: m.as_strided_copy(m.arange(12.0), (5, 5), (3, 3)))
    _error(lambda m: m.as_strided_copy(m.arange(12.0), (2, 2), (1, 2, 3)))
    _error(lambda m: m.as_strided_copy(m.arange(12.0), (2, 2), (1, -2)))
    _error(lambda m: m.as_strided_scatter(m.arange(12.0), m.zeros(2, 3), (2, 3), (0, 1)))
    with pytest.raises(NotImplementedError, match="non-contiguous"):
        rt.as_strided_copy(rt.tensor(A).t(), (2, 2), (1, 2))


def test_apply_map_map2() -> None:
    outs = []
    for m in (rt, torch):
        x = m.tensor([1.0, 2.0, 3.0])
        x.apply_(lambda v: v * 2 + 1)
        x.map_(m.tensor([1.0, 0.0, 2.0]), lambda a, b: a * b)
        x.map2_(m.tensor([1.0]), m.tensor([[2.0, 2.0, 2.0]]).reshape(3), lambda a, b, c: a + b * c)
        i = m.tensor([1, 5])
        i.apply_(lambda v: v / 2)
        outs.append((x.tolist(), x._version, i.tolist()))
    assert outs[0] == outs[1]
    _error(lambda m: m.tensor([1.0], requires_grad=True).apply_(lambda v: v))
    _error(lambda m: (m.tensor([1.0], requires_grad=True) * 1).map_(m.ones(1), lambda a, b: a))


def test_small_methods() -> None:
    for m in (rt, torch):
        x = m.rand(2, 3, 4)
        assert x.dim_order() == (0, 1, 2) and x.permute(2, 0, 1).dim_order() == (1, 2, 0)
        e = x.new_empty_strided((2, 3), (1, 2))
        assert e.stride() == (1, 2) and e.dtype == m.float32
        assert not (x.is_sparse or x.is_meta or x.is_quantized or x.is_nested or x.is_mkldnn)
        assert x.const_data_ptr() == x.data_ptr()
        assert m.conj_physical(x) is x and x.conj_physical() is x and x.conj_physical_() is x
    for size, fill in ((3, -1), (1, -5), (0, 0)):
        ours = rt.nonzero_static(rt.tensor([[0, 1], [1, 1]]), size=size, fill_value=fill)
        theirs = torch.nonzero_static(torch.tensor([[0, 1], [1, 1]]), size=size,
                                      fill_value=fill)
        assert ours.tolist() == theirs.tolist() and tuple(ours.shape) == tuple(theirs.shape)
    _error(lambda m: m.imag(m.tensor(A)))


def test_dlpack_shares_memory() -> None:
    x = rt.arange(4.0)
    theirs = torch.from_dlpack(x)
    theirs[0] = 9.0
    assert x.tolist() == [9.0, 1.0, 2.0, 3.0]
    assert np.from_dlpack(x).tolist() == x.tolist()
    t = torch.arange(3.0)
    ours = rt.from_dlpack(t)
    ours[1] = 5.0
    assert t.tolist() == [0.0, 5.0, 2.0] and ours.dtype is rt.float32
    back = rt.from_dlpack(rt.to_dlpack(x))
    back[2] = 7.0
    assert x[2].item() == 7.0
    copied = rt.from_dlpack(t, copy=True)
    copied[0] = -1.0
    assert t[0].item() == 0.0
    with pytest.raises(RuntimeError, match="Can't export tensors that require gradient"):
        torch.from_dlpack(rt.ones(2, requires_grad=True))


def test_cond_and_while_loop() -> None:
    for m in (rt, torch):
        x = m.arange(3.0)
        assert m.cond(x.sum() > 0, lambda a: a + 1, lambda a: a - 1, (x,)).tolist() == \
            [1.0, 2.0, 3.0]
        assert m.cond(False, lambda a: a + 1, lambda a: a - 1, [x]).tolist() == \
            [-1.0, 0.0, 1.0]
        i, y = m.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2),
                            (m.tensor(0), x))
        assert i.item() == 3 and y.tolist() == [0.0, 8.0, 16.0]
    _error(lambda m: m.cond(m.arange(3.0) > 0, lambda a: a, lambda a: a, (m.ones(1),)))
    _error(lambda m: m.cond("s", lambda a: a, lambda a: a, (m.ones(1),)))
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    rt.cond(True, lambda a: (a * a).sum(), lambda a: a.sum(), (x,)).backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_module_load_pin_memory_name() -> None:
    for m in (rt, torch):
        p = m.zeros(3, requires_grad=True)
        src = m.tensor([1.0, 2.0, 3.0])
        with m.no_grad():
            kept = p.module_load(src)
        assert kept.tolist() == [1.0, 2.0, 3.0] and p.tolist() == [1.0, 2.0, 3.0]
        assert not kept.requires_grad
        assigned = p.module_load(src * 2, assign=True)
        assert assigned.tolist() == [2.0, 4.0, 6.0] and p.tolist() == [1.0, 2.0, 3.0]
        assert src.name is None
    if not rt.cuda.is_available() and not torch.cuda.is_available():
        _error(lambda m: m.ones(2).pin_memory())


def test_empty_permuted() -> None:
    for size, order in (((2, 3, 4), (0, 2, 1)), ((2, 3, 4), (2, 1, 0)), ((5,), (0,))):
        ours = rt.empty_permuted(size, order, dtype=rt.float64, requires_grad=True)
        theirs = torch.empty_permuted(size, order, dtype=torch.float64, requires_grad=True)
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride()
        assert ours.is_leaf and ours.requires_grad and ours.dtype is rt.float64
    _error(lambda m: m.empty_permuted((2, 3), (0, 0)))


def test_to_dense() -> None:
    for m in (rt, torch):
        x = m.ones(2)
        assert x.to_dense() is x and x.to_dense(m.float64).dtype == m.float64


def test_as_subclass() -> None:
    results = []
    for m in (rt, torch):
        sub = type("Sub", (m.Tensor,), {})
        x = m.tensor([1.0, 2.0], requires_grad=True)
        y = x.as_subclass(sub)
        assert type(y) is sub and y._base is x and y.requires_grad and not y.is_leaf
        (y * 3).sum().backward()
        z = m.tensor([1.0, 2.0]).as_subclass(sub)
        z[0] = 5.0
        results.append((x.grad.tolist(), y.grad_fn.name(), z.tolist()))
    assert results[0] == results[1]


def test_untyped_storage() -> None:
    results = []
    for m in (rt, torch):
        x = m.arange(6.0)
        s = x[2:].untyped_storage()
        assert s.data_ptr() == x.data_ptr() == x.t().untyped_storage().data_ptr()
        assert m.ones(2).untyped_storage().data_ptr() != s.data_ptr()
        results.append((s.nbytes(), s.size(), len(s), str(s.device), s.element_size(),
                        s.tolist(), s.is_cuda, s.get_device()))
    assert results[0] == results[1]
    buf = bytearray(8)
    assert rt.frombuffer(buf, dtype=rt.uint8).untyped_storage().nbytes() == 8


def test_typed_storage() -> None:
    from runtime.ops import memory_names

    memory_names._TYPED_STORAGE_WARNED[0] = False
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        rt.ones(1).storage()
    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for m in (rt, torch):
            x = m.arange(6.0)[2:]
            s = x.storage()
            assert s.data_ptr() == x.untyped_storage().data_ptr()
            results.append((s.size(), len(s), str(s.dtype).split(".")[-1], s.tolist(),
                            s.element_size(), s.nbytes(), str(s.device), s.untyped().nbytes()))
    assert results[0] == results[1]
