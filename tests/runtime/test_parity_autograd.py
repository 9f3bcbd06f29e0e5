"""Parity of rt.autograd.grad / backward with torch 2.13: arguments, results and error texts."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt


def npa(t):
    return t.detach().numpy()


def test_grad_unused_names_the_input_index():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    z = rt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^The differentiated Tensor at index 1 appears to not "
                       r"have been used in the graph\. Set allow_unused=True"):
        rt.autograd.grad((x * 2).sum(), [x, z])


def test_grad_empty_inputs_text():
    x = rt.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^`inputs` argument to `grad\(\)` cannot be empty\.$"):
        rt.autograd.grad(x.sum(), [])


def test_grad_outputs_count_and_integer_grad_output():
    x = rt.tensor([1.0, 2.0], dtype=rt.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="^got 2 tensors and 1 gradients$"):
        rt.autograd.grad([x.sum(), x.sum()], [x], grad_outputs=[rt.tensor(1.0)])
    # a real grad_output of another dtype is accepted and cast to the output's dtype
    y = x * 2
    (g,) = rt.autograd.grad(y, y, grad_outputs=rt.tensor([1, 2]))
    assert g.dtype is rt.float64
    np.testing.assert_array_equal(npa(g), [1.0, 2.0])
    (g,) = rt.autograd.grad(x * 2, x, grad_outputs=rt.tensor([1, 2]))
    np.testing.assert_array_equal(npa(g), [2.0, 4.0])


def test_backward_empty_tensors_is_a_no_op_and_inputs_errors():
    rt.autograd.backward([])
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="^can't retain_grad on Tensor that has requires_grad"):
        (x * 2).sum().backward(inputs=[rt.tensor([1.0])])


def test_dict_inputs():
    w = rt.tensor([1.0, 2.0], requires_grad=True)
    b = rt.tensor([3.0], requires_grad=True)
    y = (w * 3).sum() + b.sum() * 2
    g = rt.autograd.grad(y, {"w": w, "b": b}, retain_graph=True)
    assert list(g) == ["w", "b"]
    np.testing.assert_array_equal(npa(g["w"]), [3.0, 3.0])
    np.testing.assert_array_equal(npa(g["b"]), [2.0])
    y.backward(inputs={"b": b})
    assert w.grad is None
    np.testing.assert_array_equal(npa(b.grad), [2.0])


def test_materialize_grads_requires_grad_under_create_graph():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    z = rt.tensor([1.0], requires_grad=True)
    _, gz = rt.autograd.grad((x * x).sum(), [x, z], materialize_grads=True, create_graph=True)
    assert gz.requires_grad and npa(gz).tolist() == [0.0]


def test_is_grads_batched_rows_of_the_jacobian():
    x = rt.tensor([1.0, 2.0, 3.0], dtype=rt.float64, requires_grad=True)
    y = x * x
    (jac,) = rt.autograd.grad(y, x, grad_outputs=rt.eye(3, dtype=rt.float64),
                              is_grads_batched=True)
    np.testing.assert_array_equal(npa(jac), np.diag([2.0, 4.0, 6.0]))
    assert y.grad_fn is not None  # the graph is freed after the last row only
    # PyTorch 2.13 names the shape of grad_output[0][0] less its first dim (here [])
    with pytest.raises(RuntimeError, match=r"^If `is_grads_batched=True`, we interpret the first "
                       r"dimension .* grad_output\[0\] has a shape of torch\.Size\(\[\]\) and "
                       r"output\[0\] has a shape of torch\.Size\(\[3\]\)\."):
        rt.autograd.grad(x * 2, x, grad_outputs=rt.ones(3, 2), is_grads_batched=True)


def test_api_matches_torch():
    torch = pytest.importorskip("torch")
    for lib in (rt, torch):
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        w = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = (x * w).tanh()
        out = lib.autograd.grad(y, {"x": x, "w": w}, grad_outputs=lib.eye(3, dtype=lib.float64),
                                is_grads_batched=True, retain_graph=True)
        (gw,) = lib.autograd.grad(y.sum(), w, create_graph=True)
        (hww,) = lib.autograd.grad(gw.sum(), w)
        vals = [out["x"].detach().numpy(), out["w"].detach().numpy(), hww.numpy()]
        if lib is rt:
            ours = vals
    for a, b in zip(ours, vals):
        np.testing.assert_allclose(a, b, rtol=1e-12)
