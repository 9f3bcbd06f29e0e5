"""Multivariate normal with a low-rank plus diagonal covariance."""

from __future__ import annotations

import math
from typing import Any

import runtime as rt

from ..ops.shapes import Size
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .multivariate_normal import _solve_lower, batch_mahalanobis
from .utils import lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _plus_identity(K: Tensor) -> Tensor:
    return K + rt.eye(K.shape[-1], dtype=K.dtype, device=K.device)


def capacitance_tril(W: Tensor, D: Tensor) -> Tensor:
    """Cholesky factor of the capacitance ``I + W^T D^-1 W`` (m x m, m the rank)."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    return rt.linalg.cholesky(_plus_identity(Wt_Dinv @ W))


class LowRankMultivariateNormal(Distribution):
    """Multivariate normal of mean ``loc`` and covariance
    ``cov_factor @ cov_factor.mT + diag(cov_diag)``: log_prob and entropy by the Woodbury
    identity and the matrix determinant lemma (an m x m Cholesky, m the rank)."""

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, cov_factor: Tensor, cov_diag: Tensor,
                 validate_args: bool | None = None) -> None:
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.ndim < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape "
                             f"{event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {Size(event_shape)}")
        try:
            loc_, self.cov_factor, cov_diag_ = rt.broadcast_tensors(
                loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1))
        except (RuntimeError, ValueError) as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor "
                             f"{cov_factor.shape}, cov_diag {cov_diag.shape}") from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> LowRankMultivariateNormal:
        new = self._expanded(LowRankMultivariateNormal, batch_shape, _instance,
                             {"loc": 1, "cov_diag": 1, "cov_factor": 2})
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        return new

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (W.pow(2).sum(-1) + D).expand(*self._batch_shape, *self._event_shape)

    def _full(self, m: Tensor) -> Tensor:
        return m.expand(*self._batch_shape, *self._event_shape, *self._event_shape)

    @lazy_property
    def scale_tril(self) -> Tensor:
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        root_d = D.sqrt().unsqueeze(-1)
        scaled = W / root_d                       # D^-1/2 W
        K = _plus_identity(scaled @ scaled.mT)
        return self._full(root_d * rt.linalg.cholesky(K))

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return self._full(W @ W.mT + rt.diag_embed(D))

    @lazy_property
    def precision_matrix(self) -> Tensor:
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        A = _solve_lower(self._capacitance_tril, W.mT / D.unsqueeze(-2))
        return self._full(rt.diag_embed(D.reciprocal()) - A.mT @ A)

    def rsample(self, sample_shape: Any = Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        eps_w = rt.randn(*shape[:-1], W.shape[-1], dtype=self.loc.dtype, device=self.loc.device)
        eps_d = rt.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (W @ eps_w.unsqueeze(-1)).squeeze(-1) + D.sqrt() * eps_d

    def _log_det(self) -> Tensor:
        L = self._capacitance_tril
        return (2 * L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                + self._unbroadcasted_cov_diag.log().sum(-1))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        diff = value - self.loc
        Wt_Dinv_x = ((W.mT / D.unsqueeze(-2)) @ diff.unsqueeze(-1)).squeeze(-1)
        M = (diff.pow(2) / D).sum(-1) - batch_mahalanobis(self._capacitance_tril, Wt_Dinv_x)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + M)

    def entropy(self) -> Tensor:
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return H if len(self._batch_shape) == 0 else H.expand(*self._batch_shape)
