"""The engine's per-device worker threads, exercised without a GPU.

CuPy is the strict fake of tests/fake_cupy.py, so tensors on "cuda:0" hold its arrays; the engine
routes their backward nodes to the cuda:0 worker thread, which is what these tests check.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import runtime as rt
from runtime.tensor import Tensor
from tests.fakecuda import fake_cuda_fixture  # noqa: F401 - the fake_cuda fixture


def _cuda_leaf(values: list[float]) -> Tensor:
    return rt.tensor(values, device="cuda:0", requires_grad=True)


class RecordThread(rt.autograd.Function):
    seen: list[str] = []

    @staticmethod
    def forward(ctx, x):  # type: ignore[no-untyped-def]
        return x * 1.0

    @staticmethod
    def backward(ctx, g):  # type: ignore[no-untyped-def]
        RecordThread.seen.append(threading.current_thread().name)
        return g * 2.0


def test_cuda_nodes_run_on_the_device_worker_thread(fake_cuda: object) -> None:
    RecordThread.seen = []
    x = _cuda_leaf([1.0, 2.0, 3.0])
    y = RecordThread.apply(x * x).sum()
    y.backward()
    assert RecordThread.seen == ["autograd-cuda:0"]
    np.testing.assert_allclose(x.grad.cpu().numpy(), 4.0 * np.array([1.0, 2.0, 3.0]))
    assert x.grad.device == "cuda:0"


def test_cpu_nodes_run_on_the_calling_thread() -> None:
    RecordThread.seen = []
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    RecordThread.apply(x).sum().backward()
    assert RecordThread.seen == [threading.current_thread().name]


class Boom(rt.autograd.Function):
    @staticmethod
    def forward(ctx, x):  # type: ignore[no-untyped-def]
        return x * 1.0

    @staticmethod
    def backward(ctx, g):  # type: ignore[no-untyped-def]
        raise ValueError("boom on the device thread")


def test_error_on_device_thread_is_raised_in_caller(fake_cuda: object) -> None:
    x = _cuda_leaf([1.0])
    with pytest.raises(ValueError, match="boom on the device thread") as info:
        Boom.apply(x).sum().backward()
    assert any("BoomBackward" in n for n in getattr(info.value, "__notes__", []))
    # the device thread survives the error and serves the next backward
    x2 = _cuda_leaf([3.0])
    (x2 * x2).sum().backward()
    np.testing.assert_allclose(x2.grad.cpu().numpy(), [6.0])
