"""rt.autograd.graph.get_gradient_edge / GradientEdge, and autograd.grad taking edges as
inputs and outputs (PyTorch 2.13)."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
from runtime.autograd.graph import GradientEdge, get_gradient_edge


def test_the_edge_of_a_result_and_of_a_leaf() -> None:
    x = rt.randn(3, requires_grad=True)
    y = x * 2
    edge = get_gradient_edge(y)
    assert isinstance(edge, GradientEdge) and edge.node is y.grad_fn and edge.output_nr == 0
    leaf = get_gradient_edge(x)
    assert leaf.node.name() == "torch::autograd::AccumulateGrad" and leaf.output_nr == 0
    with pytest.raises(RuntimeError, match="does not require gradients"):
        get_gradient_edge(rt.randn(2))


def test_grad_into_an_edge_survives_an_in_place_change() -> None:
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    edge = get_gradient_edge(y)  # the edge into mul's node, before y is changed in place
    y.mul_(3)
    z = (y * y).sum()  # = 36 x^2: 36 y0 flows into the edge (y0 = 2x), 72 x into x
    g_edge, g_x = rt.autograd.grad(z, [edge, x], retain_graph=True)
    np.testing.assert_allclose(g_edge.numpy(), [36.0, 72.0, 108.0])
    np.testing.assert_allclose(g_x.numpy(), [72.0, 144.0, 216.0])
    (only,) = rt.autograd.grad(z, edge)  # one edge, not a sequence of its fields
    np.testing.assert_allclose(only.numpy(), g_edge.numpy())


def test_an_edge_as_output_needs_its_gradient() -> None:
    x = rt.randn(3, requires_grad=True)
    y = x * 2
    (g,) = rt.autograd.grad([get_gradient_edge(y)], x, grad_outputs=[rt.ones(3)],
                            retain_graph=True)
    np.testing.assert_allclose(g.numpy(), [2.0, 2.0, 2.0])
    # as PyTorch 2.13: a non-scalar edge's gradient cannot be implicitly created, a scalar's is
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar "
                                           "outputs$"):
        rt.autograd.grad([get_gradient_edge(y)], x)
    (g,) = rt.autograd.grad([get_gradient_edge(y.sum())], x)
    np.testing.assert_allclose(g.numpy(), [2.0, 2.0, 2.0])


def test_as_torch() -> None:
    torch = pytest.importorskip("torch")
    from torch.autograd.graph import get_gradient_edge as t_edge

    data = np.array([[0.5, -1.0], [2.0, 0.25]], np.float64)
    results = []
    for lib, edge_of in ((rt, get_gradient_edge), (torch, t_edge)):
        w = lib.tensor(data, requires_grad=True)
        h = lib.tanh(w @ w)
        out = (h.sin() * 3).sum()
        results.append([g.detach().numpy() for g in lib.autograd.grad(
            out, [edge_of(h), w, edge_of(w)])])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
