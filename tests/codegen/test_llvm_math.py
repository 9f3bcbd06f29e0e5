"""Accuracy and vectorization of the LLVM IR transcendentals in codegen/llvm_math.py.

Each function runs inside a plain loop ``void kernel(T* in, T* out, i64 n)`` compiled at -O3 with
the loop and SLP vectorizers; results are compared in ulps against numpy evaluated one precision
higher (float64 for float32, long double for float64).
"""

from __future__ import annotations

import ctypes
import functools
import math
import re

import llvmlite.binding as llvm
import numpy as np
import pytest
from codegen_testutil import build as build_kernels
from codegen_testutil import run as run_kernel
from llvmlite import ir

from codegen import ir as K
from codegen import jit
from codegen.jit import optimize
from codegen.llvm_emit import for_range
from codegen.llvm_math import FAST_SIN_COS_LIMIT, declare_math

I64 = ir.IntType(64)
LLVM_TYPES = {"float32": ir.FloatType(), "float64": ir.DoubleType()}
CTYPES = {"float32": ctypes.c_float, "float64": ctypes.c_double}
# one precision above the tested dtype; long double is 80-bit on x86-64 Linux
WIDER = {"float32": np.float64, "float64": np.longdouble}


def loop_module(op: str, dtype: str, *then: str, outlined: bool = False) -> ir.Module:
    """``out[i] = op(in[i])`` (then each of ``then`` applied in turn), the math inlined or
    (``outlined``) called out of line as a kernel with many math calls does."""
    module = ir.Module(name=f"{op}_{dtype}")
    ty = LLVM_TYPES[dtype]
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ty.as_pointer(), ty.as_pointer(),
                                                             I64]), name="kernel")
    src, dst, n = fn.args
    src.add_attribute("noalias")
    dst.add_attribute("noalias")
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    table = declare_math(module, outlined=outlined)
    with for_range(builder, I64(0), n, "i") as i:
        x = builder.load(builder.gep(src, [i]))
        for name in (op, *then):
            x = table[name](builder, x, dtype)
        builder.store(x, builder.gep(dst, [i]))
    builder.ret_void()
    return module


@functools.cache
def compiled(op: str, dtype: str) -> tuple[ctypes._CFuncPtr, str, llvm.ExecutionEngine]:
    """(callable kernel, its optimized assembly, the engine that keeps it alive)."""
    module = optimize(loop_module(op, dtype))
    asm = jit.new_target_machine().emit_assembly(module)
    engine = llvm.create_mcjit_compiler(module, jit.new_target_machine())
    engine.finalize_object()
    ptr = ctypes.POINTER(CTYPES[dtype])
    kernel = ctypes.CFUNCTYPE(None, ptr, ptr, ctypes.c_int64)(
        engine.get_function_address("kernel"))
    return kernel, asm, engine


def run(op: str, x: np.ndarray) -> np.ndarray:
    dtype = x.dtype.name
    kernel, _, _ = compiled(op, dtype)
    x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    ptr = ctypes.POINTER(CTYPES[dtype])
    kernel(x.ctypes.data_as(ptr), out.ctypes.data_as(ptr), x.size)
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64)).astype(x.dtype)


REFERENCES = {
    "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
    "sqrt": np.sqrt, "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "erf": _erf,
}


def ulp_error(got: np.ndarray, x: np.ndarray, op: str) -> np.ndarray:
    """|got - exact| in units of the spacing of the correctly rounded result; inf on a mismatch
    in nan/inf/sign-of-zero-free special values."""
    dtype = x.dtype
    with np.errstate(all="ignore"):
        exact = REFERENCES[op](x.astype(WIDER[dtype.name]))
        rounded = exact.astype(dtype)
        err = np.abs(got.astype(exact.dtype) - exact) / np.spacing(np.abs(rounded)).astype(
            exact.dtype)
    same = (got == rounded) | (np.isnan(got) & np.isnan(rounded))
    err[same] = 0.0
    err[~same & ~np.isfinite(rounded)] = np.inf
    return err.astype(np.float64)


def special_values(dtype: type) -> np.ndarray:
    info = np.finfo(dtype)
    values = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0,
              info.smallest_subnormal, -info.smallest_subnormal, info.smallest_normal,
              -info.smallest_normal, info.smallest_normal * (1 - info.eps), info.max, -info.max,
              info.eps, 1 - info.epsneg, 1 + info.eps, 1e-30, -1e-30]
    return np.array(values, dtype=dtype)


def log_uniform(rng: np.random.Generator, lo: float, hi: float, n: int, dtype: type,
                signed: bool = True) -> np.ndarray:
    x = np.exp2(rng.uniform(np.log2(lo), np.log2(hi), n))
    if signed:
        x *= rng.choice([-1.0, 1.0], n)
    return x.astype(dtype)


# documented range of the sin/cos argument reduction (codegen/llvm_math.py): within MAX_ULP
# below SIN_COS_LIMIT; then (band's upper bound, max ulp) up to where results are meaningless
SIN_COS_LIMIT = {"float32": FAST_SIN_COS_LIMIT, "float64": 2.0**49}
SIN_COS_BANDS = {"float32": [], "float64": [(2.0**50, 6.0), (2.0**51, 60.0)]}


def inputs(op: str, dtype: type) -> np.ndarray:
    rng = np.random.default_rng(0)
    f32 = dtype == np.float32
    info = np.finfo(dtype)
    tiny = float(info.smallest_subnormal)
    n = 200_000
    parts = [special_values(dtype), log_uniform(rng, tiny, 1e3, n, dtype)]
    if op == "exp":
        hi, lo = (88.8, -104.0) if f32 else (709.9, -746.0)
        parts += [np.linspace(lo, hi, n), rng.uniform(-1, 1, n),
                  np.nextafter(np.array([hi, lo, 88.72283, 709.782712893384], dtype), 0)]
    elif op == "log":
        parts += [log_uniform(rng, tiny, float(info.max), n, dtype, signed=False),
                  np.linspace(0.5, 2.0, n), 1 + rng.uniform(-1e-3, 1e-3, n),
                  rng.uniform(-10, 0, 100)]
    elif op in ("sin", "cos"):
        limit = SIN_COS_LIMIT[np.dtype(dtype).name]
        parts[0] = parts[0][~(np.abs(parts[0]) > limit)]
        parts += [np.linspace(-10, 10, n), np.linspace(-1e4, 1e4, n),
                  log_uniform(rng, 1e-3, limit, n, dtype),
                  np.pi / 2 * np.arange(-1000, 1000), [limit, -limit]]
    elif op in ("tanh", "erf"):
        parts += [np.linspace(-7, 7, n), log_uniform(rng, tiny, 30.0, n, dtype),
                  np.linspace(0.6, 0.65, 1000), np.linspace(0.8, 1.3, 1000)]
    elif op == "sigmoid":
        limit = 120.0 if f32 else 800.0
        parts += [np.linspace(-limit, limit, n), log_uniform(rng, 1e-8, limit, n, dtype)]
    elif op == "sqrt":
        parts += [log_uniform(rng, tiny, float(info.max), n, dtype, signed=False)]
    return np.concatenate([np.asarray(p, dtype=dtype) for p in parts])


# max ulp allowed; the measured values are in codegen/llvm_math.py's docstring
MAX_ULP = {"exp": 1.5, "log": 1.5, "sin": 2.0, "cos": 2.0, "tanh": 2.0, "sigmoid": 2.5,
           "sqrt": 0.5, "erf": 2.0}
OPS = sorted(MAX_ULP)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", OPS)
def test_accuracy(op: str, dtype: type) -> None:
    x = inputs(op, dtype)
    err = ulp_error(run(op, x), x, op)
    worst = int(np.argmax(err))
    assert err[worst] <= MAX_ULP[op], (
        f"{op} {np.dtype(dtype).name}: {err[worst]:.2f} ulp at x={x[worst]!r}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", OPS)
def test_module_verifies(op: str, dtype: type) -> None:
    llvm.parse_assembly(str(loop_module(op, np.dtype(dtype).name))).verify()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["sin", "cos"])
def test_sin_cos_degrade_as_documented_past_the_accurate_range(op: str, dtype: type) -> None:
    name = np.dtype(dtype).name
    lower = SIN_COS_LIMIT[name]
    rng = np.random.default_rng(2)
    for upper, max_ulp in SIN_COS_BANDS[name]:
        x = rng.uniform(lower, upper, 100_000).astype(dtype)
        x = x[np.abs(x) < upper]  # rounding to dtype may reach the bound
        err = ulp_error(run(op, x), x, op)
        worst = int(np.argmax(err))
        assert err[worst] <= max_ulp, f"{op} {name}: {err[worst]:.2f} ulp at x={x[worst]!r}"
        lower = upper


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["sin", "cos"])
def test_sin_cos_beyond_the_reduction_range_stay_bounded(op: str, dtype: type) -> None:
    info = np.finfo(dtype)
    x = np.concatenate([log_uniform(np.random.default_rng(1), 1e6, float(info.max), 10_000,
                                    dtype), [info.max, -info.max]]).astype(dtype)
    assert np.all(np.abs(run(op, x)) <= 1)
    assert np.all(np.isnan(run(op, np.array([np.inf, -np.inf, np.nan], dtype=dtype))))


def large_arguments(n: int) -> np.ndarray:
    """float32 values across the whole finite range, the ones the brief names, and the float32
    nearest a multiple of pi/2 (16367173 * 2**72: cos is -1.6e-9 there)."""
    rng = np.random.default_rng(3)
    info = np.finfo(np.float32)
    named = [1e7, 1e10, 1e30, 3e38, info.max, 16367173 * 2.0**72, FAST_SIN_COS_LIMIT,
             np.nextafter(np.float32(FAST_SIN_COS_LIMIT), np.float32(np.inf)), 6588397.0]
    return np.concatenate([named, np.negative(named), special_values(np.float32),
                           log_uniform(rng, float(info.smallest_subnormal), float(info.max), n,
                                       np.float32),
                           log_uniform(rng, 1e6, float(info.max), n, np.float32)]
                          ).astype(np.float32)


@pytest.mark.parametrize("op", ["sin", "cos"])
def test_exact_sin_cos_float32_on_the_whole_finite_range(op: str) -> None:
    x = large_arguments(200_000)
    err = ulp_error(run(f"{op}_exact", x), x, op)
    worst = int(np.argmax(err))
    assert err[worst] <= MAX_ULP[op], f"{op}_exact: {err[worst]:.2f} ulp at x={x[worst]!r}"


def test_kernels_rerun_large_float32_sin_cos_arguments_exactly() -> None:
    """A kernel's fast sin/cos hand over to the exact ones once an argument passes
    FAST_SIN_COS_LIMIT: element outputs, row sums, an accumulated column sum, and an
    in-place kernel (exact only), at any thread split, as numpy in float64 gives."""
    f = "float32"
    x = np.empty((64, 64), np.float32)
    x[:40] = np.random.default_rng(4).uniform(-10, 10, (40, 64))  # a chunk with no rerun
    x[40:] = large_arguments(1_000)[: 24 * 64].reshape(24, 64)
    exprs = (K.Load(0), K.Unary("sin", 0, f), K.Unary("cos", 0, f), K.Binary("add", 1, 2, f),
             K.Reduce("sum", 3, f))
    k = K.Kernel("sincos", x.shape, 1, (K.Input("x", f, (64, 1)),), exprs,
                 (K.Output("y", 3, f), K.Output("rows", 4, f), K.Output("cols", 3, f, "sum")))
    in_place = K.Kernel("sin_in_place", x.shape, 0, (K.Input("x", f, (64, 1)),),
                        (K.Load(0), K.Unary("sin", 0, f)), (K.Output("x", 1, f, into=0),))
    cm = build_kernels([k, in_place])
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):  # sin/cos of +-inf
        y = (np.sin(x64).astype(f) + np.cos(x64).astype(f)).astype(np.float64)
    for threads in (1, 2, 3):
        got_y, rows, cols = run_kernel(cm, k, [x], threads=threads)
        np.testing.assert_allclose(got_y, y, rtol=0, atol=3e-7)
        np.testing.assert_allclose(rows, y.sum(axis=1), rtol=0, atol=64 * 3e-7)
        np.testing.assert_allclose(cols, y.sum(axis=0), rtol=0, atol=64 * 3e-7)
    inout = x.copy()
    cm.run(in_place, [inout], [inout])
    assert ulp_error(inout.reshape(-1), x.reshape(-1), "sin").max() <= MAX_ULP["sin"]


def test_exp_float32_loop_is_vectorized_without_libm_calls() -> None:
    _, asm, _ = compiled("exp", "float32")
    assert re.search(r"\bv?(mul|add|fmadd\d*|fmsub\d*|fnmadd\d*)ps\b[^\n]*%[xyz]mm", asm), asm
    assert not re.search(r"^\s*(call|jmp)\w*\s+.*\bexpf?\b", asm, re.MULTILINE), asm
    assert not re.search(r"^\s*call", asm, re.MULTILINE), asm


def test_functions_are_internal_alwaysinline_and_shared() -> None:
    module = ir.Module()
    table = declare_math(module)
    fn = ir.Function(module, ir.FunctionType(ir.FloatType(), [ir.FloatType()]), name="f")
    builder = ir.IRBuilder(fn.append_basic_block())
    y = table["tanh"](builder, fn.args[0], "float32")
    builder.ret(table["sigmoid"](builder, y, "float32"))
    math_fns = [g for g in module.globals.values()
                if isinstance(g, ir.Function) and g.name.startswith("backplan.math.")]
    # one function each (sigmoid calls exp; tanh inlines its own exp of a bounded argument)
    assert sorted(g.name for g in math_fns) == [
        "backplan.math.exp.float32", "backplan.math.sigmoid.float32", "backplan.math.tanh.float32"]
    for g in math_fns:
        assert g.linkage == "internal" and "alwaysinline" in g.attributes
    llvm.parse_assembly(str(module)).verify()


def test_rejects_a_value_of_the_wrong_type() -> None:
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.DoubleType(), [ir.DoubleType()]), name="f")
    builder = ir.IRBuilder(fn.append_basic_block())
    with pytest.raises(TypeError, match="exp"):
        declare_math(module)["exp"](builder, fn.args[0], "float32")


def variant_module(op: str, dtype: str, lanes: int) -> ir.Module:
    """``void kernel(T* in, T* out, i64 n)`` applying ``op``'s vector variant of ``lanes``
    lanes to each vector of ``n`` elements (n a multiple of lanes), called, not inlined."""
    module = ir.Module(name=f"{op}_{dtype}_v{lanes}")
    ty = LLVM_TYPES[dtype]
    vty = ir.VectorType(ty, lanes)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ty.as_pointer(), ty.as_pointer(),
                                                             I64]), name="kernel")
    src, dst, n = fn.args
    call = ir.Function(module, ir.FunctionType(ty, [ty]), name="scalar")
    builder = ir.IRBuilder(call.append_basic_block("entry"))  # an outlined call makes them
    builder.ret(declare_math(module, outlined=True)[op](builder, call.args[0], dtype))
    variant = module.globals[f"backplan.math.{op}.{dtype}.v{lanes}"]
    variant.attributes.add("noinline")
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    with for_range(builder, I64(0), builder.udiv(n, I64(lanes)), "i") as i:
        at = builder.mul(i, I64(lanes))
        x = builder.load(builder.bitcast(builder.gep(src, [at]), vty.as_pointer()), align=1)
        builder.store(builder.call(variant, [x]),
                      builder.bitcast(builder.gep(dst, [at]), vty.as_pointer()), align=1)
    builder.ret_void()
    return module


VARIANT_OPS = [*(op for op in OPS if op != "sqrt"), "sin_exact", "cos_exact"]  # sqrt: none


@pytest.mark.parametrize(("op", "dtype"), [
    (op, dtype) for op in VARIANT_OPS for dtype in (np.float32, np.float64)
    if not (op.endswith("_exact") and dtype == np.float64)])  # exact: float32's alone
def test_vector_variants_give_the_scalar_functions_bits(op: str, dtype: type) -> None:
    """Each vector variant a kernel's outlined math call offers the loop vectorizer (one per
    host vector width) is the scalar function's instructions on vectors: the same bits on
    every input of the accuracy test (and the whole float32 range for the exact sin/cos)."""
    from codegen.llvm_math import vector_widths

    name = np.dtype(dtype).name
    x = large_arguments(50_000) if op.endswith("_exact") else inputs(op, dtype)
    want = run(op, x)
    ptr = ctypes.POINTER(CTYPES[name])
    for lanes in vector_widths(name):
        engine = llvm.create_mcjit_compiler(optimize(variant_module(op, name, lanes)),
                                            jit.new_target_machine())
        engine.finalize_object()
        kernel = ctypes.CFUNCTYPE(None, ptr, ptr, ctypes.c_int64)(
            engine.get_function_address("kernel"))
        n = x.size - x.size % lanes
        got = np.full(n, 7.0, dtype)
        kernel(x.ctypes.data_as(ptr), got.ctypes.data_as(ptr), n)
        np.testing.assert_array_equal(got.view(f"u{x.itemsize}"),
                                      want[:n].view(f"u{x.itemsize}"),
                                      err_msg=f"{op} {name} v{lanes}")


def test_object_code_keeps_only_the_math_variants_it_calls() -> None:
    """After optimization the vector variants the loop vectorizer did not choose (and those
    it inlined) are dropped: none of an outlined loop's helpers is left exported."""
    from codegen.target import emit

    module = loop_module("sin", "float32", "tanh", outlined=True)
    assert sum(g.name.startswith("backplan.math.") and ".v" in g.name
               for g in module.globals.values()) >= 2
    code = emit(module)
    defined = re.findall(r"^define\s[^@]*@\"?([\w.]+)", code.optimized_ir, re.MULTILINE)
    assert "kernel" in defined
    assert not [d for d in defined if d.startswith("backplan.math.") and "internal" not in
                re.search(rf"^define[^\n]*@\"?{re.escape(d)}\b", code.optimized_ir,
                          re.MULTILINE).group(0)]
    assert len([d for d in defined if ".v" in d]) < 2 * 3  # not every variant of both ops
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), jit.new_target_machine())
    engine.add_object_file(llvm.ObjectFileRef.from_data(code.object_file))
    engine.finalize_object()
    ptr = ctypes.POINTER(ctypes.c_float)
    kernel = ctypes.CFUNCTYPE(None, ptr, ptr, ctypes.c_int64)(
        engine.get_function_address("kernel"))
    x = np.linspace(-20, 20, 1001, dtype=np.float32)
    out = np.empty_like(x)
    kernel(x.ctypes.data_as(ptr), out.ctypes.data_as(ptr), x.size)
    np.testing.assert_allclose(out, np.tanh(np.sin(x.astype(np.float64))), rtol=0, atol=3e-7)
