"""Backward from several threads on one shared graph (retain_graph=True): every gradient lands.

PyTorch holds a mutex while AccumulateGrad adds into ``.grad``; without one, two threads that
read-modify-write the same ``.grad`` lose updates. Sums here are exact (float64, integer-valued
data), so the final gradient must equal the sequential sum to the last bit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
from tests.threads import in_threads, switch_interval

import runtime as rt

THREADS = 8
CALLS = 20  # backward calls per thread
SIZE = 1 << 18  # numpy releases the GIL inside an add this large: threads really overlap


@pytest.fixture(autouse=True)
def _frequent_switches() -> Iterator[None]:
    """Switch threads every microsecond, so unlocked read-modify-writes interleave."""
    with switch_interval(1e-6):
        yield


def _run_threads(work: Callable[[], None]) -> None:
    """THREADS threads, each calling ``work`` CALLS times."""
    def calls() -> None:
        for _ in range(CALLS):
            work()

    in_threads(*[calls] * THREADS)


def _weights() -> np.ndarray:
    return (np.arange(SIZE) % 7 + 1).astype(np.float64)


def test_leaf_grad_accumulates_every_thread_exactly() -> None:
    w = rt.tensor(_weights())
    x = rt.tensor(np.ones(SIZE), requires_grad=True)
    loss = (x * w).sum()  # one shared graph; d loss / dx = w
    _run_threads(lambda: loss.backward(retain_graph=True))
    np.testing.assert_array_equal(x.grad.numpy(), _weights() * (THREADS * CALLS))


def test_retained_grad_of_a_non_leaf_accumulates_every_thread_exactly() -> None:
    x = rt.tensor(np.ones(SIZE), requires_grad=True)
    h = x * 2.0
    h.retain_grad()
    loss = (h * rt.tensor(_weights())).sum()
    _run_threads(lambda: loss.backward(retain_graph=True))
    np.testing.assert_array_equal(h.grad.numpy(), _weights() * (THREADS * CALLS))
    np.testing.assert_array_equal(x.grad.numpy(), _weights() * (2 * THREADS * CALLS))


def test_create_graph_makes_one_accumulator_per_leaf_across_threads() -> None:
    # double backward builds new edges to x from every thread at once: they must all reach
    # the one AccumulateGrad of x (two would each add, unlocked against each other)
    x = rt.tensor(np.full(SIZE, 3.0), requires_grad=True)
    loss = (x * x * x).sum()

    def second_order() -> None:
        (g,) = rt.autograd.grad(loss, [x], create_graph=True, retain_graph=True)
        g.sum().backward(retain_graph=True)  # d/dx sum(3 x^2) = 6 x = 18

    _run_threads(second_order)
    np.testing.assert_array_equal(x.grad.numpy(), np.full(SIZE, 18.0 * THREADS * CALLS))
