"""Planner figures of the compile issue: capture+planning time and the FLOPs pruning saves.

    python -m benchmarks.planning

- capture plus planning of ``mlp_large`` (``step.lower``; median of several runs);
- FLOPs the plan of ``partial`` (the gradient of the input only) executes, against the plan of
  the same forward with every gradient requested (the input and all parameters), and against
  the ``mlp_large`` SGD step;
- LLVM compile time of the fused ``mlp_large`` plan: cold (empty cache) and warm (object code
  from the disk cache, as a second process would find it);
- per workload, the first calls of its ``backend="llvm"`` step in a new process: cold (an empty
  disk cache) and warm (a second process on the cache the first one filled), with the captures
  the process made and whether its first call ran eagerly (``CompiledStep.warmups``: a capture
  that created state; the built-in optimizers make theirs outside the capture).

    python -m benchmarks.planning [--workloads chain mlp_small ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
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


def first_calls(name: str, background: bool = True) -> dict[str, Any]:
    """In this process (meant to be a new one): the first two calls of ``name``'s llvm step,
    imports that the first call triggers (codegen, llvmlite) included, the seconds from the
    first call's start until its kernels are in use (``ready_s``: ``step.wait()`` returned;
    the first call's end where they compiled in it, ``background=False``), and the CPU
    seconds the calling thread spent in the first call (``first_cpu_s``: the work it did,
    less the time a loaded machine gave other processes)."""
    wl = WORKLOADS[name]
    case = wl.build(rt, wl.make_arrays(0))
    step = planner.compile(case.fn, backend="llvm", background=background)
    calls = []
    start = time.perf_counter()
    cpu0 = time.thread_time()
    for _ in range(2):
        t0 = time.perf_counter()
        step(*case.args)
        calls.append(time.perf_counter() - t0)
        if not background:
            ready = calls[0]
        if len(calls) == 1:
            cpu = time.thread_time() - cpu0
    if background:
        step.wait()
        ready = time.perf_counter() - start
    return {"first_s": calls[0], "second_s": calls[1], "ready_s": ready, "first_cpu_s": cpu,
            "captures": step.captures, "warmups": step.warmups}


def _in_new_process(name: str, cache_dir: str, pycache: str, background: bool = True
                    ) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "benchmarks.planning", "--first-calls", name,
                          *([] if background else ["--no-background"])],
                         env=_child_env(cache_dir, pycache), check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


# the project's packages, whose bytecode an installed copy has (pip compiles it at install)
_PACKAGES = ("runtime", "planner", "codegen", "benchmarks")


def _child_env(cache_dir: str, pycache: str) -> dict[str, str]:
    """A new process's environment: the compiled-code cache ``cache_dir``, Python's bytecode
    read from and written to ``pycache`` (PYTHONPYCACHEPREFIX; a PYTHONDONTWRITEBYTECODE of
    the caller's is dropped), so that a first call counts the planner's work, not the
    compilation of the project's Python sources, which an installed copy never pays."""
    env = dict(os.environ, BACKPLAN_CACHE_DIR=cache_dir, PYTHONPYCACHEPREFIX=pycache)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _compile_sources(pycache: str) -> None:
    """The project's bytecode into ``pycache``, as ``pip install`` leaves it."""
    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "compileall", "-q",
                    *(str(root / p) for p in _PACKAGES)],
                   env=_child_env("", pycache), check=True, capture_output=True)


def first_call_table(names: list[str]) -> str:
    """Cold and warm first calls of each workload, each in a new process."""
    lines = ["first calls of the llvm step in a new process (ms): cold = empty disk cache "
             "(kernels compiled in the background, planner.background), sync = empty disk cache, "
             "compiled in the first call (background=False), warm = the cache a previous "
             "process filled; ready = from the first call's start until the kernels are in "
             "use; warm cpu = the calling thread's CPU time in the warm first call (steadier "
             "than the wall time on a shared machine); targets: first call <= 300 cold, "
             "<= 50 warm",
             f"{'workload':<10}{'cold 1st':>10}{'cold 2nd':>10}{'cold ready':>11}"
             f"{'sync 1st':>10}{'warm 1st':>10}{'warm cpu':>10}{'warm 2nd':>10}"
             f"{'captures':>10}{'eager 1st':>10}"]
    with tempfile.TemporaryDirectory() as pycache:
        _compile_sources(pycache)
        for name in names:
            with tempfile.TemporaryDirectory() as tmp:
                cold = _in_new_process(name, tmp, pycache)
                warm = _in_new_process(name, tmp, pycache)
            with tempfile.TemporaryDirectory() as tmp:
                sync = _in_new_process(name, tmp, pycache, background=False)
            lines.append(f"{name:<10}{cold['first_s'] * 1e3:>10.1f}"
                         f"{cold['second_s'] * 1e3:>10.3f}{cold['ready_s'] * 1e3:>11.1f}"
                         f"{sync['first_s'] * 1e3:>10.1f}{warm['first_s'] * 1e3:>10.1f}"
                         f"{warm['first_cpu_s'] * 1e3:>10.1f}"
                         f"{warm['second_s'] * 1e3:>10.3f}{warm['captures']:>10}"
                         f"{'yes' if warm['warmups'] else 'no':>10}")
    lines.append("eager 1st = yes: the first call's capture created state, so that call ran "
                 "eagerly and was captured again after it; the project's Python bytecode is "
                 "compiled beforehand, as an installed copy has it")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS),
                        default=list(WORKLOADS), help="workloads of the first-call table")
    parser.add_argument("--first-calls", metavar="WORKLOAD", choices=list(WORKLOADS),
                        help=argparse.SUPPRESS)  # the child process of the first-call table
    parser.add_argument("--no-background", action="store_true",
                        help=argparse.SUPPRESS)  # that child compiling in the first call
    args = parser.parse_args(argv)
    if args.first_calls:
        print(json.dumps(first_calls(args.first_calls, background=not args.no_background)))
        return
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
    print(first_call_table(args.workloads))


if __name__ == "__main__":
    main()
