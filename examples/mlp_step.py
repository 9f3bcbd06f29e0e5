"""One SGD step of a small MLP on ``runtime``: a step ``backplan plan`` can inspect.

    backplan plan examples/mlp_step.py:step --listing
    backplan plan examples/mlp_step.py:step --dot > mlp.dot

``step`` takes the batch as arguments (what the planner captures as inputs); the model and
optimizer are module state it reads and updates. ``make_inputs`` returns those arguments.
"""

from __future__ import annotations

import numpy as np

import runtime as rt

BATCH, SIZES, LR = 16, (32, 64, 10), 0.05

_rng = np.random.default_rng(0)
model = rt.nn.Sequential(rt.nn.Linear(SIZES[0], SIZES[1]), rt.nn.ReLU(),
                         rt.nn.Linear(SIZES[1], SIZES[2]))
loss_fn = rt.nn.CrossEntropyLoss()
opt = rt.optim.SGD(model.parameters(), lr=LR)


def step(x: rt.Tensor, y: rt.Tensor) -> rt.Tensor:
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss


def make_inputs() -> tuple[rt.Tensor, rt.Tensor]:
    x = _rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = _rng.integers(0, SIZES[-1], BATCH).astype(np.int64)
    return rt.from_numpy(x), rt.from_numpy(y)
