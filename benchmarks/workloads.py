"""The benchmark workloads (the five of DESIGN.md, two_tower, the models cnn, rnn and gpt, and
one_op, a single-op call), one training (or gradient) step each.

Every workload starts from the same numpy arrays (``make_arrays``) so that all variants
compute the same numbers:

- ``ours``: eager mode of this project's ``runtime``;
- ``torch``: the same step in PyTorch eager. Both are produced by one builder that takes
  the library module (``runtime`` or ``torch``) as ``lib``: the two APIs agree on every
  name used here, so one step definition serves both;
- ``numpy``: a hand-written forward/backward/SGD step (the MLP workloads only).

A builder returns a :class:`Case`: ``case.fn(*case.args)`` runs one step (``fn`` takes the
step's inputs as arguments so that ``planner.compile(case.fn)`` can capture it), and
``case.outputs(ret)`` turns what the step returned into named numpy arrays (loss, the
requested gradients, updated parameters) for cross-checking variants.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

LR = 0.01  # SGD learning rate of the MLP workloads


@dataclass
class Case:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    outputs: Callable[[Any], dict[str, np.ndarray]]

    def run(self) -> Any:
        return self.fn(*self.args)


@dataclass(frozen=True)
class Workload:
    name: str
    what: str
    dominated_by: str
    make_arrays: Callable[[int], dict[str, np.ndarray]]
    build: Callable[[ModuleType, dict[str, np.ndarray]], Case]
    build_numpy: Callable[[dict[str, np.ndarray]], Case] | None = None


def to_numpy(t: Any) -> np.ndarray:
    """A runtime or torch tensor (or a numpy array) as a numpy array."""
    if isinstance(t, np.ndarray):
        return t
    return np.asarray(t.detach().cpu().numpy())


# ---------------------------------------------------------------------------------- MLP


def mlp_arrays(sizes: tuple[int, ...], batch: int, seed: int) -> dict[str, np.ndarray]:
    """Weights drawn like ``nn.Linear``'s default init, a standard normal batch, labels."""
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    for i, (n_in, n_out) in enumerate(itertools.pairwise(sizes)):
        bound = 1.0 / np.sqrt(n_in)
        arrays[f"w{i}"] = rng.uniform(-bound, bound, (n_out, n_in)).astype(np.float32)
        arrays[f"b{i}"] = rng.uniform(-bound, bound, (n_out,)).astype(np.float32)
    arrays["x"] = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    arrays["y"] = rng.integers(0, sizes[-1], batch).astype(np.int64)
    return arrays


def n_layers(arrays: dict[str, np.ndarray]) -> int:
    return sum(1 for k in arrays if k.startswith("w"))


def build_mlp(lib: ModuleType, arrays: dict[str, np.ndarray]) -> tuple[Any, list[Any]]:
    """``Sequential(Linear, ReLU, ..., Linear)`` holding copies of ``arrays``' weights."""
    linears = []
    for i in range(n_layers(arrays)):
        w = arrays[f"w{i}"]
        linear = lib.nn.Linear(w.shape[1], w.shape[0])
        with lib.no_grad():
            linear.weight.copy_(lib.from_numpy(w.copy()))
            linear.bias.copy_(lib.from_numpy(arrays[f"b{i}"].copy()))
        linears.append(linear)
    layers: list[Any] = []
    for linear in linears:
        layers += [linear, lib.nn.ReLU()]
    return lib.nn.Sequential(*layers[:-1]), linears


def mlp_param_outputs(linears: list[Any]) -> dict[str, np.ndarray]:
    out = {}
    for i, linear in enumerate(linears):
        for name, p in (("w", linear.weight), ("b", linear.bias)):
            out[f"{name}{i}"] = to_numpy(p)
            if p.grad is not None:
                out[f"grad_{name}{i}"] = to_numpy(p.grad)
    return out


def build_mlp_sgd_step(lib: ModuleType, arrays: dict[str, np.ndarray]) -> Case:
    """One SGD training step: zero grads, forward, cross-entropy, backward, update."""
    model, linears = build_mlp(lib, arrays)
    loss_fn = lib.nn.CrossEntropyLoss()
    opt = lib.optim.SGD(model.parameters(), lr=LR)

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def outputs(loss: Any) -> dict[str, np.ndarray]:
        return {"loss": to_numpy(loss), **mlp_param_outputs(linears)}

    x, y = lib.from_numpy(arrays["x"].copy()), lib.from_numpy(arrays["y"].copy())
    return Case(step, (x, y), outputs)


def build_mlp_input_grad(lib: ModuleType, arrays: dict[str, np.ndarray]) -> Case:
    """Forward and loss of the MLP, then the gradient of the input only (no param grads)."""
    model, linears = build_mlp(lib, arrays)
    loss_fn = lib.nn.CrossEntropyLoss()

    def step(x: Any, y: Any) -> Any:
        loss = loss_fn(model(x), y)
        (grad_x,) = lib.autograd.grad(loss, [x])
        return loss, grad_x

    def outputs(ret: Any) -> dict[str, np.ndarray]:
        loss, grad_x = ret
        # Parameters must be untouched: no .grad accumulated, since only x was asked for.
        return {"loss": to_numpy(loss), "grad_x": to_numpy(grad_x), **mlp_param_outputs(linears)}

    x = lib.tensor(arrays["x"], requires_grad=True)
    return Case(step, (x, lib.from_numpy(arrays["y"].copy())), outputs)


def build_mlp_numpy(arrays: dict[str, np.ndarray]) -> Case:
    """The MLP SGD step written by hand in numpy: the floor the runtime is measured against."""
    params = [(arrays[f"w{i}"].copy(), arrays[f"b{i}"].copy()) for i in range(n_layers(arrays))]
    grads: list[tuple[np.ndarray, np.ndarray]] = []

    def step(x: np.ndarray, y: np.ndarray) -> np.float32:
        # Forward, keeping each layer's input; ReLU in place on the pre-activation.
        acts = [x]
        h = x
        for i, (w, b) in enumerate(params):
            h = h @ w.T
            h += b
            if i < len(params) - 1:
                np.maximum(h, 0, out=h)
                acts.append(h)
        # Softmax cross-entropy (mean over the batch) and its gradient w.r.t. the logits.
        rows = np.arange(len(y))
        h -= h.max(axis=1, keepdims=True)
        e = np.exp(h)
        s = e.sum(axis=1, keepdims=True)
        loss = np.float32(np.log(s[:, 0]).mean() - h[rows, y].mean())
        g = e / s
        g[rows, y] -= 1
        g /= len(y)
        # Backward and SGD update, last layer first.
        grads.clear()
        for i in reversed(range(len(params))):
            w, b = params[i]
            gw = g.T @ acts[i]
            gb = g.sum(axis=0)
            if i > 0:
                g = g @ w
                g *= acts[i] > 0
            grads.append((gw, gb))
            w -= LR * gw
            b -= LR * gb
        grads.reverse()
        return loss

    def outputs(loss: np.float32) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {"loss": np.asarray(loss)}
        for i, ((w, b), (gw, gb)) in enumerate(zip(params, grads, strict=True)):
            out.update({f"w{i}": w, f"b{i}": b, f"grad_w{i}": gw, f"grad_b{i}": gb})
        return out

    return Case(step, (arrays["x"].copy(), arrays["y"].copy()), outputs)


# ------------------------------------------------------------------------------ eltwise


def eltwise_arrays(seed: int, rows: int = 512, cols: int = 2048) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((rows, cols)).astype(np.float32),
        "w": rng.standard_normal(cols).astype(np.float32),
    }


def build_eltwise(lib: ModuleType, arrays: dict[str, np.ndarray]) -> Case:
    """layer_norm over rows (no affine), tanh-GELU, times w, sum; grads of x and w."""
    F = lib.nn.functional
    x = lib.tensor(arrays["x"], requires_grad=True)
    w = lib.tensor(arrays["w"], requires_grad=True)
    cols = arrays["x"].shape[1]

    def step(x: Any, w: Any) -> Any:
        x.grad = None
        w.grad = None
        loss = (F.gelu(F.layer_norm(x, (cols,)), approximate="tanh") * w).sum()
        loss.backward()
        return loss

    def outputs(loss: Any) -> dict[str, np.ndarray]:
        return {"loss": to_numpy(loss), "grad_x": to_numpy(x.grad), "grad_w": to_numpy(w.grad)}

    return Case(step, (x, w), outputs)


# -------------------------------------------------------------------------------- chain

CHAIN_LENGTH = 64


def chain_arrays(seed: int, n: int = 4096) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).standard_normal(n).astype(np.float32)}


def build_chain(lib: ModuleType, arrays: dict[str, np.ndarray]) -> Case:
    """64 small ops cycling sin, *1.01, +0.1, tanh; sum; gradient of x."""
    x = lib.tensor(arrays["x"], requires_grad=True)
    cycle: list[Callable[[Any], Any]] = [
        lambda t: t.sin(),
        lambda t: t * 1.01,
        lambda t: t + 0.1,
        lambda t: t.tanh(),
    ]
    ops = [cycle[i % len(cycle)] for i in range(CHAIN_LENGTH)]

    def step(x: Any) -> Any:
        x.grad = None
        h = x
        for op in ops:
            h = op(h)
        loss = h.sum()
        loss.backward()
        return loss

    def outputs(loss: Any) -> dict[str, np.ndarray]:
        return {"loss": to_numpy(loss), "grad_x": to_numpy(x.grad)}

    return Case(step, (x,), outputs)


# ---------------------------------------------------------------------------- two_tower

TOWER_WIDTH = 1024
TOWER_DEPTH = 2


def two_tower_arrays(seed: int, batch: int = 128) -> dict[str, np.ndarray]:
    """Two independent stacks of Linear(1024, 1024) + tanh, each with its own input."""
    rng = np.random.default_rng(seed)
    bound = 1.0 / np.sqrt(TOWER_WIDTH)
    arrays: dict[str, np.ndarray] = {}
    for t in range(2):
        arrays[f"x{t}"] = rng.standard_normal((batch, TOWER_WIDTH)).astype(np.float32)
        for i in range(TOWER_DEPTH):
            shape = (TOWER_WIDTH, TOWER_WIDTH)
            arrays[f"w{t}_{i}"] = rng.uniform(-bound, bound, shape).astype(np.float32)
            arrays[f"b{t}_{i}"] = rng.uniform(-bound, bound, (TOWER_WIDTH,)).astype(np.float32)
    return arrays


def build_two_tower(lib: ModuleType, arrays: dict[str, np.ndarray]) -> Case:
    """Each tower: (Linear, tanh) x 2 on its own input; the two mean-square losses summed;
    backward; SGD. The towers share nothing until the sum: a plan's two halves can overlap."""
    towers, linears = [], []
    for t in range(2):
        layers: list[Any] = []
        for i in range(TOWER_DEPTH):
            linear = lib.nn.Linear(TOWER_WIDTH, TOWER_WIDTH)
            with lib.no_grad():
                linear.weight.copy_(lib.from_numpy(arrays[f"w{t}_{i}"].copy()))
                linear.bias.copy_(lib.from_numpy(arrays[f"b{t}_{i}"].copy()))
            linears.append(linear)
            layers += [linear, lib.nn.Tanh()]
        towers.append(lib.nn.Sequential(*layers))
    params = [p for tower in towers for p in tower.parameters()]
    opt = lib.optim.SGD(params, lr=LR)

    def step(x0: Any, x1: Any) -> Any:
        opt.zero_grad()
        loss = (towers[0](x0) ** 2).mean() + (towers[1](x1) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    def outputs(loss: Any) -> dict[str, np.ndarray]:
        return {"loss": to_numpy(loss), **mlp_param_outputs(linears)}

    x0, x1 = (lib.from_numpy(arrays[f"x{t}"].copy()) for t in range(2))
    return Case(step, (x0, x1), outputs)


# ------------------------------------------------------------------------------- one_op


def one_op_arrays(seed: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).standard_normal(4).astype(np.float32)}


def build_one_op(lib: ModuleType, arrays: dict[str, np.ndarray]) -> Case:
    """grad((x * 2).sum(), [x]) on 4 floats: what one call costs, nothing else."""
    x = lib.tensor(arrays["x"], requires_grad=True)

    def step(x: Any) -> Any:
        (grad,) = lib.autograd.grad((x * 2).sum(), [x])
        return grad

    return Case(step, (x,), lambda grad: {"grad_x": to_numpy(grad)})


# ----------------------------------------------------------------------------- registry


def _lazy(module: str, name: str) -> Callable[..., Any]:
    """A function of a workload module that imports this one (imported on first call)."""

    def call(*args: Any) -> Any:
        import importlib

        return getattr(importlib.import_module(f"benchmarks.{module}"), name)(*args)

    call.__name__ = name
    return call


MLP_LARGE = (784, 1024, 1024, 10)
MLP_SMALL = (64, 64, 64, 10)

WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in [
        Workload(
            "mlp_large",
            "batch 128, 784-1024-1024-10, ReLU, softmax cross-entropy, SGD step",
            "matmul",
            lambda seed: mlp_arrays(MLP_LARGE, 128, seed),
            build_mlp_sgd_step,
            build_mlp_numpy,
        ),
        Workload(
            "mlp_small",
            "batch 32, 64-64-64-10, same step",
            "per-op overhead",
            lambda seed: mlp_arrays(MLP_SMALL, 32, seed),
            build_mlp_sgd_step,
            build_mlp_numpy,
        ),
        Workload(
            "eltwise",
            "layer_norm over rows of (512, 2048), tanh-GELU, times w (2048), sum; grads of x, w",
            "memory, fusion",
            eltwise_arrays,
            build_eltwise,
        ),
        Workload(
            "chain",
            "64 ops cycling sin, *1.01, +0.1, tanh on 4096 floats, sum; grad of x",
            "dispatch overhead",
            chain_arrays,
            build_chain,
        ),
        Workload(
            "partial",
            "mlp_large forward and loss, gradient of the input only",
            "pruning",
            lambda seed: mlp_arrays(MLP_LARGE, 128, seed),
            build_mlp_input_grad,
        ),
        Workload(
            "two_tower",
            "two independent (Linear 1024 + tanh) x 2 stacks, batch 128, mean-square losses "
            "summed, SGD step",
            "independent matmuls (parallel steps)",
            two_tower_arrays,
            build_two_tower,
        ),
        Workload(
            "one_op",
            "grad((x * 2).sum(), [x]) on 4 floats",
            "per-call overhead",
            one_op_arrays,
            build_one_op,
        ),
        Workload(
            "cnn",
            "batch 64 of 8x8 digits, (conv3x3-batchnorm-relu-maxpool) x 2, linear, "
            "cross-entropy, SGD with momentum",
            "im2col GEMMs, small ops",
            _lazy("models_cnn", "cnn_arrays"),
            _lazy("models_cnn", "build_cnn"),
        ),
        Workload(
            "rnn",
            "Elman RNN (tanh, hidden 128) unrolled over 16 steps, batch 64, linear head, Adam",
            "a long chain of small matmuls",
            _lazy("models_cnn", "rnn_arrays"),
            _lazy("models_cnn", "build_rnn"),
        ),
    ]
}


# ----------------------------------------------------------------------------------- gpt
# benchmarks.models_gpt imports Case from here: import it when the workload is first used


def _gpt_arrays(seed: int) -> dict[str, np.ndarray]:
    from benchmarks.models_gpt import gpt_arrays

    return gpt_arrays(seed)


def _build_gpt(lib: ModuleType, arrays: dict[str, np.ndarray]) -> Case:
    from benchmarks.models_gpt import build_gpt

    return build_gpt(lib, arrays)


WORKLOADS["gpt"] = Workload(
    "gpt",
    "character-level GPT on pydoc_data.topics: 2 pre-norm layers, 4 heads, width 128, "
    "context 64, batch 16, tied head, Adam step",
    "attention, small matmuls",
    _gpt_arrays,
    _build_gpt,
)
