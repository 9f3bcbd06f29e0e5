"""planner.compile's number and string arguments against eager mode: a compiled step computes
what the step does in Python for every value it is called with (int arithmetic past int64,
a negative power, a division by zero, a negative zero, ``hash``), float16 products with a
number in float32 as eager's, a number setting of an op (addcmul's ``value=``), and a string
argument the step keeps: no silent difference, no error eager mode does not raise."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt


def _both(step: Any, calls: list[tuple[Any, ...]]) -> tuple[list[Any], list[Any], Any]:
    compiled = planner.compile(step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [compiled(*a) for a in calls]
    assert not _fallbacks(caught)  # no fallback
    return got, [step(*a) for a in calls], compiled


def _assert_same(got: Any, want: Any) -> None:
    if isinstance(want, rt.Tensor):
        assert got.dtype == want.dtype
        g, w = got.detach().float().numpy(), want.detach().float().numpy()
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))
    elif isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_same(g, w)
    else:
        assert type(got) is type(want) and (got == want or got != got and want != want)
        if isinstance(want, float):
            assert math.copysign(1.0, got) == math.copysign(1.0, want)


def test_python_int_arithmetic_past_int64_is_not_wrapped() -> None:
    """``n * 2 ** 40`` for n = 2 ** 23 is 2 ** 63 in Python: the plan's int64 wrapped it to
    -2 ** 63 (a float tensor times it negated, the returned int negative); ``1 << n``, ``-n``
    too. (PyTorch takes an int up to 2 ** 64 - 1 as a uint64 scalar; n = 2 ** 30 makes
    2 ** 70, its OverflowError, compiled as eager.)"""
    x = rt.arange(6.0)

    def step(x: Any, n: int) -> Any:
        big = n * 2 ** 40
        return x * big, big, 1 << (n % 70), -(n - 2 ** 47) * 2 ** 20

    calls = [(x, n) for n in (1, 2, 2 ** 23, 2 ** 22, -(2 ** 22), 69)]
    got, want, compiled = _both(step, calls)
    for g, w in zip(got, want, strict=True):
        _assert_same(g, w)
    for run in (compiled, step):
        with pytest.raises(OverflowError, match="int too big to convert"):
            run(x, 2 ** 30)


def test_a_power_of_an_int_argument_is_pythons() -> None:
    """``2 ** n`` is a float for a negative n (0.5, 0.25), and ``n ** -1`` is one: the plan's
    int64 power made both 0."""
    x = rt.arange(6.0)
    for step in (lambda x, n: x * 2 ** n, lambda x, n: x * (n + 10) ** -1,
                 lambda x, n: (x + 1, 3 ** (n + 2))):
        got, want, _ = _both(step, [(x, n) for n in (1, 2, 3, -1, -2, 0)])
        for g, w in zip(got, want, strict=True):
            _assert_same(g, w)


def test_python_division_by_a_zero_argument_raises_as_in_eager_mode() -> None:
    """``1 / n``, ``7 // n`` and ``7 % n`` among Python numbers raise ZeroDivisionError for
    n = 0 (0.0): the plan divided by its zero input (inf, or an error of another type)."""
    x = rt.arange(6.0)
    for fn in (lambda x, n: x * (1 / n), lambda x, n: x * (7 // n), lambda x, n: x * (7 % n)):
        compiled = planner.compile(fn)
        for n in (1, 2, 3):
            _assert_same(compiled(x, n), fn(x, n))
        for zero in (0, 0.0):
            with pytest.raises(ZeroDivisionError):
                fn(x, zero)
            with pytest.raises(ZeroDivisionError):
                compiled(x, zero)
        _assert_same(compiled(x, 4), fn(x, 4))


def test_a_negative_zero_argument_is_not_zero() -> None:
    """-0.0 == 0.0, but ``x * -0.0`` is -0.0 and ``1 / (x * f)`` -inf: the plan made for 0.0
    was replayed for -0.0 (the key compared the floats by ==)."""
    x = rt.arange(1.0, 4.0)

    def step(x: Any, f: float) -> Any:
        return x * f, 1 / (x * f), f * 1.0

    got, want, _ = _both(step, [(x, f) for f in (0.0, -0.0, 0.0, -0.0)])
    for g, w in zip(got, want, strict=True):
        _assert_same(g, w)


def test_hash_of_an_int_argument_is_the_ints() -> None:
    """``hash(n)`` of the int argument's stand-in was the tensor's id, returned at each
    replay."""
    x = rt.arange(3.0)

    def step(x: Any, n: int) -> Any:
        return x * n, hash(n), hash((n, 1))

    got, want, _ = _both(step, [(x, n) for n in (1, 2, 3, 4)])
    for g, w in zip(got, want, strict=True):
        _assert_same(g, w)


@pytest.mark.parametrize("numbers", [[0.1, 1e10, 0.3, 1e-8, 2.5], [3, 100000, 7, 65519, 1]])
def test_float16_products_with_a_number_argument_in_float32(numbers: list[Any]) -> None:
    """A float16 tensor times (over) a Python number is computed in float32 and rounded once,
    as PyTorch's CPU kernels take the scalar (eager mode does): the plan's number input was
    rounded to float16 first (0 * 1e10 nan, not 0; x / 1e-8 inf where x is 0; x * 0.3 an
    ulp off)."""
    t = rt.from_numpy(np.linspace(0, 3, 7).astype(np.float16))

    def step(t: Any, f: Any) -> Any:
        return t * f, f * t, t / f, t + f

    got, want, _ = _both(step, [(t, f) for f in numbers])
    for g, w in zip(got, want, strict=True):
        _assert_same(g, w)
    torch = pytest.importorskip("torch")
    tt = torch.from_numpy(t.numpy())
    for g, f in zip(got, numbers, strict=True):
        for a, b in zip(g, (tt * f, f * tt, tt / f, tt + f), strict=True):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_float16_product_gradient_with_a_number_argument() -> None:
    c = rt.tensor([0.0, 0.3, 1.0, 0.7, 0.0])

    def step(w: Any, f: float) -> Any:
        w.grad = None
        ((w * f).float() * c).sum().backward()
        return w.grad.clone()

    w = rt.from_numpy(np.linspace(0, 3, 5).astype(np.float16)).requires_grad_()
    got, want, _ = _both(step, [(w, f) for f in (0.1, 1e10, 0.3)])
    for g, v in zip(got, want, strict=True):
        _assert_same(g, v)


def test_addcmul_value_from_a_float_argument() -> None:
    """addcmul's ``value=`` is a constant of its kernel: given the float argument's stand-in
    (its second value on), the plan failed to build and every replay raised GraphBreak."""
    x = rt.arange(6.0).reshape(2, 3)
    for step in (lambda x, v: x.addcmul(x, x, value=v), lambda x, v: x.addcdiv(x, x + 1, value=v)):
        got, want, _ = _both(step, [(x, v) for v in (0.1, 0.2, 0.3, 0.4)])
        for g, w in zip(got, want, strict=True):
            _assert_same(g, w)


def test_a_string_argument_the_step_keeps() -> None:
    """A step appending its string argument to a list: the capture left the argument's
    stand-in (guards.Unread) in the list, which raised GraphBreak on any later use."""
    x = rt.arange(3.0)
    names: list[str] = []
    tags: dict[str, Any] = {}

    def step(x: Any, name: str) -> Any:
        names.append(name)
        tags["last"] = name
        return x * 2

    compiled = planner.compile(step)
    for name in ("a", "b", "c", "d"):
        compiled(x, name)
    assert names == ["a", "b", "c", "d"]
    assert tags == {"last": "d"}


def test_an_integer_tensor_to_a_negative_int_argument_raises_as_in_eager_mode() -> None:
    """PyTorch refuses an integer tensor to a negative int's power: the plan's power of its
    int input gave [1, 0, 0]."""
    def step(x: Any, n: int) -> Any:
        return x ** n

    x = rt.arange(1, 4)
    compiled = planner.compile(step)
    for n in (1, 2, 3):
        _assert_same(compiled(x, n), step(x, n))
    for fn in (step, compiled):
        with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
            fn(x, -1)
    _assert_same(compiled(x, 4), step(x, 4))
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        torch.arange(1, 4) ** -1


SCALE = np.float32(1.0)


def test_a_returned_numpy_scalar_replays_with_its_current_value() -> None:
    """A numpy scalar returned (an argument's, keyed by value; a global's, guarded by value
    as a float is) is rebuilt as the constant it is: the step ran eagerly with a warning
    ("a plan cannot rebuild" it)."""
    global SCALE
    x = rt.arange(3.0)

    def step(x: Any, f: Any) -> Any:
        return x * f, f + 1, SCALE, (f, np.int64(2))

    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for v, scale in ((1.0, 10.0), (2.0, 20.0), (2.0, 30.0), (3.0, 30.0)):
            SCALE = np.float32(scale)  # read at each call, as a global float would be
            f = np.float32(v)
            got, want = compiled(x, f), step(x, f)
            _assert_same(got[0], want[0])
            assert [(type(g), g) for g in (got[1], got[2], *got[3])] == [
                (type(w), w) for w in (want[1], want[2], *want[3])]
    assert compiled.captures == 4


def test_python_float_remainder_of_a_float_argument_keeps_pythons_zero_sign() -> None:
    """Python's ``f % 0.1`` is 0.0 for f = -0.0 (and ``f % -0.3`` -0.0 for 0.0): a zero of
    the divisor's sign, where the plan's remainder gave the dividend's."""
    x = rt.arange(3.0)

    def step(x: Any, f: float) -> Any:
        return x + 1, f % 0.1, f % -0.3, f // 0.1

    got, want, _ = _both(step, [(x, f) for f in (7.0, 1.0, -7.0, -0.0, 0.0, 5.5)])
    for g, w in zip(got, want, strict=True):
        _assert_same(g, w)


def test_a_row_picked_by_an_int_argument_is_a_view_as_in_eager_mode() -> None:
    """``v = w[n]`` is a view of w in eager mode: ``v.mul_(2)`` writes w, and a write to w
    shows in v. With n a plan input the plan's ``w[n]`` was a copy (an index tensor): both
    writes were lost without a warning. A read-only ``w[n]`` stays an input's."""
    x = rt.arange(3.0)

    def run(compiled: bool) -> tuple[list[Any], Any, int]:
        w = rt.zeros(4, 3)

        def step(x: Any, n: int) -> Any:
            w[n] += x
            v = w[n]
            v.mul_(2)
            v[1:].add_(1)
            u = w[n - 1]
            w.add_(1)
            return w.clone(), u * 1

        fn = planner.compile(step) if compiled else step
        return [fn(x, n) for n in (0, 1, 3, 2, -1, 1)], w, getattr(fn, "captures", 0)

    want, w_want, _ = run(False)
    got, w_got, _ = run(True)
    for g, v in zip(got, want, strict=True):
        _assert_same(g, v)
    _assert_same(w_got, w_want)

    def read(xs: Any, n: int) -> Any:
        return xs[n % 4] * 2

    xs = rt.arange(12.0).reshape(4, 3)
    got, want, compiled = _both(read, [(xs, n) for n in (0, 1, 2, 3, 5)])
    for g, v in zip(got, want, strict=True):
        _assert_same(g, v)
    assert compiled.captures == 2


def test_a_row_picked_by_an_int_argument_shows_the_optimizer_step() -> None:
    """``v = emb.weight[n]`` then ``opt.step()``: eager mode's v is a view of the weight,
    its returned ``v.detach()`` the row after the step; the plan returned the row before
    it."""
    def run(compiled: bool) -> list[list[float]]:
        rt.manual_seed(0)
        emb = rt.nn.Embedding(5, 3)
        opt = rt.optim.SGD(emb.parameters(), lr=0.1)

        def step(x: Any, n: int) -> Any:
            opt.zero_grad()
            v = emb.weight[n]
            (v * x).sum().backward()
            opt.step()
            return v.detach()

        fn = planner.compile(step) if compiled else step
        x = rt.arange(3.0)
        return [fn(x, n).numpy().tolist() for n in (0, 1, 4, 2, 3, 1)]

    assert run(True) == run(False)


def test_a_fractional_power_of_a_float_argument_is_pythons() -> None:
    """Python's ``f ** 0.5`` is a complex number for f = -4.0 (its abs 2.0): the plan's
    power gave nan. ``gamma ** epoch`` (an int argument's power of a constant) stays an
    input's."""
    x = rt.arange(3.0)

    def step(x: Any, f: float) -> Any:
        return x + 1, abs(f ** 0.5)

    got, want, _ = _both(step, [(x, f) for f in (4.0, 9.0, -4.0, 2.25)])
    for g, w in zip(got, want, strict=True):
        _assert_same(g[0], w[0])
        assert type(g[1]) is type(w[1]) and g[1] == w[1]

    def decay(x: Any, epoch: int) -> Any:
        return x * 0.9 ** epoch, 0.5 ** epoch

    got, want, compiled = _both(decay, [(x, e) for e in (0, 1, 2, 5, 3)])
    for g, w in zip(got, want, strict=True):
        _assert_same(g, w)
    assert compiled.captures == 2


def _fallbacks(caught: list[warnings.WarningMessage]) -> list[str]:
    """The planner's RuntimeWarnings (not the os.fork() one of a JAX that another test of the
    run imported, where the bench extra is installed: a background compile forks)."""
    return [str(w.message) for w in caught
            if w.category is RuntimeWarning and str(w.message).startswith("planner")]
