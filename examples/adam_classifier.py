"""One Adam step of a classifier with named layers: ``backplan plan`` names its parameters and
optimizer state by module path.

    backplan plan examples/adam_classifier.py:step --listing      # fc1.weight, exp_avg[fc1.weight]
    backplan plan examples/adam_classifier.py:step --kernels --show asm
"""

from __future__ import annotations

import numpy as np

import runtime as rt

BATCH, FEATURES, HIDDEN, CLASSES = 8, 16, 32, 4


class Classifier(rt.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = rt.nn.Linear(FEATURES, HIDDEN)
        self.fc2 = rt.nn.Linear(HIDDEN, CLASSES)

    def forward(self, x: rt.Tensor) -> rt.Tensor:
        return self.fc2(rt.relu(self.fc1(x)))


net = Classifier()
opt = rt.optim.Adam(net.parameters(), lr=1e-3)


def step(inputs: rt.Tensor, labels: rt.Tensor) -> rt.Tensor:
    opt.zero_grad()
    loss = rt.nn.functional.cross_entropy(net(inputs), labels)
    loss.backward()
    opt.step()
    return loss


def make_inputs() -> tuple[rt.Tensor, rt.Tensor]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, FEATURES)).astype(np.float32)
    return rt.from_numpy(x), rt.from_numpy(rng.integers(0, CLASSES, BATCH).astype(np.int64))
