"""The ``model = torch.compile(model)`` idiom: only the model compiled, the loss, ``backward()``
and the optimizer's step left eager, against the eager step, the whole step compiled, and
PyTorch (eager, and ``torch.compile`` of the model where it runs).

    python -m benchmarks.modules [--threads 1] [--repeat 5] [--no-torch-compile]

Variants, each a training step of the cnn or gpt workload from the same weights and data:
- ``eager``: ``runtime`` eagerly;
- ``module``: ``rt.compile(model)`` (planner.aot: its forward and backward are compiled plans,
  the backward one ``CompiledFunctionBackward`` node in the eager graph);
- ``step``: the whole step compiled (``planner.compile(step, backend="llvm")``);
- ``torch``: PyTorch eagerly; ``tcompile``: ``torch.compile(model)``, the rest eager.
Rounds are interleaved; each cell is the median of ``--repeat`` rounds, with its spread
(IQR/median); every variant gets the same thread count.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import planner
import runtime as rt

from .models_cnn import cnn_arrays, cnn_model
from .models_gpt import GPT, build_gpt_model, gpt_arrays, gpt_forward, gpt_train_step
from .run import calibrate, set_threads, time_loop

try:
    import torch
except ImportError:  # pragma: no cover - PyTorch is an optional peer
    torch = None

VARIANTS = ("eager", "module", "step", "torch", "tcompile")


def cnn_steps(lib: Any, arrays: dict[str, np.ndarray], compile_model: Callable[[Any], Any] | None
              ) -> tuple[Callable[[], Any], Any]:
    """A cnn training step (SGD with momentum) whose model is ``compile_model(model)``."""
    model = cnn_model(lib, arrays)
    opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    run_model = model if compile_model is None else compile_model(model)
    x, y = lib.from_numpy(arrays["x"].copy()), lib.from_numpy(arrays["y"].copy())

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(run_model(x), y)
        loss.backward()
        opt.step()
        return loss

    return (lambda: step(x, y)), step


def gpt_steps(lib: Any, arrays: dict[str, np.ndarray], compile_model: Callable[[Any], Any] | None
              ) -> tuple[Callable[[], Any], Any]:
    """A gpt training step (AdamW, clipping) whose forward is ``compile_model(forward)``."""
    model = build_gpt_model(lib, arrays, GPT)

    def forward(idx: Any) -> Any:
        return gpt_forward(lib, model, idx, GPT.heads)

    step = gpt_train_step(lib, model, forward if compile_model is None
                          else compile_model(forward))
    x, y = (lib.from_numpy(arrays[k].copy()) for k in ("x", "y"))
    return (lambda: step(x, y)), step


WORKLOADS = {"cnn": (cnn_arrays, cnn_steps), "gpt": (gpt_arrays, gpt_steps)}


def variants(name: str, torch_compile: bool) -> dict[str, Callable[[], Any]]:
    make_arrays, steps = WORKLOADS[name]
    arrays = make_arrays(0)
    found = {"eager": steps(rt, arrays, None)[0],
             "module": steps(rt, arrays, lambda m: rt.compile(m))[0]}
    _, whole = steps(rt, arrays, None)
    compiled = planner.compile(whole, backend="llvm", background=False)
    args = rt.from_numpy(arrays["x"].copy()), rt.from_numpy(arrays["y"].copy())
    found["step"] = lambda: compiled(*args)
    if torch is not None:
        found["torch"] = steps(torch, arrays, None)[0]
        if torch_compile:
            found["tcompile"] = steps(torch, arrays, lambda m: torch.compile(m))[0]
    return found


def bench(name: str, repeat: int, min_time: float, torch_compile: bool
          ) -> dict[str, tuple[float, float, float]]:
    """Per variant: (median ms per step, IQR/median in %, first call ms)."""
    runs = variants(name, torch_compile)
    first, loops = {}, {}
    for v, run in runs.items():
        t0 = time.perf_counter()
        run()
        first[v] = (time.perf_counter() - t0) * 1e3
        loops[v] = calibrate(run, min_time, warmup=3)
    samples: dict[str, list[float]] = {v: [] for v in runs}
    for _ in range(repeat):
        for v, run in runs.items():
            time.sleep(0.25)  # no peer's idle threads spinning on the next one's cores
            samples[v].append(time_loop(run, loops[v]) * 1e3)
    out = {}
    for v, s in samples.items():
        med = statistics.median(s)
        q = np.percentile(s, [25, 75])
        out[v] = (med, float((q[1] - q[0]) / med * 100), first[v])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS),
                        default=list(WORKLOADS))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--min-time", type=float, default=0.05)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--no-torch-compile", dest="torch_compile", action="store_false")
    args = parser.parse_args(argv)
    if args.threads is not None:
        set_threads(args.threads)
    print(f"threads: {args.threads or 'all cores'}; median ms per step over {args.repeat} "
          "interleaved rounds (±: IQR/median %); first call ms (capture and compile included)")
    print(f"{'workload':<10}" + "".join(f"{v + ' ms':>12}{'±%':>6}" for v in VARIANTS))
    firsts = []
    for name in args.workloads:
        result = bench(name, args.repeat, args.min_time, args.torch_compile)
        print(f"{name:<10}" + "".join(
            f"{result[v][0]:>12.3f}{result[v][1]:>6.1f}" if v in result else f"{'-':>12}{'':>6}"
            for v in VARIANTS))
        firsts.append(f"{name:<10}" + "".join(
            f"{result[v][2]:>18.1f}" if v in result else f"{'-':>18}" for v in VARIANTS))
        ratios = [f"module/eager {result['module'][0] / result['eager'][0]:.2f}"]
        if "torch" in result:
            ratios.append(f"module/torch {result['module'][0] / result['torch'][0]:.2f}")
        if "tcompile" in result:
            ratios.append(f"module/tcompile {result['module'][0] / result['tcompile'][0]:.2f}")
        print(f"{'':<10}" + ", ".join(ratios))
    print("first call (ms)\n" + f"{'workload':<10}" + "".join(f"{v:>18}" for v in VARIANTS))
    print("\n".join(firsts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
