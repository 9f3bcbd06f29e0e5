"""Peak memory of one training step: eager against compiled, measured with tracemalloc.

    python -m benchmarks.memory [--workloads mlp_large ...]

numpy reports its array allocations to tracemalloc, so its figures are the bytes of arrays.
Each variant first runs a few steps (warm: gradients, optimizer state and the plan exist),
then one step is measured two ways:

- ``step``: tracing starts just before the measured step, so the figure is the most memory
  the step's own new arrays hold at once. Arrays made before the step and freed during it
  (last step's ``.grad`` after ``zero_grad()``) are not traced, so freeing them early earns
  nothing. This is the figure the compile issue's memory target compares.
- ``above start``: tracing runs from before the variant is built, so freeing an earlier array
  counts; the figure is the peak above what was held when the measured step began. A compiled
  step's write-back is atomic: last step's gradients and the parameters stay untouched until
  every step of the plan has succeeded, so it holds the new gradients beside the old ones,
  where eager mode drops the old gradients first. With fused kernels (``llvm``, the CPU
  default) a parameter update runs at write-back straight into the parameter
  (``planner.plan.Commit``), so no second copy of the parameters is held; the interpreter
  computes new parameter values and copies them in.

``plan`` is what the compiled plan reports (``planner.inspect.peak_allocated``: the peak of
the arrays the plan's run allocates, by its liveness schedule); the write-back after the run
copies into existing arrays and adds nothing.
"""

from __future__ import annotations

import argparse
import tracemalloc
from collections.abc import Callable
from typing import Any

import planner
import runtime as rt
from planner.inspect import peak_allocated

from .workloads import WORKLOADS, Workload

WARM_STEPS = 3
VARIANTS = (("eager", None), ("interpreter", "interpreter"), ("llvm", "llvm"))


def step_peak(run: Callable[[], Any], warm: int = WARM_STEPS) -> int:
    """Peak bytes the arrays allocated by one warm call of ``run`` hold at once."""
    was_tracing = tracemalloc.is_tracing()
    for _ in range(warm):
        run()
    if not was_tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        run()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        if not was_tracing:
            tracemalloc.stop()


def _build(workload: Workload, backend: str | None, seed: int) -> tuple[Callable[[], Any], Any]:
    """A zero-argument step of the workload (eager, or compiled with ``backend``) and the
    compiled step (None for eager)."""
    case = workload.build(rt, workload.make_arrays(seed))
    if backend is None:
        return case.run, None
    step = planner.compile(case.fn, backend=backend, background=False)  # the fused plan's
    return (lambda: step(*case.args)), step


def measure(workload: Workload, seed: int = 0) -> dict[str, dict[str, int]]:
    """For each variant: ``step`` and ``above start`` peak bytes, and the plan's figure."""
    figures: dict[str, dict[str, int]] = {}
    for name, backend in VARIANTS:
        run, step = _build(workload, backend, seed)
        row = {"step": step_peak(run)}
        if step is not None:
            row["plan"] = peak_allocated(step.plan)
        row["above start"] = peak_above_start(workload, backend, seed)
        figures[name] = row
    return figures


def peak_above_start(workload: Workload, backend: str | None, seed: int = 0) -> int:
    """The ``above start`` figure: traced from before the variant is built."""
    tracemalloc.start()
    try:
        run, _ = _build(workload, backend, seed)
        return step_peak(run)
    finally:
        tracemalloc.stop()


def format_table(results: dict[str, dict[str, dict[str, int]]]) -> str:
    header = f"{'workload':<11}{'variant':<13}{'step B':>14}{'above start B':>16}{'plan B':>14}"
    lines = ["peak bytes of one warm step (the two measures: see benchmarks/memory.py)", header,
             "-" * len(header)]
    for name, figures in results.items():
        for variant, row in figures.items():
            plan = f"{row['plan']:,}" if "plan" in row else "-"
            lines.append(f"{name:<11}{variant:<13}{row['step']:>14,}{row['above start']:>16,}"
                         f"{plan:>14}")
    lines.append("")
    for name, figures in results.items():
        eager = figures["eager"]["step"]
        for variant, row in figures.items():
            if variant != "eager":
                ratio = row["step"] / eager
                lines.append(f"{name} {variant}/eager, step peak: {ratio:.2f} (target <= 1.00) "
                             f"{'met' if ratio <= 1 else 'NOT met'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS),
                        default=list(WORKLOADS), metavar="NAME")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    results = {name: measure(WORKLOADS[name], args.seed) for name in args.workloads}
    print(format_table(results))


if __name__ == "__main__":
    main()
