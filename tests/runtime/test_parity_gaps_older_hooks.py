"""Module.register_backward_hook (the non-full hook): grad_input is laid out as PyTorch's
node that made the output has its inputs (addmm: bias, input, weight.t(); relu: the input
alone), and a hook's replacement reaches the same tensors."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

X = np.random.default_rng(0).standard_normal((2, 3))
MODULES: dict[str, Callable[[Any], Any]] = {
    "linear": lambda m: m.nn.Linear(3, 4),
    "linear_no_bias": lambda m: m.nn.Linear(3, 4, bias=False),
    "relu": lambda m: m.nn.ReLU(),
    "tanh": lambda m: m.nn.Tanh(),
    "linear_relu": lambda m: m.nn.Sequential(m.nn.Linear(3, 4), m.nn.ReLU()),
    "relu_linear": lambda m: m.nn.Sequential(m.nn.ReLU(), m.nn.Linear(3, 4)),
}


def _seen(mod: Any, name: str, input_requires_grad: bool) -> list[Any]:
    mod.manual_seed(0)
    module = MODULES[name](mod)
    seen: list[Any] = []
    module.register_backward_hook(lambda m, gin, gout: seen.append(
        [None if g is None else np.asarray(g.detach().numpy()) for g in gin]))
    x = mod.tensor(X, dtype=mod.float32, requires_grad=input_requires_grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module(x).sum().backward()
    return seen


def _weights(mod: Any, module: Any) -> None:
    with mod.no_grad():
        module.weight.copy_(mod.tensor(np.arange(12.0).reshape(4, 3) / 10))
        module.bias.copy_(mod.tensor(np.arange(4.0)))


# a parameterless module of an input that needs no grad makes no graph
LAYOUT_CASES = [(name, grad) for name in MODULES for grad in (True, False)
                if grad or name not in ("relu", "tanh")]


@pytest.mark.parametrize(("name", "input_requires_grad"), LAYOUT_CASES)
def test_grad_input_layout(name: str, input_requires_grad: bool) -> None:
    ours, theirs = (_seen(m, name, input_requires_grad) for m in (rt, torch))
    assert len(ours) == len(theirs) == 1
    assert len(ours[0]) == len(theirs[0])
    for a, b in zip(ours[0], theirs[0]):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.shape == b.shape


def test_linear_grad_input_values_and_replacement() -> None:
    results = []
    for mod in (rt, torch):
        layer = mod.nn.Linear(3, 4)
        _weights(mod, layer)
        seen: list[Any] = []

        def hook(m: Any, gin: Any, gout: Any, seen: list[Any] = seen) -> Any:
            seen.append([g.detach().numpy().copy() for g in gin])
            return gin[0] * 3, gin[1] * 2, gin[2] * 0 + 1

        layer.register_backward_hook(hook)
        x = mod.tensor(X, dtype=mod.float32, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (layer(x) * mod.tensor(np.arange(8.0).reshape(2, 4), dtype=mod.float32)).sum() \
                .backward()
        results.append((seen[0], x.grad.numpy(), layer.weight.grad.numpy(),
                        layer.bias.grad.numpy()))
    (seen, *grads), (t_seen, *t_grads) = results
    for a, b in zip(seen + grads, t_seen + t_grads):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_wrong_number_of_values_is_refused() -> None:
    layer = rt.nn.ReLU()
    layer.register_backward_hook(lambda m, gin, gout: (gin[0], gin[0]))
    x = rt.tensor(X, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match=r"has returned an incorrect number of values "
                           r"\(got 2, but expected 1\)"):
            layer(x).sum().backward()


LEAF_MODULES: dict[str, tuple[Callable[[Any], Any], tuple[int, ...]]] = {
    "conv2d": (lambda m: m.nn.Conv2d(2, 3, 3), (2, 2, 4, 5)),
    "conv2d_no_bias": (lambda m: m.nn.Conv2d(2, 3, 3, bias=False), (2, 2, 4, 5)),
    "conv1d": (lambda m: m.nn.Conv1d(2, 3, 3), (2, 2, 5)),
    "conv_transpose2d": (lambda m: m.nn.ConvTranspose2d(2, 3, 3), (2, 2, 4, 5)),
    "batch_norm": (lambda m: m.nn.BatchNorm2d(2), (2, 2, 4, 5)),
    "batch_norm_no_affine": (lambda m: m.nn.BatchNorm2d(2, affine=False), (2, 2, 4, 5)),
    "layer_norm": (lambda m: m.nn.LayerNorm(5), (2, 5)),
    "group_norm": (lambda m: m.nn.GroupNorm(1, 2), (2, 2, 4, 5)),
    "softmax": (lambda m: m.nn.Softmax(1), (2, 2, 4, 5)),
    "log_softmax": (lambda m: m.nn.LogSoftmax(1), (2, 2, 4, 5)),
    "gelu": (lambda m: m.nn.GELU(), (2, 2, 4, 5)),
    "sigmoid": (lambda m: m.nn.Sigmoid(), (2, 2, 4, 5)),
    "silu": (lambda m: m.nn.SiLU(), (2, 2, 4, 5)),
    "elu": (lambda m: m.nn.ELU(), (2, 2, 4, 5)),
    "leaky_relu": (lambda m: m.nn.LeakyReLU(), (2, 2, 4, 5)),
    "max_pool": (lambda m: m.nn.MaxPool2d(2), (2, 2, 4, 5)),
    "avg_pool": (lambda m: m.nn.AvgPool2d(2), (2, 2, 4, 5)),
    "adaptive_avg_pool": (lambda m: m.nn.AdaptiveAvgPool2d(1), (2, 2, 4, 5)),
}


def _leaf_seen(mod: Any, name: str) -> tuple[list[Any], str, list[Any]]:
    make, shape = LEAF_MODULES[name]
    module = make(mod)
    rng = np.random.default_rng(1)
    with mod.no_grad():
        for p in module.parameters():
            p.copy_(mod.tensor(rng.standard_normal(tuple(p.shape)), dtype=mod.float32))
    seen: list[Any] = []
    module.register_backward_hook(lambda m, gin, gout: seen.append(
        [None if g is None else np.asarray(g.detach().numpy()) for g in gin]))
    x = mod.tensor(np.random.default_rng(0).standard_normal(shape), dtype=mod.float32,
                   requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = module(x)
        (y * mod.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)),
                        dtype=mod.float32)).sum().backward()
    return seen, type(y.grad_fn).__name__, [None if p.grad is None else p.grad.numpy()
                                            for p in module.parameters()]


@pytest.mark.parametrize("name", list(LEAF_MODULES))
def test_grad_input_of_a_leaf_modules_op(name: str) -> None:
    (ours, node, grads), (theirs, t_node, t_grads) = _leaf_seen(rt, name), _leaf_seen(torch, name)
    assert node == t_node
    assert len(ours) == len(theirs) == 1 and len(ours[0]) == len(theirs[0])
    for a, b in zip(ours[0], theirs[0]):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)
    for a, b in zip(grads, t_grads):  # the hook's own backward leaves .grad as it was
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)


def test_replacing_a_composite_ops_grad_input_is_refused() -> None:
    layer = rt.nn.Softmax(1)
    layer.register_backward_hook(lambda m, gin, gout: (gin[0] * 2,))
    x = rt.ones(2, 3, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(NotImplementedError, match="use register_full_backward_hook"):
            layer(x).sum().backward()
