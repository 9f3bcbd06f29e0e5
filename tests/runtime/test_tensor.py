"""Tensor-level tests: dtype promotion, constructors, devices, conversions,
storage sharing and version counters."""

from __future__ import annotations

import importlib.util
import operator

import numpy as np
import pytest

import runtime as rt


def _t(vals, dt):
    return rt.tensor(vals, dtype=getattr(rt, dt))


# ---------------------------------------------------------------- promotion
# (lhs dtype, rhs dtype-or-python-scalar, op, expected dtype); matches torch 2.x
PROMOTION = [
    ("int64", 2.5, "mul", "float32"),
    ("int64", 2.5, "add", "float32"),
    ("int64", 1, "add", "int64"),
    ("int64", True, "add", "int64"),
    ("float32", 2.5, "mul", "float32"),
    ("float32", 2, "mul", "float32"),
    ("float64", 2.5, "mul", "float64"),
    ("bool", 1, "add", "int64"),
    ("bool", 2.5, "mul", "float32"),
    ("bool", True, "add", "bool"),
    ("float32", "float64", "add", "float64"),
    ("float64", "float32", "mul", "float64"),
    ("int64", "float32", "add", "float32"),
    ("float32", "int64", "sub", "float32"),
    ("int64", "float64", "mul", "float64"),
    ("bool", "bool", "add", "bool"),
    ("bool", "int64", "add", "int64"),
    ("bool", "float32", "mul", "float32"),
    ("int64", "int64", "add", "int64"),
    ("int64", "int64", "mul", "int64"),
    ("int64", "int64", "truediv", "float32"),
    ("int64", 2, "truediv", "float32"),
    ("float64", "int64", "truediv", "float64"),
]


@pytest.mark.parametrize(("lhs", "rhs", "op", "expected"), PROMOTION)
def test_promotion(lhs, rhs, op, expected):
    f = getattr(operator, op)
    a = _t([True, False, True] if lhs == "bool" else [1, 2, 3], lhs)
    b = _t([True, True, False] if rhs == "bool" else [2, 1, 4], rhs) if isinstance(rhs, str) else rhs
    out = f(a, b)
    assert out.dtype == getattr(rt, expected)
    assert out.dtype.name == expected
    # numeric value agrees with float64 arithmetic
    ref = f(np.asarray(a.numpy(), dtype=np.float64), np.asarray(b.numpy() if isinstance(rhs, str) else rhs, dtype=np.float64))
    if expected == "bool":
        ref = ref != 0
    np.testing.assert_allclose(out.numpy().astype(np.float64), ref, rtol=1e-6)


@pytest.mark.parametrize(("lhs", "rhs", "op", "expected"), PROMOTION)
def test_promotion_matches_torch(lhs, rhs, op, expected):
    torch = pytest.importorskip("torch")
    f = getattr(operator, op)
    tdt = {"bool": torch.bool, "int64": torch.int64, "float32": torch.float32, "float64": torch.float64}
    a = torch.tensor([True, False, True] if lhs == "bool" else [1, 2, 3], dtype=tdt[lhs])
    b = torch.tensor([True, True, False] if rhs == "bool" else [2, 1, 4], dtype=tdt[rhs]) if isinstance(rhs, str) else rhs
    assert str(f(a, b).dtype) == f"torch.{expected}"


# (lhs dtype and shape, rhs: a dtype and shape, or a numpy scalar); zero-dim tensors and
# numpy scalars count only where they are of a higher category, as in torch
ZERO_DIM = [
    (("float32", (3,)), ("float64", ()), "float32"),
    (("float16", (3,)), ("float32", ()), "float16"),
    (("int64", (3,)), ("float64", ()), "float64"),
    (("bool", (3,)), ("int64", ()), "int64"),
    (("float32", ()), ("float64", ()), "float64"),
    (("int64", ()), ("float32", (2,)), "float32"),
    (("float32", (3,)), np.float64(2.5), "float32"),
    (("float16", (3,)), np.float64(2.5), "float16"),
    (("float32", (3,)), np.int64(2), "float32"),
    (("int64", (3,)), np.float64(2.5), "float32"),
    (("int64", (3,)), np.int32(2), "int64"),
    (("float64", ()), 2.5, "float64"),
]


def _zero_dim_operand(spec, lib):
    if not isinstance(spec, tuple):
        return spec
    dtype, shape = spec
    value = np.full(shape, True if dtype == "bool" else 2, dtype=dtype)
    return lib.tensor(value.tolist(), dtype=getattr(lib, dtype))


@pytest.mark.parametrize(("lhs", "rhs", "expected"), ZERO_DIM)
@pytest.mark.parametrize("op", ["add", "mul"])
def test_zero_dim_tensors_and_numpy_scalars_promote_as_in_torch(lhs, rhs, expected, op):
    f = getattr(operator, op)
    out = f(_zero_dim_operand(lhs, rt), _zero_dim_operand(rhs, rt))
    assert out.dtype.name == expected
    if not isinstance(rhs, tuple):
        assert f(_zero_dim_operand(rhs, rt), _zero_dim_operand(lhs, rt)).dtype.name == expected
    if importlib.util.find_spec("torch") is not None:
        import torch

        got = f(_zero_dim_operand(lhs, torch), _zero_dim_operand(rhs, torch)).dtype
        assert str(got) == f"torch.{expected}"


def test_a_numpy_scalar_keeps_a_float32_step_float32_when_compiled():
    import planner

    w = rt.ones(2, 2, requires_grad=True)

    def step(x):
        loss = ((x / np.sqrt(2.0)) @ w * np.float32(3.0)).sum()
        (g,) = rt.autograd.grad(loss, [w])
        return loss, g

    x = rt.ones(4, 2)
    loss, g = planner.compile(step)(x)
    want_loss, want_g = step(x)
    assert loss.dtype == g.dtype == rt.float32
    np.testing.assert_allclose(loss.item(), want_loss.item(), rtol=1e-6)
    np.testing.assert_allclose(g.numpy(), want_g.numpy(), rtol=1e-6)


def test_reverse_scalar_ops_promote():
    x = rt.tensor([1, 2, 3])
    assert (2.5 * x).dtype == rt.float32
    assert (1 - x).dtype == rt.int64
    assert (1.0 / x).dtype == rt.float32
    np.testing.assert_allclose((1.0 / x).numpy(), [1.0, 0.5, 1 / 3], rtol=1e-6)


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparisons_return_bool(op):
    f = getattr(operator, op)
    i = rt.tensor([1, 2, 3])
    x = rt.tensor([1.5, 2.0, 0.5], requires_grad=True)
    for out, ref in (
        (f(i, x), f(np.array([1, 2, 3]), np.array([1.5, 2.0, 0.5], dtype=np.float32))),
        (f(x, 2), f(np.array([1.5, 2.0, 0.5]), 2)),
        (f(i, 2.0), f(np.array([1, 2, 3]), 2.0)),
    ):
        assert out.dtype == rt.bool
        assert not out.requires_grad
        np.testing.assert_array_equal(out.numpy(), ref)


def test_int_float_mixed_values():
    i = rt.tensor([1, 2, 3])
    x = rt.tensor([0.5, 0.25, 2.0])
    np.testing.assert_allclose((i * x).numpy(), [0.5, 0.5, 6.0])
    np.testing.assert_allclose((i + x).numpy(), [1.5, 2.25, 5.0])
    assert (i * x).dtype == rt.float32


# ---------------------------------------------------------------- dtype objects
def test_dtype_objects():
    assert rt.float32.name == "float32" and rt.float32.np == np.dtype(np.float32)
    assert rt.float64.is_floating_point and rt.float32.is_floating_point
    assert not rt.int64.is_floating_point and not rt.bool.is_floating_point
    assert rt.bool.np == np.dtype(np.bool_)
    assert rt.int64.np == np.dtype(np.int64)


# ---------------------------------------------------------------- constructors
def test_tensor_default_dtypes():
    assert rt.tensor([1.0, 2.0]).dtype == rt.float32
    assert rt.tensor([1, 2]).dtype == rt.int64
    assert rt.tensor([True, False]).dtype == rt.bool
    assert rt.tensor(3.0).shape == ()
    assert rt.tensor(3.0).ndim == 0
    assert rt.tensor([[1.0, 2.0], [3.0, 4.0]]).shape == (2, 2)
    assert rt.tensor([1, 2], dtype=rt.float64).dtype == rt.float64
    assert rt.tensor([1, 2], dtype=np.float64).dtype == rt.float64
    assert rt.tensor([1.0], requires_grad=True).requires_grad
    assert rt.tensor([1.0]).device == "cpu"


def test_tensor_copies_input():
    a = np.array([1.0, 2.0], dtype=np.float32)
    t = rt.tensor(a)
    a[0] = 100.0
    assert t.numpy()[0] == 1.0


def test_zeros_ones_full_empty():
    z = rt.zeros(2, 3)
    assert z.shape == (2, 3) and z.dtype == rt.float32 and not np.any(z.numpy())
    assert rt.zeros((2, 3)).shape == (2, 3)
    assert rt.zeros(4, dtype=rt.int64).dtype == rt.int64
    assert rt.zeros(2, dtype=np.float64).dtype == rt.float64
    o = rt.ones(3, 1, dtype=rt.float64)
    assert o.shape == (3, 1) and o.dtype == rt.float64 and np.all(o.numpy() == 1)
    assert rt.ones((2,)).shape == (2,)
    assert rt.ones(2, requires_grad=True).requires_grad
    f = rt.full((2, 2), 7.0)
    assert f.shape == (2, 2) and f.dtype == rt.float32 and np.all(f.numpy() == 7.0)
    assert rt.full((2,), 3).dtype == rt.int64
    assert rt.full((2,), True).dtype == rt.bool
    assert rt.full((2,), 3, dtype=rt.float64).dtype == rt.float64
    assert rt.empty(2, 3).shape == (2, 3)
    assert rt.empty(2, 3).dtype == rt.float32


def test_arange():
    a = rt.arange(5)
    assert a.dtype == rt.int64
    np.testing.assert_array_equal(a.numpy(), np.arange(5))
    np.testing.assert_array_equal(rt.arange(2, 7).numpy(), np.arange(2, 7))
    np.testing.assert_array_equal(rt.arange(0, 10, 3).numpy(), [0, 3, 6, 9])
    b = rt.arange(0.0, 1.0, 0.25)
    assert b.dtype == rt.float32
    np.testing.assert_allclose(b.numpy(), [0.0, 0.25, 0.5, 0.75])
    assert rt.arange(3, dtype=rt.float64).dtype == rt.float64


def test_randn_rand_seeded_reproducible():
    rt.manual_seed(123)
    a = rt.randn(3, 4)
    rt.manual_seed(123)
    b = rt.randn(3, 4)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert a.dtype == rt.float32 and a.shape == (3, 4)
    c = rt.randn(3, 4)
    assert not np.array_equal(a.numpy(), c.numpy())
    g1 = rt.Generator().manual_seed(5)
    g2 = rt.Generator().manual_seed(5)
    np.testing.assert_array_equal(rt.randn(6, generator=g1).numpy(), rt.randn(6, generator=g2).numpy())
    g3 = rt.Generator().manual_seed(6)
    assert not np.array_equal(rt.randn(6, generator=g1).numpy(), rt.randn(6, generator=g3).numpy())
    assert rt.randn(2, dtype=rt.float64).dtype == rt.float64
    rt.manual_seed(7)
    u = rt.rand(1000)
    assert u.dtype == rt.float32
    assert u.numpy().min() >= 0.0 and u.numpy().max() < 1.0
    rt.manual_seed(7)
    np.testing.assert_array_equal(rt.rand(1000).numpy(), u.numpy())


def test_generator_does_not_touch_global_stream():
    rt.manual_seed(0)
    a = rt.randn(4)
    rt.manual_seed(0)
    rt.randn(4, generator=rt.Generator().manual_seed(99))
    b = rt.randn(4)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_from_numpy_shares_memory():
    arr = np.zeros(3)
    t = rt.from_numpy(arr)
    assert t.dtype == rt.float64
    arr[0] = 5.0
    assert t[0].item() == 5.0
    t.add_(1.0)
    np.testing.assert_array_equal(arr, [6.0, 1.0, 1.0])
    assert rt.from_numpy(np.arange(3)).dtype == rt.int64


def test_like_constructors():
    x = rt.tensor([[1.0, 2.0, 3.0]], dtype=rt.float64)
    z = rt.zeros_like(x)
    assert z.shape == (1, 3) and z.dtype == rt.float64 and not np.any(z.numpy())
    o = rt.ones_like(rt.tensor([1, 2]))
    assert o.dtype == rt.int64 and np.all(o.numpy() == 1)


# ---------------------------------------------------------------- devices / conversions
@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy installed")
def test_to_cuda_without_cupy_raises():
    x = rt.ones(2)
    with pytest.raises(RuntimeError, match="CuPy"):
        x.to("cuda")
    with pytest.raises(RuntimeError, match="CuPy"):
        x.cuda()
    with pytest.raises(RuntimeError, match="CuPy"):
        rt.zeros(2, device="cuda")


def test_to_cpu_and_dtype():
    x = rt.tensor([1.5, 2.5])
    assert x.to("cpu").device == "cpu"
    assert x.cpu().device == "cpu"
    y = x.to(rt.float64)
    assert y.dtype == rt.float64
    np.testing.assert_array_equal(y.numpy(), [1.5, 2.5])
    assert x.long().dtype == rt.int64
    np.testing.assert_array_equal(x.long().numpy(), [1, 2])
    assert rt.tensor([1, 2]).float().dtype == rt.float32
    assert rt.tensor([1, 2]).double().dtype == rt.float64


def test_numpy_item_tolist():
    x = rt.tensor([[1.0, 2.0], [3.0, 4.0]])
    a = x.numpy()
    assert isinstance(a, np.ndarray) and a.dtype == np.float32 and a.shape == (2, 2)
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    s = x.sum()
    assert isinstance(s.item(), float) and s.item() == 10.0
    assert isinstance(rt.tensor(3).item(), int)
    assert isinstance(rt.tensor(True).item(), bool)
    assert rt.tensor([[7.0]]).item() == 7.0
    with pytest.raises((ValueError, RuntimeError)):
        x.item()


def test_numpy_on_requires_grad_raises_like_torch():
    x = rt.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError):
        x.numpy()
    assert x.detach().numpy()[0] == 1.0


def test_size_numel_dim():
    x = rt.zeros(2, 3, 4)
    assert x.size() == (2, 3, 4)
    assert x.size(1) == 3 and x.size(-1) == 4
    assert x.numel() == 24 and x.dim() == 3 and x.ndim == 3


# ---------------------------------------------------------------- storage sharing / versions
def test_detach_shares_storage_and_version():
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    v0 = y._version
    d.add_(1.0)
    np.testing.assert_array_equal(y.detach().numpy(), [3.0, 5.0, 7.0])
    assert y._version == d._version == v0 + 1


def test_data_is_detached_alias():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    d = x.data
    assert not d.requires_grad
    d.mul_(3.0)
    np.testing.assert_array_equal(x.detach().numpy(), [3.0, 6.0])


@pytest.mark.parametrize(
    "make_view",
    [
        lambda x: x[1:],
        lambda x: x[:, ::2],
        lambda x: x[0],
        lambda x: x.view(12),
        lambda x: x.reshape(4, 3),
        lambda x: x.t(),
        lambda x: x.transpose(0, 1),
        lambda x: x.permute(1, 0),
        lambda x: x.unsqueeze(0),
        lambda x: x[None, ..., 1:],
    ],
)
def test_views_share_storage_and_version(make_view):
    x = rt.tensor(np.arange(12.0).reshape(3, 4), dtype=rt.float64)
    v = make_view(x)
    before = x.numpy().copy()
    v0 = x._version
    v.add_(1.0)
    assert x._version == v._version == v0 + 1
    assert x.numpy().sum() == before.sum() + v.numel()
    x.mul_(2.0)
    assert v._version == x._version == v0 + 2


def test_clone_does_not_share():
    x = rt.tensor([1.0, 2.0])
    c = x.clone()
    c.add_(1.0)
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    assert x._version == 0


def test_inplace_on_leaf_requiring_grad_raises():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        x.add_(1.0)
    with rt.no_grad():
        x.add_(1.0)
    np.testing.assert_array_equal(x.detach().numpy(), [2.0, 3.0])


def test_setitem_inplace():
    x = rt.zeros(3, 4)
    x[1] = 5.0
    x[:, 0] = rt.tensor([1.0, 2.0, 3.0])
    ref = np.zeros((3, 4), dtype=np.float32)
    ref[1] = 5.0
    ref[:, 0] = [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(x.numpy(), ref)
    assert x._version >= 2


def test_setitem_gradient_flows():
    a = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = rt.tensor([10.0], requires_grad=True)
    y = a * 1.0
    y[1:2] = b * 2.0
    (y * rt.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [1.0, 0.0, 3.0])
    np.testing.assert_array_equal(b.grad.numpy(), [4.0])
