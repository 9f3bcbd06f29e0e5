"""Thread hand-off: what it costs to run part of a kernel on another core and get it back.

    python -m benchmarks.handoff

Medians over many short repeats, in one process:
(a) ``concurrent.futures.ThreadPoolExecutor``: submit a no-op kernel call, wait for its result
    (how ``codegen.jit`` split kernels before ``codegen.pool``);
(b) ``codegen.pool.run_chunks`` of the same no-op kernel in 2 chunks (one on the caller, one
    on a pool worker), the same through ``CompiledModule.run`` (with its argument checks), and
    the same once the workers have gone to sleep (the caller wakes them through the kernel);
(c) a real kernel of a few tens of microseconds (sin then exp over 32 x 1024 float32), run on
    the calling thread and split in 2 through ``CompiledModule.run``;
(d) column sums of 640 x 1024 float32 (about 50 us): on one thread in one call over the whole
    range (how ``CompiledModule.run`` ran it before the chunks of a kernel with accumulated
    outputs were fixed by the kernel), then in its ``split_bounds`` chunks with their partials
    on 1 and 2 threads (the three taken in turn);
(e) one call on the calling thread, as a plan's program makes it, through ctypes and as a
    builtin (``codegen.pyentry``), the two taken in turn: the no-op kernel's object entry, and
    a generated product of 8 x 8 matrices (``codegen.gemm``).
"""

from __future__ import annotations

import argparse
import copy
import ctypes
import dataclasses
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from codegen import ir as kir
from codegen import gemm, pool
from codegen.jit import CompiledModule, compile_module, split_bounds
from codegen.llvm import render


def median_us(fn: Callable[[], object], repeats: int, inner: int = 20,
              between: Callable[[], object] = lambda: None) -> float:
    """Median over ``repeats`` of the mean time of ``inner`` back-to-back calls, in us;
    ``between`` runs untimed before each repeat."""
    return medians_us([fn], repeats, inner, between)[0]


def medians_us(fns: Sequence[Callable[[], object]], repeats: int, inner: int = 20,
               between: Callable[[], object] = lambda: None) -> list[float]:
    """``median_us`` of each of ``fns``, their repeats taken in turn: close figures compared
    are not skewed by a load on the machine that changed between them."""
    for fn in fns:
        for _ in range(inner):
            fn()  # warm up: threads started, caches and branch predictors filled
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, mine in zip(fns, times):
            between()
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            mine.append((time.perf_counter() - t0) / inner * 1e6)
    return [statistics.median(mine) for mine in times]


def _let_workers_sleep() -> None:
    time.sleep(4 * pool.SPIN_NS / 1e9)


def _kernels() -> tuple[CompiledModule, kir.Kernel, kir.Kernel, kir.Kernel]:
    f = "float32"
    noop = kir.Kernel("noop", (2, 1), 0, (kir.Input("x", f, (1, 1)),), (kir.Load(0),),
                      (kir.Output("y", 0, f),))
    work = kir.Kernel("sin_exp", (32, 1024), 0, (kir.Input("x", f, (1024, 1)),),
                      (kir.Load(0), kir.Unary("sin", 0, f), kir.Unary("exp", 1, f)),
                      (kir.Output("y", 2, f),))
    colsum = kir.Kernel("colsum", (640, 1024), 0, (kir.Input("x", f, (1024, 1)),),
                        (kir.Load(0),), (kir.Output("s", 0, f, accumulate="sum"),))
    kernels = [noop, work, colsum]
    return compile_module(render(kernels), kernels), noop, work, colsum


def _in_one_call(cm: CompiledModule, k: kir.Kernel) -> CompiledModule:
    """``cm`` with ``k`` run in one chunk, as before its chunks were fixed by the kernel."""
    one = copy.copy(cm)
    bounds = (ctypes.c_int64 * 2)(0, k.outer_size)
    one._launch = {**cm._launch,
                   k.name: dataclasses.replace(cm._launch[k.name], chunks=1, bounds=bounds)}
    return one


def measure(repeats: int) -> dict[str, float]:
    cm, noop, work, colsum = _kernels()
    x, y = np.ones((2, 1), np.float32), np.empty((2, 1), np.float32)
    ptrs = (ctypes.c_void_p * 2)(x.ctypes.data, y.ctypes.data)
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(
        cm._launch["noop"].address)
    address = cm._launch["noop"].address
    xs = np.random.default_rng(0).standard_normal((32, 1024)).astype(np.float32)
    ys = np.empty_like(xs)
    with ThreadPoolExecutor(max_workers=1) as executor:
        figures = {"executor": median_us(lambda: executor.submit(fn, ptrs, 1, 2).result(),
                                         repeats)}
    figures["pool"] = median_us(lambda: pool.run_chunks(address, ptrs, [0, 1, 2]),
                                repeats)
    figures["pool_run"] = median_us(lambda: cm.run(noop, [x], [y], threads=2), repeats)
    figures["asleep"] = median_us(lambda: pool.run_chunks(address, ptrs, [0, 1, 2]),
                                  repeats // 10 + 1, inner=1, between=_let_workers_sleep)
    figures["kernel_1"] = median_us(lambda: cm.run(work, [xs], [ys], threads=1), repeats)
    figures["kernel_2"] = median_us(lambda: cm.run(work, [xs], [ys], threads=2), repeats)
    xc, sums, whole = np.ones((640, 1024), np.float32), np.empty(1024, np.float32), \
        _in_one_call(cm, colsum)
    figures["colsum_whole"], figures["colsum_1"], figures["colsum_2"] = medians_us(
        [lambda: whole.run(colsum, [xc], [sums], threads=1),
         lambda: cm.run(colsum, [xc], [sums], threads=1),
         lambda: cm.run(colsum, [xc], [sums], threads=2)], repeats)
    figures["colsum_chunks"] = len(split_bounds(colsum)) - 1
    figures.update(_entries(cm, repeats))
    return figures


def _entries(cm: CompiledModule, repeats: int) -> dict[str, float]:
    """(e): a call through ctypes and as a builtin, of a kernel and of a product."""
    figures: dict[str, float] = {}
    x, y = np.ones((2, 1), np.float32), np.empty((2, 1), np.float32)
    builtin = cm.builtin_entry("noop")
    entry = cm.object_entry("noop")
    if builtin is None or entry is None:
        return figures
    fn, addresses, outer = entry
    figures["kernel_ctypes"], figures["kernel_builtin"] = medians_us(
        [lambda: fn(addresses(id(x), id(y)), 0, outer), lambda: builtin(x, y)], repeats)
    spec = gemm.GemmSpec.of((8, 8), (8, 8), np.dtype(np.float32))
    if spec is None:
        return figures
    product = gemm.compiled([spec])[spec]
    a, b, c = (np.ones((8, 8), np.float32) for _ in range(3))
    if product.builtin is not None:
        figures["product_ctypes"], figures["product_builtin"] = medians_us(
            [lambda: product.entry(id(a), id(b), id(c), id(c), product.dims),
             lambda: product.builtin(a, b, c, c)], repeats)
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=400, help="timed repeats per figure")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if not pool.available():
        raise SystemExit("the native pool does not run on this machine (Linux x86-64/aarch64)")
    m = measure(args.repeats)
    print(f"(a) ThreadPoolExecutor submit+result, no-op kernel  {m['executor']:8.1f} us")
    print(f"(b) native pool, no-op kernel in 2 chunks           {m['pool']:8.1f} us")
    print(f"    the same through CompiledModule.run             {m['pool_run']:8.1f} us")
    print(f"    the same with the workers asleep                {m['asleep']:8.1f} us")
    print(f"(c) sin+exp over 32x1024 float32, 1 thread          {m['kernel_1']:8.1f} us")
    print(f"    the same split in 2 chunks                      {m['kernel_2']:8.1f} us"
          f"  ({m['kernel_1'] / m['kernel_2']:.2f}x)")
    print(f"(d) column sums of 640x1024 float32, 1 call         {m['colsum_whole']:8.1f} us")
    print(f"    in {m['colsum_chunks']} chunks with partials, 1 thread          "
          f"{m['colsum_1']:8.1f} us  ({m['colsum_1'] / m['colsum_whole']:.3f}x)")
    print(f"    the same on 2 threads                           {m['colsum_2']:8.1f} us"
          f"  ({m['colsum_whole'] / m['colsum_2']:.2f}x faster than 1 call)")
    for what, label in (("kernel", "no-op kernel"), ("product", "8x8 product")):
        if f"{what}_builtin" in m:
            print(f"(e) {label + ', ctypes call':<48}{m[f'{what}_ctypes']:8.2f} us")
            print(f"    {label + ', builtin call':<48}{m[f'{what}_builtin']:8.2f} us"
                  f"  ({m[f'{what}_ctypes'] / m[f'{what}_builtin']:.1f}x faster)")


if __name__ == "__main__":
    main()
