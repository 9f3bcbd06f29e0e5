"""rt.distributions.kl_divergence against torch's, values and gradients, and register_kl's
dispatch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import runtime as rt
import runtime.distributions as rd

torch = pytest.importorskip("torch")
td = torch.distributions

A = np.array([0.7, 1.3, 2.5])
B = np.array([1.5, 0.5, 2.0])
SPD1 = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]])
SPD2 = np.array([[1.0, -0.4, 0.0], [-0.4, 0.8, 0.1], [0.0, 0.1, 1.2]])

# name -> (class, p's parameters, q's parameters)
PAIRS = {
    "normal": ("Normal", {"loc": A - 1, "scale": B}, {"loc": B, "scale": A}),
    "categorical": ("Categorical", {"logits": np.array([[0.3, -1.2, 2.0], [0.0, 0.5, -0.5]])},
                    {"probs": np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])}),
    "onehot": ("OneHotCategorical", {"logits": np.array([0.3, -1.2, 2.0])},
               {"logits": np.array([0.1, 0.2, 0.3])}),
    "bernoulli": ("Bernoulli", {"probs": np.array([0.2, 0.5, 0.9])},
                  {"logits": np.array([-1.0, 0.3, 1.0])}),
    "mvn": ("MultivariateNormal", {"loc": A, "covariance_matrix": SPD1},
            {"loc": B, "scale_tril": np.linalg.cholesky(SPD2)}),
    "mvn_batch": ("MultivariateNormal", {"loc": np.stack([A, B]), "scale_tril":
                                         np.linalg.cholesky(SPD1)},
                  {"loc": B, "precision_matrix": SPD2}),
    "uniform": ("Uniform", {"low": np.array([0.0, 0.2, -1.0]), "high": np.array([1.0, 0.5, 0.0])},
                {"low": np.array([-1.0, 0.0, -0.5]), "high": np.array([2.0, 1.0, 3.0])}),
    "beta": ("Beta", {"concentration1": A, "concentration0": B},
             {"concentration1": B, "concentration0": A}),
    "gamma": ("Gamma", {"concentration": A, "rate": B}, {"concentration": B, "rate": A}),
    "dirichlet": ("Dirichlet", {"concentration": A}, {"concentration": B}),
    "exponential": ("Exponential", {"rate": A}, {"rate": B}),
    "laplace": ("Laplace", {"loc": A, "scale": B}, {"loc": B, "scale": A}),
    "poisson": ("Poisson", {"rate": A}, {"rate": B}),
    "binomial": ("Binomial", {"total_count": np.array([5.0, 5.0, 6.0]),
                              "probs": np.array([0.2, 0.5, 0.9])},
                 {"total_count": np.array([5.0, 5.0, 5.0]), "logits": np.array([-1.0, 0.3, 1.0])}),
    "cauchy": ("Cauchy", {"loc": A, "scale": B}, {"loc": B, "scale": A}),
    "continuous_bernoulli": ("ContinuousBernoulli", {"probs": np.array([0.2, 0.5, 0.9])},
                             {"logits": np.array([-1.0, 0.3, 1.0])}),
    "gumbel": ("Gumbel", {"loc": A, "scale": B}, {"loc": B, "scale": A}),
    "pareto": ("Pareto", {"scale": A, "alpha": B}, {"scale": B, "alpha": A}),
    "half_normal": ("HalfNormal", {"scale": A}, {"scale": B}),
    "geometric": ("Geometric", {"probs": np.array([0.2, 0.5, 0.9])},
                  {"probs": np.array([0.4, 0.3, 0.6])}),
}


def _make(lib, mod, cls, params):
    tensors = {k: lib.tensor(v, dtype=lib.float64, requires_grad=True) for k, v in params.items()}
    return getattr(mod, cls)(**tensors), tensors


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_kl_matches_torch(name):
    cls, pp, qp = PAIRS[name]
    p_rt, pt_rt = _make(rt, rd, cls, pp)
    q_rt, qt_rt = _make(rt, rd, cls, qp)
    p_t, pt_t = _make(torch, td, cls, pp)
    q_t, qt_t = _make(torch, td, cls, qp)
    kl_rt, kl_t = rd.kl_divergence(p_rt, q_rt), td.kl_divergence(p_t, q_t)
    assert tuple(kl_rt.shape) == tuple(kl_t.shape)
    np.testing.assert_allclose(_np(kl_rt), _np(kl_t), rtol=1e-7, atol=1e-10)
    finite = torch.isfinite(kl_t)
    if not bool(finite.any()):
        return
    names = list(pp) + list(qp)
    leaves_t = [pt_t[k] for k in pp] + [qt_t[k] for k in qp]
    leaves_rt = [pt_rt[k] for k in pp] + [qt_rt[k] for k in qp]
    g_t = torch.autograd.grad(kl_t[finite].sum(), leaves_t, allow_unused=True)
    mask = rt.tensor(finite.numpy())
    g_rt = rt.autograd.grad(kl_rt[mask].sum(), leaves_rt, allow_unused=True)
    for n, a, b in zip(names, g_rt, g_t):
        if a is None and b is None:
            continue
        want = np.zeros(a.shape) if b is None else b.numpy()
        got = np.zeros(want.shape) if a is None else _np(a)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9, err_msg=n)


def test_kl_independent_and_lognormal():
    loc, scale = np.array([[0.1, 0.2], [0.3, -1.0]]), np.array([[1.0, 2.0], [0.5, 1.5]])
    p = rd.Independent(rd.Normal(rt.tensor(loc), rt.tensor(scale)), 1)
    q = rd.Independent(rd.Normal(rt.tensor(scale), rt.tensor(scale + 1)), 1)
    want = td.kl_divergence(td.Independent(td.Normal(torch.tensor(loc), torch.tensor(scale)), 1),
                            td.Independent(td.Normal(torch.tensor(scale),
                                                     torch.tensor(scale + 1)), 1))
    np.testing.assert_allclose(_np(rd.kl_divergence(p, q)), want.numpy(), rtol=1e-12)
    p2 = rd.LogNormal(rt.tensor(loc), rt.tensor(scale))
    q2 = rd.LogNormal(rt.tensor(scale), rt.tensor(scale + 1))
    want2 = td.kl_divergence(td.LogNormal(torch.tensor(loc), torch.tensor(scale)),
                             td.LogNormal(torch.tensor(scale), torch.tensor(scale + 1)))
    np.testing.assert_allclose(_np(rd.kl_divergence(p2, q2)), want2.numpy(), rtol=1e-12)
    with pytest.raises(NotImplementedError):
        rd.kl_divergence(p, rd.Independent(rd.Normal(rt.tensor(loc), rt.tensor(scale)), 2))


def test_kl_of_unregistered_pair_is_torchs_error():
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p "
                                                  "type Normal and q type Cauchy"):
        rd.kl_divergence(rd.Normal(0.0, 1.0), rd.Cauchy(0.0, 1.0))
    # two exponential families of different kinds: torch's text (its spacing aside)
    with pytest.raises(NotImplementedError) as got:
        rd.kl_divergence(rd.Normal(0.0, 1.0), rd.Poisson(1.0))
    with pytest.raises(NotImplementedError) as want:
        td.kl_divergence(td.Normal(0.0, 1.0), td.Poisson(1.0))
    assert " ".join(str(got.value).split()) == " ".join(str(want.value).split())


def test_register_kl_picks_the_most_specific_and_warns_when_ambiguous():
    class MyNormal(rd.Normal):
        pass

    class MyOther(rd.Normal):
        pass

    p, q = MyNormal(0.0, 1.0), MyOther(1.0, 2.0)
    np.testing.assert_allclose(_np(rd.kl_divergence(p, q)),
                               _np(rd.kl_divergence(rd.Normal(0.0, 1.0), rd.Normal(1.0, 2.0))))

    @rd.register_kl(MyNormal, rd.Normal)
    def _left(p, q):
        return rt.tensor(1.0)

    @rd.register_kl(rd.Normal, MyOther)
    def _right(p, q):
        return rt.tensor(2.0)

    with pytest.warns(RuntimeWarning, match="Ambiguous kl_divergence\\(MyNormal, MyOther\\)"):
        assert rd.kl_divergence(p, q).item() == 1.0

    @rd.register_kl(MyNormal, MyOther)
    def _both(p, q):
        return rt.tensor(3.0)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rd.kl_divergence(p, q).item() == 3.0
    assert rd.kl_divergence(MyNormal(0.0, 1.0), rd.Normal(0.0, 1.0)).item() == 1.0
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        rd.register_kl(int, rd.Normal)
