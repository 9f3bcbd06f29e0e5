"""Compiled training steps against eager mode for the modules h17's port of PyTorch's nn
tests touched (EmbeddingBag's checks and its include_last_offset with padding_idx, empty max
bags, Embedding's padding_idx, adaptive pools, forward hooks that rewrite inputs and
outputs): the same losses, parameters and gradients after every call, and no fallback."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

nn = rt.nn


def _bag(mode: str) -> Callable[[], tuple[nn.Module, Callable[..., Any], tuple]]:
    def make() -> tuple[nn.Module, Callable[..., Any], tuple]:
        model = nn.EmbeddingBag(20, 4, mode=mode, include_last_offset=True, padding_idx=3)
        inputs = (rt.tensor([0, 3, 5, 7, 3, 9, 11]), rt.tensor([0, 2, 2, 5]))
        return model, lambda m, i, o: m(i, o), inputs
    return make


def _empty_max_bag() -> tuple[nn.Module, Callable[..., Any], tuple]:
    model = nn.EmbeddingBag(6, 3, mode="max")
    inputs = (rt.tensor([], dtype=rt.long), rt.tensor([0, 0, 0]))
    return model, lambda m, i, o: m(i, o), inputs


def _per_sample_bag() -> tuple[nn.Module, Callable[..., Any], tuple]:
    model = nn.EmbeddingBag(10, 3, mode="sum")
    inputs = (rt.tensor([3, 1, 1, 1, 4, 0]), rt.tensor([0, 0, 3, 3, 6]),
              rt.tensor([0.5, 1.0, 2.0, -1.0, 0.25, 3.0]))
    return model, lambda m, i, o, w: m(i, o, w), inputs


def _embedding_padding() -> tuple[nn.Module, Callable[..., Any], tuple]:
    model = nn.Embedding(10, 4, padding_idx=-2)
    return model, lambda m, i: m(i), (rt.tensor([[0, 2, 8, 5], [4, 8, 0, 9]]),)


def _adaptive(cls: Any, size: Any) -> Callable[[], tuple[nn.Module, Callable[..., Any], tuple]]:
    def make() -> tuple[nn.Module, Callable[..., Any], tuple]:
        model = nn.Sequential(nn.Conv1d(2, 3, 1), cls(size))
        return model, lambda m, x: m(x), (rt.randn(2, 2, 7),)
    return make


def _hooked() -> tuple[nn.Module, Callable[..., Any], tuple]:
    model = nn.Linear(4, 3)
    model.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    model.register_forward_hook(lambda m, args, out: out.tanh())
    return model, lambda m, x: m(x), (rt.randn(5, 4),)


_CASES: dict[str, Callable[[], tuple[nn.Module, Callable[..., Any], tuple]]] = {
    "bag_sum_last_offset_padding": _bag("sum"),
    "bag_mean_last_offset_padding": _bag("mean"),
    "bag_max_last_offset_padding": _bag("max"),
    "bag_max_all_empty": _empty_max_bag,
    "bag_per_sample_weights": _per_sample_bag,
    "embedding_negative_padding_idx": _embedding_padding,
    "adaptive_avg_pool1d": _adaptive(nn.AdaptiveAvgPool1d, 3),
    "adaptive_max_pool1d": _adaptive(nn.AdaptiveMaxPool1d, 3),
    "forward_hooks": _hooked,
}


def _train(name: str, compiled: bool) -> tuple[list[float], list[np.ndarray]]:
    rt.manual_seed(0)
    model, call, inputs = _CASES[name]()
    params = list(model.parameters())
    opt = rt.optim.SGD(params, lr=0.1)

    def step(*args: Any) -> rt.Tensor:
        opt.zero_grad()
        loss = call(model, *args).pow(2).sum()
        loss.backward()
        opt.step()
        return loss

    run = planner.compile(step) if compiled else step
    losses = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager warns: fail on it
        for _ in range(3):
            losses.append(float(run(*inputs)))
    state = [p.detach().numpy().copy() for p in params]
    state += [p.grad.numpy().copy() for p in params if p.grad is not None]
    return losses, state


@pytest.mark.parametrize("name", sorted(_CASES))
def test_compiled_equals_eager(name: str) -> None:
    eager_losses, eager_state = _train(name, compiled=False)
    compiled_losses, compiled_state = _train(name, compiled=True)
    # float32 to a few ulps: a fused backward sums in its own order (the same gap with the
    # hooks' ops written inline, as test_compile_equivalence allows)
    np.testing.assert_allclose(compiled_losses, eager_losses, rtol=1e-5, atol=1e-6)
    assert len(compiled_state) == len(eager_state)
    for c, e in zip(compiled_state, eager_state):
        np.testing.assert_allclose(c, e, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("compiled", [False, True])
def test_bag_index_out_of_range_raises_torch_error(compiled: bool) -> None:
    model = nn.EmbeddingBag(5, 2, mode="sum")

    def step(i: rt.Tensor, o: rt.Tensor) -> rt.Tensor:
        return model(i, o).sum()

    run = planner.compile(step) if compiled else step
    run(rt.tensor([0, 1, 4]), rt.tensor([0, 2]))
    with pytest.raises(RuntimeError, match="embedding_bag: Expected idx >= 0 && idx < "
                       "num_embeddings but found idx to be 7"):
        run(rt.tensor([0, 7, 4]), rt.tensor([0, 2]))
