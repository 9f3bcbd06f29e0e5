"""What overlapping the gradient all-reduce with the backward buys, on mlp_large:

    mpiexec -n 2 python examples/ddp_overlap.py [--steps 30] [--bucket-cap-mb 1]

Two compiled DDP steps of the benchmark's mlp_large (784-1024-1024-10, SGD, global batch 128
split over the ranks), from the same weights: one with buckets of ``--bucket-cap-mb``, whose
first all-reduce starts while the backward still computes the first layer's gradients, and one
with a single bucket, started once the backward is done (one all-reduce after backward). The
two are timed alternately, ranks aligned by a barrier before each step; each rank prints the
median step times and their ratio.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import planner
import runtime as rt
from benchmarks.workloads import MLP_LARGE, build_mlp, mlp_arrays
from runtime import distributed as dist
from runtime.nn.parallel import DistributedDataParallel

ONE_BUCKET_MB = 1e6  # larger than any model here: every gradient in one bucket


def ddp_step(arrays: dict[str, np.ndarray], cap_mb: float, workers: int) -> planner.CompiledStep:
    model, _ = build_mlp(rt, arrays)
    ddp = DistributedDataParallel(model, bucket_cap_mb=cap_mb)
    loss_fn = rt.nn.CrossEntropyLoss()
    opt = rt.optim.SGD(model.parameters(), lr=0.01)

    def step(x: rt.Tensor, y: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = loss_fn(ddp(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    return planner.compile(step, workers=workers)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--bucket-cap-mb", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=1, help="CPU workers per rank")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads per rank")
    args = parser.parse_args(argv)
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    rt.set_num_threads(args.threads)  # the ranks share this machine's cores
    arrays = mlp_arrays(MLP_LARGE, 128, seed=0)
    x = rt.from_numpy(arrays["x"][rank::world].copy())
    y = rt.from_numpy(arrays["y"][rank::world].copy())
    steps = {"bucketed": ddp_step(arrays, args.bucket_cap_mb, args.workers),
             "one all-reduce": ddp_step(arrays, ONE_BUCKET_MB, args.workers)}
    times: dict[str, list[float]] = {name: [] for name in steps}
    for i in range(args.steps + 2):  # the first two: capture, compile and warm-up
        for name, step in steps.items():
            dist.barrier()
            began = time.perf_counter()
            step(x, y)
            if i >= 2:
                times[name].append(time.perf_counter() - began)
    medians = {name: float(np.median(t)) for name, t in times.items()}
    plan = steps["bucketed"].plan
    print(f"rank {rank}: {plan.stats['buckets']} buckets of <= {args.bucket_cap_mb:g} MB: "
          f"{medians['bucketed'] * 1e3:.2f} ms a step; one all-reduce after backward: "
          f"{medians['one all-reduce'] * 1e3:.2f} ms; ratio "
          f"{medians['one all-reduce'] / medians['bucketed']:.2f}x "
          f"(median of {args.steps}, {plan.execution})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
