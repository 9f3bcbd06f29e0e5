"""dtypes against PyTorch: result dtypes of ops on integer and bool tensors, scalar
conversions, and the errors PyTorch raises. Each test states its expected values by hand and,
where torch is importable, also checks them against torch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

DTYPES = ["bool", "int64", "float16", "float32", "float64"]


def _torch() -> Any:
    return pytest.importorskip("torch")


def _same_as_torch(fn: Callable[[Any], Any]) -> None:
    """fn(rt) and fn(torch) agree: values, dtypes and shapes, or error types and texts."""
    torch = _torch()
    try:
        want = fn(torch)
    except Exception as e:  # noqa: BLE001 - the error itself is compared
        with pytest.raises(type(e)) as got:
            fn(rt)
        assert str(got.value).split("\n")[0] == str(e).split("\n")[0]
        return
    got = fn(rt)
    assert got.dtype.name == str(want.dtype).removeprefix("torch."), (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# --- masked_fill keeps its input's dtype ----------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("value", [2.5, -2.5, True, 3, float("nan")])
def test_masked_fill_scalar_keeps_dtype(dtype: str, value: Any) -> None:
    def fn(m: Any) -> Any:
        return m.zeros(3, dtype=getattr(m, dtype)).masked_fill(
            m.tensor([True, False, True]), value)

    if dtype == "int64" and value != value:
        with pytest.raises(RuntimeError, match="cannot be converted to type int64_t"):
            fn(rt)
    else:
        assert fn(rt).dtype is getattr(rt, dtype)
    _same_as_torch(fn)


def test_masked_fill_converts_the_value_toward_zero() -> None:
    mask = rt.tensor([True, False])
    assert rt.zeros(2, dtype=rt.int64).masked_fill(mask, -2.7).tolist() == [-2, 0]
    assert rt.zeros(2, dtype=rt.bool).masked_fill(mask, 0.5).tolist() == [True, False]
    big = rt.full((2,), 2**60 + 1).masked_fill(rt.tensor([False, True]), 1.5)
    assert big.tolist() == [2**60 + 1, 1]  # the unmasked int64 values stay exact


# --- clamp of an integer tensor with float bounds ---------------------------------------------


@pytest.mark.parametrize("dtype", ["bool", "int64", "float16", "float64"])
@pytest.mark.parametrize("bounds", [(0.5, 1.5), (0, 1), (None, 2.5), (-1, None)])
def test_clamp_promotes_as_torch(dtype: str, bounds: tuple[Any, Any]) -> None:
    def fn(m: Any) -> Any:
        return m.tensor([0, 1, 2]).to(getattr(m, dtype)).clamp(*bounds)

    out = fn(rt)
    floaty = any(isinstance(b, float) for b in bounds)
    if dtype in ("bool", "int64"):
        assert out.dtype is (rt.float32 if floaty else rt.int64)
    if bounds == (0.5, 1.5) and dtype == "int64":
        assert out.tolist() == [0.5, 1.0, 1.5]
    _same_as_torch(fn)


# --- mean: floating point only, and its dtype= ------------------------------------------------


@pytest.mark.parametrize("dtype", ["bool", "int64"])
def test_mean_of_integers_is_an_error(dtype: str) -> None:
    name = {"bool": "Bool", "int64": "Long"}[dtype]
    with pytest.raises(RuntimeError, match=f"Input dtype must be either a floating point or "
                                           f"complex dtype. Got: {name}"):
        rt.tensor([1, 0]).to(getattr(rt, dtype)).mean()
    _same_as_torch(lambda m: m.tensor([1, 0]).to(getattr(m, dtype)).mean())
    _same_as_torch(lambda m: m.tensor([[1, 0]]).to(getattr(m, dtype)).mean(-1))


def test_mean_dtype() -> None:
    out = rt.tensor([1, 2]).mean(dtype=rt.float64)
    assert out.dtype is rt.float64 and out.item() == 1.5
    out = rt.mean(rt.tensor([[1.0, 2.0]]), (0, 1), True, dtype=rt.float16)
    assert out.dtype is rt.float16 and out.shape == (1, 1)
    with pytest.raises(RuntimeError, match="Optional dtype must be .* Got: Long"):
        rt.tensor([1.0]).mean(dtype=rt.int64)
    _same_as_torch(lambda m: m.tensor([[1, 2], [4, 7]]).mean(0, dtype=m.float64))
    _same_as_torch(lambda m: m.tensor([1.0]).mean(dtype=m.int64))


# --- & | ^ of masks, fmax/fmin ----------------------------------------------------------------


_MASK_OPS = {"&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b}
_MASK_WANT = {"&": [True, False, False, False], "|": [True, True, True, False],
              "^": [False, True, True, False]}


@pytest.mark.parametrize("op", sorted(_MASK_OPS))
def test_bool_bitwise_operators(op: str) -> None:
    fn = _MASK_OPS[op]

    def masks(m: Any) -> tuple[Any, Any]:
        return m.tensor([True, True, False, False]), m.tensor([True, False, True, False])

    a, b = masks(rt)
    out = fn(a, b)
    assert out.dtype is rt.bool and out.tolist() == _MASK_WANT[op]
    assert fn(a, True).tolist() == fn(a, rt.ones(4, dtype=rt.bool)).tolist()
    assert fn(False, a).tolist() == fn(rt.zeros(4, dtype=rt.bool), a).tolist()
    inplace = a.clone()
    getattr(inplace, {"&": "__iand__", "|": "__ior__", "^": "__ixor__"}[op])(b)
    assert inplace.tolist() == _MASK_WANT[op]
    _same_as_torch(lambda m: fn(*masks(m)))
    _same_as_torch(lambda m: fn(masks(m)[0], True))
    _same_as_torch(lambda m: fn(False, masks(m)[1]))
    _same_as_torch(lambda m: fn(masks(m)[0], 2.5))  # PyTorch's NotImplementedError for Float
    _same_as_torch(lambda m: fn(m.ones(2), m.ones(2)))


def test_bitwise_methods_and_integers() -> None:
    a, b = rt.tensor([True, False]), rt.tensor([True, True])
    assert a.bitwise_and(b).tolist() == [True, False]
    assert a.bitwise_or(b).tolist() == [True, True]
    assert a.bitwise_xor(b).tolist() == [False, True]
    assert a.logical_and(b).tolist() == [True, False]
    out = rt.tensor([6, 3]) & rt.tensor([3, 3])  # integers: bitwise (more in
    assert out.dtype is rt.int64 and out.tolist() == [2, 3]  # test_parity_intdtypes.py)
    out = a & 1  # PyTorch's result is int64 here
    assert out.dtype is rt.int64 and out.tolist() == [1, 0]


def test_bool_bitwise_compiled_equals_eager() -> None:
    import planner

    def fn(p: Any, q: Any) -> Any:
        return ((p > 0.5) & (q < 0.5)) | (p > 0.9), (p > 0.5) ^ True

    step = planner.compile(fn)
    rng = np.random.default_rng(0)
    for _ in range(2):
        p, q = rt.tensor(rng.random(8)), rt.tensor(rng.random(8))
        for got, want in zip(step(p, q), fn(p, q)):
            assert got.dtype is rt.bool and got.tolist() == want.tolist()


_NAN = float("nan")


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_fmin_ignore_one_nan(name: str) -> None:
    xs, ys = [1.0, _NAN, -np.inf, 3.0, _NAN, 2.0], [_NAN, 2.0, 0.0, -3.0, _NAN, 2.0]
    out = getattr(rt.tensor(xs), name)(rt.tensor(ys)).tolist()
    want = {"fmax": [1.0, 2.0, 0.0, 3.0, _NAN, 2.0], "fmin": [1.0, 2.0, -np.inf, -3.0, _NAN, 2.0]}
    np.testing.assert_array_equal(out, want[name])
    for dt in ("float32", "float16"):
        _same_as_torch(lambda m: getattr(m.tensor(xs, dtype=getattr(m, dt)), name)(
            m.tensor(ys, dtype=getattr(m, dt))))


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_fmin_gradients(name: str) -> None:
    from runtime.ops import extra_ops

    fn = getattr(extra_ops, name)
    rng = np.random.default_rng(1)
    x, y = (rt.tensor(rng.random(5), dtype=rt.float64, requires_grad=True) for _ in range(2))
    assert rt.autograd.gradcheck(fn, (x, y))
    # ties and NaNs: all to the first argument, as PyTorch's
    a = rt.tensor([2.0, 3.0, _NAN], dtype=rt.float64, requires_grad=True)
    b = rt.tensor([2.0, _NAN, 1.0], dtype=rt.float64, requires_grad=True)
    fn(a, b).sum().backward()
    assert a.grad.tolist() == [1.0, 1.0, 0.0] and b.grad.tolist() == [0.0, 0.0, 1.0]
    torch = _torch()
    ta, tb = (torch.tensor(t.detach().numpy(), requires_grad=True) for t in (a, b))
    getattr(torch, name)(ta, tb).sum().backward()
    assert ta.grad.tolist() == a.grad.tolist() and tb.grad.tolist() == b.grad.tolist()


# --- promotion queries, the default dtype, dtype=float ----------------------------------------


def test_result_type_promote_types_can_cast() -> None:
    from runtime.ops.more_ops import can_cast, promote_types, result_type

    assert promote_types(rt.int64, rt.float16) is rt.float16
    assert promote_types(rt.bool, rt.int64) is rt.int64
    assert result_type(rt.zeros(2, dtype=rt.int64), 2.5) is rt.float32
    assert result_type(rt.zeros(2), rt.zeros((), dtype=rt.float64)) is rt.float32
    assert result_type(True, rt.zeros((), dtype=rt.int64)) is rt.int64
    assert can_cast(rt.int64, rt.float16) and not can_cast(rt.float16, rt.int64)
    assert not can_cast(rt.int64, rt.bool) and can_cast(rt.bool, rt.int64)
    assert [d.is_signed for d in (rt.bool, rt.int64, rt.float16)] == [False, True, True]
    torch = _torch()
    for a in DTYPES:
        for b in DTYPES:
            ra, rb, ta, tb = getattr(rt, a), getattr(rt, b), getattr(torch, a), getattr(torch, b)
            assert str(promote_types(ra, rb)) == str(torch.promote_types(ta, tb)).replace(
                "torch", "runtime")
            assert can_cast(ra, rb) == torch.can_cast(ta, tb)
            assert ra.is_signed == ta.is_signed
            for other in (1, 2.5, True):
                for shape in ((2,), ()):
                    got = result_type(rt.zeros(shape, dtype=ra), other)
                    want = torch.result_type(torch.zeros(shape, dtype=ta), other)
                    assert got.name == str(want).removeprefix("torch.")
                got = result_type(rt.zeros((), dtype=ra), rt.zeros(2, dtype=rb))
                want = torch.result_type(torch.zeros((), dtype=ta), torch.zeros(2, dtype=tb))
                assert got.name == str(want).removeprefix("torch.")


def _made_with_default(m: Any) -> list[Any]:
    return [m.tensor([1.5]), m.tensor(2.0), m.zeros(2), m.ones(1), m.full((1,), 1.5),
            m.arange(3.0), m.linspace(0, 1, 2), m.rand(1), m.randn(1), m.empty(1),
            m.tensor([1]) / 2, m.tensor([1]) * 1.5, m.tensor([True]) + 0.5,
            m.tensor([np.float32(1.0)])]


@pytest.mark.parametrize("default", ["float64", "float16"])
def test_set_default_dtype(default: str) -> None:
    from runtime.ops.more_ops import get_default_dtype, set_default_dtype

    set_default_dtype(getattr(rt, default))
    try:
        assert get_default_dtype() is getattr(rt, default)
        got = [t.dtype.name for t in _made_with_default(rt)]
        assert got == [default] * 13 + ["float32"]  # a numpy float32 scalar stays float32
        assert repr(rt.tensor([1.5])) == "tensor([1.5000])"  # PyTorch's 4 decimals
        assert "dtype=runtime.float32" in repr(rt.tensor([1.5], dtype=rt.float32))
    finally:
        set_default_dtype(rt.float32)
    assert rt.tensor([1.5]).dtype is rt.float32 and get_default_dtype() is rt.float32
    with pytest.raises(TypeError, match="only floating-point types are supported"):
        set_default_dtype(rt.int64)
    torch = _torch()
    torch.set_default_dtype(getattr(torch, default))
    try:
        want = [str(t.dtype).removeprefix("torch.") for t in _made_with_default(torch)]
    finally:
        torch.set_default_dtype(torch.float32)
    assert want == got


def test_python_float_as_a_dtype_is_float64() -> None:
    assert rt.zeros(2, dtype=float).dtype is rt.float64
    assert rt.tensor([1]).to(float).dtype is rt.float64
    assert rt.zeros(1, dtype=int).dtype is rt.int64 and rt.zeros(1, dtype=bool).dtype is rt.bool
    _same_as_torch(lambda m: m.tensor([1, 2]).to(float))


@pytest.mark.parametrize("dtype", DTYPES)
def test_repr_names_the_dtype_as_torch(dtype: str) -> None:
    def reprs(m: Any) -> list[str]:
        d = getattr(m, dtype)
        return [repr(m.tensor(v, dtype=d)).replace("torch.", "runtime.")
                for v in ([], [1, 0], 3)]

    got = reprs(rt)
    assert got[0] == "tensor([])" if dtype == "float32" else got[0].endswith(
        f"dtype=runtime.{dtype})")
    torch = _torch()
    want = reprs(torch)
    # the values print as numpy's; the dtype suffix is PyTorch's
    assert [g.partition("dtype=")[2] for g in got] == [w.partition("dtype=")[2] for w in want]


# --- integer division signs, fmod by zero, index errors ---------------------------------------


_A, _B = [7, -7, 7, -7, 0, 5], [2, 2, -2, -2, 3, -5]
_DIVISIONS = {
    "floor_divide": ([3, -4, -4, 3, 0, -1], lambda m, a, b: m.floor_divide(a, b)),
    "remainder": ([1, 1, -1, -1, 0, 0], lambda m, a, b: m.remainder(a, b)),
    "fmod": ([1, -1, 1, -1, 0, 0], lambda m, a, b: m.fmod(a, b)),
    "trunc": ([3, -3, -3, 3, 0, -1], lambda m, a, b: m.div(a, b, rounding_mode="trunc")),
    "true": ([3.5, -3.5, -3.5, 3.5, 0.0, -1.0], lambda m, a, b: a / b),
}


@pytest.mark.parametrize("name", sorted(_DIVISIONS))
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64"])
def test_division_signs_with_negatives(name: str, dtype: str) -> None:
    want, fn = _DIVISIONS[name]

    def run(m: Any) -> Any:
        return fn(m, m.tensor(_A, dtype=getattr(m, dtype)), m.tensor(_B, dtype=getattr(m, dtype)))

    out = run(rt)
    assert out.tolist() == want
    assert out.dtype is (rt.float32 if name == "true" and dtype == "int64" else getattr(rt, dtype))
    _same_as_torch(run)


@pytest.mark.parametrize("name", ["fmod", "remainder", "floor_divide"])
def test_integer_division_by_zero_is_an_error(name: str) -> None:
    def run(m: Any) -> Any:
        return getattr(m, name)(m.tensor([3, 4]), m.tensor([1, 0]))

    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        run(rt)
    assert np.isnan(getattr(rt, name)(rt.tensor([3.0]), 0.0).item()) or name == "floor_divide"
    _same_as_torch(run)


def test_integer_fmod_compiled_checks_zero_as_eager() -> None:
    import planner

    step = planner.compile(lambda a, b: rt.fmod(a, b))
    a = rt.tensor([-7, 7, 5])
    for b in ([2, -2, 3], [-3, 4, 2]):
        assert step(a, rt.tensor(b)).tolist() == rt.fmod(a, rt.tensor(b)).tolist()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        step(a, rt.tensor([1, 0, 1]))


@pytest.mark.parametrize("key", ["float_tensor", "float"])
def test_index_with_a_float_is_torchs_index_error(key: str) -> None:
    def run(m: Any) -> Any:
        return m.arange(6).reshape(2, 3)[m.tensor([1.0]) if key == "float_tensor" else 1.0]

    with pytest.raises(IndexError):
        run(rt)
    _same_as_torch(run)


# --- float16: computed in float32, rounded once, as PyTorch's ---------------------------------


def _halves(shape: tuple[int, ...] = (6, 40), seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(np.float16)


def _f32(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float32)


_HALF_OPS: dict[str, tuple[Callable[[Any, Any], Any], Callable[[np.ndarray], np.ndarray]]] = {
    "mul_scalar": (lambda m, x: x * 0.3, lambda a: _f32(a) * np.float32(0.3)),
    "rmul_scalar": (lambda m, x: 0.3 * x, lambda a: _f32(a) * np.float32(0.3)),
    "div_scalar": (lambda m, x: x / 7, lambda a: _f32(a) / np.float32(7)),
    "mul_int": (lambda m, x: x * 3001, lambda a: _f32(a) * np.float32(3001)),
    "sigmoid": (lambda m, x: x.sigmoid(), lambda a: 1 / (1 + np.exp(-_f32(a)))),
    "softmax": (lambda m, x: x.softmax(-1), lambda a: np.exp(_f32(a) - _f32(a).max(-1, keepdims=True))
                / np.exp(_f32(a) - _f32(a).max(-1, keepdims=True)).sum(-1, keepdims=True)),
    "layer_norm": (lambda m, x: m.nn.functional.layer_norm(x, (40,)),
                   lambda a: (_f32(a) - _f32(a).mean(-1, keepdims=True))
                   / np.sqrt(_f32(a).var(-1, keepdims=True) + np.float32(1e-5))),
    "silu": (lambda m, x: m.nn.functional.silu(x), lambda a: _f32(a) / (1 + np.exp(-_f32(a)))),
    "cumsum": (lambda m, x: x.cumsum(1), lambda a: np.cumsum(_f32(a), 1)),
    "addcmul": (lambda m, x: x.addcmul(x, x.flip(0), value=0.5),
                lambda a: _f32(a) + np.float32(0.5) * _f32(a) * _f32(a[::-1])),
}


@pytest.mark.parametrize("name", sorted(_HALF_OPS))
def test_float16_rounds_once(name: str) -> None:
    fn, by_hand = _HALF_OPS[name]
    a = _halves()
    out = fn(rt, rt.tensor(a))
    assert out.dtype is rt.float16
    want = by_hand(a).astype(np.float16)
    # numpy's float32 exp/sqrt may differ from ours by an ulp of float32: rarely a half's
    assert np.mean(out.numpy() == want) > 0.995, name
    if name in ("mul_scalar", "rmul_scalar", "div_scalar", "mul_int", "cumsum", "addcmul"):
        np.testing.assert_array_equal(out.numpy(), want)
    torch = _torch()
    np.testing.assert_array_equal(out.numpy(), fn(torch, torch.tensor(a)).numpy())


def test_float16_softmax_dtype_and_inplace_silu() -> None:
    x = rt.tensor(_halves((2, 5)))
    assert rt.softmax(x, -1, dtype=rt.float32).dtype is rt.float32
    y = x.clone()
    assert rt.nn.functional.silu(y, inplace=True) is y and y.dtype is rt.float16
    np.testing.assert_array_equal(y.numpy(), rt.nn.functional.silu(x).numpy())


def test_float16_scalar_products_compiled_equal_eager() -> None:
    import planner

    def fn(x: Any) -> Any:
        return x * 0.3, 0.3 * x, x / 7

    step = planner.compile(fn)
    for seed in (0, 1):
        x = rt.tensor(_halves((4, 8), seed))
        for got, want in zip(step(x), fn(x)):
            assert got.dtype is rt.float16
            np.testing.assert_array_equal(got.numpy(), want.numpy())


# --- bools refuse minus; min of integers and bools --------------------------------------------


_MINUS = {
    "tensor - True": lambda m: m.tensor([1]) - True,
    "bool - 1": lambda m: m.tensor([True]) - 1,
    "True - tensor": lambda m: True - m.tensor([1.0]),
    "sub bool tensor": lambda m: m.tensor([1.0]).sub(m.tensor(True)),
    "neg bool": lambda m: -m.tensor([True]),
}
_BOTH_BOOLS = {
    "bool - bool": lambda m: m.tensor([True]) - m.tensor([False]),
    "bool - True": lambda m: m.tensor([True]) - True,
    "True - bool": lambda m: True - m.tensor([True]),
}


@pytest.mark.parametrize("case", sorted(_MINUS))
def test_minus_on_bools_is_torchs_error(case: str) -> None:
    with pytest.raises(RuntimeError, match="the `-` operator, (with|on) a bool tensor is not "
                                           "supported. If you are trying to invert a mask"):
        _MINUS[case](rt)
    _same_as_torch(_MINUS[case])


@pytest.mark.parametrize("case", sorted(_BOTH_BOOLS))
def test_minus_of_two_bools_points_to_xor(case: str) -> None:
    with pytest.raises(RuntimeError, match="with two bool tensors is not supported. Use the `\\^`"):
        _BOTH_BOOLS[case](rt)
    _same_as_torch(_BOTH_BOOLS[case])


_EXTREMES = {
    "int64 min": (lambda m: m.tensor([2**63 - 1, -(2**63), 5]).min(), -(2**63)),
    "int64 amin": (lambda m: m.tensor([[3, -(2**63)], [-1, 2]]).amin(1), [-(2**63), -1]),
    "bool min": (lambda m: m.tensor([True, False]).min(), False),
    "bool amin": (lambda m: m.tensor([[True, True], [True, False]]).amin(0), [True, False]),
    "float min": (lambda m: m.tensor([1.0, -0.5, 3.0]).min(), -0.5),
}


@pytest.mark.parametrize("case", sorted(_EXTREMES))
def test_min_of_integers_and_bools(case: str) -> None:
    fn, want = _EXTREMES[case]
    assert fn(rt).tolist() == want
    _same_as_torch(fn)


# --- arange's dtype and integer bounds; fills; in-place casts ---------------------------------


_ARANGES = {
    "int64 of 2.5": (lambda m: m.arange(2.5, dtype=m.int64), [0, 1]),
    "int64 of floats": (lambda m: m.arange(1.9, 5.2, 1.5, dtype=m.int64), [1, 2, 3, 4]),
    "int64 downward": (lambda m: m.arange(5, 0.5, -1.5, dtype=m.int64), [5, 4, 3, 2, 1]),
    "numpy float end": (lambda m: m.arange(np.float32(2.5)), [0.0, 1.0, 2.0]),
    "tensor end": (lambda m: m.arange(m.tensor(2.5)), [0.0, 1.0, 2.0]),
    "int tensor end": (lambda m: m.arange(m.tensor(3)), [0, 1, 2]),
}


@pytest.mark.parametrize("case", sorted(_ARANGES))
def test_arange_as_torch(case: str) -> None:
    fn, want = _ARANGES[case]
    out = fn(rt)
    assert out.tolist() == want
    assert out.dtype is (rt.int64 if isinstance(want[0], int) else rt.float32)
    _same_as_torch(fn)


def test_arange_step_truncated_to_zero_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        rt.arange(0, 1, 0.25, dtype=rt.int64)


@pytest.mark.parametrize("value", [2.7, -2.7, True])
def test_index_fill_keeps_dtype(value: Any) -> None:
    def fn(m: Any) -> Any:
        return m.zeros(3, dtype=m.int64).index_fill(0, m.tensor([1]), value)

    assert fn(rt).tolist() == [0, int(value), 0] and fn(rt).dtype is rt.int64
    _same_as_torch(fn)


_INPLACE_CASTS = {
    "add_": lambda m: m.zeros(2, dtype=m.int64).add_(1.5),
    "div_": lambda m: m.ones(2, dtype=m.int64).div_(2),
    "mul_": lambda m: m.ones(2, dtype=m.int64).mul_(m.tensor(2.0)),
    "bool add_": lambda m: m.zeros(2, dtype=m.bool).add_(2),
    "clamp_": lambda m: m.zeros(3, dtype=m.int64).clamp_(0.5),
}


@pytest.mark.parametrize("case", sorted(_INPLACE_CASTS))
def test_inplace_to_a_lower_category_is_torchs_error(case: str) -> None:
    with pytest.raises(RuntimeError, match="result type (Float|Long) can't be cast to the "
                                           "desired output type (Long|Bool|long int)"):
        _INPLACE_CASTS[case](rt)
    _same_as_torch(_INPLACE_CASTS[case])


def test_sgn_and_where_of_two_scalars() -> None:
    from runtime.ops.more_ops import set_default_dtype

    assert rt.tensor([1.5, -2.0, 0.0]).sgn().tolist() == [1.0, -1.0, 0.0]
    _same_as_torch(lambda m: m.tensor([1.5, -2.0, 0.0]).sgn())
    set_default_dtype(rt.float64)
    try:
        assert rt.where(rt.tensor([True, False]), 1.0, 0).dtype is rt.float64
    finally:
        set_default_dtype(rt.float32)
    assert rt.where(rt.tensor([True, False]), 1.0, 0).tolist() == [1.0, 0.0]
    _same_as_torch(lambda m: m.where(m.tensor([True, False]), 1.0, 0))


# --- Python scalars past a dtype's range ------------------------------------------------------


_OVERFLOWS = {
    "tensor of 2**63": (lambda m: m.tensor([2**63]), ValueError, "Overflow when unpacking long"),
    "fill_ nan into int64": (lambda m: m.zeros(2, dtype=m.int64).fill_(float("nan")),
                             RuntimeError, "cannot be converted to type int64_t without overflow"),
    "setitem 1e30 into int64": (lambda m: m.zeros(2, dtype=m.int64).__setitem__(0, 1e30),
                                RuntimeError, "cannot be converted to type int64_t"),
    "fill_ 1e5 into half": (lambda m: m.zeros(2, dtype=m.float16).fill_(1e5), RuntimeError,
                            "cannot be converted to type c10::Half without overflow"),
}


@pytest.mark.parametrize("case", sorted(_OVERFLOWS))
def test_scalars_out_of_range_are_torchs_errors(case: str) -> None:
    fn, error, text = _OVERFLOWS[case]
    with pytest.raises(error, match=text):
        fn(rt)
    _same_as_torch(fn)


def test_scalars_in_range_convert_as_torch() -> None:
    assert rt.tensor([2**63 - 1]).tolist() == [2**63 - 1]
    assert rt.zeros(2, dtype=rt.int64).fill_(-2.7).tolist() == [-2, -2]
    assert rt.zeros(2, dtype=rt.bool).fill_(0.2).tolist() == [True, True]
    t = rt.zeros(2, dtype=rt.int64)
    t[0] = 2.7
    assert t.tolist() == [2, 0]
    _same_as_torch(lambda m: m.zeros(2, dtype=m.int64).fill_(-2.7))


# --- unary ops of bools and integers ----------------------------------------------------------


_UNARY_INT_BOOL = {
    "sigmoid bool": (lambda m: m.tensor([True, False]).sigmoid(), "float32", [0.7310586, 0.5]),
    "sigmoid int": (lambda m: m.tensor([1, 0]).sigmoid(), "float32", [0.7310586, 0.5]),
    "square bool": (lambda m: m.tensor([True, False]).square(), "int64", [1, 0]),
    "square int": (lambda m: m.tensor([3, -2]).square(), "int64", [9, 4]),
    "sign bool": (lambda m: m.tensor([True, False]).sign(), "bool", [True, False]),
    "sign int": (lambda m: m.tensor([-2, 0, 3]).sign(), "int64", [-1, 0, 1]),
}


@pytest.mark.parametrize("case", sorted(_UNARY_INT_BOOL))
def test_unary_ops_of_bools_and_integers(case: str) -> None:
    fn, dtype, want = _UNARY_INT_BOOL[case]
    out = fn(rt)
    assert out.dtype is getattr(rt, dtype)
    np.testing.assert_allclose(out.tolist(), want, rtol=1e-6)
    torch = _torch()
    ref = fn(torch)
    assert str(ref.dtype) == f"torch.{dtype}"
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)


# --- 0-d bools in an index ---------------------------------------------------------------------


_SCALAR_BOOL_KEYS: dict[str, tuple[Callable[[Any], Any], tuple[int, ...]]] = {
    "True": (lambda m: True, (1, 3, 4)),
    "False": (lambda m: False, (0, 3, 4)),
    "ellipsis, True": (lambda m: (Ellipsis, True), (3, 4, 1)),
    "int, True": (lambda m: (0, True), (1, 4)),
    "slice, True, int": (lambda m: (slice(None), True, 1), (3, 1)),
    "0-d mask": (lambda m: (m.tensor(True),), (1, 3, 4)),
    "0-d false mask": (lambda m: m.tensor(False), (0, 3, 4)),
    "None, True": (lambda m: (None, True), (1, 1, 3, 4)),
    "True, index": (lambda m: (True, m.tensor([0, 2])), (2, 4)),
    "True, True": (lambda m: (True, True), (1, 3, 4)),
    "int, False, slice": (lambda m: (1, False, slice(1, 3)), (0, 2)),
}


@pytest.mark.parametrize("case", sorted(_SCALAR_BOOL_KEYS))
def test_scalar_bool_in_an_index(case: str) -> None:
    key, shape = _SCALAR_BOOL_KEYS[case]

    def fn(m: Any) -> Any:
        return m.arange(12).reshape(3, 4)[key(m)]

    assert tuple(fn(rt).shape) == shape
    _same_as_torch(fn)


def test_mask_of_a_zero_dim_tensor_keeps_its_gradient() -> None:
    y = rt.tensor(2.5, requires_grad=True)
    z = y[y > 0]
    assert z.tolist() == [2.5]
    z.sum().backward()
    assert y.grad.item() == 1.0
    assert y[y < 0].shape == (0,)


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_integer_to_a_negative_integer_power_is_torchs_error(dtype: str) -> None:
    def fn(m: Any) -> Any:
        return m.tensor([2, 3]).to(getattr(m, dtype)) ** -1

    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        fn(rt)
    _same_as_torch(fn)
    assert (rt.tensor([2, 3]) ** -1.0).tolist() == [0.5, pytest.approx(1 / 3)]


# --- compiled integer and bool arithmetic: fused where the kernel IR takes it, else numpy -----


_COMPILED_INT_BOOL = {
    "int pow": lambda a, b: a ** b.abs() + a ** 5,
    "bool add, mul, max": lambda a, b: (((a > 0) + (b > 0)) * (a < 3)).long() + rt.maximum(
        a > 1, b > 1).long(),
    "bool order": lambda a, b: ((a > 0) < (b > 0)).long() + ((a > 0) >= True).long(),
    # abs of a bool is PyTorch's error ("abs_cpu" not implemented for 'Bool'): of its long
    "bool abs": lambda a, b: (a > 0).long().abs() + b,
    "int logical_and": lambda a, b: rt.logical_and(a, b).long() + rt.logical_and(a, rt.tensor(1.5)).long(),
}


@pytest.mark.parametrize("case", sorted(_COMPILED_INT_BOOL))
def test_compiled_integer_and_bool_arithmetic_needs_no_fallback(case: str) -> None:
    import warnings

    import planner

    fn = _COMPILED_INT_BOOL[case]
    step = planner.compile(fn)
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        a, b = (rt.tensor(rng.integers(-4, 5, (3, 8))) for _ in range(2))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "running the plan on the interpreter"
            got = step(a, b)
        want = fn(a, b)
        assert got.dtype is want.dtype and got.tolist() == want.tolist()


def test_integer_linspace_truncates_its_ends_first() -> None:
    def fn(m: Any) -> Any:
        return m.linspace(0.5, 10.7, 5, dtype=m.int64)

    assert fn(rt).tolist() == [0, 2, 5, 7, 10]  # from 0 to 10 (not 0.5 to 10.7: 3 and 8)
    _same_as_torch(fn)
    _same_as_torch(lambda m: m.linspace(-3.7, 8.2, 7, dtype=m.int64))
