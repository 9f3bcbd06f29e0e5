"""Per-element division by a row value (a row sum, a per-row input, a constant) in fused kernels
matches numpy's division within one ulp for every divisor: the renderer multiplies by the
divisor's reciprocal only where that reciprocal is a normal number, and divides elsewhere."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from codegen_testutil import broadcast_strides, build, run

import planner
import runtime as rt
from codegen import ir as K

FLOATS = ["float32", "float64"]


def ulps_apart(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in representable values (inf is one step past the largest finite value);
    0 where both are nan, the largest integer where only one is."""
    bits = {4: np.int32, 8: np.int64}[got.dtype.itemsize]

    def ordered(a: np.ndarray) -> np.ndarray:
        # IEEE bit patterns, read as signed integers, made monotonic in the value
        i = a.view(bits).astype(np.int64)
        return np.where(i < 0, np.iinfo(bits).min - i, i)

    a, b = ordered(got), ordered(want)
    far = np.iinfo(np.int64).max
    # apart on opposite sides of zero, the distance (|a| + |b|) may pass int64's range: saturate
    across = np.where(np.abs(a) > far - np.abs(b), far, np.abs(a) + np.abs(b))
    apart = np.where((a < 0) == (b < 0), np.abs(a - b), across)
    both_nan, one_nan = np.isnan(got) & np.isnan(want), np.isnan(got) != np.isnan(want)
    return np.where(both_nan, 0, np.where(one_nan, np.iinfo(np.int64).max, apart))


def assert_within_an_ulp(got: np.ndarray, want: np.ndarray) -> None:
    apart = ulps_apart(got, want)
    worst = np.unravel_index(np.argmax(apart), apart.shape)
    assert apart.max() <= 1, (f"{apart.max()} ulps apart at {worst}: got {got[worst]!r}, "
                              f"numpy divides to {want[worst]!r}")


def edge_rows(dtype: str, cols: int) -> np.ndarray:
    """Rows of small integer multiples of one power of two, each summing exactly (in any order)
    to a value in a range where the sum or its reciprocal is not a normal number, or near one:
    subnormal sums with overflowing or normal reciprocals, sums with subnormal reciprocals,
    ordinary sums; then rows whose sum is one lone value, zero, or inf."""
    info = np.finfo(dtype)
    smallest = info.minexp - info.nmant
    # each row's sum lies in [2**(top - 1), 2**top); None: the values are the smallest subnormal
    tops = [None, info.minexp - 2, info.minexp - 1, info.minexp, info.maxexp - 2,
            info.maxexp - 1, info.maxexp, -3, 0, 20]
    rng = np.random.default_rng(1)
    ks = rng.integers(1, 8, (len(tops), cols))
    exps = [smallest if top is None else top - int(k.sum()).bit_length()
            for top, k in zip(tops, ks)]
    signs = rng.choice([-1.0, 1.0], (len(tops), 1))
    rows = (signs * ks * np.exp2(np.array(exps, dtype=np.float64))[:, None]).astype(dtype)
    lone = np.zeros((3, cols), dtype)  # x == c: x / c is 1, not inf
    lone[:, 1] = [info.smallest_subnormal, -3 * info.smallest_subnormal, info.max / 2]
    cancel = np.zeros((1, cols), dtype)  # a zero sum: x / 0 is +-inf or nan
    cancel[0, :2] = [5 * info.smallest_subnormal, -5 * info.smallest_subnormal]
    huge = np.full((1, cols), info.max, dtype)  # the sum overflows to inf: x / inf is 0
    return np.concatenate([rows, lone, cancel, huge])


def row_sum_division(rows: int, cols: int, dtype: str) -> K.Kernel:
    """y = x / sum(x) per row, and sum(y): the loop dividing also feeds a reduction. The row
    sum is an output too, so numpy divides by the same sum."""
    exprs = (K.Load(0), K.Reduce("sum", 0, dtype), K.Binary("div", 0, 1, dtype),
             K.Reduce("sum", 2, dtype))
    return K.Kernel("row_div", (rows, cols), 1, (K.Input("x", dtype, (cols, 1)),), exprs,
                    (K.Output("y", 2, dtype), K.Output("total", 1, dtype),
                     K.Output("y_total", 3, dtype)))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("cols", [5, 67])
def test_division_by_a_row_sum_is_within_an_ulp(dtype: str, cols: int) -> None:
    x = edge_rows(dtype, cols)
    k = row_sum_division(len(x), cols, dtype)
    with np.errstate(over="ignore"):
        y, total, y_total = run(build([k]), k, [x])
        np.testing.assert_array_equal(total, x.sum(axis=1))  # exact sums, inf for the last
    with np.errstate(divide="ignore", invalid="ignore"):
        want = x / total[:, None]
        assert_within_an_ulp(y, want)
        np.testing.assert_allclose(y_total, want.sum(axis=1), rtol=1e-6)
    assert (y[-5:-2, 1] == 1).all()  # lone values divided by themselves


@pytest.mark.parametrize("dtype", FLOATS)
def test_division_by_a_per_row_input_is_within_an_ulp(dtype: str) -> None:
    """An elementwise kernel (no reduction) dividing by two (rows, 1) inputs in one loop:
    rows where both, one or neither has a normal reciprocal, so each row picks its loop."""
    info = np.finfo(dtype)
    c = np.array([info.smallest_subnormal, 1.5, info.tiny / 3, 3.0, -info.max / 3,
                  info.max, 0.0, np.inf, -np.inf, np.nan, 7 * info.smallest_subnormal],
                 dtype)[:, None]
    x = np.tile(np.array([1.0, -2.5, 0.0, info.max, info.tiny, info.smallest_subnormal,
                          np.inf, 1 / 3, 1e10, -7.0, 2.0, 0.1, 3.0], dtype), (len(c), 1))
    x[:, 0] = c[:, 0]
    domain = x.shape
    c2 = np.roll(c, 3)
    k = K.Kernel("per_row_div", domain, 0,
                 tuple(K.Input(name, dtype, broadcast_strides(a.shape, domain))
                       for name, a in (("x", x), ("c", c), ("c2", c2))),
                 (K.Load(0), K.Load(1), K.Load(2), K.Binary("div", 0, 1, dtype),
                  K.Binary("div", 0, 2, dtype)),
                 (K.Output("y", 3, dtype), K.Output("y2", 4, dtype)))
    y, y2 = run(build([k]), k, [x, c, c2])
    with np.errstate(all="ignore"):
        assert_within_an_ulp(y, x / c)
        assert_within_an_ulp(y2, x / c2)


@pytest.mark.parametrize("dtype", FLOATS)
def test_division_of_random_bit_patterns_is_within_an_ulp(dtype: str) -> None:
    """Dividends and per-row divisors drawn uniformly from all bit patterns: every exponent,
    subnormals, infs and nans alike."""
    bits = {"float32": np.uint32, "float64": np.uint64}[dtype]
    rng = np.random.default_rng(2)
    x, c = (rng.integers(0, np.iinfo(bits).max, shape, dtype=bits, endpoint=True).view(dtype)
            for shape in ((512, 33), (512, 1)))
    k = K.Kernel("random_div", x.shape, 0,
                 tuple(K.Input(name, dtype, broadcast_strides(a.shape, x.shape))
                       for name, a in (("x", x), ("c", c))),
                 (K.Load(0), K.Load(1), K.Binary("div", 0, 1, dtype)),
                 (K.Output("y", 2, dtype),))
    (y,) = run(build([k]), k, [x, c])
    with np.errstate(all="ignore"):
        assert_within_an_ulp(y, x / c)


@pytest.mark.parametrize("dtype", FLOATS)
def test_division_by_constants_is_within_an_ulp(dtype: str) -> None:
    info = np.finfo(dtype)
    divisors = [info.smallest_subnormal, info.tiny / 2, 3.0, info.max, -info.max / 5, 0.1]
    with np.errstate(over="ignore"):  # some quotients are inf
        x = np.array([1.0, -2.5, info.max, info.tiny, 1 / 3, 3.0, 2 ** 0.5, 1e-30],
                     dtype) * np.array(divisors, dtype)[:, None]
    x = x.reshape(-1)
    kernels = [K.Kernel(f"by_const{j}", x.shape, 0, (K.Input("x", dtype, (1,)),),
                        (K.Load(0), K.Const(d, dtype), K.Binary("div", 0, 1, dtype)),
                        (K.Output("y", 2, dtype),))
               for j, d in enumerate(divisors)]
    cm = build(kernels)
    for k, d in zip(kernels, divisors):
        (y,) = run(cm, k, [x])
        with np.errstate(all="ignore"):
            assert_within_an_ulp(y, x / np.array(d, dtype))


def _compiled(fn: Any, x: np.ndarray) -> np.ndarray:
    step = planner.compile(fn, backend="llvm")
    with rt.no_grad():
        got = step(rt.tensor(x)).numpy()
    assert any(s.op == "kernel" for s in step.plan.steps)  # it ran fused
    return got


@pytest.mark.parametrize("dtype", FLOATS)
def test_compiled_row_normalisation_divides_like_numpy(dtype: str) -> None:
    x = edge_rows(dtype, 9)
    got = _compiled(lambda t: t / t.sum(-1, keepdim=True), x)
    with np.errstate(all="ignore"):
        assert_within_an_ulp(got, x / x.sum(-1, keepdims=True))


@pytest.mark.parametrize("dtype", FLOATS)
def test_compiled_softmax_of_rows_with_subnormal_and_huge_values(dtype: str) -> None:
    """softmax's denominator is at least 1, but its rows may hold any finite value."""
    info = np.finfo(dtype)
    x = edge_rows(dtype, 9)[:-1]  # every value finite
    x[:, 2] = info.smallest_subnormal
    got = _compiled(lambda t: rt.nn.functional.softmax(t, -1), x)
    wide = x.astype(np.float64)
    e = np.exp(wide - wide.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    tol = 1e-6 if dtype == "float32" else 1e-14
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 1e-3)


def test_the_multiplying_loop_holds_no_vector_division() -> None:
    """The row-level choice keeps the common case's speed: in the optimized code the loop for
    rows with a normal reciprocal multiplies without a vector fdiv, and the other divides."""
    k = row_sum_division(4, 1024, "float32")
    blocks = re.split(r"\n(?=[\w.]+:)", build([k]).code.optimized_ir)
    multiplying = [b for b in blocks if "fmul <" in b]
    assert multiplying and not any("fdiv <" in b for b in multiplying)
    assert any("fdiv <" in b for b in blocks)
