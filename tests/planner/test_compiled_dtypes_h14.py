"""h14's sweep of dtypes inside compiled steps: each op fused into a kernel computes what eager
mode does, bit for bit where the result is exact (comparisons, min/max, where, casts, integer
arithmetic), with no fallback to eager."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt


def _compiled_and_eager(fn: Callable[..., Any], *args: Any, fused: bool = True
                        ) -> tuple[Any, Any]:
    """fn's outputs compiled (its second call: a replay) and eager, with no fallback; ops
    fused into a kernel unless ``fused`` is False (not asked)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's overflow of a cast
        step = planner.compile(fn)
        step(*args)
        got = step(*args)
    assert step.plan.kernels or not fused, "the ops were not fused into a kernel"
    return got, fn(*args)


def _bits(t: Any) -> np.ndarray:
    """A tensor's values as raw bits (a signed zero and a nan's sign count)."""
    a = t.numpy()
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else a


def _same_bits(got: Any, want: Any) -> None:
    assert got.dtype == want.dtype
    if got.dtype == rt.bfloat16:
        got, want = got.float(), want.float()
    np.testing.assert_array_equal(_bits(got), _bits(want))


# --- maximum / minimum: signed zeros and nan ------------------------------------------------

_ZEROS_A = [-0.0, 0.0, 0.0, -0.0, np.nan, 1.0, -2.0, 3.0] * 8
_ZEROS_B = [0.0, -0.0, 0.0, -0.0, 1.0, np.nan, -2.0, -3.0] * 8


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_minimum_keep_eagers_signed_zero(op: str, dtype: str) -> None:
    """On a tie numpy's maximum/minimum (eager mode's) return the second operand, so
    maximum(-0., 0.) is 0. and maximum(0., -0.) is -0.; the kernel's llvm.maximum ordered -0.
    below 0. and gave 0. for both (and -0. for both through minimum)."""
    a = rt.tensor(np.array(_ZEROS_A, dtype=dtype))
    b = rt.tensor(np.array(_ZEROS_B, dtype=dtype))
    fn = getattr(rt, op)
    got, want = _compiled_and_eager(lambda x, y: (fn(x, y) * 1.0, fn(y, x) * 1.0), a, b)
    for g, w in zip(got, want, strict=True):
        _same_bits(g, w)
    # PyTorch's vectorized CPU kernel (_mm256_max_ps) returns the second operand as well
    torch = pytest.importorskip("torch")
    tfn = getattr(torch, op)
    ta, tb = torch.tensor(a.numpy()), torch.tensor(b.numpy())
    want_torch = tfn(ta, tb).numpy()  # its nan is all ones: compare nan-ness, not payloads
    np.testing.assert_array_equal(got[0].numpy(), want_torch)
    numbers = ~np.isnan(want_torch)
    np.testing.assert_array_equal(np.signbit(got[0].numpy())[numbers],
                                  np.signbit(want_torch)[numbers])


def test_maximum_of_bool_and_float_keeps_signed_zero() -> None:
    """A bool operand promoted to float inside the kernel: maximum(False, -0.) is -0."""
    a = rt.tensor(np.zeros(64, dtype=bool))
    b = rt.tensor(np.full(64, -0.0, dtype=np.float32))
    got, want = _compiled_and_eager(lambda x, y: (rt.maximum(x, y), rt.minimum(y, x) + 0.0), a, b)
    for g, w in zip(got, want, strict=True):
        _same_bits(g, w)


# --- float16 / bfloat16 times a one-element tensor ---------------------------------------------


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("scalar", [(70000, "int64"), ([70001], "int64"), (0.1, "float64"),
                                    (7, "int8")])
def test_low_float_times_a_one_element_tensor_as_eager(dtype: str, scalar: tuple[Any, str]
                                                       ) -> None:
    """A captured mul/div of a float16 or bfloat16 tensor by a one-element tensor of another
    dtype reads its value in float32, as eager mode and PyTorch's CPU kernel: 0. * tensor(70000)
    is 0., not nan (70000 in float16 is inf); the ops' values equal eager's."""
    x = rt.tensor(np.linspace(-9, 9, 64, dtype=np.float32)).to(getattr(rt, dtype))
    s = rt.tensor(scalar[0], dtype=getattr(rt, scalar[1]))
    got, want = _compiled_and_eager(lambda a, b: (a * b, a / b, a.div(b) * b), x, s,
                                    # float16 and int8 are no kernel's dtypes
                                    fused=dtype == "bfloat16" and scalar[1] != "int8")
    for g, w in zip(got[:2], want[:2], strict=True):  # one op each: eager's rounding
        _same_bits(g, w)
    torch = pytest.importorskip("torch")
    tx = torch.tensor(x.float().numpy()).to(getattr(torch, dtype))
    ts = torch.tensor(scalar[0], dtype=getattr(torch, scalar[1]))
    for g, w in zip(got[:2], (tx * ts, tx / ts), strict=True):
        np.testing.assert_array_equal(g.float().numpy(), w.float().numpy())


# --- float to int64 casts inside a kernel ------------------------------------------------------

_UNCASTABLE = [-np.inf, np.inf, np.nan, 1e30, -1e30, 9.3e18, -9.3e18, 2.5, -2.5, 2.0 ** 63]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_to_int64_cast_of_nan_inf_and_out_of_range_as_eager(dtype: str) -> None:
    """nan, inf and floats out of int64's range cast to INT64_MIN, as eager mode's (and
    PyTorch's) x86 conversion; LLVM's fptosi of them is poison, and folding a cast back to
    float into trunc(x) made -inf < x.to(int64) False where eager has -inf < -9.2e18."""
    x = rt.tensor(np.array(_UNCASTABLE * 4, dtype=dtype))
    y = rt.tensor(np.full(40, -np.inf, dtype=dtype))
    # one kernel each: with the int64 stored, LLVM kept the cast
    for fn in (lambda a, b: ((b + 0.0) < a.to(rt.int64),),
               lambda a, b: (a.to(rt.int64).to(a.dtype) * 1.0,),
               lambda a, b: ((a * 1.0).to(rt.int64) + 1,)):
        got, want = _compiled_and_eager(fn, x, y)
        _same_bits(got[0], want[0])
        assert got[0].dtype != rt.bool or got[0].numpy().all()


# --- a sweep: exact ops fused into kernels over the kernel dtypes, equal to eager --------------

_KERNEL_DTYPES = ["bool", "int64", "float32", "float64"]


def _operand(dtype: str, seed: int) -> Any:
    """(3, 37) values of ``dtype`` (a vector loop and its tail) with its edge cases."""
    rng = np.random.RandomState(seed)
    if dtype == "bool":
        return rt.tensor(rng.rand(3, 37) > 0.5)
    if dtype == "int64":
        v = rng.randint(-50, 50, (3, 37)).astype(np.int64)
        v.flat[:6] = [np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0, -1, 2 ** 53 + 1, 7]
        return rt.tensor(v)
    v = (rng.randn(3, 37) * 4).astype(dtype)
    v.flat[:9] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 2.5, -2.5, 1e30, 3.0]
    return rt.tensor(v)


_EXACT_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "compare": lambda a, b: ((a < b) | (a == b), (a != b) & (a >= b)),
    "minmax": lambda a, b: (rt.maximum(a, b), rt.minimum(b, a)),
    "where": lambda a, b: (rt.where(a > b, a, b), rt.where(a != b, a, 0)),
    "abs_neg_sign": lambda a, b: ((a + b).abs(), -(a + b), (a + b).sign()),
    "add_mul": lambda a, b: (a + b, a * b - b),
    "cast_int": lambda a, b: ((a + b).to(rt.int64), (a * b).to(rt.bool)),
    "cast_float": lambda a, b: ((a + b).to(rt.float32), (a * b).to(rt.float64)),
    "scalars": lambda a, b: ((a + b) * 3, (a + b) + True, (a + b) > 2),
    "reduce": lambda a, b: ((a + b).sum(1), (a * b).amax(1)),
}


@pytest.mark.parametrize("dtype", _KERNEL_DTYPES)
@pytest.mark.parametrize("name", list(_EXACT_OPS))
def test_exact_ops_in_kernels_equal_eager(name: str, dtype: str) -> None:
    a, b = _operand(dtype, 1), _operand(dtype, 2)
    fn = _EXACT_OPS[name]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = fn(a, b)
    except (RuntimeError, TypeError, NotImplementedError):
        return  # the op refuses these dtypes (bool's neg and sub, ...): nothing to compile
    # (bool arithmetic, or and max, is no kernel op: those steps run as eager)
    got, want = _compiled_and_eager(fn, a, b, fused=dtype != "bool")
    for g, w in zip(got, want, strict=True):
        if name == "reduce" and g.dtype.is_floating_point:  # a float sum's order
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
        else:
            _same_bits(g, w)


def test_python_ints_past_int64_in_kernels_as_eager() -> None:
    """A Python int from 2 ** 63 to 2 ** 64 - 1 is a uint64 scalar, as PyTorch's: wrapped
    beside int64 and its value beside floats, compiled as eager (eager raised numpy's
    OverflowError and compared exactly; the captured constants were already wrapped)."""
    i = rt.tensor(np.arange(-32, 32, dtype=np.int64))
    got, want = _compiled_and_eager(
        lambda a: ((a * 2) - 2 ** 63, (a + 0) < 2 ** 63, (a * 1.0) + 2 ** 63), i)
    for g, w in zip(got, want, strict=True):
        _same_bits(g, w)
    assert not got[1].numpy().any()


# --- h14's eager fixes inside compiled steps ----------------------------------------------------


def _fixed_cases() -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    rng = np.random.RandomState(0)
    x = rt.tensor((rng.randn(4, 64) * 3).astype(np.float32))
    lo = rt.tensor(np.where(rng.rand(4, 64) < 0.1, np.nan, rng.randn(4, 64)).astype(np.float32))
    i16 = rt.tensor(rng.randint(-100, 100, (4, 64)).astype(np.int16))
    u8 = rt.tensor(rng.randint(0, 256, (4, 64)).astype(np.uint8))
    i8 = rt.tensor(rng.randint(-5, 5, (4, 64)).astype(np.int8))
    return {
        "clamp_nan_bound": (lambda a, b: (rt.clamp(a * 1.0, min=b), rt.clamp(a + 0.0, b, b * 2)),
                            (x, lo)),
        "alpha_promoted": (lambda a, b: (rt.sub(a, b, alpha=2), rt.add(a * 1, b, alpha=-3)),
                           (i16, u8)),
        "int_pow": (lambda a, b: (a ** b, a.clone().pow_(b)), (i16, i8)),
        "logical_0d": (lambda a, b: (rt.logical_xor(a, rt.tensor(2 ** 40)),
                                     rt.logical_or(b, rt.tensor(256))), (i8, u8)),
        "half_math": (lambda a, b: (rt.logaddexp(a, b), rt.hypot(a, b),
                                    rt.nn.functional.mish(a)), (x.half(), x.half() * 2)),
        "bf16_math": (lambda a, b: (rt.logaddexp(a, b), rt.nn.functional.selu(a)),
                      (x.bfloat16(), x.bfloat16() * 2)),
        "round_decimals": (lambda a, b: (a.round(decimals=1), b.round(decimals=-1)),
                           (x.half(), x.bfloat16())),
        "past_int64": (lambda a, b: (a - 2 ** 63, b < 2 ** 63), (i16.long(), i16)),
    }


@pytest.mark.parametrize("name", list(_fixed_cases()))
def test_eager_fixes_captured_as_eager(name: str) -> None:
    fn, args = _fixed_cases()[name]
    got, want = _compiled_and_eager(fn, *args, fused=False)
    for g, w in zip(got, want, strict=True):
        _same_bits(g, w)
