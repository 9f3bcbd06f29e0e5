"""runtime.sampling on "cuda" tensors, proven without a GPU (the strict fake CuPy): results stay
on the device, draws come from that device's generator (rt.manual_seed seeds it), and no
implicit host copy happens."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
from tests.fakecuda import fake_cuda_fixture  # noqa: F401 - the fake_cuda fixture

pytestmark = pytest.mark.usefixtures("fake_cuda")


def test_samplers_stay_on_the_device_and_are_seeded() -> None:
    mean = rt.zeros(4, device="cuda", requires_grad=True)
    std = rt.ones(4, device="cuda")
    results = []
    for _ in range(2):
        rt.manual_seed(9)
        draws = [rt.normal(mean, std), rt.normal(0.0, 1.0, (4,), device="cuda"),
                 rt.bernoulli(rt.full((4,), 0.5, device="cuda")),
                 rt.poisson(rt.full((4,), 3.0, device="cuda")),
                 rt.binomial(rt.full((4,), 5.0, device="cuda"), rt.full((4,), 0.5, device="cuda")),
                 rt.empty(4, device="cuda").cauchy_(),
                 rt.empty(4, device="cuda").log_normal_(),
                 rt.empty(4, device="cuda").geometric_(0.5)]
        assert all(d.device == "cuda:0" for d in draws)
        results.append([d.detach().cpu().numpy() for d in draws])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
    rt.normal(mean, std).sum().backward()
    assert mean.grad.device == "cuda:0"
    assert float(mean.grad.abs().sum()) == 0.0
