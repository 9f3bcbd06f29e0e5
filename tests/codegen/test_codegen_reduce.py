"""Reductions over trailing axes, multi-stage kernels (softmax, layer_norm) and determinism."""

from __future__ import annotations

import re

import numpy as np
import pytest
from codegen_testutil import broadcast_strides, build, random_array, run

from codegen import ir as K

REF = {"sum": np.sum, "max": np.max}


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("shape,n_reduce,in_shape", [
    ((6, 37), 1, (6, 37)),
    ((3, 4, 19), 2, (3, 4, 19)),
    ((2, 3, 5), 1, (3, 5)),        # input broadcast along an outer axis
    ((4, 7, 6), 2, (4, 1, 6)),     # input broadcast along a reduced axis
    ((13,), 1, (13,)),             # full reduction to a scalar
])
def test_sum_and_max_over_trailing_axes(dtype, shape, n_reduce, in_shape):
    x = random_array(in_shape, dtype)
    inp = (K.Input("x", dtype, broadcast_strides(in_shape, shape)),)
    kernels = [K.Kernel(f"{op}_red", shape, n_reduce, inp,
                        (K.Load(0), K.Reduce(op, 0, dtype)), (K.Output("out", 1, dtype),))
               for op in REF]
    cm = build(kernels)
    axes = tuple(range(len(shape) - n_reduce, len(shape)))
    for k in kernels:
        (got,) = run(cm, k, [x])
        expect = REF[k.name.split("_")[0]](np.broadcast_to(x, shape), axis=axes)
        tol = 1e-5 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(got, expect, rtol=tol, atol=tol, err_msg=k.name)


def softmax_kernel(rows: int, cols: int, dtype: str) -> K.Kernel:
    """m = max(x); e = exp(x - m) [stage 1]; s = sum(e) [stage 2]; y = e / s."""
    exprs = (K.Load(0), K.Reduce("max", 0, dtype), K.Binary("sub", 0, 1, dtype),
             K.Unary("exp", 2, dtype), K.Reduce("sum", 3, dtype), K.Binary("div", 3, 4, dtype))
    return K.Kernel("softmax", (rows, cols), 1, (K.Input("x", dtype, (cols, 1)),), exprs,
                    (K.Output("y", 5, dtype), K.Output("denom", 4, dtype)))


def layer_norm_kernel(rows: int, cols: int, dtype: str, eps: float = 1e-5) -> K.Kernel:
    """mean, var of each row; y = (x - mean) * rsqrt(var + eps) * w + b; also mean and rstd."""
    exprs = (
        K.Load(0), K.Load(1), K.Load(2),                                        # 0 x, 1 w, 2 b
        K.Const(1.0 / cols, dtype), K.Reduce("sum", 0, dtype),                  # 3, 4
        K.Binary("mul", 4, 3, dtype),                                           # 5 mean
        K.Binary("sub", 0, 5, dtype), K.Binary("mul", 6, 6, dtype),             # 6 xc, 7 xc^2
        K.Reduce("sum", 7, dtype), K.Binary("mul", 8, 3, dtype),                # 8, 9 var
        K.Const(eps, dtype), K.Binary("add", 9, 10, dtype), K.Unary("sqrt", 11, dtype),
        K.Const(1.0, dtype), K.Binary("div", 13, 12, dtype),                    # 14 rstd
        K.Binary("mul", 6, 14, dtype), K.Binary("mul", 15, 1, dtype),
        K.Binary("add", 16, 2, dtype),                                          # 17 y
    )
    inputs = (K.Input("x", dtype, (cols, 1)), K.Input("w", dtype, (0, 1)),
              K.Input("b", dtype, (0, 1)))
    return K.Kernel("layer_norm", (rows, cols), 1, inputs, exprs,
                    (K.Output("y", 17, dtype), K.Output("mean", 5, dtype),
                     K.Output("rstd", 14, dtype)))


def test_stages():
    assert K.stage_of(softmax_kernel(2, 3, "float32")) == [0, 1, 1, 1, 2, 2]
    assert K.stage_of(layer_norm_kernel(2, 3, "float32"))[-1] == 2


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_three_stage_kernel(dtype):
    x = random_array((33, 257), dtype) * 5
    k = softmax_kernel(33, 257, dtype)
    y, denom = run(build([k]), k, [x])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(denom, e.sum(axis=1), rtol=tol)
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_forward_kernel(dtype):
    rows, cols = 17, 300
    x, w, b = (random_array(s, dtype) for s in [(rows, cols), (cols,), (cols,)])
    k = layer_norm_kernel(rows, cols, dtype)
    y, mean, rstd = run(build([k]), k, [x, w, b])
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=1)
    r = 1 / np.sqrt(x64.var(axis=1) + 1e-5)
    tol = 2e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(mean, mu, rtol=tol, atol=tol)
    np.testing.assert_allclose(rstd, r, rtol=tol, atol=tol)
    np.testing.assert_allclose(y, (x64 - mu[:, None]) * r[:, None] * w + b, rtol=tol, atol=tol)


def test_reductions_are_deterministic_across_runs_and_threads():
    x = random_array((64, 10_001), "float32")
    k = softmax_kernel(64, 10_001, "float32")
    cm = build([k])
    first = run(cm, k, [x], threads=1)
    for threads in (1, 2, None):
        again = run(cm, k, [x], threads=threads)
        for a, b in zip(first, again):
            assert np.array_equal(a, b), threads


def test_outputs_are_written_in_the_stage_they_become_available():
    # doubled = 2x [stage 0, full]; total = sum(x) [outer]; centered = x - total [stage 1, full]
    f = "float64"
    exprs = (K.Load(0), K.Const(2, f), K.Binary("mul", 0, 1, f), K.Reduce("sum", 0, f),
             K.Binary("sub", 0, 3, f))
    k = K.Kernel("stages", (3, 4, 5), 1, (K.Input("x", f, (20, 5, 1)),), exprs,
                 (K.Output("doubled", 2, f), K.Output("total", 3, f),
                  K.Output("centered", 4, f)))
    x = random_array((3, 4, 5), f)
    doubled, total, centered = run(build([k]), k, [x])
    np.testing.assert_array_equal(doubled, 2 * x)
    np.testing.assert_allclose(total, x.sum(axis=2), rtol=1e-12)
    np.testing.assert_allclose(centered, x - x.sum(axis=2, keepdims=True), rtol=1e-12)


def test_sum_reduction_is_vectorized():
    k = K.Kernel("rowsum", (8, 4096), 1, (K.Input("x", "float32", (4096, 1)),),
                 (K.Load(0), K.Reduce("sum", 0, "float32")), (K.Output("s", 1, "float32"),))
    asm = build([k]).asm("rowsum")
    assert re.search(r"\bvaddps\b.*%[yz]mm|\baddps\b.*%xmm", asm), asm


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_accumulated_outputs_reduce_over_outer_axes(dtype, threads):
    """Column sums and maxes of per-element values, and the sum of per-row sums, in the same
    kernel as a per-element output; any thread split gives numpy's result."""
    shape = (37, 5, 19)
    x = random_array(shape, dtype)
    b = random_array((19,), dtype)
    exprs = (K.Load(0), K.Load(1), K.Binary("mul", 0, 1, dtype),     # 2 y = x * b
             K.Reduce("sum", 2, dtype))                              # 3 row sums of y
    inputs = (K.Input("x", dtype, broadcast_strides(shape, shape)),
              K.Input("b", dtype, broadcast_strides((19,), shape)))
    k = K.Kernel("acc", shape, 1, inputs, exprs,
                 (K.Output("y", 2, dtype), K.Output("colsum", 2, dtype, "sum"),
                  K.Output("colmax", 2, dtype, "max"), K.Output("total", 3, dtype, "sum"),
                  K.Output("rowsum", 3, dtype)))
    assert K.output_shape(k, k.outputs[1]) == (19,)
    assert K.output_shape(k, k.outputs[3]) == ()
    y, colsum, colmax, total, rowsum = run(build([k]), k, [x, b], threads=threads)
    ref = x * b
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(y, ref, rtol=tol)
    np.testing.assert_allclose(colsum, ref.sum(axis=(0, 1)), rtol=tol, atol=tol * 100)
    np.testing.assert_array_equal(colmax, ref.max(axis=(0, 1)))
    np.testing.assert_allclose(total, ref.sum(), rtol=tol, atol=tol * 1000)
    np.testing.assert_allclose(rowsum, ref.sum(axis=2), rtol=tol, atol=tol * 100)


def test_accumulated_output_of_elementwise_kernel_is_deterministic():
    x = random_array((4000, 64), "float32")
    k = K.Kernel("colsum", (4000, 64), 0, (K.Input("x", "float32", (64, 1)),),
                 (K.Load(0), K.Unary("exp", 0, "float32")),
                 (K.Output("s", 1, "float32", "sum"),))
    cm = build([k])
    first = run(cm, k, [x], threads=2)[0]
    for _ in range(3):
        np.testing.assert_array_equal(run(cm, k, [x], threads=2)[0], first)
    np.testing.assert_allclose(first, np.exp(x).sum(axis=0), rtol=1e-5)


def test_accumulate_rejects_bool_and_unknown_ops():
    base = dict(name="bad", domain=(4, 3), n_reduce=0,
                inputs=(K.Input("x", "bool", (3, 1)),), exprs=(K.Load(0),))
    with pytest.raises(K.KernelIRError, match="cannot accumulate bool"):
        K.validate(K.Kernel(**base, outputs=(K.Output("o", 0, "bool", "sum"),)))
    with pytest.raises(K.KernelIRError, match="cannot accumulate"):
        K.validate(K.Kernel(**{**base, "inputs": (K.Input("x", "float32", (3, 1)),)},
                            outputs=(K.Output("o", 0, "float32", "mean"),)))


@pytest.mark.parametrize("cols", [257, 70000])
def test_later_stages_reread_costly_values_from_row_scratch(cols):
    """softmax's exp(x - max) is stored by the sum's loop and re-read by the division's
    instead of recomputed, while a row fits the scratch budget; wider rows recompute it."""
    from codegen.llvm import RULES
    from codegen.llvm_emit import SCRATCH_BYTES, KernelEmitter
    from codegen.llvm_math import declare_math
    from llvmlite import ir as llir

    k = softmax_kernel(3, cols, "float32")  # 70000 floats: over SCRATCH_BYTES
    module = llir.Module()
    emitter = KernelEmitter(module, k, declare_math(module), RULES)
    assert emitter.cached == ({3} if cols * 4 <= SCRATCH_BYTES else set())
    x = random_array((3, cols), "float32")
    y, _ = run(build([k]), k, [x])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
