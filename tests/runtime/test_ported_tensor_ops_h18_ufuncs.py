"""PyTorch's test/test_unary_ufuncs.py and test/test_binary_ufuncs.py (their non-OpInfo tests),
ported by hand for device 'cpu' and the float32/float64/int64/bool dtypes with
``import runtime as torch`` (helpers and the list of what is left out in
tests/runtime/test_ported_tensor_ops_h18.py).

Left out here: complex inputs (isposinf's complex error, isreal), CUDA-only polygamma and
abs_zero, and the OpInfo-driven reference tests.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import runtime as torch
from tests.runtime.test_ported_tensor_ops_h18 import assert_equal

_MATH = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
         torch.bfloat16, torch.float32, torch.float64]
_FP = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
_INF, _NAN = float("inf"), float("nan")


@pytest.mark.parametrize("dtype", _MATH)
def test_threshold(dtype: torch.dtype) -> None:
    if dtype in (torch.uint8, torch.float16):
        return
    x = torch.randn(100).sign().to(dtype=dtype)
    assert torch.threshold(x, 0, 0).le(0).any()


def _igamma_inputs(dtype: torch.dtype) -> list[tuple[torch.Tensor, torch.Tensor]]:
    # PyTorch takes 500 steps; 120 cover the same range in a 16th of the time (a 500 x 500
    # broadcast took 15-20 s here)
    vec = torch.logspace(-4, 4, steps=120, base=2.71828182846,
                         dtype=torch.float64).unsqueeze(-1).to(dtype)
    half = vec.shape[0] // 2
    return [(vec, vec.transpose(0, 1)), (vec, vec), (vec, 0.5 * vec), (vec, 2.0 * vec),
            (vec[::2, :], vec[::2, :]), (vec[::2, :], vec[:half, :]), (vec[:half, :], vec[::2, :])]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("name", "ref"), [("igamma", "gammainc"), ("igammac", "gammaincc")])
def test_igamma_common(dtype: torch.dtype, name: str, ref: str) -> None:
    special = pytest.importorskip("scipy.special")
    for a, b in _igamma_inputs(dtype):
        expected = torch.from_numpy(getattr(special, ref)(a.numpy(), b.numpy())).to(dtype)
        assert_equal(getattr(torch, name)(a, b), expected,
                     rtol=1e-5 if dtype == torch.float32 else 1e-7, atol=1e-5)


@pytest.mark.parametrize("dtype", _FP)
def test_igamma_igammac_edge_cases(dtype: torch.dtype) -> None:
    kw = {"dtype": dtype}
    infs = torch.zeros((3,), **kw) + _INF
    zeros, ones = torch.zeros((3,), **kw), torch.ones((3,), **kw)
    zero_to_large = torch.tensor([0., 1., 1e3], **kw)
    small_to_inf = torch.tensor([1e-3, 1., _INF], **kw)
    nans = torch.zeros((3,), **kw) + _NAN
    cases = [((zeros, small_to_inf), ones, zeros), ((small_to_inf, zeros), zeros, ones),
             ((infs, zero_to_large), zeros, ones), ((zero_to_large, infs), ones, zeros),
             ((zeros, zeros), nans, nans), ((infs, infs), nans, nans),
             ((-small_to_inf, small_to_inf), nans, nans)]
    for (a, x), want_p, want_q in cases:
        for fn, want in ((torch.igamma, want_p), (torch.igammac, want_q)):
            got = fn(a, x)
            if torch.all(torch.isnan(want)):
                assert torch.all(torch.isnan(got))
            else:
                assert_equal(got, want)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32, torch.float64])
def test_i0(dtype: torch.dtype) -> None:
    special = pytest.importorskip("scipy.special")
    ranges = [13.25, 88.5] + ([709.75] if dtype == torch.float64 else [])
    for r in ranges:
        for rr in (r, -r):
            t = torch.rand(1000).to(dtype) * rr
            expected = special.i0(t.float().numpy() if dtype == torch.bfloat16 else t.numpy())
            assert_equal(torch.i0(t), torch.from_numpy(np.asarray(expected)).to(dtype),
                         rtol=1e-2 if dtype == torch.bfloat16 else 1e-5, atol=1e-5)
    assert_equal(torch.i0(torch.tensor([], dtype=dtype)), torch.tensor([], dtype=dtype))
    assert torch.i0(torch.tensor([_INF, -_INF, _NAN], dtype=dtype)).isnan().all()


def test_abs_big_number() -> None:
    assert torch.tensor([2 ** 31 + 1], dtype=torch.long).abs()[0].item() > 0


@pytest.mark.parametrize("dtype", [torch.float, torch.double])
def test_abs_signed_zero(dtype: torch.dtype) -> None:
    inp = torch.zeros(129, dtype=dtype)
    inp[::2] = -0.0
    for v in inp.abs().tolist():
        assert math.copysign(1.0, v) > 0.0


def test_absolute() -> None:
    from copy import deepcopy

    t = torch.randn(10, 10)
    assert_equal(t.abs(), t.absolute())
    assert_equal(torch.abs(t), torch.absolute(t))
    r_abs, r_absolute = torch.empty((10, 10)), torch.empty((10, 10))
    torch.abs(t, out=r_abs)
    torch.absolute(t, out=r_absolute)
    assert_equal(r_abs, r_absolute)
    t_copy = deepcopy(t)
    t.absolute_()
    t_copy.abs_()
    assert_equal(t, t_copy)


@pytest.mark.parametrize("dtype", _FP)
def test_isfinite_isinf_isnan(dtype: torch.dtype) -> None:
    vals = (-_INF, _INF, _NAN, -1, 0, 1)
    t = torch.tensor(vals, dtype=dtype)
    for fn in ("isfinite", "isinf", "isnan"):
        assert_equal(getattr(torch, fn)(t), getattr(np, fn)(np.array(vals)))


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64])
def test_isfinite_isinf_isnan_int(dtype: torch.dtype) -> None:
    t = torch.tensor((-1, 0, 1), dtype=dtype)
    for fn in ("isfinite", "isinf", "isnan"):
        assert_equal(getattr(torch, fn)(t), getattr(np, fn)(np.array((-1, 0, 1))))


@pytest.mark.parametrize("dtype", _FP)
def test_isposinf_isneginf_float(dtype: torch.dtype) -> None:
    vals = (-_INF, _INF, _NAN, -1, 0, 1)
    t = torch.tensor(vals, dtype=dtype)
    for fn, target in ((torch.isposinf, (0, 1, 0, 0, 0, 0)), (torch.isneginf, (1, 0, 0, 0, 0, 0))):
        want = torch.tensor(target, dtype=torch.bool)
        assert_equal(fn(t), want)
        out = torch.empty_like(t, dtype=torch.bool)
        fn(t, out=out)
        assert_equal(out, want)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32,
                                   torch.int64, torch.bool])
def test_isposinf_isneginf_int_and_bool(dtype: torch.dtype) -> None:
    t = torch.tensor((-1, 0, 1), dtype=dtype) if dtype != torch.uint8 else \
        torch.tensor((0, 1, 2), dtype=dtype)
    for fn in (torch.isposinf, torch.isneginf):
        assert_equal(fn(t), torch.zeros(3, dtype=torch.bool))
        out = torch.empty_like(t, dtype=torch.bool)
        fn(t, out=out)
        assert_equal(out, torch.zeros_like(t, dtype=torch.bool))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32,
                                   torch.int64, torch.float16, torch.bfloat16, torch.float32,
                                   torch.float64])
def test_isposinf_isneginf_non_boolean_output(dtype: torch.dtype) -> None:
    t = torch.tensor((_INF, -_INF, 1.2))
    for fn in (torch.isposinf, torch.isneginf, torch.signbit):
        with pytest.raises(RuntimeError, match="does not support non-boolean outputs"):
            fn(t, out=torch.empty_like(t, dtype=dtype))


@pytest.mark.parametrize("dtype", [*_MATH, torch.bool])
def test_isreal_noncomplex(dtype: torch.dtype) -> None:
    result = torch.isreal(torch.tensor((1, 2, 3), dtype=dtype))
    assert_equal(result, torch.ones(result.size(), dtype=torch.bool))


def test_isfinite_isinf_type() -> None:
    for name in ("isfinite", "isinf", "isnan", "isposinf", "isneginf", "isreal", "signbit"):
        with pytest.raises(TypeError, match=f"^{name}\\(\\): argument 'input' \\(position 1\\) "
                                            "must be Tensor, not int$"):
            getattr(torch, name)(1)


def test_bitwise_not() -> None:
    res = 0xffff - torch.arange(127, dtype=torch.int8)
    for dtype in (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64):
        if dtype == torch.bool:
            a, expected = torch.tensor([True, False]), torch.tensor([False, True])
        else:
            a, expected = torch.arange(127, dtype=dtype), res.to(dtype)
        assert_equal(expected, a.bitwise_not())
        b = torch.empty(0, dtype=dtype)
        torch.bitwise_not(a, out=b)
        assert_equal(expected, b)
        a.bitwise_not_()
        assert_equal(expected, a)
    for dtype in (torch.half, torch.float, torch.double):
        a = torch.zeros(10, dtype=dtype)
        with pytest.raises(RuntimeError):
            a.bitwise_not()
        with pytest.raises(RuntimeError):
            torch.bitwise_not(a, out=torch.empty(0, dtype=dtype))
        with pytest.raises(RuntimeError):
            a.bitwise_not_()


def test_nonzero_empty() -> None:
    x = torch.randn(0, 2, 0, 5, 0)
    y, z = torch.nonzero(x), torch.nonzero(x, as_tuple=True)
    assert y.numel() == 0 and y.shape == torch.Size([0, 5])
    assert len(z) == 5 and all(t.shape == torch.Size([0]) for t in z)
    x = torch.tensor(0.5)
    z = torch.nonzero(x, as_tuple=True)
    assert len(z) == 1
    assert_equal(z[0], torch.zeros(1, dtype=torch.long))
    x = torch.zeros(())
    assert torch.nonzero(x).shape == torch.Size([0, 0])
    z = torch.nonzero(x, as_tuple=True)
    assert len(z) == 1
    assert_equal(z[0], torch.empty(0, dtype=torch.long))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_exp(dtype: torch.dtype) -> None:
    for v in (2, -2):
        a = (torch.tensor(v, dtype=dtype) * torch.arange(18) / 3 * math.pi).to(dtype)
        assert_equal(torch.exp(a), np.exp(a.numpy()))


@pytest.mark.parametrize("dtype", [*_MATH, torch.bool])
def test_sign(dtype: torch.dtype) -> None:
    if dtype == torch.bool:
        a = torch.tensor([True, True, False, float("nan")]).bool()
        target = torch.tensor([True, True, False, True]).bool()
        assert_equal(a.sign(), target)
        assert_equal(torch.sign(a), target)
        out = torch.empty_like(a)
        torch.sign(a, out=out)
        assert_equal(out, target)
        a.sign_()
        assert_equal(a, target)
        return
    if dtype.is_floating_point:
        info = torch.finfo(dtype)
        a = torch.tensor([_NAN, -12, 0, 71, info.min, info.max], dtype=dtype)
        target = torch.tensor([0, -1, 0, 1, -1, 1], dtype=dtype)
    else:
        info = torch.iinfo(dtype)
        if info.min == 0:
            a = torch.tensor([12, 0, 71, info.min, info.max], dtype=dtype)
            target = torch.tensor([1, 0, 1, 0, 1], dtype=dtype)
        else:
            a = torch.tensor([-12, 0, 71, info.min, info.max], dtype=dtype)
            target = torch.tensor([-1, 0, 1, -1, 1], dtype=dtype)
    assert_equal(a.sign(), target)
    assert_equal(torch.sign(a), target)
    out = torch.empty_like(a)
    torch.sign(a, out=out)
    assert_equal(out, target)
    a.sign_()
    assert_equal(a, target)


@pytest.mark.parametrize("dtype", _FP)
def test_signbit_float(dtype: torch.dtype) -> None:
    t = torch.randn(5, 5)
    assert_equal(torch.signbit(t), np.signbit(t.numpy()))
    out = torch.empty_like(t, dtype=torch.bool)
    torch.signbit(t, out=out)
    assert_equal(out, torch.signbit(t))
    special = torch.tensor((0, _INF, -_INF, _NAN), dtype=dtype)
    assert_equal(torch.signbit(special), torch.tensor([False, False, True, False]))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32,
                                   torch.int64, torch.bool])
def test_signbit_int_and_bool(dtype: torch.dtype) -> None:
    t = torch.randint(-5, 5, (5, 5))
    assert_equal(torch.signbit(t), np.signbit(t.numpy()))
    out = torch.empty_like(t, dtype=torch.bool)
    torch.signbit(t, out=out)
    assert_equal(out, torch.signbit(t))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_acosh_atanh_domain(dtype: torch.dtype) -> None:
    sample = torch.tensor([-_INF, 1.00, -1.23, -0.06, 0.98, _INF], dtype=dtype)
    assert_equal(torch.isnan(torch.acosh(sample)),
                 torch.tensor([True, False, True, True, True, False]))
    assert_equal(torch.isinf(sample.acosh()),
                 torch.tensor([False, False, False, False, False, True]))
    sample = torch.tensor([-_INF, -1.00, 1.00, -1.23, 1.06, _INF], dtype=dtype)
    assert_equal(torch.isnan(torch.atanh(sample)),
                 torch.tensor([True, False, False, True, True, True]))
    assert_equal(torch.isinf(sample.atanh()),
                 torch.tensor([False, True, True, False, False, False]))


# ------------------------------------------------------------ test_binary_ufuncs.py

@pytest.mark.parametrize("dtype", [torch.float, torch.double])
def test_mul_intertype_scalar(dtype: torch.dtype) -> None:
    x = torch.tensor(1.5, dtype=dtype)
    y = torch.tensor(3, dtype=torch.int32)
    assert (x * y).item() == 4.5 and (y * x).item() == 4.5
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        y *= x
    x *= y
    assert x.item() == 4.5


@pytest.mark.parametrize("dtype", [*_MATH, torch.bool])
def test_sub(dtype: torch.dtype) -> None:
    m1 = torch.tensor([2.34, 4.44], dtype=dtype)
    m2 = torch.tensor([1.23, 2.33], dtype=dtype)
    if dtype == torch.bool:
        with pytest.raises(RuntimeError):
            m1 - m2
    elif dtype.is_floating_point:
        assert_equal(m1 - m2, torch.tensor([1.11, 2.11], dtype=dtype),
                     atol=0.01 if dtype in (torch.bfloat16, torch.float16) else None,
                     rtol=0 if dtype in (torch.bfloat16, torch.float16) else None)
    else:
        assert_equal(m1 - m2, torch.tensor([2 - 1, 4 - 2], dtype=dtype))


def test_csub() -> None:
    a = torch.randn(100, 90)
    b = a.clone().normal_()
    res = a.clone()
    res.sub_(b)
    assert_equal(torch.add(a, b, alpha=-1), res)
    a = torch.randn(100, 100)
    res = a.clone()
    res.sub_(123.5)
    assert_equal(torch.add(a, -123.5), res)


@pytest.mark.parametrize("dtype", [torch.float, torch.double])
def test_min_max_binary_op_nan(dtype: torch.dtype) -> None:
    a, b = torch.rand(1000, dtype=dtype), torch.rand(1000, dtype=dtype)
    a[:250] = _NAN
    b[250:500] = _NAN
    a[500:750] = _NAN
    b[500:750] = _NAN
    ma, mi = torch.max(a, b), torch.min(a, b)
    assert bool(torch.isnan(ma[:750]).all()) and bool(torch.isnan(mi[:750]).all())
    assert not bool(torch.isnan(ma[750:]).any()) and not bool(torch.isnan(mi[750:]).any())


_COPYSIGN = [torch.float32, torch.float64, torch.float16, torch.int64, torch.int32, torch.bool,
             torch.uint8]


@pytest.mark.parametrize("dt_a", _COPYSIGN)
@pytest.mark.parametrize("dt_b", _COPYSIGN)
def test_copysign(dt_a: torch.dtype, dt_b: torch.dtype) -> None:
    from tests.runtime.test_ported_tensor_ops_h18 import make_tensor

    def check(a: torch.Tensor, b: torch.Tensor) -> None:
        got = torch.copysign(a, b)
        want = torch.from_numpy(np.copysign(a.numpy(), b.numpy()))
        common = torch.promote_types(got.dtype, want.dtype)
        assert_equal(got.to(common), want.to(common))
        if torch.float16 not in (a.dtype, b.dtype):
            assert_equal(torch.copysign(torch.tensor(1.0), got),
                         torch.copysign(torch.tensor(1.0), want.to(got.dtype)))

    low = 0 if torch.uint8 in (dt_a, dt_b) else -9
    check(make_tensor((10, 10), dt_a, low=low), make_tensor((10, 10), dt_b, low=low))
    check(make_tensor((10, 1, 10), dt_a, low=low), make_tensor((10, 10), dt_b, low=low))
    check(make_tensor((10, 10), dt_a, low=low), make_tensor((10, 1, 10), dt_b, low=low))
    cases = [0.0, -0.0, _INF, -_INF, _NAN]
    if dt_a in (torch.float32, torch.float64, torch.float16):
        b = make_tensor((10, 10), dt_b, low=low)
        for case in cases:
            check(torch.tensor([case], dtype=dt_a), b)
    if dt_b.is_floating_point:
        a = make_tensor((10, 10), dt_a, low=low)
        for case in cases:
            check(a, torch.tensor([case], dtype=dt_b))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float])
def test_div(dtype: torch.dtype) -> None:
    for op, method, inplace in ((torch.div, torch.Tensor.div, torch.Tensor.div_),
                                (torch.true_divide, torch.Tensor.true_divide,
                                 torch.Tensor.true_divide_)):
        m1 = torch.randn(10, 10).to(dtype=dtype)
        res1 = m1.clone()
        inplace(res1[:, 3], 2)
        res2 = m1.clone()
        for i in range(m1.size(0)):
            res2[i, 3] = res2[i, 3] / 2
        assert_equal(res1, res2)
        a1, a2 = torch.tensor([4.2, 6.2], dtype=dtype), torch.tensor([2., 2.], dtype=dtype)
        assert_equal(op(a1, a2), torch.tensor([2.1, 3.1], dtype=dtype), atol=0.01, rtol=0)
        assert_equal(method(a1, a2), op(a1, a2))
        res = torch.empty_like(a1)
        assert_equal(torch.true_divide(a1, a2, out=res), torch.tensor([2.1, 3.1], dtype=dtype),
                     atol=0.01, rtol=0)


_ARITH = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float32,
          torch.float64]


@pytest.mark.parametrize("dtype", _ARITH)
def test_floor_divide_tensor_and_scalar(dtype: torch.dtype) -> None:
    """(PyTorch 2.13's floor_divide rounds down, without the file's old deprecation warning.)"""
    x = torch.randn(10).mul(30).to(dtype)
    y = torch.arange(1, 11, dtype=dtype)
    z = x // y
    assert z.dtype == x.dtype
    assert_equal(z, torch.floor(x.double() / y.double()).to(dtype))
    z = x // 3
    assert z.dtype == x.dtype
    assert_equal(z, torch.tensor([math.floor(v / 3.) for v in x.tolist()], dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.float, torch.long])
def test_floor_divide_out(dtype: torch.dtype) -> None:
    x = torch.randn(10).mul(10).to(dtype)
    y = torch.arange(1, 11, dtype=dtype)
    o = torch.empty(10, dtype=dtype)
    torch.floor_divide(x, y, out=o)
    assert_equal(o, x // y)
    torch.floor_divide(x, 2, out=o)
    assert_equal(o, x // 2)


@pytest.mark.parametrize("dtype", _ARITH)
def test_rdiv(dtype: torch.dtype) -> None:
    x = torch.rand(100).add(1).mul(4).to(dtype)
    assert_equal(30 / x, torch.tensor([30 / v for v in x.tolist()]), exact_dtype=False)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
def test_fmod_remainder_by_zero_float(dtype: torch.dtype) -> None:
    from tests.runtime.test_ported_tensor_ops_h18 import make_tensor

    for fn in (torch.fmod, torch.remainder):
        x = make_tensor((10, 10), dtype)
        assert torch.all(fn(x, 0.0).isnan())
        assert torch.all(fn(x, torch.zeros_like(x)).isnan())


@pytest.mark.parametrize("dtype", _ARITH[:5])
def test_fmod_remainder_by_zero_integral(dtype: torch.dtype) -> None:
    from tests.runtime.test_ported_tensor_ops_h18 import make_tensor

    for fn in (torch.fmod, torch.remainder):
        x = make_tensor((10, 10), dtype, low=0 if dtype == torch.uint8 else -9)
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            fn(x, torch.zeros_like(x))


@pytest.mark.parametrize("dtype", [*_ARITH, torch.float16])
def test_fmod_remainder(dtype: torch.dtype) -> None:
    from tests.runtime.test_ported_tensor_ops_h18 import make_tensor

    low = 0 if dtype == torch.uint8 else -9
    x = make_tensor((10, 10), dtype, low=low)
    mod = make_tensor((10, 10), dtype, low=low)
    mod[mod == 0] = 1
    for m in (3, 2.3, mod, mod.t()):
        for fn, inplace, ref in ((torch.fmod, torch.Tensor.fmod_, np.fmod),
                                 (torch.remainder, torch.Tensor.remainder_, np.mod)):
            np_m = m.numpy() if isinstance(m, torch.Tensor) else m
            exp = torch.from_numpy(np.asarray(ref(x.numpy(), np_m)))
            res = fn(x, m)
            tol = 1e-2 if dtype == torch.float16 else None
            assert_equal(res, exp, exact_dtype=False, atol=tol, rtol=tol)
            out = torch.empty(0, dtype=res.dtype)
            fn(x, m, out=out)
            assert_equal(out, exp, exact_dtype=False, atol=tol, rtol=tol)
            assert out.size() == torch.Size([10, 10])
            xc = x.clone()
            try:
                inplace(xc, m)
                assert_equal(xc, exp, exact_dtype=False, atol=tol, rtol=tol)
            except RuntimeError as e:
                assert "can't be cast to the desired output type" in str(e)
