"""Time every variant of the workloads side by side in one process.

    python -m benchmarks.run [--workloads chain mlp_small ...] [--repeat N] [--threads N]
        [--json FILE] [--plot FILE.png|svg]

Variants: ``ours`` (runtime eager), ``compiled`` (``planner.compile`` of the same step on the
reference interpreter), ``llvm`` (compiled with ``backend="llvm"``: fused LLVM kernels),
``torch`` (PyTorch eager, when importable), ``tcompile`` (``torch.compile`` of the torch step,
warmed before timing; ``--no-torch-compile`` leaves it out, it costs ~20 s a workload),
``jax`` (the step under ``jax.jit``, benchmarks.peers_jax, when JAX is installed: the
``bench`` extra) and ``numpy`` (the hand-written MLP step). After a warmup, each round times every variant once, in turn, so
that machine noise hits all of them alike; a timing is a loop of enough steps to last about
``--min-time`` seconds. The table shows the median over ``--repeat`` rounds, per step, its
spread (IQR/median) beside it, and apart from it each variant's first call (a compiled
variant's capture and compile). A target's verdict is given only where the spreads are small.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import planner
import runtime as rt
from benchmarks.workloads import WORKLOADS, Case, Workload
from planner.__main__ import at_least, seconds, workload_name, workloads_help
from planner.cli_plan import USAGE_ERROR, CLIError

try:
    import torch
except ImportError:  # torch is a test extra; the benchmark runs without it
    torch = None

WARMUP_SECONDS = 0.3
VARIANTS = ("ours", "compiled", "llvm", "torch", "tcompile", "jax", "numpy")

# (workload, numerator, denominator, target): the issues' speed targets, as ratios of
# median step times. Ratios without a target are printed for information. A denominator
# "a|b" is the faster of a and b.
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
    # issue 12 (ahead of JAX and PyTorch): matmul-bound steps at least even with the faster
    # peer; mlp_small 2x JAX and ahead of numpy; chain 5x, eltwise 3x JAX; a one-op call 0.8x
    ("mlp_large", "llvm", "torch|jax", 1.0),
    ("partial", "llvm", "torch|jax", 1.0),
    ("mlp_small", "llvm", "jax", 1 / 2),
    ("mlp_small", "llvm", "numpy", 1.0),
    ("chain", "llvm", "jax", 1 / 5),
    ("eltwise", "llvm", "jax", 1 / 3),
    ("one_op", "llvm", "jax", 0.8),
    # issue 11 (models): 2x PyTorch eager, and ahead of torch.compile
    ("gpt", "llvm", "torch", 1 / 2),
    ("cnn", "llvm", "torch", 1 / 2),
    ("rnn", "llvm", "torch", 1 / 2),
    ("gpt", "llvm", "tcompile", 1.0),
    ("cnn", "llvm", "tcompile", 1.0),
    ("rnn", "llvm", "tcompile", 1.0),
]


def jax_builders() -> dict[str, Callable[[dict[str, np.ndarray]], Case]]:
    """benchmarks.peers_jax's builders, or none where JAX is not installed. Imported on first
    use, after set_threads gave XLA its thread flags."""
    import importlib.util

    if importlib.util.find_spec("jax") is None:
        return {}
    from benchmarks.peers_jax import BUILDERS

    return BUILDERS


def build_variants(workload: Workload, seed: int, torch_compile: bool = True,
                   workers: int | None = None) -> dict[str, Case]:
    """Every available variant of ``workload``. ``workers``: the compiled steps' worker threads (``--threads``: a plan running steps on
    two threads while its peers get one would not be a fair comparison)."""
    arrays = workload.make_arrays(seed)
    cases = {"ours": workload.build(rt, arrays)}
    compile_fn = getattr(planner, "compile", None)
    if compile_fn is not None:
        for name, backend in (("compiled", "interpreter"), ("llvm", "llvm")):
            eager = workload.build(rt, arrays)
            # compiled in the first call (not in the background, planner.background): the
            # timed steps run the fused plan from the first, and the first call is the compile
            cases[name] = Case(compile_fn(eager.fn, backend=backend, workers=workers,
                                          background=False), eager.args, eager.outputs)
    if torch is not None:
        cases["torch"] = workload.build(torch, arrays)
        if torch_compile:
            twin = workload.build(torch, arrays)
            cases["tcompile"] = Case(torch.compile(twin.fn), twin.args, twin.outputs)
    jax_build = jax_builders().get(workload.name)
    if jax_build is not None:
        cases["jax"] = jax_build(arrays)
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


NOISY_SPREAD = 10.0  # % IQR/median above which a median says too little for a verdict


@dataclass
class Timing:
    """One variant's timings on one workload."""

    samples: list[float]  # seconds per step, one per round
    first_call: float  # seconds of the very first call: a compiled variant's compile is here
    threads: dict[str, int | None]  # thread counts seen inside the variant's first call

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def spread(self) -> float:
        """Interquartile range over median, in %: 0 with fewer than two samples."""
        if len(self.samples) < 2:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.samples, n=4, method="inclusive")
        return 100 * (q3 - q1) / self.median

    def as_json(self) -> dict[str, Any]:
        return {"median_s": self.median, "iqr_pct": self.spread, "first_call_s": self.first_call,
                "samples_s": self.samples, "threads_seen": self.threads}


def threads_seen() -> dict[str, int | None]:
    """The intra-op thread counts in force now: the runtime's, numpy's BLAS (threadpoolctl's
    fresh look at the loaded libraries), PyTorch's."""
    from threadpoolctl import threadpool_info

    blas = [i["num_threads"] for i in threadpool_info()
            if i["user_api"] == "blas" and "numpy" in i["filepath"]]
    return {"runtime": rt.get_num_threads(), "numpy_blas": max(blas, default=None),
            "torch": torch.get_num_threads() if torch is not None else None}


def set_threads(threads: int) -> list[str]:
    """Give every peer ``threads`` intra-op threads; notes on those it could not be set for."""
    import importlib.util
    import sys

    notes = []
    if hasattr(os, "sched_setaffinity"):
        # at most `threads` cores for the whole process: a peer's own thread pools (XLA's
        # runtime ran two_tower's towers side by side with its thread flags at 1) cannot use
        # more than the others
        cores = sorted(os.sched_getaffinity(0))
        if threads < len(cores):
            os.sched_setaffinity(0, cores[:threads])
            notes.append(f"pinned to {threads} of {len(cores)} cores")
    rt.set_num_threads(threads)  # the runtime's split kernels and numpy's BLAS (threadpoolctl)
    if torch is not None:
        torch.set_num_threads(threads)
    if "jax" in sys.modules:
        return notes + ["jax was imported before the thread count could reach XLA: its count "
                        "is XLA's own"]
    if importlib.util.find_spec("jax") is None:
        return notes
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen="
                               f"{'true' if threads > 1 else 'false'} "
                               f"intra_op_parallelism_threads={threads}").strip()
    return notes


# With more than one thread, a peer's idle threads spin after its steps for a while (OpenBLAS's,
# PyTorch's OpenMP pool, the runtime's native pool for SPIN_NS), taking the cores the next
# variant's threads need: mlp_large compiled on 2 threads ran 5.7 ms alone and 10.5 ms timed
# right after the others. Each variant's timing then starts SETTLE_S after the one before.
SETTLE_S = 0.25


def bench_workload(
    workload: Workload, repeat: int, min_time: float, warmup: int, seed: int,
    torch_compile: bool = True, notes: list[str] | None = None, workers: int | None = None,
    settle: float = 0.0,
) -> dict[str, Timing]:
    """Each available variant's timings: rounds interleaved across variants (each round runs
    every variant once, so machine noise hits all of them alike), each timing ``settle``
    seconds after the one before (SETTLE_S where several threads run)."""
    cases = build_variants(workload, seed, torch_compile, workers)
    first: dict[str, float] = {}
    seen: dict[str, dict[str, int | None]] = {}
    for name, case in list(cases.items()):
        start = time.perf_counter()
        try:
            case.run()
        except Exception as exc:  # torch.compile may not handle a step: say so, go on
            if name != "tcompile":
                raise
            del cases[name]
            if notes is not None:
                notes.append(f"{workload.name}: torch.compile failed ({type(exc).__name__}: "
                             f"{str(exc).splitlines()[0][:120]})")
            continue
        first[name] = time.perf_counter() - start
        seen[name] = threads_seen()
    steps = {name: calibrate(case.run, min_time, warmup) for name, case in cases.items()}
    samples: dict[str, list[float]] = {name: [] for name in cases}
    names = list(cases)
    for round_nr in range(repeat):
        # Rotate who goes first, so no variant always runs right after the same other one.
        shift = round_nr % len(names)
        for name in names[shift:] + names[:shift]:
            if settle:
                time.sleep(settle)
            samples[name].append(time_loop(cases[name].run, steps[name]))
    return {name: Timing(samples[name], first[name], seen[name]) for name in cases}


def format_table(results: dict[str, dict[str, Timing]]) -> str:
    """Median ms per step, its spread (IQR/median) beside it, then first-call times."""
    header = f"{'workload':<10}" + "".join(f"{v + ' ms':>12}{'±%':>6}" for v in VARIANTS)
    lines = [header, "-" * len(header)]
    for name, timings in results.items():
        cells = [f"{timings[v].median * 1e3:>12.3f}{timings[v].spread:>6.1f}" if v in timings
                 else f"{'-':>12}{'':>6}" for v in VARIANTS]
        lines.append(f"{name:<10}" + "".join(cells))
    lines += ["", "first call (ms; compiled variants: capture, planning and compile included; "
              "benchmarks.planning reports first calls in new processes)",
              f"{'workload':<10}" + "".join(f"{v:>18}" for v in VARIANTS)]
    for name, timings in results.items():
        lines.append(f"{name:<10}" + "".join(
            f"{timings[v].first_call * 1e3:>18.1f}" if v in timings else f"{'-':>18}"
            for v in VARIANTS))
    return "\n".join(lines)


def ratio_rows(results: dict[str, dict[str, Timing]]) -> list[dict[str, Any]]:
    """The ratios of median step times, each with its target, and a verdict only where both
    variants' spreads are below NOISY_SPREAD."""
    ratios = [r for r in RATIOS if r[0] in results]
    ratios += [(name, "compiled", "ours", None) for name in results]
    ratios += [(name, "llvm", "torch", None) for name in results
               if (name, "llvm", "torch") not in {r[:3] for r in RATIOS}]
    rows = []
    for name, num, den, target in ratios:
        timings = results[name]
        dens = den.split("|")
        if num not in timings or not all(d in timings for d in dens):
            continue
        peer = min(dens, key=lambda d: timings[d].median)
        ratio = timings[num].median / timings[peer].median
        noisy = max(timings[num].spread, timings[peer].spread) > NOISY_SPREAD
        verdict = None
        if target is not None:
            verdict = "too noisy" if noisy else ("met" if ratio <= target else "missed")
        rows.append({"workload": name, "ratio": f"{num}/{peer}" if len(dens) == 1 else
                     f"{num}/{peer} ({den})", "measured": ratio,
                     "target": target, "verdict": verdict})
    return rows


def format_ratios(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'workload':<10}{'ratio':>30}{'measured':>10}{'target':>10}  verdict"]
    for row in rows:
        target = f"<= {row['target']:.2f}" if row["target"] is not None else "-"
        lines.append(f"{row['workload']:<10}{row['ratio']:>30}{row['measured']:>10.2f}"
                     f"{target:>10}  {row['verdict'] or ''}")
    if any(row["verdict"] == "too noisy" for row in rows):
        lines.append(f"warning: a spread above {NOISY_SPREAD:.0f}% (IQR/median) means the "
                     "machine is too noisy for a verdict on those targets: run again on a quiet "
                     "machine, with more --repeat")
    return "\n".join(lines)


def describe_environment(threads: int, notes: list[str]) -> str:
    parts = [f"numpy {np.__version__}"]
    if torch is not None:
        parts.append(f"torch {torch.__version__}")
    else:
        parts.append("torch not installed: no PyTorch column")
    import importlib.metadata
    import importlib.util

    if importlib.util.find_spec("jax") is not None:
        parts.append(f"jax {importlib.metadata.version('jax')}")
    else:
        parts.append("jax not installed (pip install -e '.[bench]'): no JAX column")
    return f"{os.cpu_count()} cores, {threads} threads; " + "; ".join(parts + notes)


def plot(results: dict[str, dict[str, Timing]], path: str) -> None:
    """Median step time per workload and variant, IQR as error bars, log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1.6 + 1.4 * len(results), 4))
    width = 0.8 / len(VARIANTS)
    for i, variant in enumerate(VARIANTS):
        xs = [j for j, t in enumerate(results.values()) if variant in t]
        ts = [t[variant] for t in results.values() if variant in t]
        ax.bar([x + i * width for x in xs], [t.median * 1e3 for t in ts], width,
               yerr=[t.median * t.spread / 200 * 1e3 for t in ts], label=variant)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(results))], list(results))
    ax.set_yscale("log")
    ax.set_ylabel("ms per step (median)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=workloads_help(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--workloads",
        nargs="+",
        type=workload_name,
        default=list(WORKLOADS),
        metavar="NAME",
        help="workloads to run (default: all, listed below)",
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
        help="intra-op threads of every variant: the runtime's (split kernels), numpy's BLAS, "
        "torch's, and JAX's XLA flags when JAX is installed; also the compiled steps' worker "
        "threads (default: all cores)",
    )
    parser.add_argument("--no-torch-compile", dest="torch_compile", action="store_false",
                        help="leave out the torch.compile column (its compile costs ~20 s a "
                        "workload)")
    parser.add_argument("--json", metavar="FILE", help="also write every timing to FILE as JSON")
    parser.add_argument("--plot", metavar="FILE",
                        help="also draw the medians to FILE (.png or .svg; needs matplotlib)")
    args = parser.parse_args(argv)
    if args.plot:
        if not args.plot.endswith((".png", ".svg")):
            parser.error(f"--plot {args.plot}: the file must end in .png or .svg")
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise CLIError("--plot needs matplotlib: pip install 'backplan[plot]' (or pip "
                           "install matplotlib)") from None

    affinity = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    try:
        notes = set_threads(args.threads)
        if args.threads > 1:
            notes.append(f"each timing starts {SETTLE_S} s after the one before (idle threads "
                         f"of the previous peer stop spinning)")
        environment_notes = list(notes)
        print(describe_environment(args.threads, notes))
        results = {}
        for name in args.workloads:
            results[name] = bench_workload(
                WORKLOADS[name], args.repeat, args.min_time, args.warmup, args.seed,
                args.torch_compile, notes, workers=args.threads,
                settle=SETTLE_S if args.threads > 1 else 0.0,
            )
            print(f"  {name}: done", flush=True)
    finally:
        if affinity is not None:  # set_threads may have pinned the process
            os.sched_setaffinity(0, affinity)
    rows = ratio_rows(results)
    print()
    print(f"median step time over {args.repeat} interleaved rounds, ±: IQR/median in %")
    print(format_table(results))
    print()
    print(format_ratios(rows))
    for note in notes[len(environment_notes):]:
        print(f"note: {note}")
    if args.json:
        doc = {"threads": args.threads, "notes": notes, "repeat": args.repeat,
               "workloads": {name: {v: t.as_json() for v, t in timings.items()}
                             for name, timings in results.items()},
               "ratios": rows}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
    if args.plot:
        plot(results, args.plot)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except CLIError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(USAGE_ERROR)
