"""``backplan plan``: compile a workload's or a user's step and print the views asked for."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from typing import Any

USAGE_ERROR = 2  # argparse's status for bad arguments: the CLI's for every input it cannot use


class CLIError(Exception):
    """What the command line could not do, said in one line on stderr (status USAGE_ERROR)."""


def compiled_plan(name: str, seed: int = 0, backend: str = "auto", workers: int | None = None,
                  executor: str = "auto", device: str | None = None,
                  wrt: list[str] | None = None) -> tuple[Any, list[str]]:
    """The plan ``planner.compile`` makes for a benchmark workload's step or a user's
    FILE.py:FUNC (on ``device``: its tensors stay on the CPU, a plan for a GPU is rendered,
    not run), and a name for each of its slots (planner.cli_names); ``wrt``: plan the user's
    loss and its gradients of those inputs only."""
    import planner
    import runtime as rt
    from benchmarks.workloads import WORKLOADS

    from .cli_names import name_by_writes, slot_names
    from .cli_user import gradients_of, is_user_step, load_user_step
    from .tree import flatten

    if is_user_step(name):
        fn, args = load_user_step(name)
        if wrt:
            fn, args = gradients_of(fn, args, wrt)
    else:
        workload = WORKLOADS[name]
        case = workload.build(rt, workload.make_arrays(seed))
        fn, args = case.fn, case.args
    step = planner.compile(fn, backend=backend, workers=workers, executor=executor,
                           device=device)
    # lower()'s own work, keeping the binding: its slots hold the tensors and optimizer state
    # the plan reads, which the names come from
    leaves, spec = flatten((args, {}))
    with step.lock:
        binding = step._plan(step._flat_fn(spec), tuple(leaves), build=False)
    names = slot_names(binding.slots, fn, args)
    return binding.plan, name_by_writes(names, binding.slots, binding.plan.writes)


def named_listing(plan: Any, names: list[str]) -> str:
    """The plan's listing, each input and state read followed by what it is, then the
    state the plan writes back, by name."""
    from .steps import InputStep, StateStep

    inputs = {s.out: names[s.slot] for s in plan.steps if isinstance(s, StateStep)}
    arg_slots = {slot["desc"]: i for i, slot in enumerate(plan.slots) if slot["kind"] == "input"}
    lines = plan.listing().splitlines()
    for i, s in enumerate(plan.steps):
        if isinstance(s, StateStep):
            lines[i] += f"  # {inputs[s.out]}"
        elif isinstance(s, InputStep) and f"arg{s.index}" in arg_slots:
            lines[i] += f"  # {names[arg_slots[f'arg{s.index}']]}"
    writes = [f"  {names[slot]} <- {'None' if buf < 0 else f'%{buf}'}"
              for slot, buf in plan.writes]
    return "\n".join(lines + (["writes back:", *writes] if writes else []))


def run_plan(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``plan``: the summary and the text views asked for, or only DOT, JSON or a picture."""
    from .cli_user import is_user_step

    views = [f"--{v}" for v in ("listing", "schedule", "kernels", "fusion") if getattr(args, v)]
    drawn = args.dot or args.svg or args.png
    if (drawn or args.json) and views:
        parser.error(f"--dot, --json, --svg and --png print only their format: leave out "
                     f"{' '.join(views)}")
    if args.wrt and not is_user_step(args.workload):
        parser.error("--wrt goes with FILE.py:FUNC (a workload's step is fixed)")
    if args.show and not args.kernels:
        parser.error("--show goes with --kernels")
    if args.unfused and not drawn:
        parser.error("--unfused goes with --dot, --svg or --png")
    if (args.svg or args.png) and shutil.which("dot") is None:
        raise CLIError("--svg/--png need Graphviz's dot program: install graphviz (apt-get "
                       "install graphviz, brew install graphviz) or pipe --dot to it yourself")

    from .compile import KERNEL_BACKENDS

    # the plan is for --device (the CLI always passes it), so this is planner.compile's check
    # made before any capture: a usage error, not a step's failure
    if KERNEL_BACKENDS.get(args.backend, args.device) != args.device:
        parser.error(f"--backend {args.backend} builds {KERNEL_BACKENDS[args.backend]} kernels, "
                     f"but the plan runs on {args.device}: use --backend auto")

    def plan_for(backend: str) -> tuple[Any, list[str]]:
        from .cli_user import UserStepError

        try:
            return compiled_plan(args.workload, backend=backend, workers=args.workers,
                                 executor=args.executor, device=args.device, wrt=args.wrt)
        except UserStepError as e:
            raise CLIError(str(e)) from e
        except Exception as e:
            raise CLIError(f"{args.workload}: the step could not be captured: "
                           f"{type(e).__name__}: {e} (--debug shows where)") from e

    # the captured graph is the interpreter's plan: nothing fused
    plan, names = plan_for("interpreter" if args.unfused else args.backend)
    if args.json:
        from .inspect import stats

        print(json.dumps(stats(plan), indent=2))
        return 0
    if drawn:
        return _draw(plan.to_dot(), args.svg, args.png)
    print(plan.summary())
    if args.listing:
        print()
        print(named_listing(plan, names))
    if args.schedule:
        from .inspect import schedule_text

        print()
        print(schedule_text(plan))
    if args.fusion:
        from .fusion import explain_fusion

        print()
        # fusion explains the plan before it fused (the interpreter's)
        print(explain_fusion(plan_for("interpreter")[0]))
    if args.kernels and plan.kernels:
        from .cli_kernels import kernels_text

        print()
        print(kernels_text(plan, args.show or ("cuda" if args.device == "cuda" else "llvm")))
    return 0


def _draw(dot: str, svg: str | None, png: str | None) -> int:
    """Print ``dot``, or render it through Graphviz to the file asked for."""
    if not (svg or png):
        print(dot)
        return 0
    fmt, path = ("svg", svg) if svg else ("png", png)
    done = subprocess.run(["dot", f"-T{fmt}", "-o", str(path)], input=dot, text=True,
                          capture_output=True, check=False)
    if done.returncode:
        raise CLIError(f"dot -T{fmt} failed: {done.stderr.strip()}")
    return 0


