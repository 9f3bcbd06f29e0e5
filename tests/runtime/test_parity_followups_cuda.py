"""This session's parity changes on "cuda" tensors, through the fake CuPy (no GPU): pickling
and deep-copying a view, the single-rounding kernels, multi-output views."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import runtime as rt
from tests.fakecuda import fake_cuda_fixture  # noqa: F401 - the fake_cuda fixture

pytestmark = pytest.mark.usefixtures("fake_cuda")


def test_view_pickles_and_deep_copies_on_its_device():
    x = rt.arange(6.0, device="cuda").reshape(2, 3)
    v = x[:, 1:]
    for c in (pickle.loads(pickle.dumps(v)), copy.deepcopy(v)):
        assert c.device == v.device and c.tolist() == v.tolist() and c.is_leaf


def test_single_rounding_kernels_agree_with_the_cpu():
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(100).astype(np.float32) for _ in range(3))
    for op in [
        lambda d: rt.lerp(rt.tensor(a, device=d), rt.tensor(b, device=d), 0.3),
        lambda d: rt.addcmul(rt.tensor(a, device=d), rt.tensor(b, device=d),
                             rt.tensor(c, device=d), value=0.7),
        lambda d: rt.add(rt.tensor(a, device=d), rt.tensor(b, device=d), alpha=0.3),
    ]:
        assert op("cuda").device.type == "cuda"
        np.testing.assert_array_equal(op("cuda").cpu().numpy(), op("cpu").numpy())


def test_split_outputs_share_one_node_on_the_device():
    x = rt.ones(4, 3, device="cuda", requires_grad=True)
    a, b = (x * 1).split(2)
    assert a.grad_fn is b.grad_fn and (a.output_nr, b.output_nr) == (0, 1)
    (a.sum() + 2 * b.sum()).backward()
    assert x.grad.cpu().tolist() == [[1.0] * 3] * 2 + [[2.0] * 3] * 2
