"""Every registry primitive with a kernel-IR lowering, lowered the way fusion lowers it and run
as an LLVM kernel, against the primitive's own numpy implementation: across broadcast shapes
(hypothesis), every dtype the primitive's IR accepts, and scalar operands."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from codegen_testutil import broadcast_strides, build, random_array, run
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen import ir as K
from codegen.builder import KernelBuilder
from runtime.ops.registry import REGISTRY

LOWERED = sorted(name for name, prim in REGISTRY.items() if prim.lower is not None)
UNARY = {"neg", "exp", "log", "sin", "cos", "tanh", "sqrt", "abs", "sign", "erf"}
BINARY = {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le",
          "gt", "ge", "logical_and", "tanh_backward", "remainder", "floor_divide"}
OTHER = {"where", "cast", "expand"}
# rounded once (the IR's Fma), as their primitives: the same bits, not within a tolerance
FMA = {"add_scaled", "sub_scaled", "addcmul", "lerp", "lerp_tensor"}
TOL = {"float32": dict(rtol=3e-5, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-13),
       "int64": dict(rtol=0, atol=0), "bool": dict(rtol=0, atol=0)}


def test_every_lowered_primitive_is_covered_here():
    assert set(LOWERED) == UNARY | BINARY | OTHER | FMA


def _dtypes(name: str) -> list[str]:
    if REGISTRY[name].lower_dtypes is not None:  # the dtypes its lowering handles
        return sorted(REGISTRY[name].lower_dtypes)
    if name == "logical_and":
        return ["bool"]
    if name in ("eq", "ne"):
        return ["float32", "float64", "int64", "bool"]
    if name in ("exp", "log", "sin", "cos", "tanh", "sqrt", "erf", "div", "pow",
                "tanh_backward"):
        return ["float32", "float64"]
    if name in ("where", "cast", "expand"):
        return ["float32", "float64", "int64", "bool"]
    return ["float32", "float64", "int64"]


def _array(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    return np.asarray(random_array(shape, dtype), dtype)  # 0-d draws come back as scalars


def _operand(name: str, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    x = _array(shape, dtype)
    if name in ("log", "sqrt"):
        x = np.abs(x) + np.asarray(0.1, dtype)
    if name == "pow":
        x = np.abs(x) + np.asarray(0.5, dtype)
    return np.asarray(x, dtype)  # 0-d arithmetic gives numpy scalars


def _case(name: str, dtype: str, domain: tuple[int, ...], shapes: list[tuple[int, ...]],
          scalar: bool) -> tuple[list[Any], dict[str, Any]]:
    """The primitive's arguments (arrays, or a Python scalar second operand) and attrs."""
    if name in UNARY:
        return [_operand(name, shapes[0], dtype)], {}
    if name in BINARY:
        a = _operand(name, shapes[0], dtype)
        if scalar:
            b: Any = {"float32": 1.75, "float64": -0.625, "int64": 3, "bool": True}[dtype]
            if name == "pow":
                b = 2  # small integer exponents lower to multiplications
        else:
            b = _operand(name, shapes[1], dtype)
            if name == "div":
                b = np.where(np.abs(b) < 0.1, np.asarray(1.0, dtype), b).astype(dtype)
        return [a, b], {}
    if name == "where":
        return [_array(shapes[0], "bool"), _array(shapes[1], dtype),
                _array(shapes[2], dtype)], {}
    if name in ("add_scaled", "sub_scaled"):
        return [_array(shapes[0], dtype), _array(shapes[1], dtype)], {"alpha": 0.37}
    if name == "addcmul":
        return [_array(s, dtype) for s in shapes], {"value": -0.3}
    if name == "lerp":  # both of its formulas: from start (|w| < 0.5), from end
        return [_array(shapes[0], dtype), _array(shapes[1], dtype)], {
            "weight": 0.2 if dtype == "float32" else 0.7}
    if name == "lerp_tensor":  # weights on both sides of 0.5
        w = _array(shapes[2], dtype) * np.asarray(0.6, dtype) + np.asarray(0.5, dtype)
        return [_array(shapes[0], dtype), _array(shapes[1], dtype), np.asarray(w, dtype)], {}
    if name == "cast":
        target = {"float32": "float64", "float64": "int64", "int64": "float32",
                  "bool": "float32"}[dtype]
        return [_array(shapes[0], dtype)], {"dtype": _dtype(target)}
    return [_array(shapes[0], dtype)], {"shape": domain}  # expand


def _dtype(name: str) -> Any:
    from runtime import _dtype as D

    return D.as_dtype(name)


def registry_kernel(name: str, dtype: str, domain: tuple[int, ...],
                    shapes: list[tuple[int, ...]], scalar: bool
                    ) -> tuple[K.Kernel, list[np.ndarray], np.ndarray]:
    """The kernel of one registry primitive lowered as fusion lowers it (a case of
    ``_case``), its input arrays and the primitive's own numpy result over ``domain``
    (the CUDA tests render the same kernels: tests/codegen/cuda_testutil.py)."""
    prim = REGISTRY[name]
    args, attrs = _case(name, dtype, domain, shapes, scalar)
    with np.errstate(all="ignore"):
        expect = np.asarray(prim.impl(np, *args, **attrs))
    if name == "cast":
        expect = expect.astype(attrs["dtype"].np)
    kb = KernelBuilder()
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    inputs = tuple(K.Input(f"in{i}", a.dtype.name, broadcast_strides(a.shape, domain))
                   for i, a in enumerate(arrays))
    loads = iter(kb.load(i) for i in range(len(arrays)))
    lowered = [("expr", next(loads), a.dtype.name) if isinstance(a, np.ndarray)
               else ("scalar", a, None) for a in args]
    value = prim.lower(kb, lowered, attrs, expect.dtype.name)
    kernel = K.Kernel(f"{name}_{dtype}{'_s' if scalar else ''}", domain, 0, inputs,
                      tuple(kb.exprs), (K.Output("out", value, expect.dtype.name),))
    return kernel, [np.ascontiguousarray(a) for a in arrays], \
        np.ascontiguousarray(np.broadcast_to(expect, domain))


def _check(name: str, dtype: str, domain: tuple[int, ...], shapes: list[tuple[int, ...]],
           scalar: bool) -> None:
    kernel, arrays, expect = registry_kernel(name, dtype, domain, shapes, scalar)
    (got,) = run(build([kernel]), kernel, arrays)
    if name in FMA:
        np.testing.assert_array_equal(got, expect, err_msg=f"{name} {dtype} {shapes}")
    np.testing.assert_allclose(got, expect, **TOL[expect.dtype.name],
                               err_msg=f"{name} {dtype} {shapes} scalar={scalar}")


SCALAR_OPERAND = sorted(BINARY - {"tanh_backward"})  # a Python scalar as second operand


@pytest.mark.parametrize("name,scalar", [(n, False) for n in LOWERED]
                         + [(n, True) for n in SCALAR_OPERAND])
def test_lowering_matches_the_primitive_on_every_dtype(name: str, scalar: bool) -> None:
    domain = (5, 3, 17)
    shapes = [(3, 1), (5, 1, 17), (17,)]
    if name == "expand":
        shapes = [(3, 1)]
    for dtype in _dtypes(name):
        _check(name, dtype, domain, shapes, scalar)


@st.composite
def _domain_and_shapes(draw: Any) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    domain = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 7, 33]), min_size=1, max_size=3)))
    shapes = []
    for _ in range(3):
        keep = draw(st.integers(0, len(domain)))
        tail = domain[len(domain) - keep:]
        mask = draw(st.lists(st.booleans(), min_size=len(tail), max_size=len(tail)))
        shapes.append(tuple(1 if m else d for d, m in zip(tail, mask)))
    return domain, shapes


@settings(max_examples=30, deadline=None)
@given(_domain_and_shapes(), st.sampled_from(LOWERED), st.booleans(), st.data())
def test_lowering_matches_the_primitive_on_random_broadcasts(case: Any, name: str,
                                                             scalar: bool, data: Any) -> None:
    domain, shapes = case
    dtype = data.draw(st.sampled_from(_dtypes(name)))
    _check(name, dtype, domain, shapes, scalar and name in SCALAR_OPERAND)
