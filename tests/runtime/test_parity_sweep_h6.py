"""Module- and training-loop-level parity with PyTorch found by the h6 sweep (eager mode)."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("layer", ["linear", "batchnorm"])
def test_module_to_float64_while_the_last_graph_is_alive(layer: str) -> None:
    """``model.to(torch.float64)`` between training steps, the last step's loss (and so its
    graph and each parameter's accumulator) still alive: the next backward gives float64
    gradients, as PyTorch's set_data resets a leaf's accumulator when the dtype changes (the
    old accumulator cast the gradient to float32 and the .grad assignment raised)."""
    x = np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32)
    got = []
    for lib in (torch, rt):
        lib.manual_seed(0)
        model = lib.nn.Linear(6, 3) if layer == "linear" else lib.nn.BatchNorm1d(6)
        with lib.no_grad():  # the same weights in both
            model.weight.copy_(lib.tensor(np.linspace(-1, 1, model.weight.numel(),
                                                      dtype=np.float32)).reshape(
                model.weight.shape))
        out = []
        loss = None
        for i in range(3):
            if i == 1:
                model.to(lib.float64)
            model.zero_grad()
            loss = model(lib.tensor(x).to(model.weight.dtype)).pow(2).mean()
            loss.backward()
            out.append((str(model.weight.grad.dtype).split(".")[-1],
                        model.weight.grad.detach().numpy().astype(np.float64)))
        got.append(out)
    for (tdt, tg), (rdt, rg) in zip(*got, strict=True):
        assert rdt == tdt
        np.testing.assert_allclose(rg, tg, rtol=1e-5, atol=1e-6)
