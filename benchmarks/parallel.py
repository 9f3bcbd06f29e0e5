"""Plan workers: the same compiled step run with ``workers=1`` and ``workers=N``, side by side.

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.parallel --intra-op 1

Each workload's step is compiled twice from the same arrays (``planner.compile(step,
workers=...)``), once a plan per worker count; the two run interleaved in one process, the order
rotated every round, and the medians and their ratio are printed with the executor each plan
chose (``CompiledStep.execution``). ``--intra-op`` sets ``runtime.set_num_threads`` (BLAS and
kernel splits) for every variant alike.
"""

from __future__ import annotations

import argparse
import statistics

import planner
import runtime as rt

from .run import at_least, calibrate, time_loop, workload_name
from .workloads import WORKLOADS, Case


def build(name: str, workers: int, seed: int) -> Case:
    workload = WORKLOADS[name]
    case = workload.build(rt, workload.make_arrays(seed))
    return Case(planner.compile(case.fn, workers=workers, background=False), case.args,
                case.outputs)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", type=workload_name, default=["two_tower"],
                        metavar="NAME", help="workloads to run (default: two_tower)")
    parser.add_argument("--workers", type=at_least(2), default=2,
                        help="the parallel variant's workers (default 2)")
    parser.add_argument("--intra-op", type=at_least(1), default=1,
                        help="runtime.set_num_threads for every variant (default 1)")
    parser.add_argument("--repeat", type=at_least(1), default=9, help="timed rounds (median)")
    parser.add_argument("--seed", type=at_least(0), default=0)
    args = parser.parse_args(argv)
    rt.set_num_threads(args.intra_op)
    print(f"intra-op threads {rt.get_num_threads()}; workers 1 against {args.workers}")
    print(f"{'workload':<12}{'workers=1 ms':>14}{f'workers={args.workers} ms':>14}"
          f"{'speed-up':>10}  executor (workers={args.workers})")
    for name in args.workloads:
        cases = {w: build(name, w, args.seed) for w in (1, args.workers)}
        steps = {w: calibrate(c.run, 0.2, 3) for w, c in cases.items()}
        samples: dict[int, list[float]] = {w: [] for w in cases}
        order = list(cases)
        for r in range(args.repeat):
            for w in order[r % 2:] + order[:r % 2]:
                samples[w].append(time_loop(cases[w].run, steps[w]))
        one, many = (statistics.median(samples[w]) * 1e3 for w in (1, args.workers))
        chosen = cases[args.workers].fn.execution
        print(f"{name:<12}{one:>14.3f}{many:>14.3f}{one / many:>9.2f}x  {chosen}")


if __name__ == "__main__":
    main()
