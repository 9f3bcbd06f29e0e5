"""The chain workload's fused kernel alone: compiled fresh (no cache) and timed by itself, so a
change to the generated math (codegen/llvm_math.py) is measured without the plan's dispatch.

    python -m benchmarks.chain_kernel            # min and median microseconds a call
    python -m benchmarks.chain_kernel --calls N  # just N calls (for valgrind --tool=callgrind)

The plan of ``benchmarks.workloads``' chain step has one kernel: 16 sin and 16 tanh forward,
their sum, and the gradient with cos of the sins' arguments, over 4096 float32.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import planner
import runtime as rt
from benchmarks.workloads import build_chain, chain_arrays
from codegen import ir as kir
from codegen.jit import CompiledModule, compile_module
from codegen.llvm import render


def chain_kernel() -> tuple[kir.Kernel, list[np.ndarray]]:
    """The chain plan's kernel and input arrays for it (x, and the loss's gradient, 1)."""
    case = build_chain(rt, chain_arrays(0))
    step = planner.compile(case.fn)
    step(*case.args)
    (info,) = step.plan.kernels
    kernel = info.kernel
    arrays = []
    for inp in kernel.inputs:
        shape = (4096,) if any(inp.strides) else (1,)
        arrays.append(chain_arrays(0)["x"] if shape == (4096,)
                      else np.ones(shape, inp.dtype))
    return kernel, arrays


def compiled(kernel: kir.Kernel) -> CompiledModule:
    return compile_module(render([kernel]), [kernel])


def outputs(kernel: kir.Kernel) -> list[np.ndarray]:
    return [np.empty(kir.output_shape(kernel, o), o.dtype) for o in kernel.outputs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=0, help="only run this many calls")
    parser.add_argument("--repeat", type=int, default=200, help="timed calls")
    args = parser.parse_args()
    kernel, arrays = chain_kernel()
    t0 = time.perf_counter()
    cm = compiled(kernel)
    compile_s = time.perf_counter() - t0
    outs = outputs(kernel)
    if args.calls:
        for _ in range(args.calls):
            cm.run(kernel, arrays, outs, threads=1)
        return
    for _ in range(20):
        cm.run(kernel, arrays, outs, threads=1)
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        cm.run(kernel, arrays, outs, threads=1)
        times.append(time.perf_counter() - t)
    us = np.array(times) * 1e6
    print(f"chain kernel: min {us.min():.1f} us, median {np.median(us):.1f} us a call "
          f"(compile {compile_s * 1e3:.0f} ms); outputs "
          + ", ".join(f"{o.ravel()[:2]}" for o in outs))


if __name__ == "__main__":
    main()
