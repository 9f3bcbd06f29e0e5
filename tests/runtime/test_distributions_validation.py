"""rt.distributions' argument and sample validation against torch's: the same exception
types and messages (the tensor printed after "invalid values:" aside)."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
import runtime.distributions as rd

torch = pytest.importorskip("torch")
td = torch.distributions


@pytest.fixture(autouse=True)
def _torch_validates():
    """torch's own default validation on, as it is in a fresh process: the first
    torch.compile of a process turns it off for good (torch._dynamo patches
    Distribution.set_default_validate_args(False)), and other tests of the suite compile."""
    before = td.Distribution._validate_args
    td.Distribution.set_default_validate_args(True)
    yield
    td.Distribution.set_default_validate_args(before)


def _t(lib, v):
    return lib.tensor(np.asarray(v, dtype=np.float64), dtype=lib.float64)


BAD = {
    "normal_scale": lambda L, M: M.Normal(_t(L, [0.0, 1.0]), _t(L, [1.0, -1.0])),
    "normal_scalar": lambda L, M: M.Normal(0.0, -1.0),
    "normal_nan_loc": lambda L, M: M.Normal(_t(L, [float("nan")]), 1.0),
    "uniform_order": lambda L, M: M.Uniform(_t(L, [0.0, 1.0]), _t(L, [1.0, 1.0])),
    "bernoulli_both": lambda L, M: M.Bernoulli(probs=_t(L, [0.5]), logits=_t(L, [0.0])),
    "bernoulli_none": lambda L, M: M.Bernoulli(),
    "bernoulli_range": lambda L, M: M.Bernoulli(_t(L, [0.5, 1.5])),
    "categorical_0d": lambda L, M: M.Categorical(probs=_t(L, 0.5)),
    "categorical_logits_0d": lambda L, M: M.Categorical(logits=_t(L, 0.5)),
    "categorical_negative": lambda L, M: M.Categorical(probs=_t(L, [0.5, -0.1, 0.6])),
    "onehot_both": lambda L, M: M.OneHotCategorical(_t(L, [0.5, 0.5]), _t(L, [0.0, 0.0])),
    "gamma_rate": lambda L, M: M.Gamma(_t(L, [1.0]), _t(L, [0.0])),
    "beta": lambda L, M: M.Beta(_t(L, [1.0]), _t(L, [-2.0])),
    "dirichlet_0d": lambda L, M: M.Dirichlet(_t(L, 1.0)),
    "dirichlet_neg": lambda L, M: M.Dirichlet(_t(L, [1.0, -1.0])),
    "exponential": lambda L, M: M.Exponential(_t(L, [-1.0])),
    "laplace": lambda L, M: M.Laplace(0.0, 0.0),
    "poisson": lambda L, M: M.Poisson(_t(L, [-1.0])),
    "binomial_count": lambda L, M: M.Binomial(_t(L, [2.5]), _t(L, [0.5])),
    "geometric_zero": lambda L, M: M.Geometric(_t(L, [0.0, 0.5])),
    "multinomial_count": lambda L, M: M.Multinomial(_t(L, 3.0), _t(L, [0.5, 0.5])),
    "mvn_loc_0d": lambda L, M: M.MultivariateNormal(_t(L, 0.0), _t(L, [[1.0]])),
    "mvn_none": lambda L, M: M.MultivariateNormal(_t(L, [0.0])),
    "mvn_two": lambda L, M: M.MultivariateNormal(_t(L, [0.0]), _t(L, [[1.0]]),
                                                 scale_tril=_t(L, [[1.0]])),
    "mvn_1d_tril": lambda L, M: M.MultivariateNormal(_t(L, [0.0]), scale_tril=_t(L, [1.0])),
    "mvn_1d_cov": lambda L, M: M.MultivariateNormal(_t(L, [0.0]), _t(L, [1.0])),
    "mvn_1d_prec": lambda L, M: M.MultivariateNormal(_t(L, [0.0]), precision_matrix=_t(L, [1.0])),
    "mvn_not_pd": lambda L, M: M.MultivariateNormal(_t(L, [0.0, 0.0]),
                                                    _t(L, [[1.0, 2.0], [2.0, 1.0]])),
    "mvn_not_tril": lambda L, M: M.MultivariateNormal(_t(L, [0.0, 0.0]),
                                                      scale_tril=_t(L, [[1.0, 2.0], [0.0, 1.0]])),
    "independent_ndims": lambda L, M: M.Independent(M.Normal(_t(L, [0.0]), 1.0), 2),
    "transformed_kind": lambda L, M: M.TransformedDistribution(M.Normal(0.0, 1.0), "exp"),
    "transformed_list": lambda L, M: M.TransformedDistribution(M.Normal(0.0, 1.0), ["exp"]),
    "student_t_df": lambda L, M: M.StudentT(_t(L, [-1.0]), 0.0, 1.0),
    "chi2": lambda L, M: M.Chi2(_t(L, [0.0])),
    "half_normal": lambda L, M: M.HalfNormal(_t(L, [-1.0])),
    "weibull": lambda L, M: M.Weibull(_t(L, [1.0]), _t(L, [-1.0])),
    "pareto": lambda L, M: M.Pareto(_t(L, [1.0]), _t(L, [0.0])),
    "negative_binomial": lambda L, M: M.NegativeBinomial(_t(L, [2.0]), _t(L, [1.0])),
    "cauchy": lambda L, M: M.Cauchy(0.0, -1.0),
    "wishart_two": lambda L, M: M.Wishart(3.0, _t(L, np.eye(2)), scale_tril=_t(L, np.eye(2))),
    "wishart_df": lambda L, M: M.Wishart(_t(L, [0.5, 3.0]), _t(L, np.eye(2))),
    "wishart_1d": lambda L, M: M.Wishart(3.0, _t(L, [1.0, 2.0])),
    "wishart_not_pd": lambda L, M: M.Wishart(3.0, _t(L, [[1.0, 2.0], [2.0, 1.0]])),
    "lkj_dim": lambda L, M: M.LKJCholesky(1, 1.0),
    "mixture_kind": lambda L, M: M.MixtureSameFamily(M.Normal(0.0, 1.0), M.Normal(0.0, 1.0)),
    "mixture_count": lambda L, M: M.MixtureSameFamily(M.Categorical(_t(L, [0.5, 0.5])),
                                                      M.Normal(_t(L, [0.0, 1.0, 2.0]), 1.0)),
    "mixture_batch": lambda L, M: M.MixtureSameFamily(
        M.Categorical(_t(L, np.full((3, 2), 0.5))), M.Normal(_t(L, np.zeros((4, 2))), 1.0)),
}


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return e
    return None


def _head(message):
    return str(message).split("invalid values:")[0].replace("torch.", "").replace("runtime.", "")


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_arguments_raise_torchs_error(case):
    want = _error(lambda: BAD[case](torch, td))
    got = _error(lambda: BAD[case](rt, rd))
    assert want is not None
    assert type(got) is type(want), (got, want)
    assert _head(got) == _head(want)


VALUES = {
    "not_tensor": (lambda L, M: M.Normal(_t(L, [0.0, 1.0]), 1.0), lambda L: 0.5),
    "event_shape": (lambda L, M: M.Dirichlet(_t(L, [1.0, 2.0])), lambda L: _t(L, [0.2, 0.3, 0.5])),
    "broadcast": (lambda L, M: M.Normal(_t(L, [0.0, 1.0]), 1.0), lambda L: _t(L, [0.0, 1.0, 2.0])),
    "support": (lambda L, M: M.Exponential(_t(L, [1.0])), lambda L: _t(L, [-1.0])),
    "support_int": (lambda L, M: M.Poisson(_t(L, [1.0])), lambda L: _t(L, [1.5])),
    "categorical": (lambda L, M: M.Categorical(logits=_t(L, [0.0, 0.0])), lambda L: _t(L, 2.0)),
    "simplex": (lambda L, M: M.Dirichlet(_t(L, [1.0, 2.0])), lambda L: _t(L, [0.3, 0.3])),
    "uniform": (lambda L, M: M.Uniform(0.0, 1.0), lambda L: _t(L, 1.5)),
    "bernoulli": (lambda L, M: M.Bernoulli(0.3), lambda L: _t(L, 0.5)),
    "onehot": (lambda L, M: M.OneHotCategorical(_t(L, [0.5, 0.5])), lambda L: _t(L, [1.0, 1.0])),
    "lognormal": (lambda L, M: M.LogNormal(0.0, 1.0), lambda L: _t(L, -1.0)),
    "binomial": (lambda L, M: M.Binomial(3, _t(L, [0.5])), lambda L: _t(L, [4.0])),
    "pareto": (lambda L, M: M.Pareto(_t(L, [1.0]), _t(L, [2.0])), lambda L: _t(L, [0.5])),
    "half_normal": (lambda L, M: M.HalfNormal(_t(L, [1.0])), lambda L: _t(L, [-0.5])),
    "negative_binomial": (lambda L, M: M.NegativeBinomial(2.0, _t(L, [0.5])),
                          lambda L: _t(L, [1.5])),
}


@pytest.mark.parametrize("case", sorted(VALUES))
def test_bad_values_raise_torchs_error(case):
    make, value = VALUES[case]
    want = _error(lambda: make(torch, td).log_prob(value(torch)))
    got = _error(lambda: make(rt, rd).log_prob(value(rt)))
    assert want is not None
    assert type(got) is type(want), (got, want)
    assert _head(got) == _head(want)


def test_validate_args_false_and_the_default_switch():
    d = rd.Normal(0.0, -1.0, validate_args=False)
    with np.errstate(invalid="ignore"):
        assert np.isnan(d.log_prob(rt.tensor(0.0)).item())
    rd.Normal(0.0, 1.0, validate_args=False).log_prob(rt.tensor([1.0, 2.0, 3.0]))
    try:
        rd.Distribution.set_default_validate_args(False)
        rd.Exponential(-1.0)
        assert rd.Exponential(1.0).log_prob(rt.tensor(-1.0)).item() == pytest.approx(1.0)
    finally:
        rd.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        rd.Exponential(-1.0)
    with pytest.raises(ValueError):
        rd.Distribution.set_default_validate_args(2)
    d = rd.Exponential(rt.tensor([1.0]), validate_args=False).expand((3,))
    assert d._validate_args is False


def test_repr_matches_torch():
    for make in (lambda L, M: M.Normal(0.0, 1.0), lambda L, M: M.Normal(_t(L, [0.0, 1.0]), 1.0),
                 lambda L, M: M.Categorical(logits=_t(L, [0.0, 1.0])),
                 lambda L, M: M.Bernoulli(0.3), lambda L, M: M.Gamma(2.0, 3.0),
                 lambda L, M: M.Independent(M.Normal(_t(L, [0.0, 1.0]), 1.0), 1)):
        assert repr(make(rt, rd)) == repr(make(torch, td))


def test_constraints_reprs_and_checks_match_torch():
    from runtime.distributions import constraints as rc

    tc = torch.distributions.constraints
    for name in ("real", "positive", "nonnegative", "simplex", "unit_interval", "boolean",
                 "nonnegative_integer", "positive_integer", "real_vector", "lower_cholesky",
                 "positive_definite", "lower_triangular", "one_hot", "dependent", "square",
                 "symmetric", "positive_semidefinite"):
        assert repr(getattr(rc, name)) == repr(getattr(tc, name)), name
    made = [("interval", (0.0, 1.0)), ("greater_than", (2,)), ("half_open_interval", (0, 1)),
            ("integer_interval", (0, 3)), ("less_than", (1.0,)), ("greater_than_eq", (0,)),
            ("multinomial", (3,))]
    for name, args in made:
        assert repr(getattr(rc, name)(*args)) == repr(getattr(tc, name)(*args)), name
    values = np.array([[0.2, 0.8], [1.0, 0.0], [0.5, 0.6], [-0.1, 1.1], [1.0, 1.0]])
    checks = {"real": rc.real, "positive": rc.positive, "simplex": rc.simplex,
              "unit_interval": rc.unit_interval, "boolean": rc.boolean, "one_hot": rc.one_hot,
              "nonnegative_integer": rc.nonnegative_integer, "real_vector": rc.real_vector}
    for name, c in checks.items():
        got = c.check(rt.tensor(values)).numpy()
        want = getattr(tc, name).check(torch.tensor(values)).numpy()
        np.testing.assert_array_equal(got, want, err_msg=name)
    mats = np.array([[[1.0, 0.0], [0.5, 2.0]], [[1.0, 0.3], [0.3, 1.0]], [[1.0, 2.0], [2.0, 1.0]],
                     [[-1.0, 0.0], [0.0, 1.0]]])
    for name in ("lower_cholesky", "lower_triangular", "positive_definite", "symmetric",
                 "positive_semidefinite", "square"):
        got = getattr(rc, name).check(rt.tensor(mats)).numpy()
        want = getattr(tc, name).check(torch.tensor(mats)).numpy()
        np.testing.assert_array_equal(got, want, err_msg=name)
    assert rc.is_dependent(rc.dependent) and not rc.is_dependent(rc.real)
    assert rc.independent(rc.real, 2).event_dim == 2
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        rc.dependent.check(rt.tensor(1.0))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("make", [lambda L, M, dt: M.Gamma(L.ones(2, dtype=dt), 1.0),
                                  lambda L, M, dt: M.Dirichlet(L.ones(2, dtype=dt)),
                                  lambda L, M, dt: M.Beta(L.ones(2, dtype=dt), 2.0)])
def test_gamma_draws_of_half_precision_raise_torchs_error(dtype, make):
    def draw(lib, mod):
        return make(lib, mod, getattr(lib, dtype)).sample()

    want, got = _error(lambda: draw(torch, td)), _error(lambda: draw(rt, rd))
    assert type(want) is NotImplementedError
    assert type(got) is type(want) and str(got) == str(want)
