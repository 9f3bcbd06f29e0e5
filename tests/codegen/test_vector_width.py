"""Kernels are compiled for the host's widest vectors (codegen.llvm.preferred_vector_bits):
every function of a rendered module asks for them, and the machine code uses them."""

from __future__ import annotations

import numpy as np
import pytest

from codegen import ir as K
from codegen.jit import compile_module
from codegen.llvm import preferred_vector_bits, render
from codegen.llvm_math import vector_widths

F32 = "float32"


def _kernel() -> K.Kernel:
    return K.Kernel("wide", (64, 1024), 0, (K.Input("x", F32, (1024, 1)),),
                    (K.Load(0), K.Unary("sin", 0, F32), K.Unary("exp", 1, F32)),
                    (K.Output("y", 2, F32),))


def test_every_function_asks_for_the_widest_vectors() -> None:
    bits = preferred_vector_bits()
    assert bits == 32 * max(vector_widths(F32))
    text = str(render([_kernel()]))
    defines = [line for line in text.splitlines() if line.startswith("define")]
    assert defines
    for line in defines:
        assert f'"prefer-vector-width"="{bits}"' in line, line
        assert f'"min-legal-vector-width"="{bits}"' in line, line


def test_machine_code_uses_them_and_computes_the_same() -> None:
    register = {512: "zmm", 256: "ymm"}.get(preferred_vector_bits())
    if register is None:
        pytest.skip("no AVX on this host")
    k = _kernel()
    cm = compile_module(render([k]), [k])
    assert register in cm.asm(k.name)
    x = np.random.default_rng(0).standard_normal((64, 1024)).astype(np.float32)
    y = np.empty_like(x)
    cm.run(k, [x], [y], threads=1)
    np.testing.assert_allclose(y, np.exp(np.sin(x)), rtol=3e-6)
