"""What each rank runs in tests/distributed/test_mpi.py (``mpiexec -n 2 python THIS MODE
DIR``): prints ``OK`` lines the test reads, or fails as the mode asks."""

from __future__ import annotations

import datetime
import os
import sys
import time
import warnings

import numpy as np

import planner
import runtime as rt
from planner.inspect import schedule_text
from runtime import distributed as dist
from runtime.nn.parallel import DistributedDataParallel

STEPS = 3
# wide enough that the backward left after the first bucket takes milliseconds
X = np.random.default_rng(0).standard_normal((64, 512)).astype(np.float32)
Y = np.random.default_rng(1).integers(0, 4, 64)


def model(seed: int | None = None) -> rt.nn.Module:
    rt.manual_seed(dist.get_rank() if seed is None else seed)  # DDP broadcasts rank 0's
    return rt.nn.Sequential(rt.nn.Linear(512, 512), rt.nn.ReLU(), rt.nn.Linear(512, 512),
                            rt.nn.ReLU(), rt.nn.Linear(512, 512), rt.nn.ReLU(),
                            rt.nn.Linear(512, 4))


def train(m: rt.nn.Module, forward: rt.nn.Module, x: np.ndarray, y: np.ndarray,
          compiled: str | None) -> planner.CompiledStep | None:
    """``compiled``: None (eager) or the executor of a compiled step."""
    opt = rt.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

    def step(xb: rt.Tensor, yb: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = rt.nn.functional.cross_entropy(forward(xb), yb)
        loss.backward()
        opt.step()
        return loss.detach()

    run = planner.compile(step, executor=compiled) if compiled else step
    for _ in range(STEPS):
        run(rt.tensor(x), rt.tensor(y))
    return run if compiled else None


def params(m: rt.nn.Module) -> list[np.ndarray]:
    return [p.detach().numpy().copy() for p in m.parameters()]


def equal(out_dir: str) -> None:
    """Compiled and eager DDP on 1/N of the batch each equal one process on all of it; the
    plan shows its communication steps; one run's timeline overlaps them with the backward."""
    rank, n = dist.get_rank(), dist.get_world_size()
    single = model(seed=0)
    train(single, single, X, Y, compiled=None)
    want = params(single)
    for compiled in (None, "program", "auto"):
        m = model()
        ddp = DistributedDataParallel(m, bucket_cap_mb=0.006)  # a bucket a layer
        step = train(m, ddp, X[rank::n], Y[rank::n], compiled)
        worst = max(float(np.abs(a - b).max()) for a, b in zip(params(m), want))
        assert worst < 2e-5, (compiled, worst)
        print(f"OK equal compiled={compiled} worst={worst:.2e}", flush=True)
    plan = step.plan
    assert plan.execution.executor == "parallel", plan.execution  # the communication queue
    assert plan.stats["buckets"] == 4, plan.stats
    for text in (plan.listing(), schedule_text(plan), plan.to_dot()):
        assert "allreduce_start" in text and "allreduce_wait" in text
    # a thread scheduled late on a shared 2-core machine can delay one run's start step past
    # the backward: overlap is shown when one of a few runs has it (a start placed after the
    # backward never would)
    runner = plan.executable.runner(plan.execution.workers)
    overlaps = []
    for _ in range(5):
        runner.timeline = []
        step(rt.tensor(X[rank::n]), rt.tensor(Y[rank::n]))
        first_start = min(t0 for i, t0, _ in runner.timeline
                          if plan.steps[i].op == "allreduce_start")
        backward_end = max(t1 for i, _, t1 in runner.timeline
                           if plan.steps[i].phase == "backward")
        overlaps.append(backward_end - first_start)
    runner.timeline = None
    assert max(overlaps) > 0, overlaps
    print(f"OK overlap in {sum(o > 0 for o in overlaps)} of 5 runs", flush=True)
    path = os.path.join(out_dir, "ckpt.bp")
    dist.save_checkpoint({f"p{i}": p.detach() for i, p in enumerate(m.parameters())}, path)
    assert sorted(os.listdir(out_dir)) == ["ckpt.bp"], os.listdir(out_dir)
    saved = rt.load(path)
    assert all(np.array_equal(saved[f"p{i}"].numpy(), p) for i, p in enumerate(params(m)))
    print("OK checkpoint", flush=True)


def buffers(out_dir: str) -> None:
    """BatchNorm's running statistics under DDP: with broadcast_buffers (the default) every
    forward starts from rank 0's, compiled as eagerly; without, each rank keeps its own."""
    rank = dist.get_rank()
    x = X[rank::2] * (1 + rank)  # the ranks' batches differ in scale: their statistics too

    def bn_model() -> rt.nn.Module:
        rt.manual_seed(0)
        return rt.nn.Sequential(rt.nn.Linear(512, 16), rt.nn.BatchNorm1d(16), rt.nn.ReLU(),
                                rt.nn.Linear(16, 4))

    def stats(m: rt.nn.Module) -> list[np.ndarray]:
        return [b.numpy().copy() for b in m.buffers()]

    runs = {}
    for compiled, broadcast in ((None, True), ("auto", True), (None, False)):
        m = bn_model()
        ddp = DistributedDataParallel(m, broadcast_buffers=broadcast)
        train(m, ddp, x, Y[rank::2], compiled=compiled)
        runs[compiled, broadcast] = stats(m) + params(m)
    for a, b in zip(runs[None, True], runs["auto", True], strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    print("OK buffers compiled equals eager", flush=True)
    differs = any(not np.allclose(a, b) for a, b in zip(runs[None, True][:3],
                                                          runs[None, False][:3]))
    assert differs == (rank == 1), (rank, differs)  # rank 0's own statistics either way
    print("OK buffers broadcast", flush=True)


def mismatch(out_dir: str) -> None:
    """Rank 1 gets a batch of another size: every rank raises at the first compiled step."""
    rank = dist.get_rank()
    m = model()
    ddp = DistributedDataParallel(m)
    rows = 8 if rank == 0 else 5
    try:
        train(m, ddp, X[:rows], Y[:rows], compiled="auto")
    except RuntimeError as exc:
        print(f"MISMATCH {exc}", flush=True)
        sys.exit(3)
    raise AssertionError("ranks with different plans did not fail")


def crash(out_dir: str) -> None:
    """Rank 1 raises while rank 0 waits for it in a collective."""
    if dist.get_rank() == 1:
        raise ValueError("rank 1 fails on purpose")
    dist.barrier()


def hang(out_dir: str) -> None:
    """Rank 1 never arrives: rank 0's wait ends at the group's timeout, ending the job."""
    if dist.get_rank() == 1:
        time.sleep(60)
    dist.barrier()


def main() -> None:
    mode, out_dir = sys.argv[1], sys.argv[2]
    warnings.simplefilter("error")  # a compiled step that fell back to eager would warn
    dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=5 if mode == "hang"
                                                               else 120))
    {"equal": equal, "mismatch": mismatch, "crash": crash, "hang": hang,
     "buffers": buffers}[mode](out_dir)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
