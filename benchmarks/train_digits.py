"""Train a 64-128-10 MLP on the UCI handwritten digits: ``backplan train --task digits``.

    python -m benchmarks.train_digits [--epochs 10] [--batch-size 32] [--seed 0] ...

Kept as an alias of ``python -m benchmarks.train`` with the digits task (benchmarks/train.py):
eager, compiled and PyTorch (when importable) from the same initial weights, side by side.
"""

from __future__ import annotations

from benchmarks import train


def main(argv: list[str] | None = None) -> float:
    """Run the training job; return the final test accuracy of the eager model."""
    runs = train.main(["--task", "digits", *(argv or [])])
    return next(iter(runs.values())).metrics[-1]


if __name__ == "__main__":
    main()
