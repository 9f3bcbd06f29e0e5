"""Train the digits MLP (64-128-10, Adam) data-parallel over MPI ranks:

    mpiexec -n 2 python examples/ddp_digits.py [--epochs 5] [--batch-size 64] [--eager]
                                               [--bucket-cap-mb 25] [--checkpoint ckpt.bp]

Every rank shuffles the training set alike and takes every N-th row of each minibatch, so the
N ranks together train on the same global batch that one process would (their gradients are
averaged by DistributedDataParallel: compiled, as all-reduce steps of the plan; ``--eager``,
through backward hooks). Each rank prints its own throughput; rank 0 prints loss and test
accuracy and writes the checkpoint (atomically).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import planner
import runtime as rt
from benchmarks.digits import load_digits, minibatches, train_test_split
from benchmarks.train_digits import LR, make_model
from runtime import distributed as dist
from runtime.nn.parallel import DistributedDataParallel


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64, help="global, over all ranks")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bucket-cap-mb", type=float, default=None)
    parser.add_argument("--eager", action="store_true", help="do not compile the step")
    parser.add_argument("--checkpoint", default=None, help="an rt.save file written by rank 0")
    args = parser.parse_args(argv)
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.epochs < 1 or args.batch_size < world:
        parser.error(f"--epochs must be positive and --batch-size at least the {world} ranks")

    X, y = load_digits()
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_fraction=0.2, seed=args.seed)
    rt.manual_seed(args.seed)
    model = make_model()
    ddp = DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb)
    loss_fn = rt.nn.CrossEntropyLoss()
    opt = rt.optim.Adam(model.parameters(), lr=LR)

    def train_step(xb: rt.Tensor, yb: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = loss_fn(ddp(xb), yb)
        loss.backward()
        opt.step()
        return loss.detach()

    step = train_step if args.eager else planner.compile(train_step)
    if rank == 0:
        print(f"digits MLP on {world} ranks, global batch {args.batch_size}, "
              f"{'eager' if args.eager else 'compiled'} DDP", flush=True)
    batch_rng = np.random.default_rng(args.seed)  # the same shuffle on every rank
    for epoch in range(1, args.epochs + 1):
        losses, samples, began = [], 0, time.perf_counter()
        for idx in minibatches(len(X_train), args.batch_size, batch_rng):
            idx = idx[:len(idx) - len(idx) % world]  # an equal share per rank: one plan
            mine = idx[rank::world]
            losses.append(step(rt.from_numpy(X_train[mine]), rt.from_numpy(y_train[mine])))
            samples += len(mine)
        seconds = time.perf_counter() - began
        loss = float(np.mean([v.item() for v in losses]))
        print(f"rank {rank} epoch {epoch}: {samples / seconds:,.0f} samples/s "
              f"({samples} samples in {seconds:.2f} s), loss on its shard {loss:.4f}", flush=True)
    with rt.no_grad():
        accuracy = float((model(rt.from_numpy(X_test)).numpy().argmax(axis=1) == y_test).mean())
    if rank == 0:
        print(f"test accuracy {accuracy:.2%}", flush=True)
    if args.checkpoint:
        dist.save_checkpoint(dict(model.state_dict()), args.checkpoint)
    dist.destroy_process_group()
    return accuracy


if __name__ == "__main__":
    main()
