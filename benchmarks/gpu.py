"""On a real GPU (CuPy and a CUDA device): every workload's step compiled on cuda (its fused
CUDA C kernels through NVRTC, replayed as a CUDA graph from the second call:
planner.cuda_graph) equals CPU eager over five steps; then median step times on the GPU:
compiled with and without CUDA graphs, eager, and PyTorch's eager (when torch with CUDA is
importable).

    python -m benchmarks.gpu [SECONDS]   # starts no workload after SECONDS (default 300)

Prints a line a workload and writes them all as JSON to $OUT/gpu_check.json (OUT unset: the
current directory). The workloads are built on cuda and checked as
``tests/planner/test_cuda_compiled.py`` builds and checks them with its fake CuPy."""

from __future__ import annotations

import json
import os
import sys
import time
import types
from collections.abc import Callable
from typing import Any

import numpy as np

import planner
from benchmarks.workloads import WORKLOADS
from tests.planner.test_cuda_compiled import FUSED_TOL, assert_same_runs, cuda_lib, run_on_cuda

STEPS = 5  # calls compared with CPU eager

# small and fast first: a time limit leaves out the slowest to compile
ORDER = ("one_op", "chain", "mlp_small", "eltwise", "partial", "mlp_large", "rnn", "cnn",
         "two_tower", "gpt")


def torch_cuda(torch: Any) -> types.SimpleNamespace:
    """torch as the workloads' builders use it, their tensors and layers on cuda."""
    lib = types.SimpleNamespace(**{k: getattr(torch, k) for k in dir(torch)
                                   if not k.startswith("_")})
    lib.nn = types.SimpleNamespace(**{k: getattr(torch.nn, k) for k in dir(torch.nn)
                                      if not k.startswith("_")})
    for k in dir(torch.nn):
        cls = getattr(torch.nn, k)
        if isinstance(cls, type) and issubclass(cls, torch.nn.Module) and cls is not \
                torch.nn.Module:
            setattr(lib.nn, k, lambda *a, _cls=cls, **kw: _cls(*a, **kw).to("cuda"))
    lib.from_numpy = lambda a: torch.from_numpy(a).to("cuda")
    lib.tensor = lambda *a, **k: torch.tensor(*a, **{**k, "device": "cuda"})
    lib.zeros = lambda *a, **k: torch.zeros(*a, **{**k, "device": "cuda"})
    return lib


def median_ms(run: Callable[[], Any], sync: Callable[[], Any], calls: int) -> float:
    for _ in range(3):
        run()
    sync()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - start)
    return float(np.median(times) * 1e3)


def graph_state(step: Any) -> str:
    """What planner.cuda_graph says of the step's plan."""
    runner = step.plan.executable.graph_runner()
    return "no runner" if runner is None else runner.describe()


def check(name: str, torch: Any, sync: Callable[[], Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    start = time.time()
    try:  # STEPS calls: the first runs the program, the second captures, the rest replay
        step, want, got = run_on_cuda(name, "cuda", STEPS, cuda_graphs=True)
        assert_same_runs(want, got, FUSED_TOL)
        found["equal_cpu_eager"] = True
        found["kernels"] = len([k for k in step.plan.kernels if k.device == "cuda:0"])
        found["graph"] = graph_state(step)
    except Exception as e:  # noqa: BLE001 - reported, and the next workload runs
        found["equal_cpu_eager"] = f"{type(e).__name__}: {str(e)[:400]}"
    found["first_s"] = round(time.time() - start, 2)
    wl = WORKLOADS[name]
    arrays = wl.make_arrays(0)
    for graphs in (True, False):
        case = wl.build(cuda_lib(), arrays)
        step = planner.compile(case.fn, backend="cuda", cuda_graphs=graphs)
        key = "compiled_ms" if graphs else "compiled_no_graph_ms"
        found[key] = median_ms(lambda step=step, case=case: step(*case.args), sync, 20)
    found["eager_ms"] = median_ms(wl.build(cuda_lib(), arrays).run, sync, 5)
    if torch is not None:
        found["torch_ms"] = median_ms(wl.build(torch_cuda(torch), arrays).run,
                                      torch.cuda.synchronize, 20)
    return found


def main(argv: list[str] | None = None) -> None:
    import cupy

    try:
        import torch
        if not torch.cuda.is_available():
            torch = None
    except ImportError:
        torch = None
    argv = sys.argv[1:] if argv is None else argv
    deadline = time.time() + float(argv[0] if argv else 300)
    results: dict[str, Any] = {
        "gpu": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()}

    def sync() -> None:
        cupy.cuda.Device().synchronize()

    for name in [n for n in ORDER if n in WORKLOADS] + sorted(set(WORKLOADS) - set(ORDER)):
        if time.time() > deadline:
            results[name] = "not run (time limit)"
            continue
        results[name] = check(name, torch, sync)
        print(name, results[name], flush=True)
    with open(os.path.join(os.environ.get("OUT", "."), "gpu_check.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
