"""The UCI optical digits data set (data/digits.csv.gz), loaded with numpy only."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

DIGITS_PATH = Path(__file__).resolve().parent.parent / "data" / "digits.csv.gz"
N_FEATURES = 64
N_CLASSES = 10


def load_digits(path: str | Path = DIGITS_PATH) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(X, y)``: X float32 of shape (1797, 64) in [0, 1], y int64 labels 0..9."""
    with gzip.open(path, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.int64)
    if table.ndim != 2 or table.shape[1] != N_FEATURES + 1:
        raise ValueError(f"{path}: expected {N_FEATURES + 1} columns, got shape {table.shape}")
    # Pixel values count "on" pixels in a 4x4 block, so they lie in 0..16.
    X = (table[:, :N_FEATURES] / 16.0).astype(np.float32)
    y = table[:, N_FEATURES].astype(np.int64)
    return X, y


def train_test_split(
    X: np.ndarray, y: np.ndarray, test_fraction: float = 0.2, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Shuffle with ``seed`` and split into ``(X_train, X_test, y_train, y_test)``.

    Deterministic: the same seed gives the same split on every machine.
    """
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    if len(X) != len(y):
        raise ValueError(f"X and y differ in length: {len(X)} != {len(y)}")
    order = np.random.default_rng(seed).permutation(len(X))
    n_test = round(len(X) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return X[train], X[test], y[train], y[test]


def minibatches(n: int, batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Index arrays for one shuffled epoch over ``n`` samples (the last batch may be short)."""
    order = rng.permutation(n)
    return [order[i : i + batch_size] for i in range(0, n, batch_size)]
