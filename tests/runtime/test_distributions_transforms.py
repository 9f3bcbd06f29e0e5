"""rt.distributions' transforms, TransformedDistribution, Independent and MixtureSameFamily
against torch's."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
import runtime.distributions as rd
from runtime.distributions import transforms as rtr

torch = pytest.importorskip("torch")
td = torch.distributions
ttr = td.transforms

X = np.array([[-2.0, -0.3, 0.0], [0.4, 1.1, 3.0]])


def _f64(lib, v, grad=False):
    return lib.tensor(np.asarray(v, dtype=np.float64), dtype=lib.float64, requires_grad=grad)


def _np(t):
    return t.detach().numpy()


TRANSFORMS = {
    "exp": lambda L, M: M.ExpTransform(),
    "sigmoid": lambda L, M: M.SigmoidTransform(),
    "tanh": lambda L, M: M.TanhTransform(),
    "affine": lambda L, M: M.AffineTransform(_f64(L, [1.0, -2.0, 0.5]), _f64(L, [2.0, -0.5, 3.0])),
    "affine_num": lambda L, M: M.AffineTransform(1.5, -2.0),
    "affine_event": lambda L, M: M.AffineTransform(0.5, _f64(L, [2.0, 0.5, 3.0]), event_dim=1),
    "power": lambda L, M: M.PowerTransform(_f64(L, 2.5)),
    "compose": lambda L, M: M.ComposeTransform([M.AffineTransform(0.3, 2.0), M.TanhTransform(),
                                                M.AffineTransform(1.0, 3.0)]),
    "inverse": lambda L, M: M.ComposeTransform([M.SigmoidTransform(),
                                                M.SigmoidTransform().inv]),
    "softplus": lambda L, M: M.SoftplusTransform(),
    "stick_breaking": lambda L, M: M.StickBreakingTransform(),
    "independent": lambda L, M: M.IndependentTransform(M.ExpTransform(), 1),
    "reshape": lambda L, M: M.ReshapeTransform((2, 3), (3, 2)),
    "corr_cholesky": lambda L, M: M.CorrCholeskyTransform(),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transform_matches_torch(name):
    t_rt, t_t = TRANSFORMS[name](rt, rtr), TRANSFORMS[name](torch, ttr)
    x = np.abs(X) + 0.1 if name == "power" else X
    x_rt, x_t = _f64(rt, x, True), _f64(torch, x, True)
    y_rt, y_t = t_rt(x_rt), t_t(x_t)
    np.testing.assert_allclose(_np(y_rt), _np(y_t), rtol=1e-12)
    ld_rt, ld_t = t_rt.log_abs_det_jacobian(x_rt, y_rt), t_t.log_abs_det_jacobian(x_t, y_t)
    assert tuple(ld_rt.shape) == tuple(ld_t.shape)
    np.testing.assert_allclose(_np(ld_rt), _np(ld_t), rtol=1e-10, atol=1e-12)
    (g_rt,) = rt.autograd.grad((y_rt.sum() + ld_rt.sum()), [x_rt])
    (g_t,) = torch.autograd.grad((y_t.sum() + ld_t.sum()), [x_t])
    np.testing.assert_allclose(_np(g_rt), _np(g_t), rtol=1e-9, atol=1e-12)
    back_rt = t_rt.inv(_f64(rt, _np(y_t)))
    np.testing.assert_allclose(_np(back_rt), _np(t_t.inv(y_t.detach())), rtol=1e-9, atol=1e-12)
    assert repr(t_rt.domain) == repr(t_t.domain)
    assert repr(t_rt.codomain) == repr(t_t.codomain)
    assert t_rt.bijective == t_t.bijective
    assert repr(t_rt).replace(" ", "") == repr(t_t).replace(" ", "")


def test_transform_cache_and_equality():
    t = rtr.ExpTransform(cache_size=1)
    x = rt.tensor([0.5, 1.0])
    y = t(x)
    assert t(x) is y and t.inv(y) is x
    assert rtr.ExpTransform() == rtr.ExpTransform() and rtr.ExpTransform() != rtr.TanhTransform()
    assert rtr.AffineTransform(1.0, 2.0) == rtr.AffineTransform(1.0, 2.0)
    assert t.inv.inv is t
    assert rtr.AffineTransform(0.0, -2.0).sign == -1
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        rtr.ExpTransform(cache_size=2)


DISTS = {
    "sigmoid_normal": lambda L, M, g: M.TransformedDistribution(
        M.Normal(g(L, [0.1, -0.5]), g(L, [1.0, 0.5])),
        [M.transforms.SigmoidTransform()]),
    "tanh_affine": lambda L, M, g: M.TransformedDistribution(
        M.Normal(g(L, [0.1, -0.5]), g(L, [1.0, 0.5])),
        [M.transforms.AffineTransform(0.2, 1.5), M.transforms.TanhTransform()]),
    "affine_negative": lambda L, M, g: M.TransformedDistribution(
        M.Exponential(g(L, [1.0, 2.0])), M.transforms.AffineTransform(1.0, -2.0)),
    "affine_event": lambda L, M, g: M.TransformedDistribution(
        M.Normal(g(L, [[0.1, -0.5], [1.0, 2.0]]), 1.0),
        M.transforms.AffineTransform(0.0, _f64(L, [2.0, 3.0]), event_dim=1)),
    "exp_mvn": lambda L, M, g: M.TransformedDistribution(
        M.MultivariateNormal(g(L, [0.1, -0.5]), scale_tril=_f64(L, [[1.0, 0.0], [0.3, 0.5]])),
        M.transforms.ExpTransform()),
    "independent": lambda L, M, g: M.Independent(
        M.Normal(g(L, [[0.1, -0.5], [1.0, 2.0]]), _f64(L, [[1.0, 0.5], [2.0, 1.0]])), 1),
    "independent_2": lambda L, M, g: M.Independent(
        M.Bernoulli(_f64(L, [[0.1, 0.5], [0.7, 0.2]])), 2),
    "mixture": lambda L, M, g: M.MixtureSameFamily(
        M.Categorical(logits=g(L, [0.3, -0.2, 1.0])),
        M.Normal(g(L, [-1.0, 0.0, 2.0]), g(L, [0.5, 1.0, 0.3]))),
    "mixture_batch_mvn": lambda L, M, g: M.MixtureSameFamily(
        M.Categorical(probs=_f64(L, [[0.3, 0.7], [0.5, 0.5]])),
        M.MultivariateNormal(g(L, np.arange(8.0).reshape(2, 2, 2) / 4),
                             scale_tril=_f64(L, np.eye(2)) * 0.7)),
    "mixture_independent": lambda L, M, g: M.MixtureSameFamily(
        M.Categorical(logits=_f64(L, [0.3, -0.2])),
        M.Independent(M.Normal(g(L, [[0.0, 1.0], [2.0, -1.0]]), 1.0), 1)),
}


def _build(name, lib, mod):
    """The distribution and the leaf tensors (made by ``g``) its gradients are taken to."""
    leaves = []

    def g(L, v):
        leaves.append(_f64(L, v, True))
        return leaves[-1]

    return DISTS[name](lib, mod, g), leaves


@pytest.mark.parametrize("name", sorted(DISTS))
def test_composite_distribution_matches_torch(name):
    (d_rt, leaves_rt), (d_t, leaves_t) = _build(name, rt, rd), _build(name, torch, td)
    assert tuple(d_rt.batch_shape) == tuple(d_t.batch_shape)
    assert tuple(d_rt.event_shape) == tuple(d_t.event_shape)
    assert repr(d_rt.support) == repr(d_t.support)
    torch.manual_seed(0)
    value = d_t.sample((3,)).numpy()
    lp_rt, lp_t = d_rt.log_prob(_f64(rt, value)), d_t.log_prob(_f64(torch, value))
    assert tuple(lp_rt.shape) == tuple(lp_t.shape)
    np.testing.assert_allclose(_np(lp_rt), _np(lp_t), rtol=1e-9, atol=1e-12)
    if leaves_t:
        g_rt = rt.autograd.grad(lp_rt.sum(), leaves_rt)
        g_t = torch.autograd.grad(lp_t.sum(), leaves_t)
        for a, b in zip(g_rt, g_t):
            np.testing.assert_allclose(_np(a), _np(b), rtol=1e-8, atol=1e-12)
    for prop in ("mean", "variance"):
        try:
            want = getattr(d_t, prop)
        except NotImplementedError:
            continue
        np.testing.assert_allclose(_np(getattr(d_rt, prop)), _np(want), rtol=1e-10)
    rt.manual_seed(0)
    s = d_rt.sample((4,))
    assert tuple(s.shape) == (4, *d_t.batch_shape, *d_t.event_shape)
    assert bool(d_rt.support.check(s).all())
    big_rt = d_rt.expand((5, *d_rt.batch_shape))
    big_t = d_t.expand((5, *d_t.batch_shape))
    np.testing.assert_allclose(_np(big_rt.log_prob(_f64(rt, value[:1]))),
                               _np(big_t.log_prob(_f64(torch, value[:1]))), rtol=1e-9)


@pytest.mark.parametrize("name", ["sigmoid_normal", "tanh_affine", "affine_negative"])
def test_transformed_cdf_icdf_match_torch(name):
    (d_rt, _), (d_t, _) = _build(name, rt, rd), _build(name, torch, td)
    torch.manual_seed(1)
    value = d_t.sample((3,)).numpy()
    np.testing.assert_allclose(_np(d_rt.cdf(_f64(rt, value))), _np(d_t.cdf(_f64(torch, value))),
                               rtol=1e-9)
    q = np.array([[0.2, 0.7]])
    np.testing.assert_allclose(_np(d_rt.icdf(_f64(rt, q))), _np(d_t.icdf(_f64(torch, q))),
                               rtol=1e-9)


def test_mixture_cdf_and_entropy_of_independent_match_torch():
    (d_rt, _), (d_t, _) = _build("mixture", rt, rd), _build("mixture", torch, td)
    v = np.array([-1.5, 0.2, 2.5])
    np.testing.assert_allclose(_np(d_rt.cdf(_f64(rt, v)[:, None].squeeze(-1))),
                               _np(d_t.cdf(_f64(torch, v))), rtol=1e-10)
    (i_rt, _), (i_t, _) = _build("independent", rt, rd), _build("independent", torch, td)
    np.testing.assert_allclose(_np(i_rt.entropy()), _np(i_t.entropy()), rtol=1e-12)
    assert repr(i_rt).replace("runtime.", "torch.") == repr(i_t)
    with pytest.raises(NotImplementedError, match="Enumeration over cartesian product"):
        i_rt.enumerate_support()


SQUARE = np.array([[[0.3, 9.0, -1.0], [0.5, -0.2, 7.0], [-1.0, 2.0, 0.1]],
                   [[1.3, 0.0, 0.0], [0.2, 0.4, 0.0], [0.0, -0.7, -2.0]]])


@pytest.mark.parametrize("name", ["LowerCholeskyTransform", "PositiveDefiniteTransform",
                                  "SoftmaxTransform"])
def test_transforms_without_a_jacobian_match_torch(name):
    t_rt, t_t = getattr(rtr, name)(), getattr(ttr, name)()
    x_rt, x_t = _f64(rt, SQUARE, True), _f64(torch, SQUARE, True)
    y_rt, y_t = t_rt(x_rt), t_t(x_t)
    np.testing.assert_allclose(_np(y_rt), _np(y_t), rtol=1e-12)
    (g_rt,) = rt.autograd.grad((y_rt * _f64(rt, SQUARE)).sum(), [x_rt])
    (g_t,) = torch.autograd.grad((y_t * _f64(torch, SQUARE)).sum(), [x_t])
    np.testing.assert_allclose(_np(g_rt), _np(g_t), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(t_rt.inv(_f64(rt, _np(y_t)))), _np(t_t.inv(y_t.detach())),
                               rtol=1e-8, atol=1e-10)
    assert repr(t_rt.codomain) == repr(t_t.codomain)


CONSTRAINTS = {
    "real": lambda c: c.real, "positive": lambda c: c.positive,
    "nonnegative": lambda c: c.nonnegative, "greater_than": lambda c: c.greater_than(1.5),
    "greater_than_eq": lambda c: c.greater_than_eq(-2.0), "less_than": lambda c: c.less_than(3.0),
    "unit_interval": lambda c: c.unit_interval, "interval": lambda c: c.interval(-1.0, 4.0),
    "half_open_interval": lambda c: c.half_open_interval(0.0, 2.0),
    "simplex": lambda c: c.simplex, "real_vector": lambda c: c.real_vector,
    "independent_positive": lambda c: c.independent(c.positive, 1),
    "corr_cholesky": lambda c: c.corr_cholesky,
}


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name", sorted(CONSTRAINTS))
def test_constraint_registry_matches_torch(registry, name):
    c_rt, c_t = CONSTRAINTS[name](rd.constraints), CONSTRAINTS[name](td.constraints)
    t_rt, t_t = getattr(rd, registry)(c_rt), getattr(td, registry)(c_t)
    assert repr(t_rt).replace(" ", "") == repr(t_t).replace(" ", "")
    x_rt, x_t = _f64(rt, X, True), _f64(torch, X, True)
    y_rt, y_t = t_rt(x_rt), t_t(x_t)
    np.testing.assert_allclose(_np(y_rt), _np(y_t), rtol=1e-12)
    assert bool(c_rt.check(y_rt).all())
    if registry == "biject_to":
        ld_rt, ld_t = t_rt.log_abs_det_jacobian(x_rt, y_rt), t_t.log_abs_det_jacobian(x_t, y_t)
        np.testing.assert_allclose(_np(ld_rt), _np(ld_t), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(_np(t_rt.inv(y_rt)), X, rtol=1e-7, atol=1e-9)


def test_constraint_registry_errors_and_matrix_constraints():
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        rd.biject_to(rd.constraints.boolean)
    with pytest.raises(TypeError, match="Expected constraint to be either a Constraint"):
        rd.biject_to.register(int, lambda c: None)
    y = rd.transform_to(rd.constraints.positive_definite)(rt.tensor(SQUARE))
    assert bool(rd.constraints.positive_definite.check(y).all())
    y = rd.transform_to(rd.constraints.lower_cholesky)(rt.tensor(SQUARE))
    assert bool(rd.constraints.lower_cholesky.check(y).all())


def test_tanh_squashed_policy_log_prob_uses_the_cached_pre_image():
    """SAC's policy: Normal -> TanhTransform(cache_size=1); the log_prob of the rsample's own
    output reads the cached pre-tanh value (atanh of a saturated action would be inf)."""
    loc = rt.tensor([0.0, 30.0], dtype=rt.float64, requires_grad=True)
    d = rd.TransformedDistribution(rd.Normal(loc, 1.0), [rtr.TanhTransform(cache_size=1)])
    rt.manual_seed(0)
    y = d.rsample()
    assert _np(y)[1] == 1.0  # saturated in float64
    lp = d.log_prob(y)
    assert np.isfinite(lp.detach().numpy()).all()
    x = _np(y)  # the pre-image is not recoverable from y: recompute it from the same noise
    rt.manual_seed(0)
    pre = rd.Normal(loc, 1.0).rsample()
    d_t = td.TransformedDistribution(td.Normal(_f64(torch, _np(loc)), 1.0),
                                     [ttr.TanhTransform(cache_size=1)])
    y_t = d_t.transforms[0](_f64(torch, _np(pre)))
    np.testing.assert_allclose(x, _np(y_t))
    np.testing.assert_allclose(_np(lp), _np(d_t.log_prob(y_t)), rtol=1e-12)
    (g,) = rt.autograd.grad(lp.sum(), [loc])
    assert np.isfinite(g.numpy()).all()


COMBINED = {
    "cat_batch": (lambda M: M.CatTransform([M.ExpTransform(), M.TanhTransform()], dim=0,
                                           lengths=[1, 1]), X),
    "cat_event": (lambda M: M.CatTransform([M.IndependentTransform(M.ExpTransform(), 1),
                                            M.IndependentTransform(M.SigmoidTransform(), 1)],
                                           dim=-1, lengths=[1, 2]), X),
    "stack": (lambda M: M.StackTransform([M.ExpTransform(), M.SigmoidTransform(),
                                          M.AffineTransform(1.0, -2.0)], dim=1), X),
}


@pytest.mark.parametrize("name", sorted(COMBINED))
def test_cat_and_stack_transforms_match_torch(name):
    make, x = COMBINED[name]
    t_rt, t_t = make(rtr), make(ttr)
    x_rt, x_t = _f64(rt, x, True), _f64(torch, x, True)
    y_rt, y_t = t_rt(x_rt), t_t(x_t)
    np.testing.assert_allclose(_np(y_rt), _np(y_t), rtol=1e-12)
    ld_rt, ld_t = t_rt.log_abs_det_jacobian(x_rt, y_rt), t_t.log_abs_det_jacobian(x_t, y_t)
    assert tuple(ld_rt.shape) == tuple(ld_t.shape)
    np.testing.assert_allclose(_np(ld_rt), _np(ld_t), rtol=1e-10)
    (g_rt,) = rt.autograd.grad(y_rt.sum() + ld_rt.sum(), [x_rt])
    (g_t,) = torch.autograd.grad(y_t.sum() + ld_t.sum(), [x_t])
    np.testing.assert_allclose(_np(g_rt), _np(g_t), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_np(t_rt.inv(_f64(rt, _np(y_t)))), _np(t_t.inv(y_t.detach())),
                               rtol=1e-8, atol=1e-10)
    assert t_rt.bijective == t_t.bijective
    assert t_rt.event_dim == t_t.event_dim


def test_cumulative_distribution_transform_matches_torch():
    loc, scale = [0.1, -1.0, 2.0], [1.0, 0.5, 2.0]
    t_rt = rtr.CumulativeDistributionTransform(rd.Normal(_f64(rt, loc), _f64(rt, scale)))
    t_t = ttr.CumulativeDistributionTransform(td.Normal(_f64(torch, loc), _f64(torch, scale)))
    x_rt, x_t = _f64(rt, X, True), _f64(torch, X, True)
    y_rt, y_t = t_rt(x_rt), t_t(x_t)
    np.testing.assert_allclose(_np(y_rt), _np(y_t), rtol=1e-12)
    np.testing.assert_allclose(_np(t_rt.log_abs_det_jacobian(x_rt, y_rt)),
                               _np(t_t.log_abs_det_jacobian(x_t, y_t)), rtol=1e-12)
    np.testing.assert_allclose(_np(t_rt.inv(y_rt)), X, rtol=1e-9)
    assert repr(t_rt.domain) == repr(t_t.domain) and repr(t_rt.codomain) == repr(t_t.codomain)


def test_lkj_cholesky_matches_torch_and_draws_valid_factors():
    conc = np.array([0.5, 2.0, 5.0])
    c_rt, c_t = _f64(rt, conc, True), _f64(torch, conc, True)
    d_rt, d_t = rd.LKJCholesky(4, c_rt), td.LKJCholesky(4, c_t)
    torch.manual_seed(0)
    value = d_t.sample((3,))
    lp_rt, lp_t = d_rt.log_prob(_f64(rt, value.numpy())), d_t.log_prob(value)
    np.testing.assert_allclose(_np(lp_rt), _np(lp_t), rtol=1e-10)
    (g_rt,) = rt.autograd.grad(lp_rt.sum(), [c_rt])
    (g_t,) = torch.autograd.grad(lp_t.sum(), [c_t])
    np.testing.assert_allclose(_np(g_rt), _np(g_t), rtol=1e-9)
    assert tuple(d_rt.batch_shape) == (3,) and tuple(d_rt.event_shape) == (4, 4)
    assert repr(d_rt.support) == repr(d_t.support)
    with pytest.raises(ValueError, match="Expected dim to be an integer greater than or equal"):
        rd.LKJCholesky(1)


def test_lkj_cholesky_draws_have_the_marginal_correlation_law():
    """Under LKJ(eta) in dimension d each correlation r has (r + 1) / 2 ~ Beta(b, b),
    b = eta - 1 + d / 2: mean 0, variance 1 / (2 b + 1)."""
    dim, eta, n = 4, np.array([0.8, 3.0]), 20_000
    d = rd.LKJCholesky(dim, _f64(rt, eta))
    rt.manual_seed(1)
    L = d.sample((n,)).numpy()
    assert bool(rd.constraints.corr_cholesky.check(rt.tensor(L)).all())
    corr = L @ np.swapaxes(L, -1, -2)
    np.testing.assert_allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1.0, atol=1e-12)
    off = corr[..., np.tril_indices(dim, -1)[0], np.tril_indices(dim, -1)[1]]
    b = eta - 1 + dim / 2
    np.testing.assert_allclose(off.mean(axis=(0, 2)), 0.0, atol=0.01)
    np.testing.assert_allclose(off.var(axis=(0, 2)), 1 / (2 * b + 1), rtol=0.03)
