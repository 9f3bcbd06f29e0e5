"""Only kernels with a long latency chain in an iteration (a math function, a running sum) ask
the vectorizer to interleave their innermost loops (``codegen.llvm.interleave``): elementwise
arithmetic runs one vector chain, the same speed in less code, and the same numbers."""

from __future__ import annotations

import re

import numpy as np
import pytest

from codegen import ir as K
from codegen.jit import compile_module
from codegen.llvm import interleave, render
from codegen.llvm_emit import INTERLEAVE

F32 = "float32"
X = K.Input("x", F32, (256, 1))
B = K.Input("b", F32, (0, 1))  # one value per column


def _arith() -> K.Kernel:  # (x * b + x) / b
    return K.Kernel("arith", (64, 256), 0, (X, B),
                    (K.Load(0), K.Load(1), K.Binary("mul", 0, 1, F32),
                     K.Binary("add", 2, 0, F32), K.Binary("div", 3, 1, F32)),
                    (K.Output("y", 4, F32),))


def _math() -> K.Kernel:  # exp(x) * b
    return K.Kernel("math", (64, 256), 0, (X, B),
                    (K.Load(0), K.Load(1), K.Unary("exp", 0, F32),
                     K.Binary("mul", 2, 1, F32)),
                    (K.Output("y", 3, F32),))


def _rowsum() -> K.Kernel:  # sum over each row of x * b
    return K.Kernel("rowsum", (64, 256), 1, (X, B),
                    (K.Load(0), K.Load(1), K.Binary("mul", 0, 1, F32),
                     K.Reduce("sum", 2, F32)),
                    (K.Output("y", 3, F32),))


def _counts(kernel: K.Kernel) -> set[int]:
    text = str(render([kernel]))
    return {int(n) for n in re.findall(r'"llvm\.loop\.interleave\.count", i32 (\d+)', text)}


@pytest.mark.parametrize(("make", "wanted"), [(_arith, 1), (_math, INTERLEAVE),
                                              (_rowsum, INTERLEAVE)])
def test_interleave_asked_only_where_a_chain_is_long(make, wanted: int) -> None:  # noqa: ANN001
    kernel = make()
    assert interleave(kernel) == wanted
    assert _counts(kernel) == {wanted}


def test_elementwise_arithmetic_computes_the_same() -> None:
    k = _arith()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 256)).astype(np.float32)
    b = (rng.random(256) + 0.5).astype(np.float32)
    y = np.empty((64, 256), np.float32)
    compile_module(render([k]), [k]).run(k.name, [x, b], [y], threads=1)
    np.testing.assert_allclose(y, (x * b + x) / b, rtol=1e-6, atol=1e-6)
