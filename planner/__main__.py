"""The planner's command line.

    python -m planner plan WORKLOAD|FILE.py:FUNC [--backend llvm] [--device cuda] [--listing]
        [--schedule] [--kernels [--show llvm|asm|cuda]] [--fusion]
        | --dot [--unfused] | --json | --svg F | --png F
        [--wrt NAMES] [--debug]
    python -m planner bench [WORKLOAD ...] [--repeat N] [--threads N] [--json FILE]
        [--plot FILE.png|svg]
    python -m planner train [--task digits] [--epochs N] [--batch-size N] [--lr LR] [--seed N]
        [--variants eager,compiled,torch] [--plot FILE.png|svg]
    python -m planner cache [info|clear] [--dir DIR]
    python -m planner --version

FILE.py:FUNC is your own step: FILE is imported as a module and, beside FUNC, defines
make_inputs() returning the tuple of FUNC's positional arguments, or example_inputs holding
it (planner.cli_user). Input the CLI cannot use is one line on stderr and status 2.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable

from .cli_plan import USAGE_ERROR, CLIError, run_plan

# what a shell reports for a writer killed by SIGPIPE (128 + 13): the reader went away early
BROKEN_PIPE_STATUS = 141


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer no smaller than ``minimum`` (a count, a seed)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text!r}")
        return value

    return parse


def seconds(text: str) -> float:
    """An argparse type: a finite, positive number of seconds."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


USER_STEP_HELP = ("FILE.py:FUNC: FILE is imported as a module (its directory on sys.path "
                  "meanwhile); FUNC is the step; beside it make_inputs() returns the tuple of "
                  "FUNC's positional arguments (or example_inputs holds it)")
def plan_target(text: str) -> str:
    """An argparse type: a benchmark workload's name or a user's FILE.py:FUNC."""
    from .cli_user import is_user_step

    return text if is_user_step(text) else workload_name(text)


def workload_name(text: str) -> str:
    """An argparse type: the name of a benchmark workload."""
    from benchmarks.workloads import WORKLOADS

    if text not in WORKLOADS:
        raise argparse.ArgumentTypeError(f"unknown workload {text!r} (choose from "
                                         f"{', '.join(WORKLOADS)})")
    return text


def workloads_help() -> str:
    """The benchmark workloads, one a line, for a command's --help."""
    from benchmarks.workloads import WORKLOADS

    return "workloads:\n" + "\n".join(f"  {w.name:<10} {w.what} ({w.dominated_by})"
                                        for w in WORKLOADS.values())


def main(argv: list[str] | None = None) -> int:
    """Run the command line; when stdout's reader goes away early (``backplan plan ... |
    head``), stop quietly with status BROKEN_PIPE_STATUS."""
    debug = "--debug" in (sys.argv[1:] if argv is None else argv)
    try:
        try:
            status = _run(argv)
        except CLIError as e:
            if debug:
                raise
            # one line, whatever the step's exception said
            print(f"backplan: error: {' '.join(str(e).split())}", file=sys.stderr)
            return USAGE_ERROR
        # a closed pipe shows up at the last flush: make it happen here, not at exit
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # Python's recipe (signal module docs, "Note on SIGPIPE"): stdout goes to devnull, so
        # the interpreter's own flush at exit does not fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return BROKEN_PIPE_STATUS


def _run(argv: list[str] | None) -> int:
    from benchmarks.workloads import WORKLOADS

    parser = argparse.ArgumentParser(prog="python -m planner", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"backplan {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan", help="print the compiled plan of a workload or of your own step",
                       epilog=USER_STEP_HELP)
    p.add_argument("workload", type=plan_target, metavar="WORKLOAD",
                   help=f"one of {', '.join(WORKLOADS)}, or FILE.py:FUNC (see below)")
    only = p.add_mutually_exclusive_group()
    only.add_argument("--dot", action="store_true",
                      help="print only Graphviz text of the plan after fusion")
    only.add_argument("--json", action="store_true",
                      help="print only JSON: the plan's figures and its kernels")
    only.add_argument("--svg", metavar="FILE", help="render the DOT to FILE (needs Graphviz)")
    only.add_argument("--png", metavar="FILE", help="render the DOT to FILE (needs Graphviz)")
    p.add_argument("--unfused", action="store_true",
                   help="with --dot/--svg/--png: draw the captured graph, before fusion")
    p.add_argument("--wrt", metavar="NAMES", type=lambda text: text.split(","),
                   help="FILE.py:FUNC returns a loss: plan it and its gradients of these "
                        "comma-separated parameters of FUNC only")
    p.add_argument("--debug", action="store_true",
                   help="show the traceback of a step that cannot be loaded or captured")
    p.add_argument("--schedule", action="store_true",
                   help="also print the step DAG: devices, priorities, the critical path and "
                        "the expected parallelism")
    p.add_argument("--listing", action="store_true", help="also print the step listing")
    p.add_argument("--backend", default="auto", choices=["auto", "interpreter", "llvm", "cuda"])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="the device the plan is for (cuda: its kernels render as CUDA C; no GPU "
                        "or CuPy needed to inspect it)")
    p.add_argument("--kernels", action="store_true",
                   help="also print each kernel: its name, the ops it fuses, its domain and the "
                        "bytes it moves, then its source (LLVM IR on cpu, CUDA C on cuda)")
    p.add_argument("--show", choices=["llvm", "asm", "cuda"], default=None,
                   help="with --kernels: the text shown, LLVM IR, the host's assembly or CUDA C "
                        "(rendered without a GPU or CuPy)")
    p.add_argument("--workers", type=at_least(1), default=None,
                   help="CPU threads the plan's steps may run on (default: one per core)")
    p.add_argument("--executor", default="auto", choices=["auto", "program", "parallel"],
                   help="how the plan runs (default: the cost model chooses)")
    p.add_argument("--fusion", action="store_true",
                   help="also say why each step did or did not fuse")
    from benchmarks.train import add_arguments

    t = sub.add_parser("train", help="train a model on a bundled task: eager, compiled and "
                       "PyTorch side by side (benchmarks.train)")
    add_arguments(t)
    c = sub.add_parser("cache", help="show (info, the default) or clear the compiled-code "
                       "cache; its size limit is BACKPLAN_CACHE_MAX_BYTES (default 512M)")
    c.add_argument("action", nargs="?", choices=["info", "clear"], default="info",
                   help="info: entries, sizes, limit; clear: delete the files the cache wrote "
                        "(and no others)")
    c.add_argument("--clear", action="store_true", help="the same as the clear action")
    c.add_argument("--dir", default=None, help="cache directory (default: BACKPLAN_CACHE_DIR "
                   "or ~/.cache/backplan)")
    b = sub.add_parser("bench", help="time eager vs compiled vs PyTorch (benchmarks.run)",
                       epilog=workloads_help(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    b.add_argument("workloads", nargs="*", type=workload_name, metavar="WORKLOAD",
                   help="workloads to run (default: all, listed below)")
    b.add_argument("--threads", type=at_least(1), default=None,
                   help="intra-op threads of every peer alike (default: all cores)")
    b.add_argument("--json", metavar="FILE", help="also write every timing to FILE as JSON")
    b.add_argument("--plot", metavar="FILE",
                   help="also draw the medians to FILE (.png or .svg; needs matplotlib)")
    b.add_argument("--repeat", type=at_least(1), default=5, help="timed rounds (median taken)")
    b.add_argument("--min-time", type=seconds, default=0.05,
                   help="seconds each timing loops for")
    b.add_argument("--no-torch-compile", dest="torch_compile", action="store_false",
                   help="leave out the torch.compile column (its compile costs ~20 s a "
                   "workload)")
    args = parser.parse_args(argv)
    if args.command == "cache":
        from .cli_cache import run_cache

        return run_cache(args)
    if args.command == "plan":
        return run_plan(args, p)
    if args.command == "train":
        from benchmarks.train import train

        train(args)
        return 0
    from benchmarks import run

    argv2 = ["--repeat", str(args.repeat), "--min-time", str(args.min_time)]
    for option in ("threads", "json", "plot"):
        if getattr(args, option) is not None:
            argv2 += [f"--{option}", str(getattr(args, option))]
    if not args.torch_compile:
        argv2.append("--no-torch-compile")
    if args.workloads:
        argv2 += ["--workloads", *args.workloads]
    return run.main(argv2)


def _version() -> str:
    """The installed package's version, else the one pyproject.toml beside the source says."""
    from importlib import metadata

    try:
        return metadata.version("backplan")
    except metadata.PackageNotFoundError:
        import tomllib
        from pathlib import Path

        pyproject = Path(__file__).parents[1] / "pyproject.toml"
        return str(tomllib.loads(pyproject.read_text())["project"]["version"])


if __name__ == "__main__":
    sys.exit(main())
