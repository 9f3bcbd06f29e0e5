"""Planner figures of the compile issue: capture+planning time and the FLOPs pruning saves.

    python -m benchmarks.planning

- capture plus planning of ``mlp_large`` (``step.lower``; median of several runs);
- FLOPs the plan of ``partial`` (the gradient of the input only) executes, against the plan of
  the same forward with every gradient requested (the input and all parameters), and against
  the ``mlp_large`` SGD step.
"""

from __future__ import annotations

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


def main() -> None:
    wl = WORKLOADS["mlp_large"]
    case = wl.build(rt, wl.make_arrays(0))
    step = planner.compile(case.fn)
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        plan = step.lower(*case.args)
        times.append(time.perf_counter() - t0)
    print(f"capture + planning, mlp_large: {np.median(times) * 1e3:.1f} ms "
          f"(median of 7; target < 300 ms); {plan.stats}")
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


if __name__ == "__main__":
    main()
