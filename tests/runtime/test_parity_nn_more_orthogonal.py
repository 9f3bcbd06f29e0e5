"""nn.utils.parametrizations.orthogonal against torch: the default map per shape, each
``orthogonal_map`` with and without the trivialization, values, float64 gradients, state
dict keys, repr, assignment, batches of matrices and errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.autograd import gradcheck
from runtime.linalg import matrix_exp
from runtime.nn.utils.parametrizations import _householder_product, orthogonal

torch = pytest.importorskip("torch")
torth = torch.nn.utils.parametrizations.orthogonal


class _Holder:
    """A module with one parameter ``weight`` of a given shape, in both libraries."""

    @staticmethod
    def make(lib: Any, w: np.ndarray) -> Any:
        module = lib.nn.Module()
        module.weight = lib.nn.Parameter(lib.tensor(w))
        return module


def _linear_pair(shape: tuple[int, int], w: np.ndarray) -> tuple[Any, Any]:
    tl = torch.nn.Linear(shape[1], shape[0]).double()
    rl = rt.nn.Linear(shape[1], shape[0]).double()
    with torch.no_grad():
        tl.weight.copy_(torch.tensor(w))
    with rt.no_grad():
        rl.weight.copy_(rt.tensor(w))
        rl.bias.copy_(rt.tensor(tl.bias.detach().numpy()))
    return tl, rl


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
@pytest.mark.parametrize("orthogonal_map", [None, "matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("use_trivialization", [True, False])
def test_orthogonal_linear_matches_torch(shape, orthogonal_map, use_trivialization):
    rng = np.random.default_rng(sum(shape))
    tl, rl = _linear_pair(shape, rng.standard_normal(shape))
    torth(tl, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
    orthogonal(rl, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
    assert repr(rl) == repr(tl)
    assert list(rl.state_dict()) == list(tl.state_dict())
    if use_trivialization:  # a wide or tall base is completed at random: take torch's
        with rt.no_grad():
            rl.parametrizations.weight[0].base.copy_(
                rt.tensor(tl.parametrizations.weight[0].base.numpy()))
    np.testing.assert_allclose(rl.weight.detach().numpy(), tl.weight.detach().numpy(),
                               rtol=1e-9, atol=1e-12)
    q = rl.weight.detach().numpy()
    small = min(shape)
    gram = q.T @ q if shape[0] >= shape[1] else q @ q.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-12)
    x, cot = rng.standard_normal((2, shape[1])), rng.standard_normal((2, shape[0]))
    (tl(torch.tensor(x)) * torch.tensor(cot)).sum().backward()
    (rl(rt.tensor(x)) * rt.tensor(cot)).sum().backward()
    np.testing.assert_allclose(rl.parametrizations.weight.original.grad.numpy(),
                               tl.parametrizations.weight.original.grad.numpy(),
                               rtol=1e-8, atol=1e-11)


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_batch_of_matrices_and_assignment(orthogonal_map):
    rng = np.random.default_rng(5)
    w = rng.standard_normal((2, 4, 3))
    tm, rm = _Holder.make(torch, w), _Holder.make(rt, w)
    torth(tm, orthogonal_map=orthogonal_map)
    orthogonal(rm, orthogonal_map=orthogonal_map)
    with rt.no_grad():
        rm.parametrizations.weight[0].base.copy_(
            rt.tensor(tm.parametrizations.weight[0].base.numpy()))
    np.testing.assert_allclose(rm.weight.detach().numpy(), tm.weight.detach().numpy(),
                               rtol=1e-9, atol=1e-12)
    # assigning an orthogonal matrix makes it the value (through the base)
    q = np.linalg.qr(rng.standard_normal((2, 4, 3)))[0]
    rm.weight = rt.tensor(q)
    np.testing.assert_allclose(rm.weight.detach().numpy(), q, atol=1e-12)
    np.testing.assert_allclose(rm.parametrizations.weight.original.detach().numpy(),
                               np.broadcast_to(-np.eye(4, 3), (2, 4, 3)))


def test_orthogonal_householder_without_trivialization_assignment_matches_torch():
    rng = np.random.default_rng(8)
    tm, rm = _Holder.make(torch, rng.standard_normal((5, 3))), \
        _Holder.make(rt, rng.standard_normal((5, 3)))
    torth(tm, orthogonal_map="householder", use_trivialization=False)
    orthogonal(rm, orthogonal_map="householder", use_trivialization=False)
    q = np.linalg.qr(rng.standard_normal((5, 3)))[0]
    with torch.no_grad():
        tm.weight = torch.tensor(q)
    rm.weight = rt.tensor(q)
    np.testing.assert_allclose(rm.parametrizations.weight.original.detach().numpy(),
                               tm.parametrizations.weight.original.detach().numpy(),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rm.weight.detach().numpy(), q, atol=1e-12)


def test_orthogonal_stays_orthogonal_through_sgd_steps():
    rl = rt.nn.Linear(4, 6).double()
    orthogonal(rl)
    opt = rt.optim.SGD(rl.parameters(), lr=0.5)
    x = rt.randn(8, 4, dtype=rt.float64)
    for _ in range(3):
        opt.zero_grad()
        rl(x).pow(3).sum().backward()
        opt.step()
    q = rl.weight.detach().numpy()
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-12)


@pytest.mark.parametrize("scale", [0.1, 1.0, 7.0])
def test_matrix_exp_matches_torch_and_gradchecks(scale):
    # orthogonal's matrix_exp map is linalg.matrix_exp (the primitive a compiled step captures)
    a = np.random.default_rng(1).standard_normal((2, 3, 3)) * scale
    np.testing.assert_allclose(matrix_exp(rt.tensor(a)).numpy(),
                               torch.matrix_exp(torch.tensor(a)).numpy(), rtol=1e-12,
                               atol=1e-12)
    assert gradcheck(matrix_exp, (rt.tensor(a, requires_grad=True),))


def test_householder_product_matches_torch_and_gradchecks():
    rng = np.random.default_rng(2)
    a, tau = rng.standard_normal((5, 3)), rng.standard_normal(3)
    np.testing.assert_allclose(
        _householder_product(rt.tensor(a), rt.tensor(tau)).numpy(),
        torch.linalg.householder_product(torch.tensor(a), torch.tensor(tau)).numpy(),
        rtol=1e-12, atol=1e-12)
    assert gradcheck(_householder_product, (rt.tensor(a, requires_grad=True),
                                            rt.tensor(tau, requires_grad=True)))


@pytest.mark.parametrize("call", [
    "orth(lib.nn.Linear(3, 3), orthogonal_map='qr')",
    "orth(lib.nn.Linear(3, 3), name='bias')",
    "orth(lib.nn.Linear(3, 3), name='nothing')",
])
def test_orthogonal_errors_match_torch(call):
    def run(lib: Any, orth: Any) -> str:
        with pytest.raises(Exception) as info:
            eval(call, {"lib": lib, "orth": orth})
        return f"{type(info.value).__name__}: {info.value}".replace("torch.", "runtime.")

    assert run(rt, orthogonal) == run(torch, torth)


def test_orthogonal_assigning_a_wrong_shape_raises_as_torch():
    rl, tl = orthogonal(rt.nn.Linear(3, 4)), torth(torch.nn.Linear(3, 4))
    with pytest.raises(ValueError) as want:
        tl.weight = torch.zeros(3, 3)
    with pytest.raises(ValueError) as got:
        rl.weight = rt.zeros(3, 3)
    assert str(got.value).replace("runtime.", "torch.") == str(want.value)


@pytest.mark.parametrize("tensor_name", [None, "weight"])
def test_transfer_parametrizations_and_params_matches_torch(tensor_name):
    def run(lib: Any, orth: Any) -> Any:
        lib.manual_seed(0)
        source = lib.nn.Linear(3, 3).double()
        with lib.no_grad():
            source.weight.copy_(lib.tensor(np.random.default_rng(0).standard_normal((3, 3))))
            source.bias.copy_(lib.tensor(np.arange(1.0, 4.0)))
        orth(source)
        if tensor_name is None:  # a second parametrized tensor, transferred too
            lib.nn.utils.parametrizations.weight_norm(source, "bias", dim=None)
        target = lib.nn.Linear(3, 3).double()
        with lib.no_grad():  # registering on the target builds its base from its own weight
            target.weight.copy_(lib.tensor(np.random.default_rng(1).standard_normal((3, 3))))
            target.bias.copy_(lib.tensor(np.arange(3.0)))
        lib.nn.utils.parametrize.transfer_parametrizations_and_params(source, target,
                                                                      tensor_name)
        shared = target.parametrizations.weight.original is \
            source.parametrizations.weight.original
        return repr(target), list(target.state_dict()), shared, \
            target.weight.detach().numpy()

    want, got = run(torch, torth), run(rt, orthogonal)
    assert got[:3] == want[:3]
    np.testing.assert_allclose(got[3], want[3], rtol=1e-10, atol=1e-12)
