"""h14's sweep of tensor ops' dtypes in eager mode against PyTorch 2.13 (CPU): each case is
run through ``runtime`` and through ``torch`` and must give the same dtype and values, or the
same error type and text."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]
ALL = ["bool", *INTS, *FLOATS]


def _numpy(t: Any) -> np.ndarray:
    low = str(t.dtype).endswith("bfloat16")
    return (t.float() if low else t).numpy()


def _same_as_torch(fn: Callable[[Any], Any], rtol: float = 0.0) -> None:
    """fn(rt) and fn(torch) agree: dtypes, shapes and values (nan where nan, a zero's sign;
    within ``rtol`` where given: a transcendental's last bit), or error types and texts."""
    torch = pytest.importorskip("torch")
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
    for g, w in zip(got, want, strict=True) if isinstance(want, tuple) else [(got, want)]:
        assert str(g.dtype).removeprefix("runtime.") == str(w.dtype).removeprefix("torch.")
        g, w = _numpy(g), _numpy(w)
        if rtol:
            np.testing.assert_allclose(g, w, rtol=rtol)
        else:
            np.testing.assert_array_equal(g, w)
        if g.dtype.kind == "f":
            np.testing.assert_array_equal(np.signbit(g[g == 0]), np.signbit(w[w == 0]))


def _t(m: Any, values: Any, dtype: str) -> Any:
    return m.tensor(values, dtype=getattr(m, dtype))


_ROUNDED = [255.5, 0.05, 0.15, 0.35, -2.25, 1e4 + 0.5, 3.14159, float("nan"), float("inf")]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("decimals", [1, 2, -1])
def test_round_with_decimals_computes_low_floats_in_float32(dtype: str, decimals: int) -> None:
    """PyTorch scales, rounds and scales back a float16/bfloat16 tensor in float32 and rounds
    to its dtype once: round(float16 255.5, decimals=1) is 255.5, not float16's 255.625."""
    _same_as_torch(lambda m: m.round(_t(m, _ROUNDED, dtype), decimals=decimals))
    _same_as_torch(lambda m: _t(m, _ROUNDED, dtype).round(decimals=decimals))


_OUT_OF_RANGE = [-2147483649.0, 2147483648.0, -3.5, 4294967303.0, -4294967303.0, 300.5, -129.9,
                 1e10, float("nan"), float("inf"), -float("inf")]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("to", ["uint8", "int8", "int16", "int32", "int64", "bool"])
def test_float_to_integer_casts_out_of_range(dtype: str, to: str) -> None:
    """PyTorch casts a float to uint8 through int64 (c10's static_cast_with_inter_type):
    float64 -2147483649. is 255 and 4294967303. is 7, where numpy's route gave 0; the other
    integer dtypes take numpy's (and C's) x86 conversions, as PyTorch's."""
    _same_as_torch(lambda m: _t(m, _OUT_OF_RANGE, dtype).to(getattr(m, to)))


@pytest.mark.parametrize("how", ["copy_", "setitem", "byte", "type"])
def test_float_into_uint8_tensor_through_int64(how: str) -> None:
    def run(m: Any) -> Any:
        src = _t(m, _OUT_OF_RANGE[:8], "float64")
        dst = m.zeros(8, dtype=m.uint8)
        if how == "copy_":
            dst.copy_(src)
        elif how == "setitem":
            dst[1:] = src[1:]
        else:
            dst = src.byte() if how == "byte" else src.type(m.uint8)
        return dst

    _same_as_torch(run)


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("exponent", [-2, -1, -130, 3])
def test_integer_power_reads_the_exponent_in_the_result_dtype(dtype: str, exponent: int) -> None:
    """PyTorch casts a 0-d int64 exponent to the base's dtype before its integer power: a uint8
    3 ** tensor(-2) is 3 ** 254, wrapped to 57 (0 before), and an int8 base's -130 is 126."""
    base = [0, 3, 7, 1, 5, 2] if dtype == "uint8" else [-1, 1, 2, 3, -2, 5]
    _same_as_torch(lambda m: _t(m, base, dtype) ** m.tensor(exponent))
    _same_as_torch(lambda m: m.pow(_t(m, base, dtype), m.tensor([exponent] * 6)))


def _sample(m: Any, dtype: str, second: bool = False) -> Any:
    """Six values of ``dtype`` with its edge cases: negatives and zeros, nan and inf for floats."""
    if dtype == "bool":
        values: list[Any] = [True, False, True, True, False, True]
    elif dtype == "uint8":
        values = [2, 0, 3, 7, 255, 4] if second else [0, 3, 7, 200, 5, 1]
    elif dtype in INTS:
        values = [2, -2, 3, 0, -4, 2] if second else [-7, -3, 0, 3, 7, 5]
    else:
        values = [2.0, -0.0, -float("inf"), 1.5, float("nan"), -3.0] if second else \
            [-2.5, -0.5, 0.0, float("nan"), float("inf"), 3.5]
    return _t(m, values, dtype)


@pytest.mark.parametrize("name", ["xlogy", "special.xlog1py"])
@pytest.mark.parametrize("pair", [("float16", "int64"), ("bfloat16", "uint8"),
                                  ("float32", "bfloat16"), ("int32", "float16"),
                                  ("int64", "int64"), ("float64", "bool")])
def test_xlogy_in_the_promoted_dtype(name: str, pair: tuple[str, str]) -> None:
    """Both operands in their promoted dtype before the log, as PyTorch's kernel: float16 x
    with int64 y is float16 (rt gave float32), and float32 x took log of a bfloat16 y in
    bfloat16 (-1.7285 for -2.5 * log(2), torch's -1.7329)."""
    def run(m: Any, *args: Any) -> Any:
        fn = m.special.xlog1py if name.startswith("special") else m.xlogy
        return fn(*args)

    rtol = 1e-15 if "float64" in pair else 0.0  # float64 log1p's last bit
    _same_as_torch(lambda m: run(m, _sample(m, pair[0]), _sample(m, pair[1], second=True)), rtol)
    _same_as_torch(lambda m: run(m, _sample(m, pair[0]), 2), rtol)
    _same_as_torch(lambda m: run(m, _sample(m, pair[0]), m.tensor(2.5, dtype=m.float64)), rtol)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("exp_dtype", ["bool", "uint8", "int32", "int64"])
def test_ldexp_of_a_float_by_integers_keeps_its_dtype(dtype: str, exp_dtype: str) -> None:
    """PyTorch's ldexp kernel for a float input and integer exponents: the input's dtype
    (float16 stayed float32 before), the exact product rounded once (float64 2 ** 200 is no
    float32 overflow), and its error for a bool exponent."""
    big = [200, 20, 60, 3] if exp_dtype in ("int32", "int64") else [1, 0, 3, 1]
    neg = [-1074, -20, -30, -3] if exp_dtype in ("int32", "int64") else [0, 1, 1, 0]
    values = [1.5, 2.0 ** -20, 3.0, -1.0]
    for exps in (big, neg):
        _same_as_torch(lambda m, e=exps: m.ldexp(_t(m, values, dtype), _t(m, e, exp_dtype)))


@pytest.mark.parametrize("pair", [("int32", "int64"), ("uint8", "bool"), ("bool", "float16"),
                                  ("bfloat16", "float16"), ("float16", "float64")])
def test_ldexp_of_other_dtypes_multiplies_by_a_float_power(pair: tuple[str, str]) -> None:
    _same_as_torch(lambda m: m.ldexp(_sample(m, pair[0]), _t(m, [2, 3, 0, 1, 0, 1], pair[1])))


@pytest.mark.parametrize("pair", [("int64", "int64"), ("uint8", "int8"), ("bool", "bool"),
                                  ("int32", "float32"), ("float16", "float16"),
                                  ("bfloat16", "bool"), ("float64", "int64")])
def test_nextafter_is_for_floats_only(pair: tuple[str, str]) -> None:
    """PyTorch's NotImplementedError for operands that promote to an integer or bool dtype;
    rt returned numpy's float64."""
    _same_as_torch(lambda m: m.nextafter(_sample(m, pair[0]), _sample(m, pair[1], second=True)))


@pytest.mark.parametrize("name", ["gcd", "lcm"])
@pytest.mark.parametrize("dtype", INTS)
def test_gcd_lcm_read_a_0d_operand_in_the_result_dtype(name: str, dtype: str) -> None:
    """A 0-d int64 beside a narrower integer tensor is first cast to its dtype, as PyTorch's
    kernel reads it: gcd(int8, tensor(-300)) sees -44, and uint8 with -3 sees 253."""
    for other in (-300, -3, 1000):
        _same_as_torch(lambda m, o=other: getattr(m, name)(_sample(m, dtype), m.tensor(o)))


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16"])
@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_rounded_integer_division_by_a_0d_tensor_in_the_result_dtype(dtype: str,
                                                                     mode: str) -> None:
    """A 0-d int64 divisor is the quotient's dtype first, as PyTorch's: -300 beside uint8 is
    212, so trunc(200 / -300) is 0 (rt gave 1 from -300's own sign), and 1000 beside int8 is
    -24 (trunc(100 / 1000) is -4)."""
    for other in (-300, 1000, -70000):
        _same_as_torch(lambda m, o=other: m.div(_sample(m, dtype), m.tensor(o),
                                                rounding_mode=mode))
        _same_as_torch(lambda m, o=other: m.div(m.tensor(o), _sample(m, dtype, second=True) + 1,
                                                rounding_mode=mode))


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "float16", "bfloat16"])
def test_logical_ops_read_a_0d_tensor_in_the_promoted_dtype(name: str, dtype: str) -> None:
    """PyTorch's logical ops cast both operands to their promoted dtype before testing them:
    a 0-d int64 2 ** 40 beside int8 is 0 (False; logical_or and logical_xor took it as True),
    a 0-d float64 1e-8 beside float16 is 0."""
    for other in (2 ** 40, 256, 1e-8, 0.5):
        _same_as_torch(lambda m, o=other: getattr(m, name)(_sample(m, dtype), m.tensor(o)))
        _same_as_torch(lambda m, o=other: getattr(m, name)(m.tensor(o), _sample(m, dtype)))


_SCALARS: list[tuple[Any, str]] = [(70000, "int64"), ([70001], "int64"), (0.1, "float64"),
                                   (7, "int8"), (0.1, "float16"), (0.1, "bfloat16"),
                                   ([[1e-8]], "float64")]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["mul", "div"])
def test_low_float_mul_div_read_a_one_element_tensor_in_float32(dtype: str, op: str) -> None:
    """PyTorch's CPU mul and div read a second operand of one element (a 0-d tensor too) as a
    float32 scalar when the result is float16 or bfloat16: float16 0. * tensor(70000) is 0.
    (rt cast 70000 to float16's inf: nan), -0.5 * 70000 is -35008, and 3 * tensor(0.1,
    float64) is 0.3 (rt's 0.2998); as first operand it is cast to the result dtype."""
    values = [0.0, -0.5, 1.0, 3.0, 0.1, -7.3, 1000.0]
    for value, sdt in _SCALARS:
        if sdt == dtype:
            continue
        _same_as_torch(lambda m, v=value, d=sdt: getattr(m, op)(_t(m, values, dtype),
                                                             _t(m, v, d)))
        _same_as_torch(lambda m, v=value, d=sdt: getattr(m, op)(_t(m, v, d) + 0,
                                                             _t(m, values, dtype)))


def _ipow(m: Any, t: Any, exponent: Any) -> Any:
    t **= exponent
    return t


@pytest.mark.parametrize("dtype", ["bool", *INTS])
@pytest.mark.parametrize("exponent", [255, 256, 128, 2 ** 31, 2 ** 63 - 1, -1, 0, True, 2.5])
def test_pow_and_pow_inplace_convert_the_exponent_checked(dtype: str, exponent: Any) -> None:
    """An int exponent is converted into a narrow integer tensor's dtype with PyTorch's
    overflow check (uint8 ** 256 and int8 ** 128 raise; rt wrapped them, or raised numpy's
    ValueError); pow_ raises pow's RuntimeError for a negative one (uint8 **= -1 computed
    255's power) and keeps a bool tensor's bool result (**= True raised a cast error)."""
    base = [True, False, True] if dtype == "bool" else [2, 3, 0]
    _same_as_torch(lambda m: _t(m, base, dtype) ** exponent)
    _same_as_torch(lambda m: _ipow(m, _t(m, base, dtype), exponent))


@pytest.mark.parametrize("name", ["floor_", "ceil_", "trunc_", "round_", "sign_", "abs_", "neg_",
                                  "frac_", "square_"])
@pytest.mark.parametrize("grad", [False, True])
def test_bfloat16_inplace_unary_ops_write_their_values(name: str, grad: bool) -> None:
    """An in-place op on a bfloat16 tensor with no history to record ran numpy's ufunc on
    ml_dtypes' bfloat16 storage, where floor, ceil, trunc and round returned it unchanged
    (floor_ was a no-op) and sign kept a nan (PyTorch's 0); now apply's float32 impl."""
    def run(m: Any) -> Any:
        x = _t(m, [-2.5, -0.5, 0.0, float("nan"), 1.5, 3.5, 0.1, 7.3], "bfloat16")
        if grad:  # the path that records history was right: the same values
            x = (x.requires_grad_() * 1).clone()
        return getattr(x, name)().detach()

    _same_as_torch(run)


@pytest.mark.parametrize("name", ["abs_", "floor_", "ceil_", "trunc_", "round_", "sign_",
                                  "neg_"])
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int64"])
def test_inplace_unary_ops_on_bools_and_integers(name: str, dtype: str) -> None:
    """A bool tensor's abs_, floor_, ceil_, trunc_ and round_ raise the out-of-place op's
    NotImplementedError (rt wrote numpy's result back), neg_ its RuntimeError (numpy's
    TypeError before) and sign_ keeps the bools (numpy has no bool sign: UFuncTypeError)."""
    _same_as_torch(lambda m: getattr(_sample(m, dtype), name)())


_CLAMPED = [-2.5, -0.5, 0.0, float("nan"), float("inf"), 3.5]
_BOUNDS = [2.0, -0.0, -float("inf"), 1.5, float("nan"), -3.0]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bound_dtype", ["float32", "float16", "float64"])
def test_clamp_by_tensor_bounds_propagates_a_nan_bound(dtype: str, bound_dtype: str) -> None:
    """PyTorch's clamp by tensor bounds is nan where a bound is (rt kept x: clamp(inf,
    min=nan) was inf), out of place and in place."""
    def bounds(m: Any) -> Any:
        return _t(m, _BOUNDS, bound_dtype)

    _same_as_torch(lambda m: m.clamp(_t(m, _CLAMPED, dtype), min=bounds(m)))
    _same_as_torch(lambda m: m.clamp(_t(m, _CLAMPED, dtype), max=bounds(m)))
    _same_as_torch(lambda m: m.clamp(_t(m, _CLAMPED, dtype), bounds(m), bounds(m) * 2))
    _same_as_torch(lambda m: _t(m, _CLAMPED, dtype).clamp_(min=bounds(m)))


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64"])
@pytest.mark.parametrize("bound_dtype", ["float16", "float32", "float64"])
def test_inplace_clamp_of_integers_by_float_tensors_raises(dtype: str, bound_dtype: str) -> None:
    """PyTorch's clamp_ of an integer tensor by float tensor bounds cannot write the float
    result back (rt truncated it silently)."""
    _same_as_torch(lambda m: _sample(m, dtype).clamp_(min=_t(m, [1.5] * 6, bound_dtype)))
    _same_as_torch(lambda m: _sample(m, dtype).clamp_(max=_t(m, 1.5, bound_dtype)))
    _same_as_torch(lambda m: _sample(m, dtype).clamp_(min=_t(m, [1] * 6, "int64")))


@pytest.mark.parametrize("pair", [("int16", "uint8"), ("uint8", "int8"), ("int32", "bool"),
                                  ("float32", "float16"), ("bool", "bool"), ("int8", "int8"),
                                  ("float16", "float32"), ("uint8", "float32")])
@pytest.mark.parametrize("alpha", [2, -3, 200, 0.5, True])
def test_add_sub_alpha_in_the_promoted_dtype_with_its_checks(pair: tuple[str, str],
                                                            alpha: Any) -> None:
    """PyTorch's add/sub compute input + alpha * other in the promoted dtype (int16 7 - 2 *
    uint8 255 is -503; rt scaled in uint8 first: -247) and check alpha against it: a float
    alpha of integers, a bool alpha of non-bools and an int8 alpha of 200 raise (rt
    ignored them); in place the result's cast into the tensor is checked first, and a bool
    tensor's add_ with an int alpha is add's bool result (rt raised a cast error)."""
    for name in ("add", "sub"):
        _same_as_torch(lambda m, n=name: getattr(m, n)(
            _sample(m, pair[0]), _sample(m, pair[1], second=True), alpha=alpha))
        _same_as_torch(lambda m, n=name: getattr(_sample(m, pair[0]), n + "_")(
            _sample(m, pair[1], second=True), alpha=alpha))


@pytest.mark.parametrize("pair", [("uint8", "int8"), ("int8", "int16"), ("int64", "int64"),
                                  ("int32", "uint8"), ("bool", "int32"), ("bool", "bool"),
                                  ("int16", "bool"), ("float32", "int64")])
def test_inplace_pow_by_an_integer_tensor(pair: tuple[str, str]) -> None:
    """t **= an integer tensor is pow's integer power (negative exponents: 1, +-1 or 0, where
    numpy's ValueError surfaced), its result's cast into t checked first, and two bools'
    NotImplementedError, as PyTorch's."""
    _same_as_torch(lambda m: _ipow(m, _sample(m, pair[0]), _sample(m, pair[1], second=True)))
    _same_as_torch(lambda m: _sample(m, pair[0]).pow_(_t(m, -1, pair[1]) if pair[1] != "bool"
                                                      and pair[1] != "uint8" else _t(m, 1, "bool")))


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("value", [2 ** 63, 2 ** 64 - 1, 2 ** 64, 2 ** 70, -(2 ** 63) - 1])
def test_python_ints_past_int64(dtype: str, value: int) -> None:
    """PyTorch takes a Python int from 2 ** 63 to 2 ** 64 - 1 as a uint64 scalar (its value
    beside floats, wrapped into int64 beside integers: arange(3) < 2 ** 63 is False) and
    raises OverflowError beyond; numpy raised its own OverflowError, or compared exactly."""
    for op in ("add", "sub", "mul", "lt", "eq"):
        _same_as_torch(lambda m, o=op: getattr(m, o)(_sample(m, dtype), value))


@pytest.mark.parametrize("dtype", FLOATS)
def test_unique_of_floats_with_nans(dtype: str) -> None:
    """unique of a bfloat16 tensor with nans is sorted, each nan distinct, as PyTorch's
    (numpy's sort of ml_dtypes' bfloat16 left it unsorted with values twice)."""
    values = [3.0, float("nan"), 3.0, -float("inf"), -float("inf"), float("nan"), 7.0, -1.5, 7.0]
    _same_as_torch(lambda m: m.unique(_t(m, values, dtype), return_inverse=True,
                                      return_counts=True))
    _same_as_torch(lambda m: m.unique(_t(m, [[1.5, float("nan")], [1.5, float("nan")],
                                              [-2.0, 0.0]], dtype), dim=0))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_with_nans_is_pytorchs_binary_search(dtype: str, right: bool) -> None:
    """PyTorch's searchsorted is a binary search: a NaN value goes after every element (NaNs
    too: 11 of 11, rt's 9), and a NaN boundary met on the way sends the search right
    (1.5 in [1, 2, nan, nan] is at 4; counting the smaller elements gave 1)."""
    seq = [-float("inf"), -1.5, 0.0, 3.0, 3.0, 7.0, float("nan"), float("nan")]
    vals = [3.0, float("nan"), -float("inf"), 1.5, 7.0, 8.0, -2.0]
    _same_as_torch(lambda m: m.searchsorted(_t(m, seq, dtype), _t(m, vals, dtype), right=right))
    _same_as_torch(lambda m: m.searchsorted(_t(m, [[1.0, 2.0, float("nan"), float("nan")]] * 2,
                                                dtype), _t(m, [[1.5, 2.0]] * 2, dtype),
                                            right=right))
    _same_as_torch(lambda m: m.bucketize(_t(m, vals, dtype), _t(m, seq[:6], dtype), right=right))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["logaddexp", "hypot", "logaddexp2"])
def test_low_float_binary_math_in_float32_rounded_once(dtype: str, name: str) -> None:
    """PyTorch computes logaddexp, logaddexp2 and hypot of float16/bfloat16 in float32 and
    rounds once (rt's steps each rounded: a third of random float16 results an ulp off)."""
    rng = np.random.RandomState(0)
    a, b = (rng.randn(2, 500) * 5).astype(np.float32)
    rtol = 0.0 if name != "logaddexp2" else 2 ** -8  # its float32 log2's last bit
    _same_as_torch(lambda m: getattr(m, name)(_t(m, a, dtype), _t(m, b, dtype)), rtol)
    _same_as_torch(lambda m: getattr(m, name)(_t(m, a, dtype), _t(m, b, "float32")), 1e-4)

    def grads(m: Any) -> Any:
        x = _t(m, a[:8], dtype).requires_grad_()
        y = getattr(m, name)(x, _t(m, b[:8], dtype))
        y.sum().backward()
        assert y.grad_fn.name() == name.capitalize() + "Backward0"
        return x.grad

    _same_as_torch(grads, 2 ** -7)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["mish", "selu", "hardswish", "logsigmoid"])
def test_low_float_activations_in_float32_rounded_once(dtype: str, name: str) -> None:
    """PyTorch computes mish, selu, hardswish and logsigmoid of float16/bfloat16 in float32
    and rounds once (rt's steps each rounded: a sixth to a quarter of results an ulp off),
    in place too, with the same gradients."""
    a = (np.random.RandomState(0).randn(500) * 3).astype(np.float32)
    _same_as_torch(lambda m: getattr(m.nn.functional, name)(_t(m, a, dtype)))

    def grads(m: Any) -> Any:
        x = _t(m, a[:16], dtype).requires_grad_()
        getattr(m.nn.functional, name)(x).sum().backward()
        return x.grad

    _same_as_torch(grads, 2 ** -7)  # (logsigmoid's backward: an ulp apart at places)
    if name != "logsigmoid":
        _same_as_torch(lambda m: getattr(m.nn.functional, name)(_t(m, a, dtype), inplace=True))


@pytest.mark.parametrize("bounds", [{"min": True}, {"max": False}, {"min": True, "max": True},
                                    {"min": 0}, {"min": 0.5}])
def test_clamp_of_bools_by_bools_raises(bounds: dict[str, Any]) -> None:
    """PyTorch has no bool clamp kernel: a bool tensor between bool bounds raises its
    NotImplementedError (rt clamped the bools); int or float bounds promote it."""
    _same_as_torch(lambda m: _sample(m, "bool").clamp(**bounds))
    _same_as_torch(lambda m: _sample(m, "bool").clamp_(**bounds))


@pytest.mark.parametrize("expr", ["lib.tensor([True]) + 2 ** 63", "lib.tensor([True]) < 2 ** 63",
                                  "lib.tensor([True]) * (2 ** 64 - 1)",
                                  "lib.tensor(True) & 2 ** 63", "lib.tensor([True]) + 2 ** 70",
                                  "lib.tensor([1]) + 2 ** 63", "lib.tensor([1.5]) + 2 ** 63"])
def test_a_bool_tensor_with_a_uint64_scalar(expr: str) -> None:
    """A Python int from 2 ** 63 to 2 ** 64 - 1 is PyTorch's uint64 scalar, which a bool
    tensor does not promote with (an int or float tensor does)."""
    torch = pytest.importorskip("torch")
    outcomes = []
    for lib in (torch, rt):
        try:
            outcomes.append(eval(expr, {"lib": lib}).tolist())
        except (RuntimeError, OverflowError) as e:
            outcomes.append((type(e).__name__, str(e)))
    assert outcomes[1] == outcomes[0]
