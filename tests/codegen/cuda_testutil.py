"""Kernels and references shared by the CUDA tests: every benchmark workload's kernels, one
kernel per registry lowering and dtype, random fused kernels, input arrays, and a numpy
evaluator of the kernel IR (the reference the host emulation and the LLVM kernels meet)."""

from __future__ import annotations

import dataclasses
import functools
import math
import shutil
from typing import Any

import numpy as np

from codegen import ir as K

TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-9, atol=1e-11),
       "int64": dict(rtol=0, atol=0), "bool": dict(rtol=0, atol=0)}


def nvcc() -> str | None:
    return shutil.which("nvcc") or shutil.which("/usr/local/bin/nvcc")


@functools.cache
def workload_kernels() -> dict[str, tuple[K.Kernel, ...]]:
    """Per benchmark workload, the kernels of its compiled plan (built once per session)."""
    import planner
    import runtime
    from benchmarks.workloads import WORKLOADS
    from planner.steps import KernelStep

    found = {}
    for name, w in WORKLOADS.items():
        case = w.build(runtime, w.make_arrays(0))
        plan = planner.compile(case.fn).lower(*case.args)
        found[name] = tuple(s.kernel for s in plan.steps if isinstance(s, KernelStep))
    return found


def renamed(kernel: K.Kernel, name: str) -> K.Kernel:
    return dataclasses.replace(kernel, name=name)


def registry_kernel(name: str, dtype: str, domain: tuple[int, ...],
                    shapes: list[tuple[int, ...]], scalar: bool
                    ) -> tuple[K.Kernel, list[np.ndarray], np.ndarray]:
    """``test_registry_lowerings.registry_kernel``: the kernels the LLVM registry tests build
    (imported when called: that module is a test module of its own)."""
    from test_registry_lowerings import registry_kernel

    return registry_kernel(name, dtype, domain, shapes, scalar)


def needed(kernel: K.Kernel, inp: K.Input) -> int:
    """Elements an input's strides reach over the domain (an empty domain still loads the
    values its rows broadcast)."""
    return 1 + sum(max(d - 1, 0) * s for d, s in zip(kernel.domain, inp.strides))


def input_arrays(kernel: K.Kernel, seed: int = 0) -> list[np.ndarray]:
    """Random values for each input: floats in (-2, 2), small ints, bools."""
    rng = np.random.default_rng(seed)
    arrays = []
    for inp in kernel.inputs:
        n = needed(kernel, inp)
        if inp.dtype == "bool":
            arrays.append(rng.random(n) < 0.5)
        elif inp.dtype == "int64":
            arrays.append(rng.integers(-20, 20, n))
        else:
            arrays.append(rng.uniform(-2, 2, n).astype(inp.dtype))
    return arrays


def output_arrays(kernel: K.Kernel) -> list[np.ndarray]:
    """Outputs filled with garbage, so an element a kernel fails to write shows."""
    return [np.full(K.output_shape(kernel, o), 7, o.dtype) for o in kernel.outputs]


def run(module: Any, kernel: K.Kernel, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """``kernel`` run by ``module`` on copies of ``arrays``; the outputs, an ``into`` output
    read back from its input's storage."""
    ins = [a.copy() for a in arrays]
    outs = output_arrays(kernel)
    module.run(kernel, ins, outs)
    shapes = [K.output_shape(kernel, o) for o in kernel.outputs]
    return [ins[o.into][:math.prod(shapes[j])].reshape(shapes[j]) if o.into is not None
            else outs[j] for j, o in enumerate(kernel.outputs)]


_ERF = np.vectorize(math.erf, otypes=[np.float64])
_UNARY = {"neg": np.negative, "abs": np.abs, "sign": np.sign, "exp": np.exp, "log": np.log,
          "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "sqrt": np.sqrt,
          "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "erf": _ERF}
_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
           "pow": np.power, "maximum": np.maximum, "minimum": np.minimum, "eq": np.equal,
           "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
           "ge": np.greater_equal, "logical_and": np.logical_and, "remainder": np.remainder,
           "floor_divide": np.floor_divide}


def _reduce(op: str, x: np.ndarray, axes: tuple[int, ...], dtype: str) -> np.ndarray:
    if op == "sum":
        return np.sum(x, axes, dtype=dtype, keepdims=True)
    identity = -np.inf if dtype in K.FLOAT_DTYPES else np.iinfo(np.int64).min
    return np.max(x, axes, keepdims=True, initial=identity)


def evaluate(kernel: K.Kernel, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """The kernel's outputs computed by numpy over the whole domain, in the IR's dtypes."""
    domain = kernel.domain
    inner = tuple(range(len(domain) - kernel.n_reduce, len(domain)))
    outer = tuple(range(len(kernel.outer_shape)))
    values: list[np.ndarray] = []
    with np.errstate(all="ignore"):
        for e in kernel.exprs:
            if isinstance(e, K.Load):
                a = arrays[e.input]
                strides = tuple(s * a.itemsize for s in kernel.inputs[e.input].strides)
                shape = tuple(d if s else 1 for d, s in zip(domain, strides))
                v = np.lib.stride_tricks.as_strided(a, shape, strides)
            elif isinstance(e, K.Const):
                v = np.asarray(e.value, e.dtype)
            elif isinstance(e, K.Unary):
                v = _UNARY[e.op](values[e.x])
            elif isinstance(e, K.Binary):
                v = _BINARY[e.op](values[e.a], values[e.b])
            elif isinstance(e, K.Where):
                v = np.where(values[e.cond], values[e.a], values[e.b])
            elif isinstance(e, K.Fma):
                from runtime.ops.prims import _fma

                v = _fma(np, *(np.asarray(values[i]) for i in (e.a, e.b, e.c)))
            elif isinstance(e, K.Cast):
                v = values[e.x]
            else:
                v = _reduce(e.op, np.broadcast_to(values[e.x], domain), inner, e.dtype)
            values.append(np.asarray(v).astype(K.result_dtype(kernel, e)))
        outs = []
        flags = K.per_element(kernel)
        for out in kernel.outputs:
            if kernel.n_reduce and not flags[out.value]:
                full = np.broadcast_to(values[out.value],
                                       kernel.outer_shape + (1,) * kernel.n_reduce)
            else:
                full = np.broadcast_to(values[out.value], domain)
            if out.accumulate is not None:
                full = _reduce(out.accumulate, full, outer, out.dtype)
            outs.append(np.ascontiguousarray(full).reshape(K.output_shape(kernel, out)))
    return outs


def assert_close(got: list[np.ndarray], want: list[np.ndarray], what: str) -> None:
    for j, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, (what, j, g.shape, w.shape)
        np.testing.assert_allclose(g, w, **TOL[g.dtype.name], err_msg=f"{what} output {j}")


# extents a random domain axis takes: odd sizes, just above a warp (33) and a block (257)
AXES = (1, 2, 3, 7, 31, 33, 64, 257)
FLOAT_UNARY = ("neg", "abs", "sign", "sin", "cos", "tanh", "sigmoid", "erf")


def random_kernel(seed: int, name: str) -> K.Kernel:
    """A random valid fused kernel: up to 3 axes (sometimes an empty one), 0..2 of them
    reduced, broadcast inputs, a chain of ops on float32/float64/int64 with comparisons,
    where, fused multiply-adds, casts, reductions feeding later stages, division by row values and constants,
    accumulated outputs and, in elementwise kernels, an output written into its input."""
    rng = np.random.default_rng(seed)
    ndim = int(rng.choice(4, p=[0.1, 0.3, 0.3, 0.3]))
    domain = tuple(int(rng.choice(AXES)) for _ in range(ndim))
    while math.prod(domain) > 20000:
        domain = domain[1:]
        ndim -= 1
    if ndim and rng.random() < 0.05:
        domain = (*domain[:-1], 0)
    n_reduce = int(rng.choice([0, 0, 1, 1, min(2, ndim)])) if ndim else 0
    n_reduce = min(n_reduce, ndim)
    dtype = str(rng.choice(["float32", "float64", "int64"], p=[0.5, 0.3, 0.2]))
    from codegen_testutil import broadcast_strides

    inputs, exprs = [], []
    for i in range(int(rng.integers(1, 4))):
        shape = tuple(d if i == 0 or rng.random() < 0.6 else 1 for d in domain)
        shape = shape[int(rng.integers(0, ndim + 1)) if i else 0:]
        inputs.append(K.Input(f"in{i}", dtype, broadcast_strides(shape, domain)))
        exprs.append(K.Load(i))
    floats = dtype in K.FLOAT_DTYPES

    def dt(i: int) -> str:
        e = exprs[i]
        return inputs[e.input].dtype if isinstance(e, K.Load) else e.dtype

    def pick() -> int:
        return int(rng.integers(0, len(exprs)))

    # exprs that may be huge (a quotient by 1e-300, and what uses one) and that hold a sum
    # (a reduction's, and what uses one): a sum of huge values rounds differently in every
    # order of summation, and sin or cos of it differs as much as it likes (sin of a row sum
    # near 1e300: 0.03 here, -0.44 in numpy), so neither is taken of such a value
    huge: set[int] = set()
    summed: set[int] = set()

    def add(e: K.Expr) -> int:
        exprs.append(e)
        i = len(exprs) - 1
        ops = K.operands(e)
        if any(o in huge for o in ops) or (isinstance(e, K.Binary) and e.op == "div" and
                                           isinstance(exprs[e.b], K.Const)
                                           and abs(exprs[e.b].value) < 1e-200):
            huge.add(i)
        if isinstance(e, K.Reduce) or any(o in summed for o in ops):
            summed.add(i)
        return i

    for _ in range(int(rng.integers(2, 12))):
        r = rng.random()
        x, y = pick(), pick()
        if dt(x) != dtype:
            continue
        y = y if dt(y) == dtype else x
        if r < 0.25:
            ops = FLOAT_UNARY if floats else ("neg", "abs", "sign")
            op = str(rng.choice(ops))
            if op in ("sin", "cos") and x in huge and x in summed:
                op = "tanh"  # see ``huge``
            add(K.Unary(op, x, dtype))
        elif r < 0.55 and floats and rng.random() < 0.2:  # a multiply-add rounded once
            z = pick()
            add(K.Fma(x, y, z if dt(z) == dtype else x, dtype))
        elif r < 0.55:
            ops = ("add", "sub", "mul", "maximum", "minimum") if floats or rng.random() < 0.3 \
                else ("add", "sub", "maximum", "minimum")
            add(K.Binary(str(rng.choice(ops)), x, y, dtype))
        elif r < 0.65:
            cond = add(K.Binary(str(rng.choice(["lt", "ge", "eq", "ne"])), x, y, "bool"))
            add(K.Where(cond, y, x, dtype))
        elif r < 0.72 and floats:
            other = "float64" if dtype == "float32" else "float32"
            add(K.Cast(add(K.Cast(x, other)), dtype))
        elif r < 0.8 and floats:
            # x / (|y| + 1), or x / c: the reciprocal paths where y is a row value
            if rng.random() < 0.5:
                d = add(K.Binary("add", add(K.Unary("abs", y, dtype)),
                                 add(K.Const(1.0, dtype)), dtype))
            else:
                d = add(K.Const(float(rng.choice([3.0, -0.5, 1e-300 if dtype == "float64"
                                                  else 7.0])), dtype))
            add(K.Binary("div", x, d, dtype))
        elif n_reduce:
            op = str(rng.choice(["sum", "max"]))
            add(K.Reduce(op, x, dtype))
    values = [i for i in range(len(exprs)) if dt(i) == dtype]
    outputs = []
    for j, v in enumerate(sorted({values[-1], *rng.choice(values, 2)})):
        accumulate = str(rng.choice(["sum", "max"])) if rng.random() < 0.35 and ndim else None
        outputs.append(K.Output(f"out{j}", int(v), dtype, accumulate))
    dense = broadcast_strides(domain, domain)
    if not n_reduce and inputs[0].strides == dense and rng.random() < 0.4 \
            and outputs[0].accumulate is None:
        outputs[0] = dataclasses.replace(outputs[0], into=0)
    return K.Kernel(name, domain, n_reduce, tuple(inputs), tuple(exprs), tuple(outputs))
