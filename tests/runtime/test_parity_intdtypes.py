"""The narrow integer dtypes (int32, int16, int8, uint8) and the integer bitwise ops against
PyTorch: dtype objects, promotion (PyTorch's promoteTypes table, scalars, 0-d tensors),
wrap-around arithmetic, int64 sums, conversions and creation, index tensors, checkpoints and
a compiled step. Each test states its expected values by hand and, where torch is importable,
also checks them against torch."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.autograd.gradcheck import gradcheck

INTS = ["uint8", "int8", "int16", "int32", "int64"]
ALL = ["bool", *INTS, "float16", "float32", "float64"]


def _torch() -> Any:
    return pytest.importorskip("torch")


def _dt(m: Any, name: str) -> Any:
    return getattr(m, name)


def _same_as_torch(fn: Callable[[Any], Any]) -> None:
    """fn(rt) and fn(torch) agree: values, dtypes and shapes, or error types and texts."""
    torch = _torch()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = fn(torch)
    except Exception as e:  # noqa: BLE001 - the error itself is compared
        with pytest.raises(type(e)) as got:
            fn(rt)
        assert str(got.value).split("\n")[0] == str(e).split("\n")[0]
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = fn(rt)
    assert got.dtype.name == str(want.dtype).removeprefix("torch."), (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# --- dtype objects ---------------------------------------------------------------------------


def test_dtype_objects_and_aliases() -> None:
    want = {"uint8": (1, False), "int8": (1, True), "int16": (2, True), "int32": (4, True)}
    for name, (size, signed) in want.items():
        d = _dt(rt, name)
        assert (d.name, d.itemsize, d.is_signed, d.is_floating_point) == (name, size, signed,
                                                                          False)
        assert repr(d) == f"runtime.{name}" and rt.as_tensor([1], dtype=d).dtype is d
    assert rt.int is rt.int32 and rt.short is rt.int16 and not rt.bool.is_signed
    assert (rt.iinfo(rt.int32).max, rt.iinfo(rt.uint8).min, rt.iinfo(rt.int8).bits) == (
        2**31 - 1, 0, 8)
    with pytest.raises(TypeError, match="requires a floating point input type"):
        rt.finfo(rt.int32)
    torch = _torch()
    for name in want:
        d, td = _dt(rt, name), _dt(torch, name)
        assert (d.itemsize, d.is_signed, d.is_floating_point) == (
            td.itemsize, td.is_signed, td.is_floating_point)
        assert (rt.iinfo(d).min, rt.iinfo(d).max) == (torch.iinfo(td).min, torch.iinfo(td).max)


# --- promotion -------------------------------------------------------------------------------


def test_promote_types_spot_checks() -> None:
    p = rt.promote_types
    assert p(rt.uint8, rt.int8) is rt.int16 and p(rt.int32, rt.int64) is rt.int64
    assert p(rt.uint8, rt.bool) is rt.uint8 and p(rt.int32, rt.float16) is rt.float16
    assert p(rt.uint8, rt.int16) is rt.int16 and p(rt.int8, rt.int8) is rt.int8
    assert rt.can_cast(rt.int64, rt.uint8) and not rt.can_cast(rt.float16, rt.int8)
    assert not rt.can_cast(rt.uint8, rt.bool)


def test_promote_types_and_can_cast_match_torch_for_every_pair() -> None:
    torch = _torch()
    for a, b in itertools.product(ALL, ALL):
        want = str(torch.promote_types(_dt(torch, a), _dt(torch, b))).removeprefix("torch.")
        assert rt.promote_types(_dt(rt, a), _dt(rt, b)).name == want, (a, b)
        assert rt.can_cast(_dt(rt, a), _dt(rt, b)) == torch.can_cast(_dt(torch, a),
                                                                      _dt(torch, b)), (a, b)


_RESULT_WANT = {  # (tensor dtype, ndim, other) -> result dtype: scalars and 0-d tensors are weak
    ("int32", 1, 5): "int32", ("int32", 1, 2.5): "float32", ("uint8", 1, True): "uint8",
    ("int8", 1, ("int64", 0)): "int8", ("int8", 1, ("float64", 0)): "float64",
    ("bool", 1, ("uint8", 0)): "uint8", ("uint8", 0, ("int8", 0)): "int16",
    ("int16", 1, ("uint8", 1)): "int16", ("bool", 0, 7): "int64",
}


@pytest.mark.parametrize("case", list(_RESULT_WANT), ids=str)
def test_result_type_with_scalars_and_zero_dim_tensors(case: tuple[Any, ...]) -> None:
    name, ndim, other = case

    def fn(m: Any) -> Any:
        t = m.ones((2,) * ndim, dtype=_dt(m, name))
        o = m.ones((2,) * other[1], dtype=_dt(m, other[0])) if isinstance(other, tuple) else other
        return t + o

    assert fn(rt).dtype.name == _RESULT_WANT[case]
    _same_as_torch(fn)


def test_result_type_matches_torch_over_pairs_and_dims() -> None:
    torch = _torch()
    for a, b in itertools.product(ALL, ALL):
        for na, nb in ((1, 1), (1, 0), (0, 1), (0, 0)):
            want = torch.result_type(torch.ones((2,) * na, dtype=_dt(torch, a)),
                                     torch.ones((2,) * nb, dtype=_dt(torch, b)))
            got = rt.result_type(rt.ones((2,) * na, dtype=_dt(rt, a)),
                                 rt.ones((2,) * nb, dtype=_dt(rt, b)))
            assert got.name == str(want).removeprefix("torch."), (a, na, b, nb)
        for s in (True, -3, 2.5):
            want = torch.result_type(torch.ones(2, dtype=_dt(torch, a)), s)
            assert rt.result_type(rt.ones(2, dtype=_dt(rt, a)), s).name == str(
                want).removeprefix("torch."), (a, s)


# --- arithmetic ------------------------------------------------------------------------------


_ARITH = {  # name -> (fn, dtype, operand, PyTorch's values)
    "int8 mul wraps": (lambda x: x * 2, "int8", [100, -100], [-56, 56]),
    "uint8 sub wraps": (lambda x: x - 2, "uint8", [1, 200], [255, 198]),
    "uint8 add -1 wraps": (lambda x: x + (-1), "uint8", [0, 5], [255, 4]),
    "int8 add 300": (lambda x: x + 300, "int8", [1, 2], [45, 46]),
    "uint8 lt -2": (lambda x: x < -2, "uint8", [1, 255], [True, False]),
    "int8 clamp": (lambda x: x.clamp(-5, 5), "int8", [-100, 3], [-5, 3]),
    "int32 floordiv": (lambda x: x // 2, "int32", [-7, 7], [-4, 3]),
    "int32 remainder": (lambda x: x % -3, "int32", [-7, 7], [-1, -2]),
    "int32 fmod": (lambda x: rt.fmod(x, 3) if isinstance(x, rt.Tensor) else x.fmod(3),
                   "int32", [-7, 7], [-1, 1]),
    "int16 truediv": (lambda x: x / 2, "int16", [3, -3], [1.5, -1.5]),
    "int8 neg abs": (lambda x: (-x).abs(), "int8", [-128, 5], [-128, 5]),
    "int16 sign": (lambda x: x.sign(), "int16", [-9, 0, 4], [-1, 0, 1]),
    "int32 trunc div": (lambda x: x.div(2, rounding_mode="trunc"), "int32", [-7, 7], [-3, 3]),
    "int8 tril": (lambda x: x.reshape(2, 2).tril().reshape(-1), "int8", [1, 2, 3, 4],
                  [1, 0, 3, 4]),
}


@pytest.mark.parametrize("name", list(_ARITH))
def test_integer_arithmetic(name: str) -> None:
    fn, dtype, values, want = _ARITH[name]
    got = fn(rt.tensor(values, dtype=_dt(rt, dtype)))
    assert got.tolist() == want
    assert got.dtype is (rt.float32 if "truediv" in name else rt.bool if "lt" in name
                         else _dt(rt, dtype))
    _same_as_torch(lambda m: fn(m.tensor(values, dtype=_dt(m, dtype))))


def test_bool_division_is_torchs_error() -> None:
    b = rt.tensor([True, False])
    with pytest.raises(NotImplementedError, match="div_floor_cpu"):
        _ = b // True
    _same_as_torch(lambda m: m.tensor([True, False]) % True)


# --- reductions and ordering -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32"])
def test_sums_and_products_accumulate_in_int64(dtype: str) -> None:
    x = rt.tensor([100, 100, 27], dtype=_dt(rt, dtype))
    assert x.sum().dtype is rt.int64 and x.sum().item() == 227
    assert x.cumsum(0).tolist() == [100, 200, 227] and x.cumsum(0).dtype is rt.int64
    assert x.prod().item() == 270000 and x.prod().dtype is rt.int64
    s32 = x.sum(dtype=rt.int32)
    assert s32.dtype is rt.int32 and s32.item() == 227
    assert x.cumsum(0, dtype=rt.int16).dtype is rt.int16
    with pytest.raises(RuntimeError, match="could not infer output dtype"):
        x.mean()
    assert x.mean(dtype=rt.float32).item() == pytest.approx(227 / 3)
    for fn in (lambda m, t: t.sum(), lambda m, t: t.cumsum(0), lambda m, t: t.prod(),
               lambda m, t: t.sum(dtype=m.int32), lambda m, t: t.prod(0, dtype=m.int8),
               lambda m, t: t.mean(), lambda m, t: t.any(), lambda m, t: t.all()):
        _same_as_torch(lambda m, fn=fn: fn(m, m.tensor([100, 100, 27], dtype=_dt(m, dtype))))


def test_any_all_of_uint8_are_uint8() -> None:  # PyTorch's legacy rule
    x = rt.tensor([0, 3], dtype=rt.uint8)
    assert x.any().dtype is rt.uint8 and x.any().item() == 1 and x.all().item() == 0
    assert rt.tensor([0, 3], dtype=rt.int8).any().dtype is rt.bool


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32"])
def test_ordering_ops(dtype: str) -> None:
    vals = [5, 1, 9, 1] if dtype == "uint8" else [5, -1, 9, -1]
    x = rt.tensor(vals, dtype=_dt(rt, dtype))
    assert x.max().item() == 9 and x.min().item() == min(vals) and x.argmax().item() == 2
    assert x.sort().values.tolist() == sorted(vals) and x.topk(2).values.tolist() == [9, 5]
    assert x.min().dtype is x.dtype and x.sort().values.dtype is x.dtype
    for fn in (lambda t: t.max(), lambda t: t.min(), lambda t: t.sort(descending=True).values,
               lambda t: t.topk(2).indices, lambda t: t.argmin(), lambda t: t.amax(0),
               lambda t: t.max(0).indices, lambda t: t.unique(), lambda t: rt.maximum(t, t)
               if isinstance(t, rt.Tensor) else t.maximum(t)):
        _same_as_torch(lambda m, fn=fn: fn(m.tensor(vals, dtype=_dt(m, dtype))))


def test_softmax_of_integers_is_torchs_error() -> None:
    x = rt.tensor([[1, 2], [3, 4]], dtype=rt.uint8)
    with pytest.raises(NotImplementedError, match="softmax_kernel_impl.*'Byte'"):
        rt.softmax(x, 0)
    assert rt.softmax(x, 1, dtype=rt.float64).dtype is rt.float64
    _same_as_torch(lambda m: m.log_softmax(m.tensor([[1, 2]], dtype=m.int32), -1))


# --- conversions and creation ----------------------------------------------------------------


def test_conversions_and_type_names() -> None:
    x = rt.tensor([1.7, -2.7, 3.0])
    want = {"int": ("int32", "IntTensor"), "short": ("int16", "ShortTensor"),
            "char": ("int8", "CharTensor"), "byte": ("uint8", "ByteTensor")}
    for method, (name, type_name) in want.items():
        y = getattr(x, method)()
        assert y.dtype.name == name and y.type() == f"runtime.{type_name}"
        assert x.type(f"torch.{type_name}").dtype is y.dtype
    assert x.int().tolist() == [1, -2, 3] and x.to(rt.int16).tolist() == [1, -2, 3]
    assert repr(rt.tensor([1, 2], dtype=rt.int32)) == "tensor([1, 2], dtype=runtime.int32)"
    assert repr(rt.tensor([1, 2])) == "tensor([1, 2])"
    assert [10, 20, 30][rt.tensor(2, dtype=rt.int8)] == 30
    for method in want:
        _same_as_torch(lambda m, method=method: getattr(m.tensor([1.7, -2.7, 3.0]), method)())


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32"])
def test_numpy_arrays_keep_their_dtype(dtype: str) -> None:
    a = np.array([[1, 2], [3, 4]], dtype=dtype)
    for t in (rt.tensor(a), rt.from_numpy(a), rt.as_tensor(a)):
        assert t.dtype is _dt(rt, dtype) and t.numpy().dtype == a.dtype
    assert rt.from_numpy(a).numpy() is not None and np.shares_memory(rt.from_numpy(a).numpy(), a)
    assert rt.tensor(a[0, 0]).dtype is _dt(rt, dtype)  # a numpy scalar too
    assert rt.tensor([1, 2]).dtype is rt.int64  # a list stays int64
    _same_as_torch(lambda m: m.tensor(np.array([1, 2], dtype=dtype)))


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32"])
def test_creation_with_dtype(dtype: str) -> None:
    d = _dt(rt, dtype)
    made = [rt.zeros(2, dtype=d), rt.ones(2, dtype=d), rt.full((2,), 7, dtype=d),
            rt.arange(3, dtype=d), rt.empty(2, dtype=d), rt.randint(0, 5, (4,), dtype=d),
            rt.zeros_like(rt.ones(2), dtype=d), rt.full_like(rt.ones(2, dtype=d), 3),
            rt.tensor([1, 2], dtype=d), rt.eye(2, dtype=d)]
    assert all(t.dtype is d for t in made)
    assert made[3].tolist() == [0, 1, 2] and made[2].tolist() == [7, 7]
    with pytest.raises(RuntimeError, match="without overflow"):
        rt.full((2,), 2**40, dtype=d)
    for fn in (lambda m: m.full((2,), -1, dtype=_dt(m, dtype)),
               lambda m: m.full((2,), 300, dtype=_dt(m, dtype)),
               lambda m: m.zeros(2, dtype=_dt(m, dtype)).fill_(-2.7),
               lambda m: m.arange(1, 10, 3, dtype=_dt(m, dtype)),
               lambda m: m.full_like(m.ones(2, dtype=_dt(m, dtype)), 3.7)):
        _same_as_torch(fn)


def test_uint8_takes_minus_one_as_255() -> None:
    assert rt.full((2,), -1, dtype=rt.uint8).tolist() == [255, 255]
    assert rt.zeros(1, dtype=rt.uint8).fill_(-255).tolist() == [1]
    assert rt.tensor([1, 200], dtype=rt.uint8).clamp(-5, 5).tolist() == [5, 5]  # -5 is 251
    with pytest.raises(RuntimeError, match="cannot be converted to type int8_t"):
        rt.tensor([1], dtype=rt.int8).clamp_(max=300)
    _same_as_torch(lambda m: m.tensor([1, 200], dtype=m.uint8).clamp_(-5, 5))
    _same_as_torch(lambda m: m.tensor([1, 100], dtype=m.int8).clamp(max=300))


def test_integer_tensors_do_not_require_grad() -> None:
    with pytest.raises(RuntimeError, match="floating point"):
        rt.zeros(2, dtype=rt.int32).requires_grad_()
    _same_as_torch(lambda m: m.zeros(2, dtype=m.uint8).requires_grad_())


# --- bitwise ops -----------------------------------------------------------------------------


_BITWISE = {
    "&": (lambda a, b: a & b, [12, 10], [10, 6], [8, 2]),
    "|": (lambda a, b: a | b, [12, 10], [10, 6], [14, 14]),
    "^": (lambda a, b: a ^ b, [12, 10], [10, 6], [6, 12]),
    "<<": (lambda a, b: a << b, [3, 1], [2, 70], [12, 0]),
    ">>": (lambda a, b: a >> b, [-16, 16], [2, 70], [-4, 0]),
}


@pytest.mark.parametrize("op", list(_BITWISE))
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_bitwise_binary(op: str, dtype: str) -> None:
    fn, a, b, want = _BITWISE[op]
    x, y = rt.tensor(a, dtype=_dt(rt, dtype)), rt.tensor(b, dtype=_dt(rt, dtype))
    out = fn(x, y)
    assert out.dtype is x.dtype and out.tolist() == want
    inplace = x.clone()
    getattr(inplace, {"&": "__iand__", "|": "__ior__", "^": "__ixor__", "<<": "__ilshift__",
                      ">>": "__irshift__"}[op])(y)
    assert inplace.tolist() == want
    assert fn(x, 2).dtype is x.dtype and fn(2, x).dtype is x.dtype
    for f in (lambda m: fn(m.tensor(a, dtype=_dt(m, dtype)), m.tensor(b, dtype=_dt(m, dtype))),
              lambda m: fn(m.tensor(a, dtype=_dt(m, dtype)), 3),
              lambda m: fn(5, m.tensor(b, dtype=_dt(m, dtype))),
              lambda m: fn(m.tensor(a, dtype=m.uint8), m.tensor(b, dtype=_dt(m, dtype))),
              lambda m: fn(m.tensor(a, dtype=_dt(m, dtype)), True),
              lambda m: fn(m.ones(2), m.tensor(b, dtype=_dt(m, dtype))),
              lambda m: fn(m.tensor(a, dtype=_dt(m, dtype)), 1.5)):
        _same_as_torch(f)


def test_bitwise_functions_methods_and_not() -> None:
    x = rt.tensor([5, 0], dtype=rt.uint8)
    assert (~x).tolist() == [250, 255] and rt.bitwise_not(rt.tensor([0, -6])).tolist() == [-1, 5]
    assert rt.bitwise_and(x, 4).tolist() == [4, 0] and x.bitwise_or(2).tolist() == [7, 2]
    assert rt.bitwise_left_shift(x, 1).tolist() == [10, 0] and x.bitwise_xor(x).tolist() == [0, 0]
    assert rt.bitwise_right_shift(rt.tensor([-8]), 1).tolist() == [-4]
    y = rt.tensor([6, 3], dtype=rt.int16)
    assert y.bitwise_left_shift_(1) is y and y.tolist() == [12, 6]
    with pytest.raises(TypeError, match="only implemented on integer and Boolean"):
        _ = ~rt.ones(2)
    with pytest.raises(NotImplementedError, match="bitwise_not_cpu"):
        rt.bitwise_not(rt.ones(2))
    with pytest.raises(NotImplementedError, match="lshift_cpu.*'Bool'"):
        _ = rt.tensor([True]) << rt.tensor([True])
    for fn in (lambda m: ~m.tensor([1, -2], dtype=m.int8), lambda m: m.bitwise_not(m.ones(2)),
               lambda m: m.tensor([True, False]) << 1, lambda m: m.tensor(True) << 1,
               lambda m: m.tensor([5, 2]) & True, lambda m: m.tensor([True, False]) ^ 1):
        _same_as_torch(fn)


def test_bitwise_in_place_checks_shape_then_dtype() -> None:
    b = rt.tensor([True, False])
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired "
                                           "output type Bool"):
        b &= rt.tensor([1, 2])
    with pytest.raises(RuntimeError, match=r"output with shape \[\] doesn't match"):
        rt.tensor(1, dtype=rt.int32).__ior__(rt.tensor([1, 2], dtype=rt.int32))
    for fn in (lambda m: m.tensor([True, False]).__iand__(m.ones(2)),
               lambda m: m.tensor(True).__ixor__(m.tensor([1, 2])),
               lambda m: m.tensor([1, 2], dtype=m.int32).__iand__(m.tensor([3, 3]))):
        _same_as_torch(fn)


# --- index tensors ---------------------------------------------------------------------------


def test_int32_index_tensors() -> None:
    x = rt.arange(12.0).reshape(3, 4)
    i = rt.tensor([2, 0], dtype=rt.int32)
    assert x[i].tolist() == [[8, 9, 10, 11], [0, 1, 2, 3]]
    assert x.index_select(1, i).tolist() == [[2, 0], [6, 4], [10, 8]]
    assert x.gather(1, rt.tensor([[3], [0], [1]], dtype=rt.int32)).tolist() == [[3], [4], [9]]
    assert rt.nn.functional.embedding(i, x).tolist() == x[[2, 0]].tolist()
    y = x.clone()
    y[i] = 0.0
    assert y[:, 0].tolist() == [0, 4, 0]
    assert gradcheck(lambda w: rt.nn.functional.embedding(rt.tensor([[1, 1], [0, 2]],
                                                                    dtype=rt.int32), w),
                     (rt.randn(3, 2, dtype=rt.float64, requires_grad=True),))
    X = np.arange(12.0).reshape(3, 4)

    def idx(m: Any, v: Any, d: str) -> Any:
        return m.tensor(v, dtype=_dt(m, d))

    for d in ("int32", "int8", "int16", "uint8"):
        for fn in (lambda m, d=d: m.tensor(X)[idx(m, [2, 0, 1], d)],
                   lambda m, d=d: m.tensor(X)[idx(m, 1, d)],
                   lambda m, d=d: m.tensor(X).index_select(0, idx(m, [1], d)),
                   lambda m, d=d: m.tensor(X).gather(1, idx(m, [[1], [0], [2]], d)),
                   lambda m, d=d: m.tensor(X).scatter_add(1, idx(m, [[1], [0], [2]], d),
                                                          m.ones(3, 1, dtype=m.float64)),
                   lambda m, d=d: m.tensor(X).index_add(0, idx(m, [0, 0], d),
                                                        m.ones(2, 4, dtype=m.float64)),
                   lambda m, d=d: m.nn.functional.embedding(idx(m, [1], d), m.tensor(X)),
                   lambda m, d=d: m.nn.functional.cross_entropy(m.tensor(X), idx(m, [0, 3, 1],
                                                                                 d)),
                   lambda m, d=d: m.take(m.tensor(X), idx(m, [0, 5], d))):
            _same_as_torch(fn)


def test_uint8_index_and_condition_are_deprecated_masks() -> None:
    x = rt.arange(4.0)
    m = rt.tensor([1, 0, 0, 1], dtype=rt.uint8)
    with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
        assert x[m].tolist() == [0.0, 3.0]
    with pytest.warns(UserWarning, match="where received a uint8 condition tensor"):
        assert rt.where(m, x, -1.0).tolist() == [0.0, -1.0, -1.0, 3.0]
    with pytest.raises(IndexError, match="must be long, int, byte or bool"):
        _ = x[rt.tensor([1], dtype=rt.int8)]
    _same_as_torch(lambda m: m.arange(4.0)[m.tensor([1, 0, 0, 1], dtype=m.uint8)])
    _same_as_torch(lambda m: m.where(m.tensor([1, 0], dtype=m.uint8), m.ones(2), 0.0))


def test_class_targets_take_uint8_not_int32() -> None:
    logits = rt.tensor([[2.0, 0.0], [0.0, 2.0]])
    got = rt.nn.functional.nll_loss(logits, rt.tensor([0, 1], dtype=rt.uint8))
    assert got.item() == pytest.approx(-2.0)
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got "
                                           "Int"):
        rt.nn.functional.cross_entropy(logits, rt.tensor([0, 1], dtype=rt.int32))
    _same_as_torch(lambda m: m.nn.functional.nll_loss(m.zeros(2, 3, 1), m.zeros(2, 1,
                                                                              dtype=m.uint8)))


# --- checkpoints and a compiled step ---------------------------------------------------------


def test_checkpoints_keep_integer_dtypes(tmp_path: Any) -> None:
    from runtime import safetensors

    tensors = {n: rt.tensor([[1, 2], [3, -6]], dtype=_dt(rt, n)) for n in INTS[:4]}
    for back in (safetensors.load(safetensors.save(tensors)),
                 (rt.save(tensors, tmp_path / "c.pt"), rt.load(tmp_path / "c.pt"))[1]):
        for n, t in tensors.items():
            assert back[n].dtype is t.dtype and back[n].tolist() == t.tolist()
    header = safetensors.save({"a": tensors["int32"]})
    assert b'"I32"' in header


def test_compiled_step_with_narrow_integers_equals_eager() -> None:
    import planner

    w = rt.randn(10, 3)

    def fn(idx: Any, mask: Any, bits: Any) -> Any:
        h = rt.nn.functional.embedding(idx, w) * mask.unsqueeze(-1)
        return h.sum(1), (bits & 6) | (bits << 1), (mask + 250).sum(), (idx // 3) % 2

    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no fallback to eager
        step = planner.compile(fn)
        for _ in range(2):
            args = (rt.tensor(rng.integers(0, 10, (4, 5)).astype(np.int32)),
                    rt.tensor(rng.integers(0, 2, (4, 5)).astype(np.uint8)),
                    rt.tensor(rng.integers(-50, 50, (6,))))
            for got, want in zip(step(*args), fn(*args), strict=True):
                assert got.dtype is want.dtype
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_int32_outputs_and_byte_states() -> None:
    got = rt.searchsorted(rt.tensor([1, 3, 5]), rt.tensor([2, 6]), out_int32=True)
    assert got.dtype is rt.int32 and got.tolist() == [1, 3]
    assert rt.bucketize(rt.tensor([2, 6]), rt.tensor([1, 3, 5]), right=True).dtype is rt.int64
    state = rt.get_rng_state()
    assert state.dtype is rt.uint8 and state.shape == (5056,)
    _same_as_torch(lambda m: m.bucketize(m.tensor([2, 6]), m.tensor([1, 3, 5]), out_int32=True))
    assert str(_torch().get_rng_state().dtype) == "torch.uint8"


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint8"])
def test_integer_max_pool_and_hardtanh_keep_the_dtype(dtype: str) -> None:
    a = np.array([[[[-5, -3, -9], [-7, -1, -2], [-4, -8, -6]]]])
    a = np.abs(a) if dtype == "uint8" else a

    def pool(m: Any) -> Any:  # padded windows of negative values: the pad is the dtype's min
        return m.nn.functional.max_pool2d(m.tensor(a, dtype=_dt(m, dtype)), 2, padding=1)

    got = pool(rt)
    assert got.dtype is _dt(rt, dtype)
    assert got.reshape(-1).tolist() == ([5, 9, 7, 8] if dtype == "uint8" else [-5, -3, -4, -1])
    relu6 = rt.nn.functional.relu6(rt.tensor([7, 3], dtype=_dt(rt, dtype)))
    assert relu6.dtype is _dt(rt, dtype) and relu6.tolist() == [6, 3]
    _same_as_torch(pool)
    _same_as_torch(lambda m: m.nn.functional.hardtanh(m.tensor([5, 1], dtype=_dt(m, dtype)),
                                                      0.5, 2.5))
    _same_as_torch(lambda m: m.nn.functional.hardtanh(m.tensor([5, 1], dtype=_dt(m, dtype))))


def test_tile_takes_sizes() -> None:
    x = rt.tensor([1, 2], dtype=rt.int16)
    assert x.tile(2).tolist() == [1, 2, 1, 2] and x.tile(2, 1).shape == (2, 2)
    assert rt.tile(x, (2,)).tolist() == [1, 2, 1, 2]
    _same_as_torch(lambda m: m.tensor([[1, 2]], dtype=m.int16).tile(2))


def test_float_to_integer_casts_wrap_and_are_silent() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "invalid value encountered in cast"
        nan = rt.tensor([float("nan"), 2.9, -2.9]).int()
    assert nan.dtype is rt.int32 and nan.tolist()[1:] == [2, -2]
    assert rt.tensor([300.0, -1.0, 2.9]).char().tolist() == [44, -1, 2]
    assert rt.tensor([70000.0]).short().tolist() == [4464]
    _same_as_torch(lambda m: m.tensor([300.0, -1.0, 70000.5]).to(m.int16))
    _same_as_torch(lambda m: m.tensor([float("nan"), 1e10]).int())


def test_where_converts_int_operands_checked() -> None:
    c = rt.tensor([True, False])
    assert rt.where(c, -1, rt.tensor([1, 2], dtype=rt.uint8)).tolist() == [255, 2]
    with pytest.raises(RuntimeError, match="cannot be converted to type int without overflow"):
        rt.where(c, 2**40, rt.tensor([1, 2], dtype=rt.int32))
    _same_as_torch(lambda m: m.where(m.tensor([True, False]), m.tensor([1, 2], dtype=m.int8),
                                     200))
    _same_as_torch(lambda m: m.where(m.tensor([True, False]), m.tensor([1, 2], dtype=m.int8), 7))


def test_python_numbers_convert_into_integer_dtypes_checked() -> None:
    assert rt.tensor([-1, 5], dtype=rt.uint8).tolist() == [255, 5]
    assert rt.tensor([1.7, -2.7], dtype=rt.int8).tolist() == [1, -2]
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8 without "
                                           "overflow"):
        rt.tensor([300], dtype=rt.uint8)
    assert rt.tensor(np.array([300]), dtype=rt.uint8).tolist() == [44]  # arrays cast as numpy
    for data, d in (([2**40], "int32"), ([-200], "uint8"), ([-2.5], "uint8"),
                    ([float("nan")], "int16"), ([[1, 300.5]], "int8"), ([2**63], "int64"),
                    ([-255], "uint8")):
        _same_as_torch(lambda m, data=data, d=d: m.tensor(data, dtype=_dt(m, d)))


def test_bitwise_not_in_place_and_is_signed() -> None:
    x = rt.tensor([1, 2], dtype=rt.uint8)
    assert x.bitwise_not_() is x and x.tolist() == [254, 253]
    assert not x.is_signed() and rt.ones(1).is_signed() and rt.tensor([1]).int().is_signed()
    _same_as_torch(lambda m: m.tensor([1, -2], dtype=m.int16).bitwise_not_())
    assert _torch().ones(1, dtype=_torch().uint8).is_signed() is x.is_signed()


def test_index_put_accumulates_at_int32_indices() -> None:
    x = rt.zeros(4).index_put_((rt.tensor([1, 1, 3], dtype=rt.int32),), rt.tensor([1.0, 2, 3]),
                               accumulate=True)
    assert x.tolist() == [0.0, 3.0, 0.0, 3.0]
    _same_as_torch(lambda m: m.zeros(4).index_put_((m.tensor([1, 1, 3], dtype=m.int32),),
                                                   m.tensor([1.0, 2, 3]), accumulate=True))
    _same_as_torch(lambda m: m.zeros(4).index_put((m.tensor([1, 0, 0, 1], dtype=m.uint8),),
                                                  m.tensor(5.0), accumulate=True))


def test_lerp_of_integers_is_torchs_error() -> None:
    with pytest.raises(NotImplementedError, match="lerp_kernel_scalar.*'Int'"):
        rt.lerp(rt.tensor([1, 2], dtype=rt.int32), rt.tensor([3, 4], dtype=rt.int32), 0.5)
    _same_as_torch(lambda m: m.lerp(m.tensor([1, 2], dtype=m.uint8), m.tensor([3, 4],
                                                                             dtype=m.uint8), 0.5))


def test_addcmul_multiplies_integer_factors_in_the_result_dtype() -> None:
    i = rt.tensor([100, 100], dtype=rt.int8)
    assert rt.addcmul(rt.zeros(2), i, i).tolist() == [10000.0, 10000.0]  # not int8's 16
    t, t2 = (rt.randn(2, dtype=rt.float64, requires_grad=True) for _ in range(2))
    assert gradcheck(lambda a, b: rt.addcmul(a, i, b, value=0.5), (t, t2))
    _same_as_torch(lambda m: m.addcmul(m.zeros(2), m.tensor([100, 7], dtype=m.int8),
                                       m.tensor([3, 3], dtype=m.int8)))
