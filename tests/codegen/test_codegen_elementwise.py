"""Every elementwise op rendered to LLVM, checked against numpy over broadcast shapes."""

from __future__ import annotations

import math
from unittest import mock

import numpy as np
import pytest
from codegen_testutil import broadcast_strides, build, random_array, run
from hypothesis import given, settings
from hypothesis import strategies as st
from llvmlite import ir as llir

from codegen import ir as K
from codegen.llvm_math import declare_math
from planner.steps import KernelStep

FLOATS = ("float32", "float64")


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


UNARY_REF = {
    "neg": np.negative, "abs": np.abs, "sign": np.sign, "exp": np.exp, "log": np.log,
    "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "sqrt": np.sqrt, "sigmoid": _sigmoid,
    "erf": np.vectorize(math.erf, otypes=[np.float64]),
}
BINARY_REF = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "pow": np.power, "maximum": np.maximum, "minimum": np.minimum, "eq": np.equal,
    "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "logical_and": np.logical_and, "remainder": np.remainder,
    "floor_divide": np.floor_divide,
}
TOL = {"float32": dict(rtol=2e-5, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-13),
       "int64": dict(rtol=0, atol=0), "bool": dict(rtol=0, atol=0)}
# erf is optional in the IR: test it where the math library renders it
RENDERED_UNARY = set(UNARY_REF) & ({"neg", "abs", "sign"} | set(declare_math(llir.Module())))


def _domain_and_shapes(n_inputs: int):
    """A domain up to 3-D and, per input, a shape broadcastable to it (dropped/size-1 axes)."""
    @st.composite
    def strategy(draw):
        domain = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 5, 8, 17, 33]),
                                     min_size=1, max_size=3)))
        shapes = []
        for _ in range(n_inputs):
            keep = draw(st.integers(0, len(domain)))
            tail = domain[len(domain) - keep:]
            mask = draw(st.lists(st.booleans(), min_size=len(tail), max_size=len(tail)))
            shapes.append(tuple(1 if m else d for d, m in zip(tail, mask)))
        return domain, shapes
    return strategy()


def _unary_input(op: str, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    x = random_array(shape, dtype)
    return np.abs(x) + np.asarray(0.1, dtype) if op in ("log", "sqrt") else x


def _binary_inputs(op: str, dtype: str, shapes) -> list[np.ndarray]:
    a, b = (random_array(s, dtype) for s in shapes[:2])
    if op == "pow":
        a = np.abs(a) + np.asarray(0.5, dtype)
    if op == "div":
        b = np.where(np.abs(b) < 0.1, np.asarray(1.0, dtype), b).astype(dtype)
    if op in ("remainder", "floor_divide"):  # quotients of many sizes
        a = (a * 50).astype(dtype)
    return [a, b]


def _elementwise_kernel(name: str, domain, arrays, expr, out_dtype: str) -> K.Kernel:
    loads = tuple(K.Load(i) for i in range(len(arrays)))
    inputs = tuple(K.Input(f"in{i}", a.dtype.name, broadcast_strides(a.shape, domain))
                   for i, a in enumerate(arrays))
    return K.Kernel(name, domain, 0, inputs, (*loads, expr),
                    (K.Output("out", len(loads), out_dtype),))


def _check(cm, cases) -> None:
    for kernel, arrays, ref in cases:
        (got,) = run(cm, kernel, arrays)
        expect = np.broadcast_to(ref(*arrays), kernel.domain)
        np.testing.assert_allclose(got, expect, **TOL[got.dtype.name], err_msg=kernel.name)


# Hypothesis draws one dtype per example (a module per example stays small and fast);
# the fixed cases below cover every dtype on one 3-D broadcast domain.
FIXED = ((5, 3, 17), [(3, 1), (5, 1, 17), (17,)])
_ex = settings(max_examples=25, deadline=None)


def _unary(domain, shapes, dtypes) -> None:
    (shape,) = shapes[:1]
    cases = []
    for dtype in dtypes:
        for op in sorted(RENDERED_UNARY):
            if dtype not in K.UNARY_OPS[op]:
                continue
            x = _unary_input(op, dtype, shape)
            k = _elementwise_kernel(f"{op}_{dtype}", domain, [x], K.Unary(op, 0, dtype), dtype)
            cases.append((k, [x], lambda a, f=UNARY_REF[op], t=dtype: f(a).astype(t)))
    _check(build([k for k, _, _ in cases]), cases)


def _binary(domain, shapes, dtypes) -> None:
    cases = []
    for dtype in dtypes:
        for op, ref in BINARY_REF.items():
            if dtype not in K.BINARY_OPS[op]:
                continue
            arrays = _binary_inputs(op, dtype, shapes)
            out = "bool" if op in K.COMPARISON_OPS else dtype
            k = _elementwise_kernel(f"{op}_{dtype}", domain, arrays,
                                    K.Binary(op, 0, 1, out), out)
            cases.append((k, arrays, lambda a, b, f=ref, t=out: f(a, b).astype(t)))
    _check(build([k for k, _, _ in cases]), cases)


def _where_and_casts(domain, shapes, dtypes) -> None:
    cases = []
    for dtype in dtypes:
        arrays = [random_array(shapes[0], "bool"), random_array(shapes[1], dtype),
                  random_array(shapes[2], dtype)]
        k = _elementwise_kernel(f"where_{dtype}", domain, arrays, K.Where(0, 1, 2, dtype), dtype)
        cases.append((k, arrays, np.where))
        for to in K.DTYPES:
            x = random_array(shapes[0], dtype) * (100 if dtype in FLOATS else 1)
            k = _elementwise_kernel(f"cast_{dtype}_{to}", domain, [x], K.Cast(0, to), to)
            cases.append((k, [x], lambda a, t=to: a.astype(t)))
    _check(build([k for k, _, _ in cases]), cases)


@_ex
@given(_domain_and_shapes(1), st.sampled_from(("float32", "float64", "int64")))
def test_unary_ops_match_numpy(case, dtype):
    _unary(*case, [dtype])


@_ex
@given(_domain_and_shapes(2), st.sampled_from(K.DTYPES))
def test_binary_ops_match_numpy(case, dtype):
    _binary(*case, [dtype])


@_ex
@given(_domain_and_shapes(3), st.sampled_from(K.DTYPES))
def test_where_and_casts_match_numpy(case, dtype):
    _where_and_casts(*case, [dtype])


@pytest.mark.parametrize("check", [_unary, _binary, _where_and_casts])
def test_every_op_and_dtype_on_a_fixed_broadcast_domain(check):
    domain, shapes = FIXED
    check(domain, shapes, K.DTYPES if check is not _unary else ("float32", "float64", "int64"))


def test_nan_semantics_follow_numpy():
    x = np.array([np.nan, 1.0, np.nan, -2.0, 0.0])
    y = np.array([1.0, np.nan, np.nan, 3.0, -0.0])
    cases = []
    for op in ("maximum", "minimum", "eq", "ne", "lt", "ge"):
        out = "bool" if op in K.COMPARISON_OPS else "float64"
        k = _elementwise_kernel(f"nan_{op}", (5,), [x, y], K.Binary(op, 0, 1, out), out)
        cases.append((k, [x, y], BINARY_REF[op]))
    k = _elementwise_kernel("nan_tobool", (5,), [x], K.Cast(0, "bool"), "bool")
    cases.append((k, [x], lambda a: a.astype(bool)))
    k = _elementwise_kernel("nan_sign", (5,), [x], K.Unary("sign", 0, "float64"), "float64")
    cases.append((k, [x], lambda a: np.subtract(a > 0, a < 0, dtype=a.dtype)))  # torch: sign(nan) 0
    _check(build([k for k, _, _ in cases]), cases)


def test_const_chain_and_multiple_outputs():
    # out0 = tanh(x * 2 + c), out1 = x > 0 ; c broadcast along the last axis
    x, c = random_array((4, 9), "float32"), random_array((4, 1), "float32")
    exprs = (K.Load(0), K.Load(1), K.Const(2.0, "float32"), K.Binary("mul", 0, 2, "float32"),
             K.Binary("add", 3, 1, "float32"), K.Unary("tanh", 4, "float32"),
             K.Const(0.0, "float32"), K.Binary("gt", 0, 6, "bool"))
    k = K.Kernel("chain", (4, 9), 0, (K.Input("x", "float32", (9, 1)),
                                      K.Input("c", "float32", (1, 0))),
                 exprs, (K.Output("y", 5, "float32"), K.Output("pos", 7, "bool")))
    y, pos = run(build([k]), k, [x, c])
    np.testing.assert_allclose(y, np.tanh(x * 2 + c), rtol=2e-6, atol=1e-6)
    np.testing.assert_array_equal(pos, x > 0)


@pytest.mark.parametrize("domain", [(), (1,), (0, 4), (3, 0)])
def test_degenerate_domains(domain):
    x = random_array(domain, "float64")
    k = _elementwise_kernel("deg", domain, [x], K.Unary("neg", 0, "float64"), "float64")
    (got,) = run(build([k]), k, [x])
    np.testing.assert_array_equal(got, -x)


def test_float32_pow_is_vectorized_and_follows_c99_special_cases():
    specials = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, np.inf, -np.inf, np.nan,
                         3.7, -3.7, 1e-30, 1e30], np.float32)
    x = np.repeat(specials, len(specials))
    y = np.tile(np.array([0.0, -0.0, 1.0, -1.0, 2.0, 3.0, -3.0, 0.5, -0.5, np.inf, -np.inf,
                          np.nan, 2.5, 7.0, -7.0], np.float32), len(specials))
    rng = np.random.default_rng(1)
    x = np.concatenate([x, rng.uniform(0, 4, 4096).astype(np.float32),
                        rng.uniform(-4, 4, 4096).round().astype(np.float32)])
    y = np.concatenate([y, rng.uniform(-8, 8, 4096).astype(np.float32),
                        rng.integers(-9, 9, 4096).astype(np.float32)])
    k = _elementwise_kernel("pow32", x.shape, [x, y], K.Binary("pow", 0, 1, "float32"),
                            "float32")
    cm = build([k])
    (got,) = run(cm, k, [x, y])
    with np.errstate(all="ignore"):
        expect = np.power(x, y)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expect))
    finite = np.isfinite(expect) & (expect != 0)
    ulp = np.abs(got[finite] - expect[finite]) / np.spacing(np.abs(expect[finite]))
    assert ulp.max() <= 1.0, ulp.max()
    same = ~finite & ~np.isnan(expect)  # zeros and infinities, signs included
    np.testing.assert_array_equal(np.signbit(got[same]), np.signbit(expect[same]))
    np.testing.assert_array_equal(got[same], expect[same])
    assert "call" not in cm.asm("pow32").replace("callq\t*", "")  # no libm in the loop


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, -1, -2, 2.5])
def test_pow_by_small_integer_lowers_to_multiplications(n):
    import planner
    import runtime as rt

    x = rt.tensor(np.linspace(-3, 3, 64 * 1024, dtype=np.float32).reshape(64, 1024) + 0.01)

    @planner.compile(backend="llvm")
    def f(x):
        return ((x * 1.5) ** n).tanh()

    with mock.patch("planner.fusion.MIN_ELEMENTS", 1):
        got = f(x).numpy()
    with np.errstate(all="ignore"):
        expect = np.tanh(np.power(x.numpy() * np.float32(1.5), np.float32(n)))
    np.testing.assert_allclose(got, expect, rtol=2e-6, atol=1e-6, equal_nan=True)
    (kernel,) = [s.kernel for s in f.plan.steps if isinstance(s, KernelStep)]
    has_pow = any(getattr(e, "op", None) == "pow" for e in kernel.exprs)
    assert has_pow == (n == 2.5)
