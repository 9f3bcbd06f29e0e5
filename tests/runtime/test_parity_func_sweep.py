"""A parity sweep of rt.func against PyTorch 2.13's torch.func: vmap (nested in_dims and
out_dims, None and negative dims, chunk_size, randomness, dict and tuple outputs, vmap of
vmap and of grad, a batch of size 0), grad / grad_and_value (argnums, has_aux), vjp, jvp,
jacrev / jacfwd, hessian, functional_call and stack_module_state: the same values (float64)
or the same error, type and text."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _x(lib: Any, *shape: int, seed: int = 0) -> Any:
    return lib.tensor(np.random.default_rng(seed).standard_normal(shape))


def _plain(value: Any) -> Any:
    """Tensors as (dtype name, shape, float64 values) through tuples, lists and dicts."""
    if isinstance(value, (rt.Tensor, torch.Tensor)):
        return ("tensor", str(value.dtype).split(".")[-1], tuple(value.shape),
                value.detach().double().numpy())
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_plain(v) for v in value])
    return value


def _outcome(lib: Any, fn: Callable[[Any], Any]) -> Any:
    try:
        return _plain(fn(lib))
    except (RuntimeError, TypeError, ValueError) as e:
        return f"{type(e).__name__}: {str(e).replace('runtime.', '').replace('torch.', '')}"


def _assert_same(ours: Any, theirs: Any) -> None:
    if isinstance(theirs, tuple) and theirs and theirs[0] == "tensor":
        assert ours[:3] == theirs[:3]
        np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-10, atol=1e-12)
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs)
        for k in theirs:
            _assert_same(ours[k], theirs[k])
    elif isinstance(theirs, tuple):
        assert ours[0] == theirs[0] and len(ours[1]) == len(theirs[1])
        for a, b in zip(ours[1], theirs[1]):
            _assert_same(a, b)
    else:
        assert ours == theirs


def _set_params(lib: Any, module: Any) -> Any:
    with lib.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(_x(lib, *p.shape, seed=10 + i))
    return module


def _per_sample_grads(L: Any) -> Any:
    m = _set_params(L, L.nn.Linear(3, 2).double())
    params = {k: v.detach() for k, v in m.named_parameters()}

    def loss(p: Any, x: Any, y: Any) -> Any:
        out = L.func.functional_call(m, p, (x.unsqueeze(0),))
        return L.nn.functional.mse_loss(out, y.unsqueeze(0))

    return L.func.vmap(L.func.grad(loss), in_dims=(None, 0, 0))(params, _x(L, 5, 3),
                                                                _x(L, 5, 2, seed=1))


def _ensemble(L: Any) -> Any:
    models = [_set_params(L, L.nn.Linear(3, 2).double()) for _ in range(3)]
    with L.no_grad():
        for i, m in enumerate(models):
            m.weight.mul_(i + 1)
    params, buffers = L.func.stack_module_state(models)

    def run(p: Any, b: Any, x: Any) -> Any:
        return L.func.functional_call(models[0], (p, b), (x,))

    return L.func.vmap(run, in_dims=(0, 0, None))(params, buffers, _x(L, 4, 3))


def _functional_call_buffers(L: Any) -> Any:
    m = _set_params(L, L.nn.Sequential(L.nn.Linear(3, 2), L.nn.BatchNorm1d(2)).double())
    given = {"1.running_mean": L.ones(2, dtype=L.float64)}
    out = L.func.functional_call(m, given, (_x(L, 4, 3),))
    return out, m[1].running_mean, given["1.running_mean"]


def _tied(L: Any, values: dict[str, Any], tie_weights: bool = True) -> Any:
    class Tied(L.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = L.nn.Linear(2, 2, bias=False)
            self.b = self.a

        def forward(self, x: Any) -> Any:
            return self.b(self.a(x))

    m = _set_params(L, Tied().double())
    return L.func.functional_call(m, values, (_x(L, 1, 2),), tie_weights=tie_weights)


def _eye2(L: Any, k: float) -> Any:
    return L.eye(2, dtype=L.float64) * k


CASES: dict[str, Callable[[Any], Any]] = {
    # vmap
    "vmap_in_dims_nested": lambda L: L.func.vmap(
        lambda d, t: d["a"] * t[0] + d["b"] - t[1], in_dims=({"a": 0, "b": None}, (1, 0)))(
        {"a": _x(L, 3, 2), "b": _x(L, 2)}, (_x(L, 2, 3), _x(L, 3, 2))),
    "vmap_negative_dims": lambda L: L.func.vmap(lambda x: x.sum(0), in_dims=-1, out_dims=-1)(
        _x(L, 3, 4, 5)),
    "vmap_dict_out_dims": lambda L: L.func.vmap(lambda x: {"s": x.sum(), "m": x * 2},
                                                out_dims={"s": 0, "m": 1})(_x(L, 3, 4)),
    "vmap_tuple_out_none": lambda L: L.func.vmap(lambda x, y: (x.sum(), y), in_dims=(0, None),
                                                 out_dims=(0, None))(_x(L, 3, 4), _x(L, 2)),
    "vmap_chunk_size": lambda L: L.func.vmap(lambda x: x.exp(), chunk_size=2)(_x(L, 5, 2)),
    "vmap_chunk_size_0": lambda L: L.func.vmap(lambda x: x, chunk_size=0)(_x(L, 5, 2)),
    "vmap_randomness_error": lambda L: L.func.vmap(lambda x: x + L.rand(2))(_x(L, 3, 2)),
    "vmap_randomness_bad": lambda L: L.func.vmap(lambda x: x, randomness="foo")(_x(L, 3, 2)),
    "vmap_of_vmap": lambda L: L.func.vmap(L.func.vmap(lambda x, y: x * y, in_dims=(0, None)),
                                          in_dims=(None, 0))(_x(L, 3), _x(L, 4, 2)),
    "vmap_of_grad": lambda L: L.func.vmap(L.func.grad(lambda w, x, y: ((x * w).sum() - y) ** 2),
                                          in_dims=(None, 0, 0))(_x(L, 4), _x(L, 5, 4, seed=1),
                                                                _x(L, 5, seed=2)),
    "vmap_sizes_differ": lambda L: L.func.vmap(lambda x, y: x + y)(_x(L, 3, 2), _x(L, 4, 2)),
    "vmap_in_dim_range": lambda L: L.func.vmap(lambda x: x, in_dims=2)(_x(L, 3, 2)),
    "vmap_in_dim_bool": lambda L: L.func.vmap(lambda x: x, in_dims=True)(_x(L, 3, 2)),
    "vmap_in_dims_structure": lambda L: L.func.vmap(lambda x, y: x, in_dims=(0,))(
        _x(L, 3, 2), _x(L, 3, 2)),
    "vmap_out_none_batched": lambda L: L.func.vmap(lambda x: x * 2, out_dims=None)(_x(L, 3, 2)),
    "vmap_returns_float": lambda L: L.func.vmap(lambda x: 1.0)(_x(L, 3, 2)),
    "vmap_size_0": lambda L: L.func.vmap(lambda x: (x.sum(), x * 2), out_dims=(0, 1))(
        _x(L, 0, 3)),
    "vmap_size_0_int": lambda L: L.func.vmap(lambda x: x * 2, in_dims=1)(
        L.zeros(2, 0, dtype=L.int64)),
    "vmap_size_0_out_none": lambda L: L.func.vmap(lambda x: x * 2, out_dims=None)(
        _x(L, 0, 3)),
    "vmap_size_0_out_none_const": lambda L: L.func.vmap(
        lambda x: (x, L.ones(2)), out_dims=(0, None))(_x(L, 0, 3)),
    "vmap_size_0_grad": lambda L: L.func.vmap(L.func.grad(lambda x: (x ** 2).sum()))(
        _x(L, 0, 3)),
    # grad
    "grad_argnums_tuple": lambda L: L.func.grad(lambda x, y: (x * y.sin()).sum(),
                                                argnums=(0, 1))(_x(L, 3), _x(L, 3, seed=1)),
    "grad_argnums_negative": lambda L: L.func.grad(lambda x, y: (x * y.sin()).sum(),
                                                   argnums=(-1, 0))(_x(L, 3), _x(L, 3, seed=1)),
    "grad_has_aux": lambda L: L.func.grad(
        lambda x: ((x ** 2).sum(), {"m": x.mean(), "l": [x.max()]}), has_aux=True)(_x(L, 3)),
    "grad_aux_not_tuple": lambda L: L.func.grad(lambda x: (x ** 2).sum(), has_aux=True)(
        _x(L, 3)),
    "grad_nonscalar": lambda L: L.func.grad(lambda x: x ** 2)(_x(L, 3)),
    "grad_argnums_duplicate": lambda L: L.func.grad(lambda x, y: x.sum(), argnums=(0, 0))(
        _x(L, 3), _x(L, 3)),
    "grad_argnums_list": lambda L: L.func.grad(lambda x, y: x.sum(), argnums=[0])(
        _x(L, 3), _x(L, 3)),
    "grad_unused_input": lambda L: L.func.grad(lambda x, y: x.sum(), argnums=(0, 1))(
        _x(L, 3), _x(L, 3)),
    "grad_of_grad": lambda L: L.func.grad(L.func.grad(lambda x: (x ** 3).sum().sin()))(
        L.tensor(0.7, dtype=L.float64)),
    "grad_and_value_aux": lambda L: L.func.grad_and_value(
        lambda x: ((x ** 2).sum(), x.max()), has_aux=True)(_x(L, 3)),
    # vjp, jvp
    "vjp_tuple_out": lambda L: L.func.vjp(lambda x, y: (x * y, x.sin()), _x(L, 3),
                                          _x(L, 3, seed=1))[1]((_x(L, 3, seed=2),
                                                                _x(L, 3, seed=3))),
    "vjp_cotangent_structure": lambda L: L.func.vjp(lambda x: (x, x), _x(L, 3))[1](_x(L, 3)),
    "vjp_has_aux": lambda L: L.func.vjp(lambda x: (x.exp(), x.sum()), _x(L, 3),
                                        has_aux=True)[2],
    "jvp_has_aux": lambda L: L.func.jvp(lambda x: (x.exp(), {"a": x.sum()}), (_x(L, 3),),
                                        (_x(L, 3, seed=2),), has_aux=True),
    "jvp_int_primal": lambda L: L.func.jvp(lambda x: x * 2, (L.arange(3),), (L.arange(3),)),
    "jvp_int_tangent": lambda L: L.func.jvp(lambda x: x * 2, (_x(L, 3),), (L.arange(3),)),
    "jvp_of_grad": lambda L: L.func.jvp(L.func.grad(lambda x: (x ** 3).sum()), (_x(L, 3),),
                                        (_x(L, 3, seed=1),)),
    "jvp_strict_constant": lambda L: L.func.jvp(lambda x: L.ones(2, dtype=L.float64),
                                                (_x(L, 3),), (_x(L, 3),), strict=True),
    # jacobians
    "jacrev_argnums_aux": lambda L: L.func.jacrev(lambda x, y: (x * y.sum(), x.sum()),
                                                  argnums=(0, 1), has_aux=True)(
        _x(L, 3), _x(L, 2, seed=1)),
    "jacrev_chunk_size": lambda L: L.func.jacrev(lambda x: x.sin(), chunk_size=1)(_x(L, 3)),
    "jacrev_chunk_size_0": lambda L: L.func.jacrev(lambda x: x.sin(), chunk_size=0)(_x(L, 3)),
    "jacfwd_dict_out": lambda L: L.func.jacfwd(lambda x: {"a": x.exp(), "b": x.sum()})(
        _x(L, 3)),
    "jacfwd_int": lambda L: L.func.jacfwd(lambda x: x * 2)(L.arange(3)),
    "jacfwd_randomness_error": lambda L: L.func.jacfwd(
        lambda x: x * L.rand(3, dtype=L.float64))(_x(L, 3)),
    "hessian_argnums": lambda L: L.func.hessian(lambda x, y: (x ** 2 * y).sum(),
                                                argnums=(0, 1))(_x(L, 2), _x(L, 2, seed=1)),
    "vmap_of_hessian": lambda L: L.func.vmap(L.func.hessian(lambda x: (x ** 3).sum()))(
        _x(L, 2, 3)),
    "jacrev_of_vmap": lambda L: L.func.jacrev(L.func.vmap(lambda x: x.sin() * x.sum()))(
        _x(L, 2, 3)),
    # functional_call, stack_module_state
    "per_sample_grads": _per_sample_grads,
    "ensemble": _ensemble,
    "functional_call_buffers": _functional_call_buffers,
    "functional_call_tied": lambda L: _tied(L, {"a.weight": _eye2(L, 2)}),
    "functional_call_untied": lambda L: _tied(L, {"a.weight": _eye2(L, 2)}, tie_weights=False),
    "functional_call_tied_twice": lambda L: _tied(L, {"a.weight": _eye2(L, 2),
                                                      "b.weight": _eye2(L, 1)}),
    "functional_call_dicts_overlap": lambda L: L.func.functional_call(
        L.nn.Linear(3, 2), ({"weight": L.ones(2, 3)}, {"weight": L.ones(2, 3)}), (L.ones(3),)),
    "functional_call_strict": lambda L: L.func.functional_call(
        L.nn.Linear(2, 2), {"foo": L.ones(1)}, (L.ones(2),), strict=True),
    "functional_call_not_tensor": lambda L: L.func.functional_call(
        L.nn.Linear(2, 2), {"weight": 3.0}, (L.ones(2),)),
    "functional_call_not_tensor_strict": lambda L: L.func.functional_call(
        L.nn.Linear(2, 2), {"foo": 3.0}, (L.ones(2),), strict=True),
    "functional_call_none": lambda L: L.func.functional_call(
        _set_params(L, L.nn.Linear(2, 2).double()), {"bias": None}, (_x(L, 2),)),
    "stack_module_state_requires_grad": lambda L: L.func.stack_module_state(
        [L.nn.Linear(2, 2), L.nn.Linear(2, 2).requires_grad_(False)]),
    "stack_module_state_modes": lambda L: L.func.stack_module_state(
        [L.nn.Linear(2, 2), L.nn.Linear(2, 2).eval()]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_func_matches_torch(name: str) -> None:
    _assert_same(_outcome(rt, CASES[name]), _outcome(torch, CASES[name]))


def test_vmap_size_0_gradient_reaches_the_input() -> None:
    for lib in (rt, torch):
        x = lib.zeros(0, 3, dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(lib.func.vmap(lambda r: r.exp().sum())(x).sum(), x)
        assert tuple(g.shape) == (0, 3)
