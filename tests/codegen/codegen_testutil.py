"""Helpers shared by the codegen tests: build kernels from numpy arrays, compile, run."""

from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np

from codegen import ir as K
from codegen.jit import CompiledModule, compile_module
from codegen.llvm import render

RNG = np.random.default_rng(0)


def broadcast_strides(shape: tuple[int, ...], domain: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a C-contiguous array of ``shape`` broadcast against ``domain``."""
    shape = (1,) * (len(domain) - len(shape)) + tuple(shape)
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step if d != 1 else 0)
        step *= d
    return tuple(reversed(strides))


def inputs_for(arrays: list[np.ndarray], domain: tuple[int, ...]) -> tuple[K.Input, ...]:
    return tuple(K.Input(f"in{i}", a.dtype.name, broadcast_strides(a.shape, domain))
                 for i, a in enumerate(arrays))


def build(kernels: list[K.Kernel]) -> CompiledModule:
    """Validate, render, run the LLVM verifier on the unoptimized module, compile."""
    for k in kernels:
        K.validate(k)
    module = render(kernels)
    llvm.parse_assembly(str(module)).verify()
    return compile_module(module, kernels)


def run(cm: CompiledModule, kernel: K.Kernel, arrays: list[np.ndarray],
        threads: int | None = None) -> list[np.ndarray]:
    outs = [np.empty(K.output_shape(kernel, o), o.dtype) for o in kernel.outputs]
    cm.run(kernel, [np.ascontiguousarray(a) for a in arrays], outs, threads=threads)
    return outs


def random_array(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype == "bool":
        return RNG.random(shape) < 0.5
    if dtype == "int64":
        return RNG.integers(-50, 50, shape)
    return RNG.standard_normal(shape).astype(dtype)
