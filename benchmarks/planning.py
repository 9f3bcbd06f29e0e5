"""Planner figures of the compile issue: capture+planning time and the FLOPs pruning saves.

    python -m benchmarks.planning

- capture plus planning of ``mlp_large`` (``step.lower``; median of several runs);
- FLOPs the plan of ``partial`` (the gradient of the input only) executes, against the plan of
  the same forward with every gradient requested (the input and all parameters), and against
  the ``mlp_large`` SGD step;
- LLVM compile time of the fused ``mlp_large`` plan: cold (empty cache) and warm (object code
  from the disk cache, as a second process would find it).
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

import numpy as np

import planner
import runtime as rt

from .workloads import MLP_LARGE, WORKLOADS, build_mlp, mlp_arrays


def _full_grad_flops() -> float:
    """FLOPs of the partial workload's forward with gradients of the input and every weight."""
    arrays = mlp_arrays(MLP_LARGE, 128, 0)
    model, _ = build_mlp(rt, arrays)
    loss_fn = rt.nn.CrossEntropyLoss()
    params = list(model.parameters())

    def step(x: Any, y: Any) -> Any:
        loss = loss_fn(model(x), y)
        return (loss, *rt.autograd.grad(loss, [x, *params]))

    x = rt.tensor(arrays["x"], requires_grad=True)
    return planner.compile(step).lower(x, rt.from_numpy(arrays["y"].copy())).flops


def _compile_times() -> tuple[float, float, dict[str, int]]:
    from codegen import cache

    wl = WORKLOADS["mlp_large"]
    case = wl.build(rt, wl.make_arrays(0))
    plan = planner.compile(case.fn, backend="llvm").lower(*case.args)
    previous = os.environ.get("BACKPLAN_CACHE_DIR")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["BACKPLAN_CACHE_DIR"] = tmp
        try:
            cache.clear_cache(disk=False)
            plan.executable.reset()  # planning compiled it: forget that too
            t0 = time.perf_counter()
            plan.executable.module()
            cold = time.perf_counter() - t0
            cache.clear_cache(disk=False)  # forget the module in memory: the disk copy remains
            plan.executable.reset()
            t0 = time.perf_counter()
            plan.executable.module()
            warm = time.perf_counter() - t0
        finally:
            if previous is None:
                os.environ.pop("BACKPLAN_CACHE_DIR", None)
            else:
                os.environ["BACKPLAN_CACHE_DIR"] = previous
    return cold, warm, cache.stats()


def main() -> None:
    wl = WORKLOADS["mlp_large"]
    case = wl.build(rt, wl.make_arrays(0))
    step = planner.compile(case.fn)
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        plan = step.lower(*case.args)
        times.append(time.perf_counter() - t0)
    print(f"capture + planning (fusion included, kernels from the memory cache), mlp_large: "
          f"{np.median(times) * 1e3:.1f} ms (median of 7; target < 300 ms); {plan.stats}")
    sgd_flops = plan.flops
    part = WORKLOADS["partial"]
    pcase = part.build(rt, part.make_arrays(0))
    partial_flops = planner.compile(pcase.fn).lower(*pcase.args).flops
    full_flops = _full_grad_flops()
    print(f"partial (grad of the input only): {partial_flops / 1e6:.0f} MFLOP")
    print(f"  vs every gradient (input and weights): {full_flops / 1e6:.0f} MFLOP, ratio "
          f"{partial_flops / full_flops:.2f} (target <= 0.70)")
    print(f"  vs the mlp_large SGD step (weights only, no input grad): "
          f"{sgd_flops / 1e6:.0f} MFLOP, ratio {partial_flops / sgd_flops:.2f}")
    cold, warm, stats = _compile_times()
    print(f"LLVM compile of the fused mlp_large plan: cold {cold * 1e3:.0f} ms (target < 1000), "
          f"warm from the disk cache {warm * 1e3:.1f} ms (target < 100); cache {stats}")


if __name__ == "__main__":
    main()
