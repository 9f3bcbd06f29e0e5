"""A gradient-logging script ported from PyTorch by changing the import: one hook on the
gradients of several tensors (``torch.autograd.graph.register_multi_grad_hook``), called once
per backward when all of them that the backward reaches have theirs ("all"), or with the
first ("any"), as PyTorch calls it."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def as_lists(grads: Any) -> Any:
    if grads is None:
        return None
    if isinstance(grads, (list, tuple)):
        return [as_lists(g) for g in grads]
    return np.round(grads.detach().numpy(), 6).tolist()


def layer_log(lib: ModuleType) -> list[Any]:
    """A layer's weight and bias gradients logged together at each backward, through
    backward twice on a retained graph, accumulation, backward(inputs=...) and
    autograd.grad reaching only some of them, then with the hook removed."""
    lin = lib.nn.Linear(3, 2)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]]))
        lin.bias.copy_(lib.tensor([0.1, -0.2]))
    log: list[Any] = []
    handle = lib.autograd.graph.register_multi_grad_hook(
        (lin.weight, lin.bias), lambda grads: log.append(("all", as_lists(grads))))
    first = lib.autograd.graph.register_multi_grad_hook(
        (lin.weight, lin.bias), lambda grad: log.append(("any", as_lists(grad))), mode="any")
    x = lib.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], requires_grad=True)
    loss = lin(x).tanh().sum()
    loss.backward(retain_graph=True)
    loss.backward(retain_graph=True)
    log.append("inputs=[bias]")
    loss.backward(inputs=[lin.bias], retain_graph=True)
    log.append("grad of x only")  # PyTorch refuses to count leaves for autograd.grad
    try:
        lib.autograd.grad(loss, [x], retain_graph=True)
    except RuntimeError as e:
        log.append(str(e).splitlines()[0])
    handle.remove()
    first.remove()
    loss.backward()
    log.append(as_lists([lin.weight.grad, lin.bias.grad]))
    return log


def test_multi_grad_hook_calls_as_pytorch() -> None:
    want = layer_log(torch)
    assert want.count("grad of x only") == 1 and len(want) > 8
    assert layer_log(rt) == want


def test_multi_grad_hook_on_outputs_in_a_two_headed_net() -> None:
    """Hooks on two intermediate results: 'all' waits for both heads' gradients."""
    def run(lib: ModuleType) -> list[Any]:
        x = lib.tensor([1.0, -2.0, 0.5], requires_grad=True)
        h1, h2 = x * 2, x.exp()
        log: list[Any] = []
        lib.autograd.graph.register_multi_grad_hook(
            (h1, h2), lambda grads: log.append(as_lists(grads)))
        (h1.sin().sum() + (h2 * h1).sum()).backward(retain_graph=True)
        h2.sum().backward()  # h1 is not in this graph: None
        return log

    assert run(rt) == run(torch)


def test_multi_grad_hook_errors() -> None:
    for lib in (torch, rt):
        t = lib.ones(2, requires_grad=True)
        with pytest.raises(ValueError, match=r"Expects mode to be one of \('all', 'any'\) but "
                                             "got some"):
            lib.autograd.graph.register_multi_grad_hook((t,), print, mode="some")
