"""KL divergences between distributions: ``kl_divergence(p, q)`` dispatched on both types
to the most specific function registered with ``register_kl``."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import runtime as rt
import runtime.nn.functional as F

from ..tensor import Tensor
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution, ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import EULER, Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .laplace import Laplace
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .multivariate_normal import MultivariateNormal, _solve_lower, batch_mahalanobis
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .wishart import Wishart, mvdigamma
from .lkj_cholesky import mvlgamma
from .utils import sum_rightmost

__all__ = ["kl_divergence", "register_kl"]

KLFn = Callable[[Any, Any], Tensor]
_KL_REGISTRY: dict[tuple[type, type], KLFn] = {}
_KL_MEMOIZE: dict[tuple[type, type], Any] = {}


def register_kl(type_p: type, type_q: type) -> Callable[[KLFn], KLFn]:
    """A decorator registering ``fn(p, q)`` as KL(p || q) for instances of ``type_p`` and
    ``type_q`` (and their subclasses, where nothing more specific is registered)."""
    for name, t in (("type_p", type_p), ("type_q", type_q)):
        if not (isinstance(t, type) and issubclass(t, Distribution)):
            raise TypeError(f"Expected {name} to be a Distribution subclass but got {t}")

    def decorator(fun: KLFn) -> KLFn:
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun

    return decorator


def _depth(t: type, base: type) -> int:
    return t.__mro__.index(base)


def _dispatch_kl(type_p: type, type_q: type) -> Any:
    """The most specific registered pair: nearest in ``type_p``'s ancestry first (then
    ``type_q``'s); a warning where ordering by ``type_q`` first picks another function."""
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY
               if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return NotImplemented
    left = min(matches, key=lambda m: (_depth(type_p, m[0]), _depth(type_q, m[1])))
    right = min(matches, key=lambda m: (_depth(type_q, m[1]), _depth(type_p, m[0])))
    if _KL_REGISTRY[left] is not _KL_REGISTRY[right]:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left[0].__name__}, {right[1].__name__})",
                      RuntimeWarning, stacklevel=3)
    return _KL_REGISTRY[left]


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q), of shape ``batch_shape``."""
    key = (type(p), type(q))
    if key not in _KL_MEMOIZE:
        _KL_MEMOIZE[key] = _dispatch_kl(*key)
    fun = _KL_MEMOIZE[key]
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{p.__class__.__name__} and q type {q.__class__.__name__}")
    return fun(p, q)


def _inf_where(mask: Tensor, t: Tensor) -> Tensor:
    return rt.where(mask, float("inf"), t)


def _zero_where(mask: Tensor, t: Tensor) -> Tensor:
    return rt.where(mask, 0.0, t)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = _inf_where((q.probs == 0).expand_as(t), t)
    t = _zero_where((p.probs == 0).expand_as(t), t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = _zero_where(p.probs == 0, _inf_where(q.probs == 0, t1))
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = _zero_where(p.probs == 1, _inf_where(q.probs == 1, t2))
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    sum_p = p.concentration1 + p.concentration0
    sum_q = q.concentration1 + q.concentration0
    t1 = rt.lgamma(q.concentration1) + rt.lgamma(q.concentration0) + rt.lgamma(sum_p)
    t2 = rt.lgamma(p.concentration1) + rt.lgamma(p.concentration0) + rt.lgamma(sum_q)
    t3 = (p.concentration1 - q.concentration1) * rt.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * rt.digamma(p.concentration0)
    t5 = (sum_q - sum_p) * rt.digamma(sum_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = rt.lgamma(sum_p) - rt.lgamma(sum_q)
    t2 = (rt.lgamma(p.concentration) - rt.lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = rt.digamma(p.concentration) - rt.digamma(sum_p).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = rt.lgamma(q.concentration) - rt.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * rt.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _inf_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * (-loc_abs_diff / p.scale).exp()
    return t1 + t2 + t3 - 1


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    return -p.entropy() - rt.log1p(-q.probs) / p.probs - q.logits


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count "
                                  "is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + rt.log1p(-p.probs)
                          - rt.log1p(-q.probs))
    return _inf_where(p.total_count > q.total_count, kl)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_pair(p: ContinuousBernoulli, q: ContinuousBernoulli) -> Tensor:
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + rt.log1p(-p.probs)
    t3 = -q._cont_bern_log_norm() - rt.log1p(-q.probs)
    return t1 + t2 + t3


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    return t1 - (4 * p.scale * q.scale).log()


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    ratio = p.scale / q.scale
    q_loc, p_loc = q.loc / q.scale, p.loc / q.scale
    t1 = -ratio.log() - q_loc + p_loc
    t3 = (q_loc + rt.lgamma(1 + ratio) - p_loc).exp()
    return t1 + ratio * EULER + t3 - (1 + EULER)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return _inf_where(p.scale < q.scale, result)


def _event_shapes_differ(what: str) -> str:
    """torch's message, with the run of spaces its string's line continuation leaves."""
    return (f"KL-divergence between two {what} with{' ' * 26}different event shapes cannot "
            "be computed")


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError(_event_shapes_differ("Multivariate Normals"))
    pL, qL = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = (qL.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                  - pL.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    solved = _solve_lower(qL, pL)                    # q_L^-1 p_L, batches broadcast
    term2 = solved.pow(2).sum((-2, -1))              # trace(X X^T)
    term3 = batch_mahalanobis(qL, q.loc - p.loc)
    n = p.event_shape[0]
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution
                                ) -> Tensor:
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


# --- pairs of different families -----------------------------------------------------------
# KL(p || q) = -H(p) - E_p[log q(X)]: the expectation from p's moments (mean, variance, E log X,
# E log(1 - X), E exp(-X / s)), infinite where p puts mass outside q's support.


def _mean_log(p: Distribution) -> Tensor:
    """E[log X] under p."""
    if isinstance(p, Beta):
        return rt.digamma(p.concentration1) - rt.digamma(p.concentration1 + p.concentration0)
    if isinstance(p, Gamma):
        return rt.digamma(p.concentration) - p.rate.log()
    if isinstance(p, Exponential):
        return -EULER - p.rate.log()
    if isinstance(p, Pareto):
        return p.scale.log() + p.alpha.reciprocal()
    if isinstance(p, Uniform):
        return (rt.xlogy(p.high, p.high) - rt.xlogy(p.low, p.low)) / (p.high - p.low) - 1
    raise NotImplementedError(f"E[log X] of {type(p).__name__}")


def _mean_log1m(p: Uniform) -> Tensor:
    """E[log(1 - X)] under a Uniform p."""
    one_l, one_h = 1 - p.low, 1 - p.high
    return (rt.xlogy(one_l, one_l) - rt.xlogy(one_h, one_h)) / (p.high - p.low) - 1


def _mean_exp_neg(p: Distribution, s: Tensor) -> Tensor:
    """E[exp(-X / s)] under p."""
    if isinstance(p, Exponential):
        return p.rate * s / (p.rate * s + 1)
    if isinstance(p, Gamma):
        return (1 + (p.rate * s).reciprocal()).pow(-p.concentration)
    if isinstance(p, Normal):
        return (-p.loc / s + 0.5 * (p.scale / s).pow(2)).exp()
    if isinstance(p, Uniform):
        return s * ((-p.low / s).exp() - (-p.high / s).exp()) / (p.high - p.low)
    raise NotImplementedError(f"E[exp(-X/s)] of {type(p).__name__}")


def _bounds(p: Distribution) -> tuple[Any, Any]:
    """The lower and upper ends of a bounded p's support."""
    if isinstance(p, Uniform):
        return p.low, p.high
    return 0.0, 1.0  # Beta, ContinuousBernoulli


def _expected_log_q(p: Distribution, q: Distribution) -> tuple[Tensor, Any]:
    """E_p[log q(X)] and where it is finite (None: everywhere)."""
    if isinstance(q, Normal):
        second = p.variance + (p.mean - q.loc).pow(2)
        return (-0.5 * math.log(2 * math.pi) - q.scale.log()
                - second / (2 * q.scale.pow(2))), None
    if isinstance(q, Gumbel):
        return (-q.scale.log() - (p.mean - q.loc) / q.scale
                - (q.loc / q.scale).exp() * _mean_exp_neg(p, q.scale)), None
    low, high = _bounds(p) if isinstance(p, (Uniform, Beta, ContinuousBernoulli)) else (0.0, None)
    if isinstance(q, Exponential):
        return q.rate.log() - q.rate * p.mean, _at_least(low, 0.0)
    if isinstance(q, Gamma):
        e = (q.concentration * q.rate.log() - rt.lgamma(q.concentration)
             + (q.concentration - 1) * _mean_log(p) - q.rate * p.mean)
        return e, _at_least(low, 0.0)
    if isinstance(q, Pareto):
        e = q.alpha.log() + q.alpha * q.scale.log() - (q.alpha + 1) * _mean_log(p)
        return e, _at_least(low, q.scale)
    if isinstance(q, Uniform):
        return -(q.high - q.low).log(), _at_least(low, q.low) & _at_most(high, q.high)
    if isinstance(q, Beta):
        lbeta = (rt.lgamma(q.concentration1) + rt.lgamma(q.concentration0)
                 - rt.lgamma(q.concentration1 + q.concentration0))
        e = ((q.concentration1 - 1) * _mean_log(p) + (q.concentration0 - 1) * _mean_log1m(p)
             - lbeta)
        return e, _at_least(low, 0.0) & _at_most(high, 1.0)
    if isinstance(q, ContinuousBernoulli):
        e = p.mean * q.logits + rt.log1p(-q.probs) + q._cont_bern_log_norm()
        return e, _at_least(low, 0.0) & _at_most(high, 1.0)
    raise NotImplementedError(f"E[log q] of {type(q).__name__}")


def _at_least(value: Any, bound: Any) -> Tensor:
    return rt.as_tensor(value >= bound) if not isinstance(value, Tensor) else value >= bound


def _at_most(value: Any, bound: Any) -> Tensor:
    return rt.as_tensor(value <= bound) if not isinstance(value, Tensor) else value <= bound


def _kl_cross(p: Distribution, q: Distribution) -> Tensor:
    e, finite = _expected_log_q(p, q)
    kl = -p.entropy() - e
    return kl if finite is None else _inf_where(~finite, kl)


def _infinite(p: Distribution, q: Distribution) -> Tensor:
    """p puts mass where q has none."""
    shape = rt.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))
    like = p.mean
    return rt.full(shape, float("inf"), dtype=like.dtype, device=like.device)


_CROSS = {
    Beta: (ContinuousBernoulli, Exponential, Gamma, Normal, Uniform),
    ContinuousBernoulli: (Exponential, Normal, Uniform),
    Exponential: (Gamma, Gumbel, Normal),
    Gamma: (Exponential, Gumbel, Normal),
    Gumbel: (Normal,),
    Laplace: (Normal,),
    Normal: (Gumbel,),
    Pareto: (Exponential, Gamma, Normal),
    Uniform: (Beta, ContinuousBernoulli, Exponential, Gamma, Gumbel, Normal, Pareto),
}
_INFINITE = {
    Beta: (Pareto,),
    ContinuousBernoulli: (Pareto,),
    Exponential: (Beta, ContinuousBernoulli, Pareto, Uniform),
    Gamma: (Beta, ContinuousBernoulli, Pareto, Uniform),
    Gumbel: (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform),
    Laplace: (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform),
    Normal: (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform),
    Pareto: (Beta, ContinuousBernoulli, Uniform),
    Poisson: (Bernoulli, Binomial),
}
for _p, _qs in _CROSS.items():
    for _q in _qs:
        register_kl(_p, _q)(_kl_cross)
for _p, _qs in _INFINITE.items():
    for _q in _qs:
        register_kl(_p, _q)(_infinite)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p: Normal, q: Laplace) -> Tensor:
    """-H(p) + log(2 b) + E|X - loc_q| / b, the folded normal's mean."""
    d = p.loc - q.loc
    mean_abs = (math.sqrt(2 / math.pi) * p.scale * (-0.5 * (d / p.scale).pow(2)).exp()
                + d * rt.erf(d / (p.scale * math.sqrt(2))))
    return -p.entropy() + (2 * q.scale).log() + mean_abs / q.scale


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


def _dense_tril(d: Distribution) -> Tensor:
    return d._unbroadcasted_scale_tril if isinstance(d, MultivariateNormal) else d.scale_tril


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
@register_kl(LowRankMultivariateNormal, MultivariateNormal)
@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_pairs(p: Distribution, q: Distribution) -> Tensor:
    """Through the dense Cholesky factors of the covariances (the MVN formula)."""
    if p.event_shape != q.event_shape:
        both_low_rank = isinstance(p, LowRankMultivariateNormal) and isinstance(
            q, LowRankMultivariateNormal)
        raise ValueError(_event_shapes_differ("Low Rank Multivariate Normals" if both_low_rank
                                              else "(Low Rank) Multivariate Normals"))
    pL, qL = _dense_tril(p), _dense_tril(q)
    half_term1 = (qL.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                  - pL.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    term2 = _solve_lower(qL, pL).pow(2).sum((-2, -1))
    term3 = batch_mahalanobis(qL, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - p.event_shape[0])


@register_kl(Wishart, Wishart)
def _kl_wishart_wishart(p: Wishart, q: Wishart) -> Tensor:
    """-nu_q/2 log|S_q^-1 S_p| + nu_p/2 (tr(S_q^-1 S_p) - n) + log Gamma_n(nu_q/2)
    - log Gamma_n(nu_p/2) + (nu_p - nu_q)/2 digamma_n(nu_p/2) (torch reaches the same through
    its exponential-family Bregman divergence)."""
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Wisharts with different event shapes "
                         "cannot be computed")
    n = p.event_shape[-1]
    pL, qL = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    log_det_ratio = 2 * (pL.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                         - qL.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    trace = _solve_lower(qL, pL).pow(2).sum((-2, -1))
    return (-q.df / 2 * log_det_ratio + p.df / 2 * (trace - n) + mvlgamma(q.df / 2, n)
            - mvlgamma(p.df / 2, n) + (p.df - q.df) / 2 * mvdigamma(p.df / 2, n))


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p: ExponentialFamily, q: ExponentialFamily) -> Tensor:
    """The Bregman divergence of the log-normalizer F between the natural parameters:
    F(theta_q) - F(theta_p) - <theta_q - theta_p, grad F(theta_p)> (differentiable in both)."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    with rt.enable_grad():  # grad F at p's natural parameters
        p_params = list(p._natural_params)
        tracked = rt.is_grad_enabled() and any(t.requires_grad for t in p_params)
        p_params = [t if t.requires_grad else t.detach().requires_grad_() for t in p_params]
        log_norm = p._log_normalizer(*p_params)
        grads = rt.autograd.grad(log_norm.sum(), p_params, create_graph=tracked)
    if not tracked:
        log_norm, p_params = log_norm.detach(), [t.detach() for t in p_params]
    q_params = q._natural_params
    result = q._log_normalizer(*q_params) - log_norm
    batch_ndim = len(rt.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape)))
    for pt, qt, g in zip(p_params, q_params, grads):
        # each parameter's own event dims: torch sums the rightmost len(event_shape), which
        # for a Wishart's df (batch-shaped, event_shape (n, n)) sums across the batch
        term = (qt - pt) * g
        result = result - sum_rightmost(term, max(term.ndim - batch_ndim, 0))
    return result
