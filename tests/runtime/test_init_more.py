"""nn.init's normal-family, truncated, orthogonal and identity initialisers (their statistics
and structure: the draws are runtime's generator's, not PyTorch's) and nn.utils'
parameters_to_vector / vector_to_parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest

import runtime as rt

init = rt.nn.init


def test_normal_family_scales() -> None:
    rt.manual_seed(0)
    w = rt.empty(400, 300)
    init.xavier_normal_(w, gain=2.0)
    assert w.detach().numpy().std() == pytest.approx(2.0 * math.sqrt(2.0 / 700), rel=0.02)
    init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert w.detach().numpy().std() == pytest.approx(math.sqrt(2.0 / 400), rel=0.02)
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_normal_(w, mode="fan_avg")


def test_trunc_normal_is_the_truncated_normal() -> None:
    rt.manual_seed(1)
    w = rt.empty(200_000)
    init.trunc_normal_(w, mean=0.5, std=2.0, a=-1.0, b=3.0)
    x = w.numpy()
    assert x.min() >= -1.0 and x.max() <= 3.0
    # the truncated normal's mean and variance, in closed form
    alpha, beta = (-1.0 - 0.5) / 2.0, (3.0 - 0.5) / 2.0
    pdf = [math.exp(-t * t / 2) / math.sqrt(2 * math.pi) for t in (alpha, beta)]
    z = (math.erf(beta / math.sqrt(2)) - math.erf(alpha / math.sqrt(2))) / 2
    mean = 0.5 + 2.0 * (pdf[0] - pdf[1]) / z
    var = 4.0 * (1 + (alpha * pdf[0] - beta * pdf[1]) / z - ((pdf[0] - pdf[1]) / z) ** 2)
    assert x.mean() == pytest.approx(mean, abs=0.01)
    assert x.var() == pytest.approx(var, rel=0.02)


@pytest.mark.parametrize("shape", [(64, 32), (16, 48), (8, 3, 2, 2)])
def test_orthogonal_rows_or_columns(shape: tuple[int, ...]) -> None:
    w = rt.empty(*shape)
    init.orthogonal_(w, gain=1.5)
    m = w.numpy().reshape(shape[0], -1).astype(np.float64)
    gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(gram, 2.25 * np.eye(gram.shape[0]), atol=1e-5)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
        init.orthogonal_(rt.empty(3))


def test_eye() -> None:
    w = rt.empty(3, 5)
    init.eye_(w)
    np.testing.assert_array_equal(w.numpy(), np.eye(3, 5))


def test_parameter_vectors() -> None:
    ps = [rt.nn.Parameter(rt.ones(2, 3)), rt.nn.Parameter(rt.zeros(4))]
    v = rt.nn.utils.parameters_to_vector(ps)
    assert v.shape == (10,) and v.requires_grad
    (v * rt.arange(10.0)).sum().backward()
    np.testing.assert_array_equal(ps[0].grad.numpy(), np.arange(6.0).reshape(2, 3))
    rt.nn.utils.vector_to_parameters(rt.arange(10.0), ps)
    np.testing.assert_array_equal(ps[0].detach().numpy(), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(ps[1].detach().numpy(), np.arange(6.0, 10.0))
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        rt.nn.utils.vector_to_parameters([1.0], ps)
