"""planner.compile against eager mode on nn training steps around this branch's area: a
pruned Linear trained with SGD (the pruning pre-hook's ``mask * weight_orig`` every forward),
an LSTM over a packed batch, a TransformerEncoderLayer (math path), and an orthogonally
parametrized weight. Each step runs twice compiled and twice eagerly on twin models: same
losses, same parameters, same gradients, and no fallback but the two named where they are
(``allowed``): the packed LSTM's batch sizes are values the step reads, and the pruning
hook's assignment of ``module.weight`` is a planner gap."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import planner
import runtime as rt
import runtime.nn as nn
from runtime.nn.utils import parametrizations, prune
from runtime.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


def _fallbacks(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught
            if w.category is RuntimeWarning and str(w.message).startswith("planner")]


def _run(make: Callable[[], tuple[nn.Module, Callable[..., Any]]], args: tuple[Any, ...],
         compiled: bool, allowed: str = "", calls: int = 2
         ) -> tuple[list[np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Losses, parameters and grads after ``calls`` steps of a freshly made (seeded) model;
    a fallback other than one whose message holds ``allowed`` fails."""
    rt.manual_seed(0)
    model, step = make()
    run = planner.compile(step) if compiled else step
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        losses = [run(*args).detach().numpy().copy() for _ in range(calls)]
    assert all(allowed and allowed in m for m in _fallbacks(caught)), _fallbacks(caught)
    params = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    grads = {k: p.grad.numpy().copy() for k, p in model.named_parameters()
             if p.grad is not None}
    return losses, params, grads


def _assert_compiled_equals_eager(make: Callable[[], tuple[nn.Module, Callable[..., Any]]],
                                  *args: Any, allowed: str = "") -> None:
    got, want = _run(make, args, True, allowed), _run(make, args, False)
    for g, w in zip(got[0], want[0], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    for got_dict, want_dict in zip(got[1:], want[1:], strict=True):
        assert got_dict.keys() == want_dict.keys()
        for k in want_dict:
            np.testing.assert_allclose(got_dict[k], want_dict[k], rtol=1e-5, atol=1e-6,
                                       err_msg=k)


def _sgd_step(model: nn.Module, loss_of: Callable[..., Any]) -> Callable[..., Any]:
    opt = rt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(*args: Any) -> Any:
        opt.zero_grad()
        loss = loss_of(*args)
        loss.backward()
        opt.step()
        return loss

    return step


def test_pruned_linear_trained_with_sgd() -> None:
    """The pruning pre-hook sets ``model.weight = weight_mask * weight_orig`` each forward (as
    the older weight_norm's does): the plan returns that tensor and each replay stores it
    (tests/planner/test_module_attribute_writes_h34.py), with no fallback."""
    def make() -> tuple[nn.Module, Callable[..., Any]]:
        model = nn.Linear(6, 3)
        prune.l1_unstructured(model, "weight", amount=0.5)
        prune.random_structured(model, "weight", amount=1, dim=0)
        return model, _sgd_step(model, lambda x: model(x).square().mean())

    x = rt.randn(4, 6)
    _assert_compiled_equals_eager(make, x)
    _, params, grads = _run(make, (x,), True)
    # the pruned entries of weight_orig get no gradient (so SGD leaves them as they were)
    assert (grads["weight_orig"][params["weight_mask"] == 0] == 0).all()


def test_lstm_over_a_packed_batch() -> None:
    """A packed batch's shape is its lengths' values: the LSTM runs ``batch_sizes[t]`` rows
    at step t, read from the CPU tensor as PyTorch's kernel reads it (torch.compile breaks
    its graph there too), so the step runs eagerly, with the same results."""
    def make() -> tuple[nn.Module, Callable[..., Any]]:
        model = nn.LSTM(3, 4, batch_first=True)

        def loss_of(x: Any, lengths: Any) -> Any:
            packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            out, (h, c) = model(packed)
            padded, _ = pad_packed_sequence(out, batch_first=True)
            return padded.sum() + h.square().sum() + c.mean()

        return model, _sgd_step(model, loss_of)

    _assert_compiled_equals_eager(make, rt.randn(3, 5, 3), rt.tensor([2, 5, 3]),
                                  allowed="Tensor.tolist() reads a tensor's value")


def test_transformer_encoder_layer() -> None:
    def make() -> tuple[nn.Module, Callable[..., Any]]:
        model = nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0,
                                           batch_first=True)
        mask = nn.Transformer.generate_square_subsequent_mask(3)
        return model, _sgd_step(model, lambda x: model(x, src_mask=mask).square().mean())

    _assert_compiled_equals_eager(make, rt.randn(2, 3, 4))


def test_orthogonal_parametrization() -> None:
    def make() -> tuple[nn.Module, Callable[..., Any]]:
        model = parametrizations.orthogonal(nn.Linear(4, 4))
        return model, _sgd_step(model, lambda x: (model(x) - x.flip(-1)).square().mean())

    _assert_compiled_equals_eager(make, rt.randn(3, 4))
