"""Train a ``backplan train`` task data-parallel over MPI ranks:

    mpiexec -n 2 python examples/ddp_train.py [--task digits|gpt] [--epochs 3]
        [--batch-size 64] [--lr 0.01] [--max-steps N] [--eager] [--bucket-cap-mb 25]
        [--checkpoint ckpt.bp]

The task's model, data, optimizer (Adam, or AdamW with the task's clipping and warmup-cosine
lr) come from ``benchmarks.train.TASKS``. Every rank shuffles the training set alike and takes
every N-th row of each minibatch, so the N ranks together train on the same global batch one
process would; DistributedDataParallel averages their gradients (compiled: all-reduce steps
of the plan; ``--eager``: backward hooks). Each rank prints its own throughput; rank 0 prints
the test accuracy or perplexity and writes the checkpoint (``rt.save``, atomically).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import planner
import runtime as rt
from benchmarks.digits import minibatches
from benchmarks.train import TASKS, cross_entropy
from runtime import distributed as dist
from runtime.nn.parallel import DistributedDataParallel


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="digits", choices=["digits", "gpt"])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64, help="global, over all ranks")
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--max-steps", type=int, default=None, help="stop each epoch early")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bucket-cap-mb", type=float, default=None)
    parser.add_argument("--eager", action="store_true", help="do not compile the step")
    parser.add_argument("--checkpoint", default=None, help="an rt.save file written by rank 0")
    args = parser.parse_args(argv)
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.epochs < 1 or args.batch_size < world or not args.lr > 0:
        parser.error(f"--epochs and --lr must be positive and --batch-size at least the "
                     f"{world} ranks")
    task = TASKS[args.task]
    data = task.data(args.seed)
    rt.manual_seed(args.seed)
    model = task.build(rt)
    ddp = DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb)
    if task.weight_decay:
        opt = rt.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=task.weight_decay)
    else:
        opt = rt.optim.Adam(model.parameters(), lr=args.lr)
    per_epoch = len(data.x_train) // args.batch_size
    if args.max_steps:
        per_epoch = min(per_epoch, args.max_steps)
    total = max(1, args.epochs * per_epoch)
    schedule = None
    if task.cosine:
        warmup = max(1, total // 10)
        schedule = rt.optim.lr_scheduler.LambdaLR(opt, lambda i: (i + 1) / warmup if i < warmup
                                                  else 0.5 * (1 + math.cos(math.pi * (i - warmup)
                                                                           / max(1, total - warmup))))

    def train_step(xb: rt.Tensor, yb: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = cross_entropy(rt, ddp(xb), yb)
        loss.backward()
        if task.clip is not None:
            rt.nn.utils.clip_grad_norm_(model.parameters(), task.clip)
        opt.step()
        return loss.detach()

    step = train_step if args.eager else planner.compile(train_step)
    if rank == 0:
        print(f"{task.name} on {world} ranks, global batch {args.batch_size}, "
              f"{'eager' if args.eager else 'compiled'} DDP", flush=True)
    batch_rng = np.random.default_rng(args.seed)  # the same shuffle on every rank
    first_call = None
    for epoch in range(1, args.epochs + 1):
        losses, samples, seconds = [], 0, 0.0
        for idx in minibatches(len(data.x_train), args.batch_size, batch_rng)[:per_epoch]:
            idx = idx[:len(idx) - len(idx) % world]  # an equal share per rank: one plan
            mine = idx[rank::world]
            began = time.perf_counter()
            losses.append(step(rt.from_numpy(data.x_train[mine]),
                               rt.from_numpy(data.y_train[mine])))
            if first_call is None:  # capture, planning and compile: timed apart
                first_call = time.perf_counter() - began
                print(f"rank {rank}: first call {first_call:.2f} s", flush=True)
            else:
                seconds += time.perf_counter() - began
                samples += len(mine)
            if schedule is not None:
                schedule.step()
        seconds = max(seconds, 1e-9)
        loss = float(np.mean([v.item() for v in losses]))
        print(f"rank {rank} epoch {epoch}: {samples / seconds:,.0f} samples/s "
              f"({samples} samples in {seconds:.2f} s), loss on its shard {loss:.4f}", flush=True)
    model.eval()
    with rt.no_grad():
        logits = model(rt.from_numpy(data.x_test))
        if task.metric == "perplexity":
            result = math.exp(cross_entropy(rt, logits, rt.from_numpy(data.y_test)).item())
        else:
            result = float((logits.numpy().argmax(axis=-1) == data.y_test).mean())
    if rank == 0:
        shown = f"perplexity {result:.3f}" if task.metric == "perplexity" else \
            f"accuracy {result:.2%}"
        print(f"test {shown}", flush=True)
    if args.checkpoint:
        dist.save_checkpoint(dict(model.state_dict()), args.checkpoint)
    dist.destroy_process_group()
    return result


if __name__ == "__main__":
    main()
