"""The ``cnn`` and ``rnn`` workloads: one training step each, defined once for ``lib`` =
runtime or torch, from the same numpy arrays (initial weights and data).

- ``cnn``: (conv 3x3 - batchnorm - relu - maxpool 2) x 2, then linear, cross-entropy and
  SGD with momentum, on a batch of 64 of the bundled 8x8 digits;
- ``rnn``: an Elman RNN (tanh) unrolled over 16 steps (Linear layers), its last hidden
  state classified by a linear head; Adam; sequences of random bits labelled by their
  parity-weighted sum (generated, so the data needs no download).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from .digits import load_digits
from .workloads import Case, to_numpy

CNN_BATCH = 64
RNN_STEPS, RNN_BATCH, RNN_HIDDEN, RNN_IN, RNN_CLASSES = 16, 64, 128, 8, 4


def _uniform(rng: np.random.Generator, fan_in: int, shape: tuple[int, ...]) -> np.ndarray:
    """PyTorch's default init of conv and linear layers: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    bound = 1.0 / np.sqrt(fan_in)
    return rng.uniform(-bound, bound, shape).astype(np.float32)


def load_params(lib: ModuleType, module: Any, arrays: dict[str, np.ndarray]) -> None:
    """Copy ``arrays[name]`` into every parameter of ``module`` named in it."""
    with lib.no_grad():
        for name, p in module.named_parameters():
            p.copy_(lib.from_numpy(arrays[name].copy()))


def param_outputs(module: Any) -> dict[str, np.ndarray]:
    out = {}
    for name, p in module.named_parameters():
        out[name] = to_numpy(p)
        if p.grad is not None:
            out[f"grad_{name}"] = to_numpy(p.grad)
    for name, b in module.named_buffers():
        if b.dtype.is_floating_point:  # running statistics (not the int batch counters)
            out[f"buffer_{name}"] = to_numpy(b)
    return out


# -------------------------------------------------------------------------------- cnn


def cnn_arrays(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x, y = load_digits()
    pick = rng.choice(len(x), CNN_BATCH, replace=False)
    arrays = {"x": x[pick].reshape(CNN_BATCH, 1, 8, 8), "y": y[pick]}
    for name, (o, i) in {"0": (8, 1), "4": (16, 8)}.items():
        arrays[f"{name}.weight"] = _uniform(rng, i * 9, (o, i, 3, 3))
        arrays[f"{name}.bias"] = _uniform(rng, i * 9, (o,))
    for name, c in {"1": 8, "5": 16}.items():
        arrays[f"{name}.weight"] = np.ones(c, np.float32)
        arrays[f"{name}.bias"] = np.zeros(c, np.float32)
    arrays["9.weight"] = _uniform(rng, 64, (10, 64))
    arrays["9.bias"] = _uniform(rng, 64, (10,))
    return arrays


def cnn_model(lib: ModuleType, arrays: dict[str, np.ndarray]) -> Any:
    """(conv3x3-batchnorm-relu-maxpool) x 2, flatten, linear, from ``arrays``' weights."""
    nn = lib.nn
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64, 10))
    load_params(lib, model, arrays)
    return model


def build_cnn(lib: ModuleType, arrays: dict[str, np.ndarray]) -> Case:
    nn = lib.nn
    model = cnn_model(lib, arrays)
    opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def outputs(loss: Any) -> dict[str, np.ndarray]:
        return {"loss": to_numpy(loss), **param_outputs(model)}

    x, y = lib.from_numpy(arrays["x"].copy()), lib.from_numpy(arrays["y"].copy())
    return Case(step, (x, y), outputs)


# -------------------------------------------------------------------------------- rnn


def rnn_arrays(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2, (RNN_BATCH, RNN_STEPS, RNN_IN))
    # a label that needs the whole sequence: the parity-weighted count of ones, mod classes
    y = ((bits * (1 + np.arange(RNN_STEPS)[None, :, None] % 2)).sum((1, 2))) % RNN_CLASSES
    return {"x": bits.astype(np.float32), "y": y.astype(np.int64),
            "cell_in.weight": _uniform(rng, RNN_IN, (RNN_HIDDEN, RNN_IN)),
            "cell_in.bias": _uniform(rng, RNN_IN, (RNN_HIDDEN,)),
            "cell_h.weight": _uniform(rng, RNN_HIDDEN, (RNN_HIDDEN, RNN_HIDDEN)),
            "cell_h.bias": _uniform(rng, RNN_HIDDEN, (RNN_HIDDEN,)),
            "head.weight": _uniform(rng, RNN_HIDDEN, (RNN_CLASSES, RNN_HIDDEN)),
            "head.bias": _uniform(rng, RNN_HIDDEN, (RNN_CLASSES,))}


def build_rnn(lib: ModuleType, arrays: dict[str, np.ndarray]) -> Case:
    nn = lib.nn

    class ElmanRNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.cell_in = nn.Linear(RNN_IN, RNN_HIDDEN)
            self.cell_h = nn.Linear(RNN_HIDDEN, RNN_HIDDEN)
            self.head = nn.Linear(RNN_HIDDEN, RNN_CLASSES)

        def forward(self, x: Any) -> Any:
            h = lib.zeros(x.shape[0], RNN_HIDDEN)
            for t in range(x.shape[1]):
                h = lib.tanh(self.cell_in(x[:, t]) + self.cell_h(h))
            return self.head(h)

    model = ElmanRNN()
    load_params(lib, model, arrays)
    # eps 1e-6: weights whose gradients are ~1e-9 would otherwise move by rounding noise
    opt = lib.optim.Adam(model.parameters(), lr=1e-3, eps=1e-6)

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def outputs(loss: Any) -> dict[str, np.ndarray]:
        return {"loss": to_numpy(loss), **param_outputs(model)}

    x, y = lib.from_numpy(arrays["x"].copy()), lib.from_numpy(arrays["y"].copy())
    return Case(step, (x, y), outputs)
