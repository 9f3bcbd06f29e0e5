"""CUDA semantics checked on the host: the CUDA C of codegen/cuda.py built by g++ against the
prelude of CUDA built-ins (codegen/cuda_host.py) and launched with the launcher's real grid,
block and workspace (codegen/cuda_module.py), against the LLVM kernels and numpy.

Every renderer path runs here: grid-stride elementwise kernels (one grid pass and several),
column-accumulating kernels over several row parts, one-block-per-row reductions (a row per
block and several), row scratch in shared memory, division by row values and constants through
their reciprocals (normal or not), compensated sums and their combine, max and int64
accumulation, ``into`` outputs, empty and 0-d domains, bool/int64/float32/float64."""

from __future__ import annotations

import dataclasses
import math
import shutil

import numpy as np
import pytest
from cuda_testutil import (
    assert_close,
    evaluate,
    input_arrays,
    random_kernel,
    registry_kernel,
    run,
    workload_kernels,
)
from hypothesis import example, given, settings
from hypothesis import strategies as st

from codegen import ir as K
from codegen.cache import get_compiled
from codegen.cuda import SCRATCH_BYTES, render
from codegen.cuda_host import HostModule, emulate
from codegen.cuda_module import SM80, SM90, DeviceProps, launch_config
from codegen.lower import lower

pytestmark = pytest.mark.skipif(shutil.which("g++") is None,
                                reason="the CUDA host emulation needs g++, not found on PATH")


def _check_all(kernels: list[K.Kernel], arrays: dict[str, list[np.ndarray]],
               llvm_too: int | None = None, props: DeviceProps = SM80) -> None:
    """Emulated kernels equal the numpy evaluation of the IR, and so do the LLVM kernels of
    the first ``llvm_too`` (default all: LLVM takes some 0.15 s a kernel to compile)."""
    emulated = emulate(kernels, props)
    llvm = get_compiled(kernels[:llvm_too])
    for i, k in enumerate(kernels):
        want = evaluate(k, arrays[k.name])
        assert_close(run(emulated, k, arrays[k.name]), want, f"{k.name} emulated")
        if llvm_too is None or i < llvm_too:
            assert_close(run(llvm, k, arrays[k.name]), want, f"{k.name} llvm")


def test_every_registry_lowering_on_every_dtype() -> None:
    from test_registry_lowerings import LOWERED, SCALAR_OPERAND, _dtypes

    # a 3-D domain whose last axis is just above a warp, inputs broadcast three ways
    domain, shapes = (5, 3, 33), [(3, 1), (5, 1, 33), (33,)]
    cases = []
    for name in LOWERED:
        for dtype in _dtypes(name):
            for scalar in (False, True) if name in SCALAR_OPERAND else (False,):
                cases.append(registry_kernel(name, dtype, domain,
                                             [(3, 1)] if name == "expand" else shapes, scalar))
    kernels = [k for k, _, _ in cases]
    emulated = emulate(kernels)
    for kernel, arrays, expect in cases:
        assert_close(run(emulated, kernel, arrays), [expect], kernel.name)
    assert {k.name.split("_")[0] for k in kernels} >= {n.split("_")[0] for n in LOWERED}


@pytest.mark.parametrize("workload", ["mlp_large", "mlp_small", "eltwise", "chain", "partial",
                                      "two_tower"])
def test_benchmark_workload_kernels(workload: str) -> None:
    kernels = list(workload_kernels()[workload])
    assert kernels
    _check_all(kernels, {k.name: input_arrays(k) for k in kernels})


RANDOM_SEEDS = range(120)


def test_random_fused_kernels() -> None:
    """Random kernels (odd sizes, sizes just above a warp or a block, broadcasts, stages,
    accumulated and into outputs, every dtype), compiled as one module."""
    kernels = [random_kernel(s, f"r{s}") for s in RANDOM_SEEDS]
    _check_all(kernels, {k.name: input_arrays(k, s) for s, k in zip(RANDOM_SEEDS, kernels)},
               llvm_too=30)


@settings(max_examples=4, deadline=None)
@given(st.lists(st.integers(0, 2 ** 32 - 1), min_size=4, max_size=4, unique=True))
@example([0, 1, 2, 6473])  # seed 6473: sin of a row sum near 1e300 (cuda_testutil's ``huge``)
def test_random_fused_kernels_hypothesis(seeds: list[int]) -> None:
    kernels = [random_kernel(s, f"h{i}") for i, s in enumerate(seeds)]
    _check_all(kernels, {k.name: input_arrays(k, s) for s, k in zip(seeds, kernels)})


F = "float32"
L, C, U, B, R, Out = K.Load, K.Const, K.Unary, K.Binary, K.Reduce, K.Output


# a small GPU (2 SMs), so that kernels of a few thousand elements already need several
# passes of the grid: the launch configuration is computed for it as for any device
SMALL = DeviceProps("sm_80", sm_count=2)


def big_kernels() -> list[K.Kernel]:
    """Kernels larger than one pass of the grid: more elements than grid * block threads, and
    more rows than blocks (each block runs several); with every reduction feature."""
    flat = K.Kernel("flat", (9001,), 0, (K.Input("x", F, (1,)), K.Input("s", F, (0,))),
                    (L(0), L(1), U("sin", 0, F), B("mul", 2, 1, F)), (Out("y", 3, F),))
    rows, cols = 100, 257
    # softmax-like: max, exp(x - max) cached in shared memory (costly, re-read), its sum
    # compensated, division by the row sum through its reciprocal, plus a per-row sum of
    # squares accumulated over rows, a column sum accumulated over rows and a row max
    exprs = (L(0), R("max", 0, F), B("sub", 0, 1, F), U("exp", 2, F), R("sum", 3, F),
             B("div", 3, 4, F), B("mul", 0, 0, F), R("sum", 6, F), U("sin", 5, F),
             R("sum", 8, F), B("add", 5, 9, F))
    outputs = (Out("p", 5, F), Out("ss", 7, F, accumulate="sum"),
               Out("col", 10, F, accumulate="sum"), Out("m", 1, F),
               Out("mm", 1, F, accumulate="max"))
    reduction = K.Kernel("softmax", (rows, cols), 1, (K.Input("x", F, (cols, 1)),), exprs,
                         outputs)
    # columns accumulated over 4000 rows: many parts of ROWS_PER_PART rows and more
    column = K.Kernel("colsum", (4000, 33), 0, (K.Input("x", "float64", (33, 1)),),
                      (L(0), U("tanh", 0, "float64")),
                      (Out("t", 1, "float64"), Out("s", 1, "float64", accumulate="sum")))
    return [flat, reduction, column]


def test_kernels_larger_than_one_grid_pass() -> None:
    kernels = big_kernels()
    configs = {k.name: launch_config(k, SMALL) for k in kernels}
    flat, softmax, colsum = (configs[n] for n in ("flat", "softmax", "colsum"))
    assert 9001 > flat.grid[0] * flat.block[0]
    assert 100 > softmax.grid[0] and softmax.parts == softmax.grid[0]
    assert colsum.parts > 1
    assert lower(kernels[1], SCRATCH_BYTES).cached, "the exp values are re-read from scratch"
    _check_all(kernels, {k.name: input_arrays(k) for k in kernels}, props=SMALL)


def test_the_portable_fiber_switch_computes_the_same_bits() -> None:
    """The ucontext fibers (other platforms) against the x86-64 switch, on a kernel with
    barriers and shuffles (built with -DBP_UCONTEXT through HostModule's g++ options)."""
    from codegen.cuda_module import CudaModule

    kernel = big_kernels()[1]
    arrays = input_arrays(kernel, 5)
    portable = CudaModule([kernel], HostModule(render([kernel]), ("-DBP_UCONTEXT",)), np,
                          SMALL)
    for got, want in zip(run(portable, kernel, arrays), run(emulate([kernel], SMALL), kernel,
                                                            arrays)):
        assert got.tobytes() == want.tobytes()


def test_a_barrier_some_threads_never_reach_is_reported() -> None:
    """Hand-written CUDA C runs too; a deadlock is an error, not a hang."""
    module = HostModule('extern "C" __global__ void stuck(float* x) {\n'
                        '  if (threadIdx.x == 0) __syncthreads();\n'
                        '  x[threadIdx.x] = 1.0f;\n}\n')
    with pytest.raises(RuntimeError, match="kernel 'stuck': some threads of a block wait"):
        module.get_function("stuck")((1, 1, 1), (64, 1, 1), (np.zeros(64, np.float32),))


def test_row_divisors_with_a_subnormal_reciprocal_divide_instead() -> None:
    """x / sum(x) in rows whose sum's reciprocal is not normal (a huge sum) or infinite (a
    tiny one): those rows divide, as the LLVM kernels do, the others multiply."""
    D = "float64"
    k = K.Kernel("rowdiv", (4, 40), 1, (K.Input("x", D, (40, 1)),),
                 (L(0), R("sum", 0, D), B("div", 0, 1, D)), (Out("y", 2, D),))
    x = np.ones((4, 40))
    x[1] *= 1e307  # sum 4e308 overflows: inf, reciprocal 0
    x[2] *= 1e-320  # subnormal sum: reciprocal overflows
    x[3] = np.linspace(1, 2, 40)
    _check_all([k], {"rowdiv": [x.ravel()]})


def test_accumulated_outputs_are_the_same_bits_on_every_run_and_close_across_devices() -> None:
    kernels = big_kernels()[1:]
    arrays = {k.name: input_arrays(k, 3) for k in kernels}
    first, second, hopper = emulate(kernels, SMALL), emulate(kernels, SMALL), emulate(kernels, SM90)
    for k in kernels:
        a, b = run(first, k, arrays[k.name]), run(second, k, arrays[k.name])
        for x, y in zip(a, b):
            assert x.tobytes() == y.tobytes(), k.name
        assert_close(run(hopper, k, arrays[k.name]), a, f"{k.name} sm_90")
    assert launch_config(kernels[0], SMALL).grid != launch_config(kernels[0], SM90).grid


def test_host_module_mirrors_the_raw_module_api() -> None:
    """Arguments as numpy arrays, as objects with .data.ptr, and numpy scalars; bad ones are
    refused naming the kernel and the argument."""
    kernel = K.Kernel("scale", (70,), 0, (K.Input("x", F, (1,)),),
                      (L(0), C(2.0, F), B("mul", 0, 1, F)), (Out("y", 2, F),))
    config = launch_config(kernel, SM80)
    module = HostModule(render([kernel]))
    fn = module.get_function("scale")
    x = np.arange(70, dtype=np.float32)
    y = np.zeros(70, np.float32)

    @dataclasses.dataclass
    class Ptr:
        ptr: int

    @dataclasses.dataclass
    class DeviceArray:  # what CuPy's arrays look like to a launch
        data: Ptr

    fn(config.grid, config.block, (x, DeviceArray(Ptr(y.ctypes.data))))
    np.testing.assert_array_equal(y, 2 * x)
    with pytest.raises(TypeError, match="kernel 'scale' argument 0 .*float64"):
        fn(config.grid, config.block, (x.astype(np.float64), y))
    with pytest.raises(TypeError, match="takes 2 arguments"):
        fn(config.grid, config.block, (x,))
    with pytest.raises(ValueError, match="whole warps"):
        fn(config.grid, (48, 1, 1), (x, y))
    with pytest.raises(ValueError, match="dynamic shared"):
        fn(config.grid, config.block, (x, y), shared_mem=128)
    combine = HostModule(render([dataclasses.replace(
        kernel, outputs=(Out("y", 2, F, accumulate="sum"),))])).get_function("scale__combine")
    with pytest.raises(TypeError, match="argument 2 .*numpy int64 scalar, got 3"):
        combine((1, 1, 1), (32, 1, 1), (y, np.zeros(16, np.uint8), 3))
    with pytest.raises(KeyError, match="no kernel 'nope'"):
        module.get_function("nope")


def cast_kernels() -> list[tuple[K.Kernel, list[np.ndarray]]]:
    """A kernel per pair of distinct dtypes casting one to the other, over values with zeros,
    signed zeros, nan (to bool) and fractions (float to int truncates toward zero)."""
    values = {"float32": np.array([0, -0.0, 1.5, -2.75, np.nan, 3e9, -7, 0.25] * 5, "float32"),
              "int64": np.array([0, 1, -1, 5, -300, 2 ** 40, 7, -8] * 5),
              "bool": np.array([True, False, False, True, True, False, True, False] * 5)}
    values["float64"] = values["float32"].astype("float64")
    cases = []
    for a in K.DTYPES:
        for b in K.DTYPES:
            if a == b:
                continue
            x = values[a].copy()
            if b == "int64" and a in K.FLOAT_DTYPES:
                x = np.nan_to_num(x)  # nan to int is undefined in C and LLVM alike
            k = K.Kernel(f"cast_{a}_{b}", (40,), 0, (K.Input("x", a, (1,)),),
                         (L(0), K.Cast(0, b)), (Out("y", 1, b),))
            cases.append((k, [x]))
    return cases


def const_kernels() -> list[K.Kernel]:
    """Infinite, nan and extreme constants, and casts to the same dtype (the identity)."""
    kernels = []
    for t in K.FLOAT_DTYPES:
        exprs = (L(0), K.Const(math.inf, t), K.Const(-math.inf, t), K.Const(math.nan, t),
                 K.Const(0.0, t), B("gt", 0, 4, "bool"), K.Where(5, 1, 2, t),
                 B("maximum", 0, 3, t), K.Cast(0, t))
        kernels.append(K.Kernel(f"consts_{t}", (37,), 0, (K.Input("x", t, (1,)),), exprs,
                                (Out("inf", 6, t), Out("nan", 7, t), Out("same", 8, t))))
    exprs = (L(0), K.Const(-2 ** 63, "int64"), B("maximum", 0, 1, "int64"), K.Cast(0, "int64"))
    kernels.append(K.Kernel("consts_int64", (37,), 0, (K.Input("x", "int64", (1,)),), exprs,
                            (Out("y", 2, "int64"), Out("same", 3, "int64"))))
    return kernels


def test_infinite_nan_and_extreme_constants() -> None:
    kernels = const_kernels()
    _check_all(kernels, {k.name: input_arrays(k) for k in kernels})


def test_every_cast() -> None:
    cases = cast_kernels()
    _check_all([k for k, _ in cases], {k.name: arrays for k, arrays in cases})


def _features(kernel: K.Kernel) -> set[tuple[str, ...]]:
    """The rule-table entries and driver paths rendering ``kernel`` takes."""
    nest = lower(kernel, SCRATCH_BYTES)
    kind = {"float32": "float", "float64": "float", "int64": "int", "bool": "bool"}
    found: set[tuple[str, ...]] = set()
    for i, e in enumerate(kernel.exprs):
        srcs = [nest.dtypes[s] for s in K.operands(e)]
        if isinstance(e, K.Unary):
            found.add(("unary", e.op, kind[srcs[0]]))
        elif isinstance(e, K.Binary):
            found.add(("binary", e.op, kind[srcs[0]]))
            if e.op == "div" and e.b in nest.reciprocal and nest.per_element[i] \
                    and kernel.n_reduce:
                found.add(("reciprocal", type(kernel.exprs[e.b]).__name__))
        elif isinstance(e, K.Cast):
            found.add(("cast", kind[srcs[0]], kind[e.dtype]) if srcs[0] != e.dtype
                      else ("cast", "identity"))
        elif isinstance(e, K.Const) and e.dtype in K.FLOAT_DTYPES \
                and not math.isfinite(e.value):
            found.add(("const", "nan" if math.isnan(e.value) else "inf" if e.value > 0
                       else "-inf"))
        elif isinstance(e, K.Reduce):
            found.add(("reduce", e.op, e.dtype, str(i in nest.compensated)))
    accumulating = any(o.accumulate for o in kernel.outputs)
    shape = "rows" if kernel.n_reduce else "columns" if accumulating else "flat"
    found.add(("shape", shape))
    if nest.cached:
        found.add(("cached",))
    for j, o in enumerate(kernel.outputs):
        if o.accumulate:
            where = "element" if nest.elem_output[j] else "row"
            found.add(("accumulate", shape, where, o.accumulate, o.dtype,
                       str(j in nest.compensated_outputs)))
        if o.into is not None:
            found.add(("into", shape))
    return found


def test_the_emulated_kernels_take_every_rule_and_every_path() -> None:
    """The kernels the tests above emulate use every entry of the renderer's rule tables
    and every path of its driver, so each is checked against numpy somewhere."""
    from test_bf16_storage import round_kernel
    from test_registry_lowerings import LOWERED, SCALAR_OPERAND, _dtypes

    from codegen import cuda

    kernels = [registry_kernel(n, d, (5, 3, 33), [(3, 1)] if n == "expand"
                               else [(3, 1), (5, 1, 33), (33,)], s)[0]
               for n in LOWERED for d in _dtypes(n)
               for s in ((False, True) if n in SCALAR_OPERAND else (False,))]
    kernels += [k for ks in workload_kernels().values() for k in ks]
    kernels += [random_kernel(s, "r") for s in RANDOM_SEEDS] + big_kernels()
    kernels += [k for k, _ in cast_kernels()] + const_kernels()
    kernels.append(round_kernel(8))  # test_bf16_storage emulates it
    covered = set().union(*map(_features, kernels))
    want = {("unary", op, kind) for op, kind in cuda.UNARY_RULES} \
        | {("binary", op, kind) for op, kind in cuda.BINARY_RULES} \
        | {("cast", a, b) for a, b in cuda.CAST_RULES} | {("cast", "identity")} \
        | {("const", c) for c in ("nan", "inf", "-inf")} \
        | {("reduce", op, t, str(t in K.FLOAT_DTYPES and op == "sum"))
           for op, t in cuda.REDUCE_RULES} \
        | {("shape", s) for s in ("flat", "columns", "rows")} | {("cached",)} \
        | {("reciprocal", "Const"), ("reciprocal", "Reduce")} \
        | {("into", "flat"), ("into", "columns")} \
        | {("accumulate", shape, where, "sum", "float32", "True")
           for shape, where in (("columns", "element"), ("rows", "element"), ("rows", "row"))} \
        | {("accumulate", "rows", "row", "max", "float32", "False"),
           ("accumulate", "columns", "element", "sum", "int64", "False")}
    assert not want - covered, sorted(want - covered)
