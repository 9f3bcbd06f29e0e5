"""sin and cos of one argument from one function (codegen/llvm_math.py's ``sincos``): the same
bits as sin and cos each alone, inlined, out of line and in each vector variant; a kernel with
both of one value calls it once, vectorized, and checks the range of an argument only where its
magnitude is not bounded. Dense float32 sweeps of the fast sin, cos and tanh against the bounds
the module documents."""

from __future__ import annotations

import ctypes
import re

import llvmlite.binding as llvm
import numpy as np
import pytest
from codegen_testutil import build as build_kernels
from codegen_testutil import run as run_kernel
from llvmlite import ir
from test_llvm_math import CTYPES, LLVM_TYPES, MAX_ULP, inputs, large_arguments, run, ulp_error

from codegen import ir as K
from codegen import jit
from codegen.jit import optimize
from codegen.llvm import render
from codegen.llvm_emit import for_range
from codegen.llvm_math import (
    FAST_SIN_COS_LIMIT,
    UNIT_SIN_COS_LIMIT,
    declare_math,
    vector_widths,
)

I64 = ir.IntType(64)


def pair_module(dtype: str, exact: bool, outlined: bool, op: str = "") -> ir.Module:
    """``void kernel(T* in, T* sin, T* cos, i64 n)`` from one sincos call per element."""
    module = ir.Module(name=f"sincos_{dtype}")
    ty = LLVM_TYPES[dtype]
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ty.as_pointer()] * 3 + [I64]),
                     name="kernel")
    src, sin_out, cos_out, n = fn.args
    for arg in (src, sin_out, cos_out):
        arg.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    op = op or ("sincos_exact" if exact else "sincos")
    pair = declare_math(module, outlined=outlined)[op]
    with for_range(b, I64(0), n, "i") as i:
        both = pair(b, b.load(b.gep(src, [i])), dtype)
        b.store(b.extract_value(both, 0), b.gep(sin_out, [i]))
        b.store(b.extract_value(both, 1), b.gep(cos_out, [i]))
    b.ret_void()
    return module


def run_pair(x: np.ndarray, exact: bool, outlined: bool, op: str = ""
             ) -> tuple[np.ndarray, np.ndarray, str]:
    """(sin, cos, optimized IR) of the pair's loop over x (``op``: the pair's function, by
    default sincos or sincos_exact)."""
    dtype = x.dtype.name
    module = optimize(pair_module(dtype, exact, outlined, op))
    engine = llvm.create_mcjit_compiler(module, jit.new_target_machine())
    engine.finalize_object()
    ptr = ctypes.POINTER(CTYPES[dtype])
    kernel = ctypes.CFUNCTYPE(None, ptr, ptr, ptr, ctypes.c_int64)(
        engine.get_function_address("kernel"))
    s, c = np.full_like(x, 7.0), np.full_like(x, 7.0)
    kernel(*(a.ctypes.data_as(ptr) for a in (x, s, c)), x.size)
    return s, c, str(module)


def same_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    u = f"u{got.itemsize}"
    np.testing.assert_array_equal(got.view(u), want.view(u), err_msg=what)


@pytest.mark.parametrize("outlined", [False, True])
@pytest.mark.parametrize(("dtype", "exact"), [(np.float32, False), (np.float64, False),
                                              (np.float32, True)])
def test_sincos_gives_sin_and_cos_bits(dtype: type, exact: bool, outlined: bool) -> None:
    x = large_arguments(50_000) if exact else inputs("sin", dtype)
    x = np.ascontiguousarray(x.astype(dtype))
    s, c, optimized = run_pair(x, exact, outlined)
    suffix = "_exact" if exact else ""
    same_bits(s, run(f"sin{suffix}", x), "sin")
    same_bits(c, run(f"cos{suffix}", x), "cos")
    for op, got in (("sin", s), ("cos", c)):
        assert ulp_error(got, x, op).max() <= MAX_ULP[op]
    if outlined:  # the loop calls a vector variant, returning a struct of vectors: the
        # widest on a CPU whose LLVM tuning prefers it (Zen 4), 256 bits on Intel's AVX-512
        # server parts (LLVM's prefer-256-bit)
        lanes = "|".join(str(n) for n in vector_widths(np.dtype(dtype).name))
        assert re.search(rf"call[^\n]*@\"?backplan\.math\.sincos{suffix}\.\w+\.v({lanes})\b",
                         optimized), optimized


def variant_pair_module(dtype: str, lanes: int, exact: bool, op: str = "") -> ir.Module:
    """The sincos vector variant of ``lanes`` lanes over each vector of n elements (n a
    multiple of lanes), called, not inlined."""
    module = ir.Module(name=f"sincos_{dtype}_v{lanes}")
    ty = LLVM_TYPES[dtype]
    vptr = ir.VectorType(ty, lanes).as_pointer()
    op = op or ("sincos_exact" if exact else "sincos")
    call = ir.Function(module, ir.FunctionType(ty, [ty]), name="scalar")
    b = ir.IRBuilder(call.append_basic_block("entry"))  # an outlined call makes the variants
    b.ret(b.extract_value(declare_math(module, outlined=True)[op](b, call.args[0], dtype), 0))
    variant = module.globals[f"backplan.math.{op}.{dtype}.v{lanes}"]
    variant.attributes.add("noinline")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ty.as_pointer()] * 3 + [I64]),
                     name="kernel")
    src, sin_out, cos_out, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    with for_range(b, I64(0), b.udiv(n, I64(lanes)), "i") as i:
        at = b.mul(i, I64(lanes))
        both = b.call(variant, [b.load(b.bitcast(b.gep(src, [at]), vptr), align=1)])
        for place, out in enumerate((sin_out, cos_out)):
            b.store(b.extract_value(both, place), b.bitcast(b.gep(out, [at]), vptr), align=1)
    b.ret_void()
    return module


def run_variant_pair(x: np.ndarray, lanes: int, exact: bool, op: str = ""
                     ) -> tuple[np.ndarray, np.ndarray]:
    """sin and cos of x's first multiple of ``lanes`` elements through the ``lanes``-lane
    sincos variant (``variant_pair_module``), compiled and run."""
    name = x.dtype.name
    engine = llvm.create_mcjit_compiler(optimize(variant_pair_module(name, lanes, exact, op)),
                                        jit.new_target_machine())
    engine.finalize_object()
    ptr = ctypes.POINTER(CTYPES[name])
    kernel = ctypes.CFUNCTYPE(None, ptr, ptr, ptr, ctypes.c_int64)(
        engine.get_function_address("kernel"))
    n = x.size - x.size % lanes
    s, c = np.full(n, 7.0, x.dtype), np.full(n, 7.0, x.dtype)
    kernel(*(a.ctypes.data_as(ptr) for a in (x, s, c)), n)
    return s, c


@pytest.mark.parametrize(("dtype", "exact"), [(np.float32, False), (np.float64, False),
                                              (np.float32, True)])
def test_sincos_vector_variants_give_the_scalar_bits(dtype: type, exact: bool) -> None:
    name = np.dtype(dtype).name
    x = np.ascontiguousarray((large_arguments(50_000) if exact else inputs("sin", dtype))
                             .astype(dtype))
    suffix = "_exact" if exact else ""
    want_s, want_c = run(f"sin{suffix}", x), run(f"cos{suffix}", x)
    for lanes in vector_widths(name):
        s, c = run_variant_pair(x, lanes, exact)
        same_bits(s, want_s[:s.size], f"sin v{lanes}")
        same_bits(c, want_c[:c.size], f"cos v{lanes}")


def chain_kernel(dtype: str, links: int) -> K.Kernel:
    """h = x; ``links`` times h = tanh(sin(h)); outputs h and the product of cos of every
    sin's argument: as many sin as cos of the same values, as in sin's backward."""
    exprs: list[K.Expr] = [K.Load(0)]
    args = []
    for _ in range(links):
        args.append(len(exprs) - 1)
        exprs += [K.Unary("sin", len(exprs) - 1, dtype), K.Unary("tanh", len(exprs), dtype)]
    h = len(exprs) - 1
    prod = None
    for a in args:
        exprs.append(K.Unary("cos", a, dtype))
        if prod is not None:
            exprs.append(K.Binary("mul", prod, len(exprs) - 1, dtype))
        prod = len(exprs) - 1
    return K.Kernel(f"chain{links}_{dtype}", (4, 256), 1, (K.Input("x", dtype, (256, 1)),),
                    tuple(exprs), (K.Output("h", h, dtype), K.Output("dh", prod, dtype)))


def reference(x: np.ndarray, links: int) -> tuple[np.ndarray, np.ndarray]:
    h, prod = x.astype(np.float64), np.ones(x.shape)
    for _ in range(links):
        prod = prod * np.cos(h)
        h = np.tanh(np.sin(h))
    return h, prod


@pytest.mark.parametrize("links", [2, 8])  # 2: inlined math; 8: out of line (> 12 calls)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kernel_with_sin_and_cos_of_one_value_calls_sincos_once(dtype: str, links: int) -> None:
    k = chain_kernel(dtype, links)
    text = str(render([k]))
    body = text[text.index(f'define internal i1 @"{k.name}.body"'):]
    body = body[: body.index("\n}\n")]
    calls = re.findall(r"call [^@]*@\"backplan\.math\.(\w+)\.", body)
    # the first sin's argument is x; the others', tanh's outputs, are within [-1, 1]
    assert calls == ["sincos", "tanh"] + ["sincos_unit", "tanh"] * (links - 1), calls
    x = np.random.default_rng(5).uniform(-3, 3, (4, 256)).astype(dtype)
    if dtype == "float32":  # a row past FAST_SIN_COS_LIMIT: the exact body reruns the call
        x[3, 7] = 3e7
    h, dh = run_kernel(build_kernels([k]), k, [x])
    want_h, want_dh = reference(x, links)
    tol = 1e-6 if dtype == "float32" else 1e-14
    np.testing.assert_allclose(h, want_h, rtol=0, atol=tol * links)
    np.testing.assert_allclose(dh, want_dh, rtol=0, atol=tol * links)


@pytest.mark.parametrize("op", ["sin", "cos"])
def test_fast_float32_sin_cos_on_a_dense_sweep_within_the_documented_bound(op: str) -> None:
    """Every 97th float32 (both signs) below FAST_SIN_COS_LIMIT: within 1.7 ulp (the module
    docstring's figure; 1.67 measured on every 13th)."""
    top = int(np.float32(FAST_SIN_COS_LIMIT).view(np.uint32))
    x = np.arange(0, top, 97, dtype=np.uint32).view(np.float32)
    for xs in (x, -x):
        err = ulp_error(run(op, xs), xs, op)
        worst = int(np.argmax(err))
        assert err[worst] <= 1.7, f"{op}: {err[worst]:.3f} ulp at x={xs[worst]!r}"


@pytest.mark.parametrize(("scale", "checks"), [(1.01, 1), (3e6, 2)])
def test_sin_of_a_bounded_value_skips_the_range_check(scale: float, checks: int) -> None:
    """sin(x) and sin(tanh(x) * scale + 0.1): the second argument's magnitude is bounded by
    scale + 0.1, so below FAST_SIN_COS_LIMIT it needs no check (and no exact rerun); above it
    is checked, and its large values rerun exactly."""
    f = "float32"
    exprs = (K.Load(0), K.Unary("sin", 0, f), K.Unary("tanh", 0, f), K.Const(scale, f),
             K.Binary("mul", 2, 3, f), K.Const(0.1, f), K.Binary("add", 4, 5, f),
             K.Unary("sin", 6, f), K.Binary("add", 1, 7, f))
    k = K.Kernel(f"bounded{checks}", (4, 256), 1, (K.Input("x", f, (256, 1)),), exprs,
                 (K.Output("y", 8, f),))
    text = str(render([k]))
    body = text[text.index(f'define internal i1 @"{k.name}.body"'):]
    body = body[: body.index("\n}\n")]
    assert body.count("@\"llvm.umax.i32\"") == checks
    x = np.random.default_rng(6).uniform(-5, 5, (4, 256)).astype(f)
    (y,) = run_kernel(build_kernels([k]), k, [x])
    x64 = x.astype(np.float64)
    # the kernel's own tanh: an ulp of it moves the scaled argument far
    arg = (run("tanh", x) * np.float32(scale) + np.float32(0.1)).astype(np.float64)
    np.testing.assert_allclose(y, np.sin(x64) + np.sin(arg), rtol=0, atol=4e-7)


def test_float32_tanh_on_a_dense_sweep_within_the_documented_bound() -> None:
    """Every 97th float32 (both signs) below 10, past where tanh rounds to 1: within 1.5 ulp
    (the module docstring's figure; 1.31 measured on every 11th), its large branch's exp one
    coefficient short of exp's own."""
    top = int(np.float32(10.0).view(np.uint32))
    x = np.arange(0, top, 97, dtype=np.uint32).view(np.float32)
    for xs in (x, -x):
        err = ulp_error(run("tanh", xs), xs, "tanh")
        worst = int(np.argmax(err))
        assert err[worst] <= 1.5, f"tanh: {err[worst]:.3f} ulp at x={xs[worst]!r}"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bounded_variants_give_the_fast_ones_bits_below_the_limit(dtype: type) -> None:
    """sin, cos and sincos without the reduction's clamp (for arguments whose magnitude a
    kernel bounds by FAST_SIN_COS_LIMIT): the fast ones' bits there, nan of nan, inlined and
    in each vector variant."""
    name = np.dtype(dtype).name
    x = inputs("sin", dtype)
    x = np.ascontiguousarray(x[~(np.abs(x) > FAST_SIN_COS_LIMIT)])
    assert np.isnan(x).any()
    for op in ("sin", "cos"):
        same_bits(run(f"{op}_bounded", x), run(op, x), f"{op}_bounded")
    s, c, _ = run_pair(x, exact=False, outlined=False, op="sincos_bounded")
    same_bits(s, run("sin", x), "sincos_bounded's sin")
    same_bits(c, run("cos", x), "sincos_bounded's cos")
    for lanes in vector_widths(name):
        s, c = run_variant_pair(x, lanes, exact=False, op="sincos_bounded")
        same_bits(s, run("sin", x)[:s.size], f"sincos_bounded v{lanes}")
        same_bits(c, run("cos", x)[:c.size], f"sincos_bounded v{lanes}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_odd_functions_keep_the_sign_of_zero(dtype: type) -> None:
    """sin(-0) and tanh(-0) are -0, as numpy and torch give (they were +0: a polynomial's
    product of +0 and a negative coefficient is +0, and -0 + +0 is +0), from every variant."""
    name = np.dtype(dtype).name
    tiny = float(np.finfo(dtype).smallest_subnormal)
    x = np.array([-0.0, 0.0, -tiny, tiny, -1e-30, 1e-30], dtype)
    ops = ["sin", "sin_bounded", "tanh", "erf"] + (["sin_exact"] if name == "float32" else [])
    for op in ops:
        got = run(op, x)
        ref = {"tanh": np.tanh, "erf": np.tanh}.get(op, np.sin)(x)  # erf: the same signs
        np.testing.assert_array_equal(np.signbit(got), np.signbit(ref), err_msg=op)
    for pair in ("sincos", "sincos_bounded"):
        s, c, _ = run_pair(x, exact=False, outlined=True, op=pair)
        np.testing.assert_array_equal(np.signbit(s), np.signbit(x), err_msg=pair)
        assert np.all(c == 1)


def unit_interval(step: int) -> np.ndarray:
    """Every ``step``-th float32 from 0 to UNIT_SIN_COS_LIMIT, with the limit itself."""
    top = int(np.float32(UNIT_SIN_COS_LIMIT).view(np.uint32))
    return np.append(np.arange(0, top, step, dtype=np.uint32), np.uint32(top)).view(np.float32)


@pytest.mark.parametrize("op", ["sin", "cos"])
def test_unit_float32_sin_cos_on_a_dense_sweep_within_the_documented_bound(op: str) -> None:
    """The unit variants (one polynomial, no reduction) on every 97th float32 of [-1, 1]:
    within 1.1 ulp (0.89 and 1.07 measured on every third), tighter than the reduced ones."""
    x = unit_interval(97)
    for xs in (x, -x):
        err = ulp_error(run(f"{op}_unit", xs), xs, op)
        worst = int(np.argmax(err))
        assert err[worst] <= 1.1, f"{op}_unit: {err[worst]:.3f} ulp at x={xs[worst]!r}"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unit_pair_gives_the_unit_bits_in_every_variant(dtype: type) -> None:
    """sincos_unit gives sin_unit's and cos_unit's bits, inlined (a kernel calling the other
    math functions out of line inlines it too) and vectorized; sin keeps a zero's sign and a
    nan stays nan. float64's unit variants are the bounded ones (the same bits as sin and
    cos)."""
    name = np.dtype(dtype).name
    x = np.concatenate([unit_interval(20011).astype(dtype), [-0.0, 0.0, np.nan]])
    x = np.ascontiguousarray(np.concatenate([x, -x[:-3]]).astype(dtype))
    want_s, want_c = run("sin_unit", x), run("cos_unit", x)
    if name == "float64":
        same_bits(want_s, run("sin", x), "float64 sin_unit")
        same_bits(want_c, run("cos", x), "float64 cos_unit")
    for outlined in (False, True):
        s, c, optimized = run_pair(x, exact=False, outlined=outlined, op="sincos_unit")
        same_bits(s, want_s, f"sincos_unit's sin, outlined={outlined}")
        same_bits(c, want_c, f"sincos_unit's cos, outlined={outlined}")
        # inlined even where the others are called out of line, and vectorized as it is
        assert "backplan.math" not in optimized.split("define void @kernel")[1].split("\n}")[0]
        assert re.search(r"<\d+ x (float|double)>", optimized)
    zeros = np.array([-0.0, 0.0], dtype)
    np.testing.assert_array_equal(np.signbit(run("sin_unit", zeros)), [True, False])
    assert np.all(run("cos_unit", zeros) == 1)
    assert np.isnan(run("sin_unit", x[-1:] * np.nan)).all()


@pytest.mark.parametrize(("scale", "calls"), [(0.9, "sincos_unit"), (1.01, "sincos_bounded")])
def test_sin_of_a_value_within_one_takes_the_unit_variant(scale: float, calls: str) -> None:
    """sin(tanh(x) * scale) and its cos: within [-1, 1] for scale 0.9 (the unit variant), not
    for 1.01 (the bounded one); both within an ulp or two of numpy's."""
    f = "float32"
    exprs = (K.Load(0), K.Unary("tanh", 0, f), K.Const(scale, f), K.Binary("mul", 1, 2, f),
             K.Unary("sin", 3, f), K.Unary("cos", 3, f), K.Binary("add", 4, 5, f))
    k = K.Kernel(f"unit_{calls}", (4, 256), 1, (K.Input("x", f, (256, 1)),), exprs,
                 (K.Output("y", 6, f),))
    text = str(render([k]))
    body = text[text.index(f'define internal i1 @"{k.name}.body"'):]
    body = body[: body.index("\n}\n")]
    assert re.findall(r"call [^@]*@\"backplan\.math\.(\w+)\.", body) == ["tanh", calls]
    x = np.random.default_rng(7).uniform(-4, 4, (4, 256)).astype(f)
    (y,) = run_kernel(build_kernels([k]), k, [x])
    arg = (run("tanh", x) * np.float32(scale)).astype(np.float64)
    np.testing.assert_allclose(y, np.sin(arg) + np.cos(arg), rtol=0, atol=3e-7)
