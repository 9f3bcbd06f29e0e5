"""Time every variant of the workloads side by side in one process.

    python -m benchmarks.run [--workloads chain mlp_small ...] [--repeat N]

Variants: ``ours`` (runtime eager), ``compiled`` (``planner.compile`` of the same step on the
reference interpreter), ``llvm`` (compiled with ``backend="llvm"``: fused LLVM kernels),
``torch`` (PyTorch eager, when importable) and ``numpy`` (the hand-written MLP step). After a warmup, each round times every variant once, in turn, so
that machine noise hits all of them alike; a timing is a loop of enough steps to last about
``--min-time`` seconds. The table shows the median over ``--repeat`` rounds, per step.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import planner
import runtime as rt
from benchmarks.workloads import WORKLOADS, Case, Workload
from planner.__main__ import at_least, seconds, workload_name

try:
    import torch
except ImportError:  # torch is a test extra; the benchmark runs without it
    torch = None

WARMUP_SECONDS = 0.3
VARIANTS = ("ours", "compiled", "llvm", "torch", "numpy")

# (workload, numerator, denominator, target): the speed targets, as ratios of
# median step times. Ratios without a target are printed for information.
RATIOS: list[tuple[str, str, str, float | None]] = [
    ("mlp_large", "ours", "numpy", 1.15),
    ("mlp_large", "ours", "torch", None),
    ("mlp_small", "ours", "torch", 1.5),
    ("eltwise", "ours", "torch", None),
    ("chain", "ours", "torch", 1.5),
    ("partial", "ours", "torch", None),
    # issue 4 (fused LLVM kernels): 3x / 2x faster than torch, 5x / 10x faster than eager
    ("eltwise", "llvm", "torch", 1 / 3),
    ("chain", "llvm", "torch", 1 / 3),
    ("mlp_small", "llvm", "torch", 1 / 2),
    ("mlp_large", "llvm", "numpy", 1.1),
    ("eltwise", "llvm", "ours", 1 / 5),
    ("chain", "llvm", "ours", 1 / 10),
]


def build_variants(workload: Workload, seed: int) -> dict[str, Case]:
    arrays = workload.make_arrays(seed)
    cases = {"ours": workload.build(rt, arrays)}
    compile_fn = getattr(planner, "compile", None)
    if compile_fn is not None:
        for name, backend in (("compiled", "interpreter"), ("llvm", "llvm")):
            eager = workload.build(rt, arrays)
            cases[name] = Case(compile_fn(eager.fn, backend=backend), eager.args, eager.outputs)
    if torch is not None:
        cases["torch"] = workload.build(torch, arrays)
    if workload.build_numpy is not None:
        cases["numpy"] = workload.build_numpy(arrays)
    return cases


def time_loop(run: Callable[[], Any], steps: int) -> float:
    """Seconds per step over ``steps`` back-to-back steps."""
    start = time.perf_counter()
    for _ in range(steps):
        run()
    return (time.perf_counter() - start) / steps


def calibrate(run: Callable[[], Any], min_time: float, warmup: int) -> int:
    """Warm up, then choose how many steps one timing loops over."""
    # Warm up for a number of steps and a minimum time: the first steps of a fresh process
    # pay for page faults on new memory (very slow in a VM), caches and lazy imports.
    deadline = time.perf_counter() + WARMUP_SECONDS
    steps = 0
    while steps < warmup or time.perf_counter() < deadline:
        run()
        steps += 1
    per_step = time_loop(run, 1)
    if per_step < min_time / 10:
        per_step = time_loop(run, max(1, int(min_time / 10 / per_step)))
    return max(1, math.ceil(min_time / per_step))


def bench_workload(
    workload: Workload, repeat: int, min_time: float, warmup: int, seed: int
) -> dict[str, float]:
    """Median seconds per step of each available variant."""
    cases = build_variants(workload, seed)
    steps = {name: calibrate(case.run, min_time, warmup) for name, case in cases.items()}
    samples: dict[str, list[float]] = {name: [] for name in cases}
    names = list(cases)
    for round_nr in range(repeat):
        # Rotate who goes first, so no variant always runs right after the same other one.
        shift = round_nr % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(time_loop(cases[name].run, steps[name]))
    return {name: statistics.median(times) for name, times in samples.items()}


def format_table(results: dict[str, dict[str, float]]) -> str:
    header = f"{'workload':<10}" + "".join(f"{v + ' ms':>14}" for v in VARIANTS)
    lines = [header, "-" * len(header)]
    for name, medians in results.items():
        cells = [f"{medians[v] * 1e3:>14.3f}" if v in medians else f"{'-':>14}" for v in VARIANTS]
        lines.append(f"{name:<10}" + "".join(cells))
    return "\n".join(lines)


def format_ratios(results: dict[str, dict[str, float]]) -> str:
    ratios = [r for r in RATIOS if r[0] in results]
    ratios += [(name, "compiled", "ours", None) for name in results]
    ratios += [(name, "llvm", "torch", None) for name in results
               if (name, "llvm", "torch") not in {r[:3] for r in RATIOS}]
    lines = [f"{'workload':<10}{'ratio':>18}{'measured':>10}{'target':>10}  verdict"]
    for name, num, den, target in ratios:
        medians = results[name]
        if num not in medians or den not in medians:
            continue
        ratio = medians[num] / medians[den]
        target_text = f"<= {target:.2f}" if target is not None else "-"
        verdict = "" if target is None else ("met" if ratio <= target else "NOT met")
        lines.append(f"{name:<10}{num + '/' + den:>18}{ratio:>10.2f}{target_text:>10}  {verdict}")
    return "\n".join(lines)


def describe_environment(threads: int) -> str:
    parts = [f"numpy {np.__version__}"]
    if torch is not None:
        parts.append(f"torch {torch.__version__}")
    else:
        parts.append("torch not installed: no PyTorch column")
    if not hasattr(planner, "compile"):
        parts.append("planner.compile not available yet: no compiled column")
    return f"{os.cpu_count()} cores, {threads} threads; " + "; ".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workloads",
        nargs="+",
        type=workload_name,
        default=list(WORKLOADS),
        metavar="NAME",
        help=f"workloads to run (default: all of {', '.join(WORKLOADS)})",
    )
    parser.add_argument("--repeat", type=at_least(1), default=7,
                        help="timed rounds (median taken)")
    parser.add_argument(
        "--min-time", type=seconds, default=0.05, help="seconds each timing loops for (default 0.05)"
    )
    parser.add_argument("--warmup", type=at_least(0), default=3, help="untimed steps per variant")
    parser.add_argument("--seed", type=at_least(0), default=0)
    parser.add_argument(
        "--threads",
        type=at_least(1),
        default=os.cpu_count() or 1,
        help="intra-op threads of every variant: torch's, and runtime.set_num_threads (numpy's "
        "BLAS and split kernels) (default: all cores)",
    )
    args = parser.parse_args(argv)

    threads = args.threads
    rt.set_num_threads(threads)  # BLAS and split kernels: the same count as torch's
    if torch is not None:
        torch.set_num_threads(threads)
    print(describe_environment(threads))
    results = {}
    for name in args.workloads:
        results[name] = bench_workload(
            WORKLOADS[name], args.repeat, args.min_time, args.warmup, args.seed
        )
        print(f"  {name}: done", flush=True)
    print()
    print(f"median step time over {args.repeat} interleaved rounds")
    print(format_table(results))
    print()
    print(format_ratios(results))


if __name__ == "__main__":
    main()
