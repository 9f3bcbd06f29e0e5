"""The chain workload's fused kernel alone: compiled fresh (no cache) and timed by itself, so a
change to the generated math (codegen/llvm_math.py) is measured without the plan's dispatch.

    python -m benchmarks.chain_kernel            # min and median microseconds a call
    python -m benchmarks.chain_kernel --calls N  # just N calls (for valgrind --tool=callgrind)

The kernel (``chain_kernel``) is the one the planner made of ``benchmarks.workloads``' chain
step: 16 sin and 16 tanh forward, their sum, and the gradient with cos of the sins' arguments,
over 4096 float32 (``planned_kernels`` gives what the planner makes of it now).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import planner
import runtime as rt
from benchmarks.workloads import CHAIN_LENGTH, build_chain, chain_arrays
from codegen import ir as kir
from codegen.jit import CompiledModule, compile_module
from codegen.llvm import render


def chain_kernel() -> tuple[kir.Kernel, list[np.ndarray]]:
    """The kernel the planner fused the chain step into (at commit 45395c7: one kernel over
    the 4096 elements, the gradient computed beside the forward), built here so the figure does
    not move with the planner's fusion, and its inputs (x, and the loss's gradient, 1)."""
    f = "float32"
    exprs: list[kir.Expr] = [kir.Load(0)]
    args = []  # the sins' arguments
    for _ in range(CHAIN_LENGTH // 4):
        args.append(len(exprs) - 1)
        exprs.append(kir.Unary("sin", len(exprs) - 1, f))
        if len(exprs) == 2:
            exprs += [kir.Const(1.01, f), kir.Binary("mul", 1, 2, f), kir.Const(0.1, f),
                      kir.Binary("add", 3, 4, f)]
        else:
            exprs += [kir.Binary("mul", len(exprs) - 1, 2, f),
                      kir.Binary("add", len(exprs), 4, f)]
        exprs.append(kir.Unary("tanh", len(exprs) - 1, f))
    loss = len(exprs)
    exprs += [kir.Reduce("sum", loss - 1, f), kir.Load(1), kir.Const(1.0, f)]
    grad = loss + 1
    for arg in reversed(args):  # d tanh = 1 - tanh**2, d (x * 1.01), d sin = cos
        t = arg + 4 if arg else 6
        exprs += [kir.Binary("mul", t, t, f), kir.Binary("sub", loss + 2, len(exprs), f),
                  kir.Binary("mul", grad, len(exprs) + 1, f)]
        exprs += [kir.Binary("mul", len(exprs) - 1, 2, f), kir.Unary("cos", arg, f)]
        exprs.append(kir.Binary("mul", len(exprs) - 2, len(exprs) - 1, f))
        grad = len(exprs) - 1
    inputs = (kir.Input("in0", f, (1,)), kir.Input("in1", f, (0,)))
    outputs = (kir.Output("out0", loss, f), kir.Output("out1", grad, f))
    kernel = kir.Kernel("k0", (4096,), 1, inputs, tuple(exprs), outputs)
    return kernel, [chain_arrays(0)["x"], np.ones(1, np.float32)]


def planned_kernels() -> list[kir.Kernel]:
    """The kernels the planner makes of the chain step today."""
    case = build_chain(rt, chain_arrays(0))
    step = planner.compile(case.fn, background=False)
    step(*case.args)
    return [info.kernel for info in step.plan.kernels]


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
