"""Kernels whose LLVM optimization once ran for minutes to hours (issue 9: a random-program
test sat in ``codegen.jit.optimize`` for more than 7 minutes). Short rows are fully unrolled,
so the row loop is the one LLVM vectorizes; over inputs broadcast along the rows (or a kernel
with no outer axes at all) its whole body is uniform across rows, and the loop vectorizer's
interleaving walked every path of that DAG (``vputils::isUniformAcrossVFsAndUFs``). Each
kernel is compiled and run in a child process with a time limit, so a regression fails here
instead of hanging the suite; its outputs are checked against numpy."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from codegen_testutil import build, run

from codegen import ir as K

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
LIMIT_S = 120  # each compiles in about a second; before the fix they took 5 minutes and more
F = "float32"


def chained_normalizations(stages: int = 5) -> K.Kernel:
    """v <- v / sum(v * v), ``stages`` times, over rows of 4 that all read the same input
    row, and the last row sum accumulated over rows: 293 s to optimize before the fix (4
    stages 2.8 s: each stage's compensated sum multiplies the paths)."""
    exprs: list[K.Expr] = [K.Load(0)]
    v = 0
    for _ in range(stages):
        exprs += [K.Binary("mul", v, v, F), K.Reduce("sum", len(exprs), F)]
        exprs.append(K.Binary("div", v, len(exprs) - 1, F))
        v = len(exprs) - 1
    return K.Kernel("norms", (4, 4), 1, (K.Input("x", F, (0, 1)),), tuple(exprs),
                    (K.Output("y", v, F), K.Output("total", v - 1, F, accumulate="sum")))


def random_program_kernel() -> K.Kernel:
    """The kernel of ``test_random_program_compiled_equals_eager`` that hung (seed 101 of a
    search: leaves of shapes (2,) and (1,), ops sum, sub, sin, sum, exp, matmul, scalar_mul,
    matmul, and backward): one row of 2, no outer axes, fast and exact sin/cos bodies.
    Not done in 15 minutes before the fix."""
    L, C, U, B, R = K.Load, K.Const, K.Unary, K.Binary, K.Reduce
    exprs = (L(0), L(1), B("sub", 0, 1, F), U("sin", 2, F), R("sum", 3, F), U("tanh", 4, F),
             C(1.5, F), B("mul", 5, 6, F), U("exp", 7, F), R("sum", 2, F), C(0.5, F),
             B("mul", 9, 10, F), B("mul", 11, 10, F), R("sum", 3, F), B("mul", 13, 10, F),
             B("mul", 14, 10, F), L(2), B("add", 16, 1, F), B("mul", 10, 8, F),
             B("mul", 18, 6, F), C(1.0, F), B("mul", 5, 5, F), B("sub", 20, 21, F),
             B("mul", 19, 22, F), B("add", 10, 23, F), B("add", 16, 24, F), U("cos", 2, F),
             B("mul", 25, 26, F), B("add", 17, 27, F), U("neg", 28, F), R("sum", 28, F),
             B("add", 10, 30, F), B("add", 2, 29, F), L(3), B("add", 33, 31, F))
    inputs = tuple(K.Input(f"in{i}", F, (s,)) for i, s in enumerate((0, 1, 1, 0)))
    outputs = tuple(K.Output(f"out{j}", v, F) for j, v in enumerate((2, 4, 8, 12, 15, 32, 34)))
    return K.Kernel("k1", (2,), 1, inputs, exprs, outputs)


KERNELS = {"chained_normalizations": chained_normalizations,
           "random_program_kernel": random_program_kernel}


def input_arrays(k: K.Kernel) -> list[np.ndarray]:
    """Values for each input: as many elements as its strides reach, in (-1, 1)."""
    rng = np.random.default_rng(0)
    return [rng.uniform(-1, 1, 1 + sum((d - 1) * s for d, s in zip(k.domain, i.strides)))
            .astype(i.dtype) for i in k.inputs]


def reference(k: K.Kernel, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """The kernel's outputs evaluated by numpy in float64 (the ops these kernels use)."""
    inner = tuple(range(len(k.domain) - k.n_reduce, len(k.domain)))
    unary = {"sin": np.sin, "cos": np.cos, "tanh": np.tanh, "exp": np.exp, "neg": np.negative}
    binary = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}
    values: list[np.ndarray] = []
    for e in k.exprs:
        if isinstance(e, K.Load):
            a = arrays[e.input].astype(np.float64)
            values.append(np.lib.stride_tricks.as_strided(
                a, k.domain, tuple(s * a.itemsize for s in k.inputs[e.input].strides)))
        elif isinstance(e, K.Const):
            values.append(np.float64(e.value))
        elif isinstance(e, K.Unary):
            values.append(unary[e.op](values[e.x]))
        elif isinstance(e, K.Binary):
            values.append(binary[e.op](values[e.a], values[e.b]))
        else:
            assert isinstance(e, K.Reduce) and e.op == "sum"
            values.append(np.broadcast_to(values[e.x], k.domain).sum(inner, keepdims=True))
    outs = []
    for out in k.outputs:
        full = np.broadcast_to(values[out.value], k.domain)
        if not K.per_element(k)[out.value]:
            full = full[(..., *(0,) * k.n_reduce)]
        if out.accumulate == "sum":
            full = full.sum(tuple(range(len(k.outer_shape))))
        outs.append(full.reshape(K.output_shape(k, out)))
    return outs


def compile_and_run(name: str, result: str) -> None:
    """In the child: compile kernel ``name``, run it, save its outputs to ``result``."""
    k = KERNELS[name]()
    outs = run(build([k]), k, input_arrays(k), threads=1)
    np.savez(result, *outs)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_compiles_in_seconds_and_computes_its_values(name: str, tmp_path: Path) -> None:
    result = tmp_path / "outs.npz"
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(HERE)!r})
        from test_compile_time import compile_and_run
        compile_and_run({name!r}, {str(result)!r})
    """)
    env = {**os.environ, "BACKPLAN_CACHE_DIR": str(tmp_path / "cache")}
    try:
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"kernel {name!r} did not compile in {LIMIT_S} s (LLVM optimization)")
    assert done.returncode == 0, done.stderr
    k = KERNELS[name]()
    with np.load(result) as got:
        for j, want in enumerate(reference(k, input_arrays(k))):
            np.testing.assert_allclose(got[f"arr_{j}"], want, rtol=2e-5, atol=1e-6,
                                       err_msg=f"{name} output {j}")
