"""The vector variant of elementwise CUDA kernels (``NAME__vec``: 16-byte loads and stores,
``codegen.cuda.vector_width``): which kernels get one, that the launcher runs it exactly where
every pointer is 16-byte aligned and the scalar kernel elsewhere, that both compute what numpy
does (host emulation, codegen/cuda_host.py), and that nvcc turns it into vector instructions."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cuda_testutil import assert_close, evaluate, input_arrays, nvcc, output_arrays, \
    workload_kernels

from codegen import ir as K
from codegen.cuda import render, vector_width
from codegen.cuda_host import emulate

L, C, Out = K.Load, K.Const, K.Output


def _kernel(domain: tuple[int, ...], strides: list[tuple[int, ...]], dtype: str = "float32",
            into: int | None = None, name: str = "k0") -> K.Kernel:
    """tanh((in0 + in1 + ...) * 0.5 + 0.25) over ``domain``; an ``into`` output writes in0."""
    inputs = tuple(K.Input(f"x{i}", dtype, s) for i, s in enumerate(strides))
    exprs: list[K.Expr] = [L(i) for i in range(len(inputs))]
    total = 0
    for i in range(1, len(inputs)):
        exprs.append(K.Binary("add", total, i, dtype))
        total = len(exprs) - 1
    exprs += [C(0.5, dtype), C(0.25, dtype)]
    exprs.append(K.Binary("mul", total, len(exprs) - 2, dtype))
    exprs.append(K.Binary("add", len(exprs) - 1, len(exprs) - 2, dtype))
    exprs.append(K.Unary("tanh", len(exprs) - 1, dtype))
    return K.Kernel(name, domain, 0, inputs, tuple(exprs),
                    (Out("y", len(exprs) - 1, dtype, into=into),))


@pytest.mark.parametrize("kernel, width", [
    (_kernel((8, 16), [(16, 1), (0, 1), (1, 0)]), 4),  # dense, a row vector, a column
    (_kernel((8, 16), [(16, 1), (0, 0)], "float64"), 2),
    (_kernel((4096,), [(1,)]), 4),
    (_kernel((8, 16), [(16, 1)], into=0), 4),
    (_kernel((8, 6), [(6, 1)]), 0),  # rows of 6 floats: not whole vectors
    (_kernel((8, 16), [(1, 8)]), 0),  # read across the last axis (a transpose)
    (_kernel((4, 16), [(18, 1)]), 0),  # rows 18 floats apart: not vector-aligned
    (_kernel((3,), [(1,)]), 0),
    (K.Kernel("k0", (8, 16), 0, (K.Input("x", "int64", (16, 1)),), (L(0),),
              (Out("y", 0, "int64"),)), 0),
    (K.Kernel("k0", (8, 16), 0, (K.Input("x", "float32", (16, 1)),),
              (L(0), K.Cast(0, "float64")), (Out("y", 1, "float64"),)), 0),  # mixed dtypes
    (K.Kernel("k0", (8, 16), 1, (K.Input("x", "float32", (16, 1)),),
              (L(0), K.Reduce("sum", 0, "float32")), (Out("y", 1, "float32"),)), 0),
    (K.Kernel("k0", (8, 16), 0, (K.Input("x", "float32", (16, 1)),),
              (L(0),), (Out("y", 0, "float32", accumulate="sum"),)), 0),
])
def test_which_kernels_get_a_vector_variant(kernel: K.Kernel, width: int) -> None:
    assert vector_width(kernel) == width
    assert ("k0__vec(" in render([kernel])) == bool(width)


def test_the_workloads_elementwise_kernels_vectorize() -> None:
    widths = {n: [vector_width(k) for k in ks] for n, ks in workload_kernels().items()}
    assert any(widths["mlp_large"]) and any(widths["two_tower"]), widths


def _misaligned(a: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of ``a`` one element past a 16-byte boundary."""
    buf = np.empty(a.size + 16 // a.itemsize + 1, a.dtype)
    start = (-buf.ctypes.data % 16) // a.itemsize + 1
    out = buf[start:start + a.size].reshape(a.shape)
    out[...] = a
    assert out.ctypes.data % 16 and out.flags.c_contiguous
    return out


class _Spy:
    def __init__(self, fn: Any) -> None:
        self.fn, self.calls = fn, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.fn(*args, **kwargs)


@pytest.mark.skipif(shutil.which("g++") is None, reason="the CUDA host emulation needs g++")
@pytest.mark.parametrize("kernel", [
    _kernel((8, 16), [(16, 1), (0, 1), (1, 0)]),
    _kernel((5, 12), [(12, 1), (0, 0)], "float64"),
    _kernel((4096 + 512,), [(1,), (1,)]),  # more vectors than one grid pass of a small device
    _kernel((8, 16), [(16, 1), (0, 1)], into=0),
])
def test_vector_launch_where_aligned_scalar_elsewhere(kernel: K.Kernel) -> None:
    from codegen.cuda_module import DeviceProps

    small = DeviceProps("sm_80", sm_count=1, max_threads_per_sm=256)  # one block a pass
    module = emulate([kernel], small)
    vector = module.vectors[kernel.name] = _Spy(module.vectors[kernel.name])
    scalar = module.functions[kernel.name] = _Spy(module.functions[kernel.name])
    want = evaluate(kernel, input_arrays(kernel, seed=3))
    results = []
    for shift, (v_calls, s_calls) in ((False, (1, 0)), (True, (1, 1))):
        ins = input_arrays(kernel, seed=3)
        outs = output_arrays(kernel)
        if shift:  # any one pointer off the 16-byte grid sends the launch to the scalar kernel
            if kernel.outputs[0].into is None:
                outs = [_misaligned(outs[0])]
            else:
                ins[0] = _misaligned(ins[0])
        module.run(kernel, ins, outs)
        assert (vector.calls, scalar.calls) == (v_calls, s_calls)
        got = [ins[0].reshape(outs[0].shape)] if kernel.outputs[0].into is not None else outs
        assert_close(got, want, f"{kernel.name} {'scalar' if shift else 'vector'}")
        results.append(got[0].copy())
    np.testing.assert_array_equal(results[0], results[1])  # the same math, lane by lane


@pytest.mark.skipif(nvcc() is None, reason="nvcc (CUDA toolkit) is not installed")
def test_nvcc_compiles_the_variant_to_vector_loads_and_stores(tmp_path: Path) -> None:
    kernels = [_kernel((8, 16), [(16, 1), (0, 1), (1, 0)], name="f"),
               _kernel((8, 16), [(16, 1), (0, 1)], "float64", name="d")]
    source = tmp_path / "vec.cu"
    source.write_text(render(kernels))
    ptx = tmp_path / "vec.ptx"
    subprocess.run([nvcc(), "--std=c++17", "-arch=sm_80", "-ptx", str(source), "-o", str(ptx)],
                   check=True, capture_output=True, timeout=300)
    text = ptx.read_text()  # only the vector variants load or store more than one element
    assert "ld.global.nc.v4.f32" in text and "st.global.v4.f32" in text
    assert "ld.global.nc.v2.f64" in text and "st.global.v2.f64" in text
