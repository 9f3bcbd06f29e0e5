"""The planner's command line.

    python -m planner plan WORKLOAD [--backend llvm] [--dot] [--listing] [--json] [--kernels]
        [--fusion]
    python -m planner bench [WORKLOAD ...] [--repeat N]
    python -m planner cache [--clear] [--dir DIR]
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def compiled_plan(name: str, seed: int = 0, backend: str = "auto") -> Any:
    """The plan ``planner.compile`` makes for a benchmark workload's step."""
    import planner
    import runtime as rt
    from benchmarks.workloads import WORKLOADS

    workload = WORKLOADS[name]
    case = workload.build(rt, workload.make_arrays(seed))
    return planner.compile(case.fn, backend=backend).lower(*case.args)


def main(argv: list[str] | None = None) -> int:
    from benchmarks.workloads import WORKLOADS

    parser = argparse.ArgumentParser(prog="python -m planner", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan", help="print the compiled plan of a benchmark workload")
    p.add_argument("workload", choices=list(WORKLOADS))
    p.add_argument("--dot", action="store_true", help="also print Graphviz text")
    p.add_argument("--listing", action="store_true", help="also print the step listing")
    p.add_argument("--json", action="store_true", help="also print the serialized plan")
    p.add_argument("--backend", default="auto", choices=["auto", "interpreter", "llvm"])
    p.add_argument("--kernels", action="store_true", help="also print each kernel's LLVM IR")
    p.add_argument("--fusion", action="store_true",
                   help="also say why each step did or did not fuse")
    c = sub.add_parser("cache", help="show or clear the compiled-code cache")
    c.add_argument("--clear", action="store_true", help="delete every cached object file")
    c.add_argument("--dir", default=None, help="cache directory (default: BACKPLAN_CACHE_DIR "
                   "or ~/.cache/backplan)")
    b = sub.add_parser("bench", help="time eager vs compiled (benchmarks.run)")
    b.add_argument("workloads", nargs="*", choices=list(WORKLOADS) + [[]], metavar="WORKLOAD")
    b.add_argument("--repeat", type=int, default=5)
    b.add_argument("--min-time", type=float, default=0.05)
    args = parser.parse_args(argv)
    if args.command == "cache":
        from codegen import cache

        directory = cache.cache_dir(args.dir)
        if args.clear:
            cache.clear_cache(args.dir)
            print(f"cleared {directory}")
        else:
            files = sorted(directory.glob("*.o")) if directory.exists() else []
            print(f"{directory}: {len(files)} compiled modules, "
                  f"{sum(f.stat().st_size for f in files)} bytes")
        return 0
    if args.command == "plan":
        plan = compiled_plan(args.workload, backend=args.backend)
        print(plan.summary())
        if args.listing:
            print()
            print(plan.listing())
        if args.dot:
            print()
            print(plan.to_dot())
        if args.json:
            print()
            print(plan.dumps())
        if args.fusion:
            from .fusion import explain_fusion

            print()
            # fusion explains the plan before it fused (the interpreter's)
            print(explain_fusion(compiled_plan(args.workload, backend="interpreter")))
        for kernel in plan.kernels if args.kernels else ():
            print()
            print(kernel.source)
        return 0
    from benchmarks import run

    argv2 = ["--repeat", str(args.repeat), "--min-time", str(args.min_time)]
    if args.workloads:
        argv2 += ["--workloads", *args.workloads]
    run.main(argv2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
