"""nn.TransformerEncoder compiled: a training step equal to eager, without falling back.
(Against PyTorch: test_transformer_layers_torch.py.)"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

import planner
import runtime as rt


def test_a_compiled_training_step_equals_eager() -> None:
    def build() -> tuple[Any, Any]:
        rt.manual_seed(0)
        layer = rt.nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0,
                                              batch_first=True, norm_first=True)
        enc = rt.nn.TransformerEncoder(layer, 2)
        head = rt.nn.Linear(16, 7)
        params = [*enc.parameters(), *head.parameters()]
        # SGD: the key projection's bias has a gradient of exactly zero in exact arithmetic
        # (softmax ignores a constant added to every score), rounding noise in practice,
        # which Adam would normalise into full-size steps that differ run to run
        opt = rt.optim.SGD(params, lr=0.05, momentum=0.9)
        causal = rt.tensor(np.triu(np.full((6, 6), -np.inf, dtype=np.float32), 1))

        def step(x: Any, y: Any) -> Any:
            opt.zero_grad()
            logits = head(enc(x, mask=causal, is_causal=True))
            loss = rt.nn.functional.cross_entropy(logits.reshape(-1, 7), y.reshape(-1))
            loss.backward()
            opt.step()
            return loss

        return step, params

    g = np.random.default_rng(1)
    x = rt.tensor(g.standard_normal((4, 6, 16)).astype(np.float32))
    y = rt.tensor(g.integers(0, 7, (4, 6)))
    eager_step, eager_params = build()
    fn, params = build()
    step = planner.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [float(step(x, y)) for _ in range(4)]
    want = [float(eager_step(x, y)) for _ in range(4)]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for a, b in zip(params, eager_params, strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4,
                                   atol=1e-5)


def test_a_compiled_encoder_decoder_step_equals_eager() -> None:
    def build() -> tuple[Any, Any]:
        rt.manual_seed(2)
        model = rt.nn.Transformer(16, 4, num_encoder_layers=1, num_decoder_layers=1,
                                  dim_feedforward=32, dropout=0.0, batch_first=True)
        head = rt.nn.Linear(16, 5)
        params = [*model.parameters(), *head.parameters()]
        opt = rt.optim.SGD(params, lr=0.05, momentum=0.9)
        mask = rt.nn.Transformer.generate_square_subsequent_mask(4)

        def step(src: Any, tgt: Any, y: Any) -> Any:
            opt.zero_grad()
            out = head(model(src, tgt, tgt_mask=mask, tgt_is_causal=True))
            loss = rt.nn.functional.cross_entropy(out.reshape(-1, 5), y.reshape(-1))
            loss.backward()
            opt.step()
            return loss

        return step, params

    g = np.random.default_rng(4)
    src = rt.tensor(g.standard_normal((3, 6, 16)).astype(np.float32))
    tgt = rt.tensor(g.standard_normal((3, 4, 16)).astype(np.float32))
    y = rt.tensor(g.integers(0, 5, (3, 4)))
    eager_step, eager_params = build()
    fn, params = build()
    step = planner.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [float(step(src, tgt, y)) for _ in range(4)]
    want = [float(eager_step(src, tgt, y)) for _ in range(4)]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for a, b in zip(params, eager_params, strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4,
                                   atol=1e-5)
