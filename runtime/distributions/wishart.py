"""Wishart distribution over positive-definite matrices."""

from __future__ import annotations

import math
import warnings
from numbers import Number
from typing import Any

import runtime as rt

from ..ops.shapes import Size
from ..tensor import Tensor
from . import constraints
from .chi2 import Chi2
from .distribution import ExponentialFamily
from .lkj_cholesky import mvlgamma
from .multivariate_normal import _solve_lower, precision_to_scale_tril
from .utils import lazy_property

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def mvdigamma(a: Tensor, p: int) -> Tensor:
    """The multivariate digamma function of dimension ``p`` (the derivative of mvlgamma)."""
    total = rt.digamma(a)
    for i in range(1, p):
        total = total + rt.digamma(a - i / 2)
    return total


class Wishart(ExponentialFamily):
    """Wishart distribution of ``df`` degrees of freedom and exactly one of
    ``covariance_matrix``, ``precision_matrix`` or ``scale_tril``. Draws by the Bartlett
    decomposition (chi-squared diagonal from host Gamma draws, reparameterized; normal below
    it); draws that come out singular are drawn again, up to ``max_try_correction`` times."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:  # type: ignore[override]
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df: Any, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix),
                                     ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        name, param = given[0]
        if param.ndim < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading "
                             "batch dimensions")
        if isinstance(df, Number):
            batch_shape = Size(tuple(param.shape[:-2]))
            self.df = rt.tensor(float(df), dtype=param.dtype, device=param.device)
        else:
            batch_shape = Size(rt.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(*batch_shape)
        event_shape = Size(tuple(param.shape[-2:]))
        p = event_shape[-1]
        if bool(self.df.le(p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, param.expand(*batch_shape, -1, -1))
        if bool(self.df.lt(p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur "
                          "for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = param
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = rt.linalg.cholesky(param)
        else:
            self._unbroadcasted_scale_tril = precision_to_scale_tril(param)
        steps = rt.arange(p, dtype=param.dtype, device=param.device).expand(*batch_shape, p)
        self._dist_chi2 = Chi2(self.df.unsqueeze(-1) - steps, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Wishart:
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = Size(tuple(batch_shape))
        p = self._event_shape[-1]
        for name in ("covariance_matrix", "precision_matrix", "scale_tril"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(*batch_shape, p, p))
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        new.df = self.df.expand(*batch_shape)
        new._dist_chi2 = self._dist_chi2.expand(Size((*batch_shape, p)))
        ExponentialFamily.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _full(self, m: Tensor) -> Tensor:
        return m.expand(*self._batch_shape, *self._event_shape)

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._full(self._unbroadcasted_scale_tril)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return self._full(L @ L.mT)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        eye = rt.eye(L.shape[-1], dtype=L.dtype, device=L.device)
        L_inv = _solve_lower(L, eye, lower_gradient=False)
        return self._full(L_inv.mT @ L_inv)

    def _df_matrix(self) -> Tensor:
        return self.df.reshape(*self._batch_shape, 1, 1)

    @property
    def mean(self) -> Tensor:
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        factor = self.df - self._event_shape[-1] - 1
        factor = rt.where(factor <= 0, float("nan"), factor)
        return factor.reshape(*self._batch_shape, 1, 1) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        V = self.covariance_matrix
        d = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (V.pow(2) + d.unsqueeze(-1) * d.unsqueeze(-2))

    def _bartlett(self, sample_shape: Size) -> Tensor:
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        eps = rt.finfo(L.dtype).eps
        diag = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps)
        below = rt.randn(*sample_shape, *self._batch_shape, p, p, dtype=L.dtype,
                         device=L.device).tril(-1)
        chol = L @ (below + rt.diag_embed(diag))
        return chol @ chol.mT

    def rsample(self, sample_shape: Any = Size(), max_try_correction: int | None = None
                ) -> Tensor:
        sample_shape = Size(tuple(sample_shape))
        tries = 10 if max_try_correction is None else max_try_correction
        sample = self._bartlett(sample_shape)
        for attempt in range(tries):
            singular = ~self.support.check(sample.detach())
            if not bool(singular.any()):
                break
            if attempt == 0:
                warnings.warn("Singular sample detected.", stacklevel=2)
            mask = singular.reshape(*singular.shape, 1, 1)
            sample = rt.where(mask, self._bartlett(sample_shape), sample)
        return sample

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        half_log_det = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        y = _solve_lower(L, value, lower_gradient=False)             # L^-1 X
        trace = _solve_lower(L, y.mT, lower_gradient=False).diagonal(dim1=-2, dim2=-1).sum(-1)
        log_det_value = rt.linalg.slogdet(value).logabsdet
        return (-nu * (p * _LOG_2 / 2 + half_log_det) - mvlgamma(nu / 2, p)
                + (nu - p - 1) / 2 * log_det_value - trace / 2)

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return -self.precision_matrix / 2, (self.df - self._event_shape[-1] - 1) / 2

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        """log of the normalizer at natural parameters x = -P / 2, y = (df - p - 1) / 2."""
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-rt.linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + mvlgamma(y + (p + 1) / 2, p))

    def entropy(self) -> Tensor:
        nu, p = self.df, self._event_shape[-1]
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * _LOG_2 / 2 + half_log_det) + mvlgamma(nu / 2, p)
                - (nu - p - 1) / 2 * mvdigamma(nu / 2, p) + nu * p / 2)
