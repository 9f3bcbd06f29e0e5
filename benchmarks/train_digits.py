"""Train a 64-128-10 MLP on the UCI handwritten digits with the eager runtime.

    python -m benchmarks.train_digits [--epochs 10] [--batch-size 32] [--seed 0]

Prints the loss and test accuracy after each epoch and the mean time of one training step.
Once ``planner.compile`` exists, a twin model with the same initial weights trains on the
same minibatches through the compiled step, and eager and compiled are compared side by side.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import planner
import runtime as rt
from benchmarks.digits import N_CLASSES, N_FEATURES, load_digits, minibatches, train_test_split

HIDDEN = 128
LR = 1e-2


@dataclass
class Trainer:
    """A model, its optimizer and the step that trains it; records loss and step times."""

    model: Any
    step: Callable[[Any, Any], Any]
    losses: list[float] = field(default_factory=list)
    step_times: list[float] = field(default_factory=list)

    def train_batch(self, xb: Any, yb: Any) -> float:
        start = time.perf_counter()
        loss = self.step(xb, yb)
        self.step_times.append(time.perf_counter() - start)
        self.losses.append(loss.item())
        return self.losses[-1]

    def end_epoch(self) -> tuple[float, float]:
        """Mean loss and median step time (seconds) since the last call."""
        mean_loss, median_time = float(np.mean(self.losses)), float(np.median(self.step_times))
        self.losses.clear()
        self.step_times.clear()
        return mean_loss, median_time

    def accuracy(self, X: np.ndarray, y: np.ndarray) -> float:
        with rt.no_grad():
            logits = self.model(rt.from_numpy(X))
        return float((logits.numpy().argmax(axis=1) == y).mean())


def make_model() -> Any:
    return rt.nn.Sequential(
        rt.nn.Linear(N_FEATURES, HIDDEN), rt.nn.ReLU(), rt.nn.Linear(HIDDEN, N_CLASSES)
    )


def make_trainer(model: Any, compile_fn: Callable[[Any], Any] | None = None) -> Trainer:
    loss_fn = rt.nn.CrossEntropyLoss()
    opt = rt.optim.Adam(model.parameters(), lr=LR)

    def train_step(xb: Any, yb: Any) -> Any:
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    return Trainer(model, compile_fn(train_step) if compile_fn else train_step)


def twin_of(model: Any) -> Any:
    """A second model holding copies of ``model``'s current weights."""
    twin = make_model()
    with rt.no_grad():
        for p, q in zip(twin.parameters(), model.parameters(), strict=True):
            p.copy_(q)
    return twin


def main(argv: list[str] | None = None) -> float:
    """Run the training job; return the final test accuracy of the eager model."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.batch_size < 1:
        parser.error("--epochs and --batch-size must be positive")

    X, y = load_digits()
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_fraction=0.2, seed=args.seed)
    print(f"digits: {len(X_train)} train / {len(X_test)} test samples, {N_FEATURES} features")

    rt.manual_seed(args.seed)
    eager = make_trainer(make_model())
    compile_fn = getattr(planner, "compile", None)
    compiled = make_trainer(twin_of(eager.model), compile_fn) if compile_fn else None
    print(
        f"MLP {N_FEATURES}-{HIDDEN}-{N_CLASSES}, ReLU, cross-entropy, Adam lr={LR}, "
        f"batch {args.batch_size}, {args.epochs} epochs"
    )
    if compiled is None:
        print("compiled mode is not available yet (planner.compile missing): eager only")

    batch_rng = np.random.default_rng(args.seed)
    for epoch in range(1, args.epochs + 1):
        for idx in minibatches(len(X_train), args.batch_size, batch_rng):
            xb, yb = rt.from_numpy(X_train[idx]), rt.from_numpy(y_train[idx])
            eager.train_batch(xb, yb)
            if compiled is not None:
                compiled.train_batch(xb, yb)
        loss, step_time = eager.end_epoch()
        line = (
            f"epoch {epoch:3d}  loss {loss:.4f}  test acc {eager.accuracy(X_test, y_test):.2%}  "
            f"step {step_time * 1e3:.3f} ms"
        )
        if compiled is not None:
            c_loss, c_time = compiled.end_epoch()
            line += (
                f"  | compiled: loss {c_loss:.4f}  test acc "
                f"{compiled.accuracy(X_test, y_test):.2%}  step {c_time * 1e3:.3f} ms  "
                f"(eager/compiled {step_time / c_time:.2f}x)"
            )
        print(line, flush=True)

    final = eager.accuracy(X_test, y_test)
    print(f"final test accuracy: {final:.2%}")
    return final


if __name__ == "__main__":
    main()
