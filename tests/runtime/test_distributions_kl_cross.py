"""kl_divergence between different families (and the low-rank normals) against torch's:
every pair torch registers, values (infinite ones included) and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
import runtime.distributions as rd

torch = pytest.importorskip("torch")
td = torch.distributions

# per class: parameters whose KLs are finite against every q torch computes one for, and a
# mixed set (supports partly outside q's: some KLs infinite)
FINITE = {
    "Beta": {"concentration1": [0.7, 2.0, 3.5], "concentration0": [1.5, 0.6, 2.0]},
    "ContinuousBernoulli": {"probs": [0.2, 0.7, 0.9]},
    "Exponential": {"rate": [0.5, 1.5, 3.0]},
    "Gamma": {"concentration": [0.7, 2.0, 4.0], "rate": [1.5, 0.5, 2.0]},
    "Normal": {"loc": [0.1, -1.0, 2.0], "scale": [0.7, 1.3, 2.5]},
    "Uniform": {"low": [0.1, 0.3, 0.05], "high": [0.5, 0.9, 0.2]},
    "Gumbel": {"loc": [0.1, -1.0, 2.0], "scale": [0.7, 1.3, 2.5]},
    "Laplace": {"loc": [0.1, -1.0, 2.0], "scale": [0.7, 1.3, 2.5]},
    "Pareto": {"scale": [0.5, 1.0, 0.2], "alpha": [2.5, 3.0, 4.0]},
    "Poisson": {"rate": [0.5, 1.5, 3.0]},
    "Bernoulli": {"probs": [0.2, 0.7, 0.9]},
    "Binomial": {"total_count": [3.0, 3.0, 3.0], "probs": [0.2, 0.7, 0.9]},
}
MIXED = {**FINITE,
         "Uniform": {"low": [-0.5, 0.3, 0.05], "high": [0.5, 1.5, 0.2]},
         "Pareto": {"scale": [0.5, 1.0, 0.2], "alpha": [0.8, 1.5, 4.0]}}
Q_MIXED = {**FINITE, "Uniform": {"low": [-1.0, 0.2, -0.1], "high": [2.0, 3.0, 0.9]},
           "Pareto": {"scale": [0.05, 0.5, 0.1], "alpha": [1.5, 2.0, 3.0]}}


def _make(lib, mod, name, params, grad):
    kw = {k: lib.tensor(np.asarray(v, dtype=np.float64), dtype=lib.float64,
                        requires_grad=grad and k != "total_count") for k, v in params.items()}
    return getattr(mod, name)(**kw), [v for v in kw.values() if v.requires_grad]


PAIRS = sorted((p.__name__, q.__name__) for p, q in td.kl._KL_REGISTRY
               if p.__name__ != q.__name__ and p.__name__ in FINITE and q.__name__ in FINITE)


@pytest.mark.parametrize(("p_name", "q_name"), PAIRS)
def test_cross_family_kl_values_match_torch(p_name, q_name):
    for p_params, q_params in ((FINITE[p_name], FINITE[q_name]),
                               (MIXED[p_name], Q_MIXED[q_name])):
        p_t, _ = _make(torch, td, p_name, p_params, False)
        q_t, _ = _make(torch, td, q_name, q_params, False)
        p_r, _ = _make(rt, rd, p_name, p_params, False)
        q_r, _ = _make(rt, rd, q_name, q_params, False)
        want = td.kl_divergence(p_t, q_t).numpy()
        got = rd.kl_divergence(p_r, q_r).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(("p_name", "q_name"), PAIRS)
def test_cross_family_kl_gradients_match_torch(p_name, q_name):
    p_t, leaves_t = _make(torch, td, p_name, FINITE[p_name], True)
    q_t, more_t = _make(torch, td, q_name, FINITE[q_name], True)
    p_r, leaves_r = _make(rt, rd, p_name, FINITE[p_name], True)
    q_r, more_r = _make(rt, rd, q_name, FINITE[q_name], True)
    kl_t, kl_r = td.kl_divergence(p_t, q_t), rd.kl_divergence(p_r, q_r)
    if not torch.isfinite(kl_t).all() or not kl_t.requires_grad:
        assert not np.isfinite(kl_r.detach().numpy()).any()
        return
    g_t = torch.autograd.grad(kl_t.sum(), leaves_t + more_t, allow_unused=True)
    g_r = rt.autograd.grad(kl_r.sum(), leaves_r + more_r, allow_unused=True)
    for a, b in zip(g_r, g_t):
        want = np.zeros(3) if b is None else b.numpy()
        got = np.zeros(3) if a is None else a.numpy()
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)


def test_lowrank_kls_match_torch():
    loc = np.array([[0.5, -1.0, 0.0], [1.0, 0.0, 2.0]])
    factor = np.array([[1.0, 0.2], [-0.5, 0.3], [0.1, 0.9]])
    diag = np.array([0.5, 1.5, 0.8])
    tril = np.linalg.cholesky(np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]]))

    def build(lib, mod):
        t = [lib.tensor(a, dtype=lib.float64, requires_grad=True)
             for a in (loc, factor, diag, tril)]
        return mod.LowRankMultivariateNormal(t[0], t[1], t[2]), mod.MultivariateNormal(
            t[0][0] * 0.5, scale_tril=t[3]), t

    (lr_r, mvn_r, t_r), (lr_t, mvn_t, t_t) = build(rt, rd), build(torch, td)
    lr2_r = rd.LowRankMultivariateNormal(t_r[0] * 0.3, t_r[1] * 0.5, t_r[2] + 0.2)
    lr2_t = td.LowRankMultivariateNormal(t_t[0] * 0.3, t_t[1] * 0.5, t_t[2] + 0.2)
    for (a_r, b_r), (a_t, b_t) in (((lr_r, mvn_r), (lr_t, mvn_t)), ((mvn_r, lr_r), (mvn_t, lr_t)),
                                   ((lr_r, lr2_r), (lr_t, lr2_t))):
        got, want = rd.kl_divergence(a_r, b_r), td.kl_divergence(a_t, b_t)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-9)
        g_r = rt.autograd.grad(got.sum(), t_r, allow_unused=True, retain_graph=True)
        g_t = torch.autograd.grad(want.sum(), t_t, allow_unused=True, retain_graph=True)
        for x, y in zip(g_r, g_t):
            if y is None:
                continue
            gx = x.numpy() if x is not None else np.zeros(y.shape)
            np.testing.assert_allclose(np.tril(gx) if gx.shape == (3, 3) else gx,
                                       np.tril(y.numpy()) if gx.shape == (3, 3) else y.numpy(),
                                       rtol=1e-7, atol=1e-10)


def test_halfnormal_kl_matches_torch():
    p_r, q_r = rd.HalfNormal(rt.tensor([0.5, 2.0])), rd.HalfNormal(rt.tensor([1.0, 1.0]))
    p_t, q_t = td.HalfNormal(torch.tensor([0.5, 2.0])), td.HalfNormal(torch.tensor([1.0, 1.0]))
    np.testing.assert_allclose(rd.kl_divergence(p_r, q_r).numpy(),
                               td.kl_divergence(p_t, q_t).numpy(), rtol=1e-6)


def test_wishart_kl_matches_torchs_bregman_divergence():
    s1 = np.array([[2.0, 0.3], [0.3, 1.0]])
    s2 = np.array([[1.0, -0.2], [-0.2, 0.5]])

    def build(lib, mod):
        t = [lib.tensor(a, dtype=lib.float64, requires_grad=True)
             for a in (np.array(4.0), s1, np.array(6.0), s2)]
        return mod.Wishart(t[0], t[1]), mod.Wishart(t[2], precision_matrix=t[3]), t

    (p_r, q_r, t_r), (p_t, q_t, t_t) = build(rt, rd), build(torch, td)
    got, want = rd.kl_divergence(p_r, q_r), td.kl_divergence(p_t, q_t)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-9)
    g_r = rt.autograd.grad(got.sum(), t_r)
    g_t = torch.autograd.grad(want.sum(), t_t, allow_unused=True)
    for a, b in zip(g_r[2:], g_t[2:]):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-7, atol=1e-10)
    # torch's divergence detaches p's parameters (their gradients are None): ours against
    # finite differences
    assert g_t[0] is None and g_t[1] is None
    h = 1e-6

    def kl_at(df, cov):
        return rd.kl_divergence(rd.Wishart(df, rt.tensor(cov)),
                                rd.Wishart(6.0, precision_matrix=rt.tensor(s2))).item()

    np.testing.assert_allclose(g_r[0].item(), (kl_at(4.0 + h, s1) - kl_at(4.0 - h, s1)) / (2 * h),
                               rtol=1e-6)
    for i, j in ((0, 0), (1, 1)):
        e = np.zeros((2, 2))
        e[i, j] = h
        fd = (kl_at(4.0, s1 + e) - kl_at(4.0, s1 - e)) / (2 * h)
        np.testing.assert_allclose(g_r[1].numpy()[i, j], fd, rtol=1e-6)


def test_wishart_kl_of_a_batch_matches_torch_one_by_one():
    """torch 2.13's (Bregman) KL is wrong for a batched p against an unbatched q (-0.45 for
    df = 4 below, where it gives 1.79 unbatched): ours of the batch against torch's of each
    element alone."""
    s1 = np.array([[2.0, 0.3], [0.3, 1.0]])
    prec = np.array([[1.0, -0.2], [-0.2, 0.5]])
    dfs = np.array([4.0, 3.0])
    got = rd.kl_divergence(rd.Wishart(rt.tensor(dfs), rt.tensor(s1)),
                           rd.Wishart(6.0, precision_matrix=rt.tensor(prec))).numpy()
    q_t = td.Wishart(torch.tensor(6.0, dtype=torch.float64), precision_matrix=torch.tensor(prec))
    want = [td.kl_divergence(td.Wishart(torch.tensor(nu, dtype=torch.float64),
                                        torch.tensor(s1)), q_t).item() for nu in dfs]
    np.testing.assert_allclose(got, want, rtol=1e-10)
