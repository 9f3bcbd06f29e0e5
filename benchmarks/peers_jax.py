"""JAX ``jit`` versions of the workloads: the strongest CPU peer (XLA), optional.

Each builder returns a :class:`~benchmarks.workloads.Case` computing the same step as the
runtime and torch variants from the same arrays (``Workload.make_arrays``): forward, gradient
(``jax.value_and_grad``) and the same SGD update, jitted as one function. JAX is functional,
so the case keeps the parameters and feeds each step's updated ones to the next, as a JAX
training loop does; a step blocks until its results are ready, so its time is the step's.
``outputs`` names the same arrays as the other variants, for cross-checks.

Import this module only where jax is installed (``pip install -e '.[bench]'``); set XLA's
thread flags (``benchmarks.run.set_threads``) before importing it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from benchmarks.workloads import CHAIN_LENGTH, LR, TOWER_DEPTH, Case, n_layers

jax.config.update("jax_platforms", "cpu")


def _ready(tree: Any) -> Any:
    return jax.block_until_ready(tree)


def _cross_entropy(logits: Any, y: Any) -> Any:
    """Mean softmax cross-entropy, as nn.CrossEntropyLoss."""
    lse = jax.nn.logsumexp(logits, axis=1)
    return jnp.mean(lse - jnp.take_along_axis(logits, y[:, None], axis=1)[:, 0])


def _mlp(params: list[tuple[Any, Any]], x: Any) -> Any:
    h = x
    for i, (w, b) in enumerate(params):
        h = h @ w.T + b
        if i < len(params) - 1:
            h = jax.nn.relu(h)
    return h


def _mlp_params(arrays: dict[str, np.ndarray]) -> list[tuple[Any, Any]]:
    return [(jnp.asarray(arrays[f"w{i}"]), jnp.asarray(arrays[f"b{i}"]))
            for i in range(n_layers(arrays))]


def _param_outputs(params: list[tuple[Any, Any]], grads: list[tuple[Any, Any]] | None
                   ) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for i, (w, b) in enumerate(params):
        out[f"w{i}"], out[f"b{i}"] = np.asarray(w), np.asarray(b)
        if grads is not None:
            out[f"grad_w{i}"], out[f"grad_b{i}"] = np.asarray(grads[i][0]), np.asarray(grads[i][1])
    return out


def build_mlp_sgd_step(arrays: dict[str, np.ndarray]) -> Case:
    """forward, cross-entropy, grads, SGD update: one jitted function of (params, x, y)."""

    @jax.jit
    def step(params: Any, x: Any, y: Any) -> Any:
        loss, grads = jax.value_and_grad(lambda p: _cross_entropy(_mlp(p, x), y))(params)
        new = jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads)
        return loss, new, grads

    state = {"params": _mlp_params(arrays), "grads": None}

    def run(x: Any, y: Any) -> Any:
        loss, state["params"], state["grads"] = _ready(step(state["params"], x, y))
        return loss

    def outputs(loss: Any) -> dict[str, np.ndarray]:
        return {"loss": np.asarray(loss), **_param_outputs(state["params"], state["grads"])}

    return Case(run, (jnp.asarray(arrays["x"]), jnp.asarray(arrays["y"])), outputs)


def build_mlp_input_grad(arrays: dict[str, np.ndarray]) -> Case:
    """forward and loss, gradient of the input only."""
    params = _mlp_params(arrays)

    @jax.jit
    def step(x: Any, y: Any) -> Any:
        return jax.value_and_grad(lambda x: _cross_entropy(_mlp(params, x), y))(x)

    def run(x: Any, y: Any) -> Any:
        return _ready(step(x, y))

    def outputs(ret: Any) -> dict[str, np.ndarray]:
        loss, grad_x = ret
        return {"loss": np.asarray(loss), "grad_x": np.asarray(grad_x),
                **_param_outputs(params, None)}

    return Case(run, (jnp.asarray(arrays["x"]), jnp.asarray(arrays["y"])), outputs)


def build_eltwise(arrays: dict[str, np.ndarray]) -> Case:
    """layer_norm over rows (no affine, eps 1e-5), tanh-GELU, times w, sum; grads of x, w."""

    def loss_fn(x: Any, w: Any) -> Any:
        mean = jnp.mean(x, axis=1, keepdims=True)
        var = jnp.mean((x - mean) ** 2, axis=1, keepdims=True)
        h = (x - mean) / jnp.sqrt(var + 1e-5)
        return jnp.sum(jax.nn.gelu(h, approximate=True) * w)

    step = jax.jit(jax.value_and_grad(loss_fn, argnums=(0, 1)))

    def run(x: Any, w: Any) -> Any:
        return _ready(step(x, w))

    def outputs(ret: Any) -> dict[str, np.ndarray]:
        loss, (gx, gw) = ret
        return {"loss": np.asarray(loss), "grad_x": np.asarray(gx), "grad_w": np.asarray(gw)}

    return Case(run, (jnp.asarray(arrays["x"]), jnp.asarray(arrays["w"])), outputs)


def build_chain(arrays: dict[str, np.ndarray]) -> Case:
    """64 small ops cycling sin, *1.01, +0.1, tanh; sum; gradient of x."""
    cycle: list[Callable[[Any], Any]] = [jnp.sin, lambda t: t * 1.01, lambda t: t + 0.1,
                                         jnp.tanh]

    def loss_fn(x: Any) -> Any:
        h = x
        for i in range(CHAIN_LENGTH):
            h = cycle[i % len(cycle)](h)
        return jnp.sum(h)

    step = jax.jit(jax.value_and_grad(loss_fn))

    def run(x: Any) -> Any:
        return _ready(step(x))

    def outputs(ret: Any) -> dict[str, np.ndarray]:
        loss, gx = ret
        return {"loss": np.asarray(loss), "grad_x": np.asarray(gx)}

    return Case(run, (jnp.asarray(arrays["x"]),), outputs)


def build_two_tower(arrays: dict[str, np.ndarray]) -> Case:
    """(Linear, tanh) x 2 per tower, mean-square losses summed, SGD."""
    params = [[(jnp.asarray(arrays[f"w{t}_{i}"]), jnp.asarray(arrays[f"b{t}_{i}"]))
               for i in range(TOWER_DEPTH)] for t in range(2)]

    def tower(p: Any, x: Any) -> Any:
        for w, b in p:
            x = jnp.tanh(x @ w.T + b)
        return x

    @jax.jit
    def step(params: Any, x0: Any, x1: Any) -> Any:
        def loss_fn(p: Any) -> Any:
            return jnp.mean(tower(p[0], x0) ** 2) + jnp.mean(tower(p[1], x1) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        return loss, jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads), grads

    state = {"params": params, "grads": None}

    def run(x0: Any, x1: Any) -> Any:
        loss, state["params"], state["grads"] = _ready(step(state["params"], x0, x1))
        return loss

    def outputs(loss: Any) -> dict[str, np.ndarray]:
        flat = [wb for t in state["params"] for wb in t]
        grads = None if state["grads"] is None else [wb for t in state["grads"] for wb in t]
        return {"loss": np.asarray(loss), **_param_outputs(flat, grads)}

    return Case(run, (jnp.asarray(arrays["x0"]), jnp.asarray(arrays["x1"])), outputs)


def build_one_op(arrays: dict[str, np.ndarray]) -> Case:
    """grad((x * 2).sum(), [x]) on 4 floats: what one jitted call costs."""
    step = jax.jit(jax.grad(lambda x: jnp.sum(x * 2)))

    def run(x: Any) -> Any:
        return _ready(step(x))

    return Case(run, (jnp.asarray(arrays["x"]),), lambda g: {"grad_x": np.asarray(g)})


# workload name -> builder; workloads without one (cnn, rnn, gpt) have no JAX column
BUILDERS: dict[str, Callable[[dict[str, np.ndarray]], Case]] = {
    "mlp_large": build_mlp_sgd_step,
    "mlp_small": build_mlp_sgd_step,
    "partial": build_mlp_input_grad,
    "eltwise": build_eltwise,
    "chain": build_chain,
    "two_tower": build_two_tower,
    "one_op": build_one_op,
}
