"""PyTorch's test/test_type_promotion.py, ported by hand for device 'cpu' with
``import runtime as torch`` (helpers and the list of what is left out in
tests/runtime/test_ported_tensor_ops_h18.py); each test runs with the default dtype float32 and
again float64, as the file's float_double_default_dtype does.

Left out here: the complex promotions, test_half's CPU error (PyTorch 2.13 adds float16 on
the CPU), torch.add(a, b, True) (PyTorch's deprecated add(input, alpha, other) overload) and
linspace/logspace without steps (an argument PyTorch 2.13 requires).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

import runtime as torch
from tests.runtime.test_ported_tensor_ops_h18 import assert_equal


@pytest.fixture(params=[torch.float32, torch.float64], autouse=True)
def default_dtype(request: pytest.FixtureRequest) -> Iterator[torch.dtype]:
    previous = torch.get_default_dtype()
    torch.set_default_dtype(request.param)
    try:
        yield request.param
    finally:
        torch.set_default_dtype(previous)


def test_inplace() -> None:
    int_tensor = torch.ones([4, 4, 4], dtype=torch.int32)
    with pytest.raises(RuntimeError, match="can't be cast to"):
        int_tensor.add_(1.5)
    expected = torch.ones([4, 4, 4], dtype=torch.int32)
    int_tensor.add_(torch.ones([4, 4, 4], dtype=torch.int64))
    int_tensor.add_(1)
    assert_equal(int_tensor, expected + 2)
    assert int_tensor.dtype == torch.int32
    bool_tensor = torch.tensor([1, 1, 1], dtype=torch.bool)
    uint8_tensor = torch.tensor([1, 1, 1], dtype=torch.uint8)
    with pytest.raises(RuntimeError, match="can't be cast to"):
        bool_tensor.add_(uint8_tensor)
    uint8_tensor *= torch.tensor([1, 1, 1], dtype=torch.int16)
    assert uint8_tensor.dtype == torch.uint8


def test_unsigned() -> None:
    assert (torch.ones(3, dtype=torch.uint8) + 5).dtype == torch.uint8


def test_int_and_float_promotion() -> None:
    a, b = torch.ones([4, 4, 4], dtype=torch.int32), torch.ones([4, 4, 4], dtype=torch.int64)
    assert_equal(a + b, b + b)
    f, d = torch.ones([4, 4, 4], dtype=torch.float), torch.ones([4, 4, 4], dtype=torch.double)
    assert_equal(f + d, d + d)
    assert_equal(d + f, d + d)
    assert (a + torch.ones([4, 4, 4], dtype=torch.float)).dtype == torch.float32


def test_add_wrapped() -> None:
    a = torch.ones([4, 4, 4], dtype=torch.int)
    c = a + 1
    assert_equal(c, a + a)


def test_from_issue() -> None:
    a = torch.rand(3, dtype=torch.float32)
    u = torch.tensor([0, 0, 1], dtype=torch.uint8)
    assert (a * 5).dtype == torch.float32
    assert (u + 1).dtype == torch.uint8
    assert (u + 1000).dtype == torch.uint8
    other = torch.tensor(5.5, dtype=torch.double)
    assert (u + 5.5).dtype == torch.get_default_dtype()
    assert (u + other).dtype == torch.double
    assert (a + other).dtype == torch.float32


def test_half() -> None:
    half = torch.tensor(5.5, dtype=torch.float16)
    assert (half + 2.2).dtype == torch.float16
    assert (half + 100000).dtype == torch.float16
    assert (half + 100000).item() == float("inf")
    assert (half + torch.tensor(100000.0)).dtype == torch.get_default_dtype()


def test_alternate_result() -> None:
    f = torch.tensor([1, 1, 1, 1], dtype=torch.float)
    with pytest.raises(RuntimeError, match="can't be cast to"):
        torch.add(f, f, out=torch.tensor([0, 0, 0, 0], dtype=torch.long))
    d = torch.tensor([1, 1, 1, 1], dtype=torch.double)
    torch.add(f, f, out=d)
    assert d.dtype == torch.double
    assert_equal(f + f, d, exact_dtype=False)


def test_mixed_type_backward() -> None:
    f = torch.ones([3, 3], dtype=torch.float, requires_grad=True)
    ten = torch.tensor([10.], dtype=torch.double)
    tens = f * ten
    (tens + 2).sum().backward()
    assert_equal(f.grad, tens, exact_dtype=False)
    assert f.grad.dtype == torch.float
    for func in (torch.add, torch.sub, torch.rsub, torch.mul, torch.div):
        for dt1, dt2 in itertools.product([torch.float, torch.double],
                                          [torch.float, torch.double, torch.int, torch.long]):
            x = torch.ones(10, requires_grad=True, dtype=dt1)
            func(x, torch.ones(10, dtype=dt2)).sum().backward()
            assert x.grad.dtype == dt1


def _test_tensor(dtype: torch.dtype, remove_zeros: bool = False) -> torch.Tensor:
    shape = [5, 5, 5]
    if dtype == torch.bool:
        return torch.randint(int(remove_zeros), 2, shape, dtype=dtype)
    if dtype.is_floating_point:
        t = torch.randn(shape).to(dtype)
        if remove_zeros:
            t[torch.abs(t) < 0.05] = 5
        return t
    t = torch.randint(-5 if dtype.is_signed else 0, 10, shape, dtype=dtype)
    if remove_zeros:
        t[t == 0] = 5
    return t


_MATH = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
         torch.bfloat16, torch.float32, torch.float64, torch.bool]


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "rsub"])
def test_many_promotions(op: str) -> None:
    fn = getattr(torch, op)
    for dt1, dt2 in itertools.product(_MATH, _MATH):
        common = torch.promote_types(dt1, dt2)
        if op in ("sub", "rsub") and torch.bool in (dt1, dt2):
            continue  # subtraction with a bool tensor is refused
        for non_contiguous in (True, False):
            first, second = _test_tensor(dt1), _test_tensor(dt2, op == "div")
            if non_contiguous:
                first, second = first.transpose(0, 2), second.transpose(2, 1)
            result = fn(first, second)
            expected = fn(first.to(common), second.to(common))
            assert result.dtype == expected.dtype, (op, dt1, dt2)
            assert_equal(result, expected)


def test_non_promoting_ops() -> None:
    x = torch.ones(4, dtype=torch.double)
    with pytest.raises(RuntimeError):
        torch.neg(torch.ones(4, dtype=torch.float), out=torch.ones(4, dtype=torch.long))
    with pytest.raises(RuntimeError):
        torch.lerp(x, torch.ones(4, dtype=torch.float), 1)


def test_alpha_mismatch() -> None:
    x = torch.ones(4, dtype=torch.int)
    with pytest.raises(RuntimeError, match="alpha must not be"):
        torch.add(x, x, alpha=1.1)
    x = x.to(torch.bool)
    with pytest.raises(RuntimeError, match="alpha must not be"):
        torch.add(x, x, alpha=1.1)
    assert_equal(x + x, torch.add(x, x, alpha=True))


def test_booleans() -> None:
    onedim = torch.tensor([True])
    assert_equal(onedim + onedim, onedim)
    assert_equal(onedim + True, onedim)
    assert torch.add(True, True).item() is True
    assert torch.add(False, False).item() is False
    assert torch.add(False, True).item() is True
    with pytest.raises(RuntimeError, match="Boolean alpha only supported"):
        torch.add(1, 1, alpha=True)
    assert_equal(torch.add(torch.tensor(True), torch.tensor(True), alpha=True),
                 torch.tensor(True))


def test_create_bool_tensors() -> None:
    assert_equal(torch.arange(False, True), torch.tensor([0], dtype=torch.int64))
    assert_equal(torch.arange(True), torch.tensor([0], dtype=torch.int64))
    assert_equal(torch.arange(False, True, 0.5),
                 torch.tensor([0, 0.5], dtype=torch.get_default_dtype()))
    assert_equal(torch.arange(False, False), torch.ones(0, dtype=torch.int64))
    assert_equal(torch.linspace(False, True, 100), torch.linspace(0, 1, 100))
    assert_equal(torch.logspace(False, True, 100), torch.logspace(0, 1, 100))
    assert_equal(torch.scalar_tensor(False), torch.tensor(0.))


def test_result_type() -> None:
    assert torch.result_type(torch.tensor(1, dtype=torch.int), 1) == torch.int
    assert torch.result_type(1, torch.tensor(1, dtype=torch.int)) == torch.int
    assert torch.result_type(1, 1.) == torch.get_default_dtype()
    assert torch.result_type(torch.tensor(1), 1.) == torch.get_default_dtype()
    assert torch.result_type(torch.tensor(1, dtype=torch.long),
                             torch.tensor([1, 1], dtype=torch.int)) == torch.int
    assert torch.result_type(torch.tensor([1., 1.], dtype=torch.float), 1.) == torch.float
    assert torch.result_type(torch.tensor(1., dtype=torch.float),
                             torch.tensor(1, dtype=torch.double)) == torch.double


def test_can_cast() -> None:
    assert torch.can_cast(torch.double, torch.float)
    assert not torch.can_cast(torch.float, torch.int)


def _outcome(lib: Any, call: Any) -> Any:
    try:
        r = call(lib)
    except Exception as e:  # noqa: BLE001 - the type and text are compared
        return type(e).__name__, str(e)
    return str(r.dtype).split(".")[-1], r.tolist()


_VALUE_FOR_TYPE = {torch.uint8: 1 << 5, torch.int8: 1 << 5, torch.int16: 1 << 10,
                   torch.int32: 1 << 20, torch.int64: 1 << 35, torch.float16: 1 << 10,
                   torch.float32: 1 << 20, torch.float64: 1 << 35}
_COMPARISONS = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
                "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}


@pytest.mark.parametrize("name", list(_COMPARISONS))
def test_comparison_ops_with_type_promotion(name: str) -> None:
    fn, ref = getattr(torch, name), _COMPARISONS[name]
    for dt1, dt2 in itertools.product(_VALUE_FOR_TYPE, _VALUE_FOR_TYPE):
        v1, v2 = _VALUE_FOR_TYPE[dt1], _VALUE_FOR_TYPE[dt2]
        for t1, t2, want in ((torch.tensor([v1], dtype=dt1), torch.tensor([v2], dtype=dt2),
                              torch.tensor([ref(v1, v2)])),
                             (torch.tensor(v1, dtype=dt1), torch.tensor(v2, dtype=dt2),
                              torch.tensor(ref(v1, v2)))):
            with pytest.warns(UserWarning, match="An output with one or more elements was "
                              "resized") if want.ndim == 0 else _no_warning():
                out = fn(t1, t2, out=torch.empty(1, dtype=torch.bool))
            assert_equal(out, want)
            assert_equal(fn(t1, t2), want)
            assert (t1.dtype, t2.dtype) == (dt1, dt2)


class _no_warning:  # noqa: N801 - a context manager used as pytest.warns is
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_lt_with_type_promotion() -> None:
    for dt in _MATH:
        for x in (torch.tensor([0], dtype=dt), torch.tensor(0, dtype=dt)):
            for other in (0.5, torch.tensor(0.5)):
                actual = x < other
                assert actual.dtype == torch.bool
                assert bool(actual.all())


def test_promote_types() -> None:
    assert torch.promote_types(torch.float, torch.int) == torch.float
    assert torch.promote_types(torch.float, torch.double) == torch.double
    assert torch.promote_types(torch.int, torch.uint8) == torch.int
    for dtype in _MATH:
        assert torch.promote_types(dtype, dtype) == dtype


def test_indexing() -> None:
    a = torch.ones(5, 2, dtype=torch.double)
    b = torch.zeros(5, dtype=torch.int)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination "
                                           "dtypes match"):
        a[:, [1]] = b.unsqueeze(-1)
    tmp = torch.ones(9, 9, dtype=torch.float)
    mask = torch.ones(10, 10, dtype=torch.uint8)
    assert_equal(tmp + mask[1:, 1:], torch.full([9, 9], 2., dtype=torch.float))


def test_transpose() -> None:
    a = torch.tensor([[True, True], [False, True]])
    assert_equal(a.t() == 0, a.t() == False)  # noqa: E712


_INT_AND_BOOL = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


@pytest.mark.parametrize("dtype", _INT_AND_BOOL)
def test_true_divide(dtype: torch.dtype) -> None:
    dividend = (torch.randn(5) * 100).to(dtype)
    divisor = torch.arange(1, 6).to(dtype)
    d = torch.get_default_dtype()
    assert_equal(dividend.to(d) / divisor.to(d), torch.true_divide(dividend, divisor))
    assert_equal(dividend.to(d) / 2, torch.true_divide(dividend, 2.))


@pytest.mark.parametrize("dtype", [torch.float, torch.double, *_INT_AND_BOOL])
def test_true_divide_out_and_inplace(dtype: torch.dtype) -> None:
    dividend = (torch.randn(5) * 100).to(dtype)
    divisor = torch.arange(1, 6).to(dtype)
    if not dtype.is_floating_point:
        quotient = torch.empty(5, dtype=dtype)
        for other in (divisor, 2):
            with pytest.raises(RuntimeError):
                torch.true_divide(dividend, other, out=quotient)
            with pytest.raises(RuntimeError):
                dividend.clone().true_divide_(other)
        return
    quotient = torch.empty(5, dtype=dtype)
    assert_equal(dividend / divisor, torch.true_divide(dividend, divisor, out=quotient))
    assert_equal(dividend / 2, torch.true_divide(dividend, 2, out=quotient))
    assert_equal(dividend.clone().div_(divisor), dividend.clone().true_divide_(divisor))
    assert_equal(dividend.clone().div_(2), dividend.clone().true_divide_(2))
