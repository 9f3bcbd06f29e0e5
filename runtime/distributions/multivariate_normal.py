"""Multivariate normal distribution."""

from __future__ import annotations

import math
from typing import Any

import runtime as rt

from ..ops.shapes import Size
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import lazy_property

__all__ = ["MultivariateNormal"]


def _solve_lower(L: Tensor, b: Tensor, lower_gradient: bool = True) -> Tensor:
    """``L^-1 b`` for lower-triangular ``L`` broadcast against the matrix ``b``: a general
    solve of ``L.tril()``, so ``L``'s gradient stays lower-triangular (torch's
    ``solve_triangular``'s); ``lower_gradient=False`` solves ``L`` itself (the gradient of
    torch's ``cholesky_inverse``, which reads the whole matrix)."""
    if lower_gradient:
        L = L.tril()
    batch = rt.broadcast_shapes(tuple(L.shape[:-2]), tuple(b.shape[:-2]))
    return rt.linalg.solve(L.expand(*batch, *L.shape[-2:]), b.expand(*batch, *b.shape[-2:]))


def batch_mahalanobis(L: Tensor, x: Tensor) -> Tensor:
    """The squared Mahalanobis distance ``x^T (L L^T)^-1 x`` over the last dimension, ``L``'s
    batch broadcast against ``x``'s."""
    y = _solve_lower(L, x.unsqueeze(-1)).squeeze(-1)
    return y.pow(2).sum(-1)


def precision_to_scale_tril(P: Tensor) -> Tensor:
    """The lower Cholesky factor of ``P^-1``, from the Cholesky factor of ``P`` with rows and
    columns reversed (no explicit inverse of ``P``)."""
    Lf = rt.linalg.cholesky(rt.flip(P, (-2, -1)))
    L_inv = rt.flip(Lf, (-2, -1)).mT
    eye = rt.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return _solve_lower(L_inv, eye)


def _at_least_2d(m: Tensor, name: str) -> None:
    if m.ndim < 2:
        name = "scale_tril matrix" if name == "scale_tril" else name  # torch's three texts
        raise ValueError(f"{name} must be at least two-dimensional, with optional "
                         "leading batch dimensions")


class MultivariateNormal(Distribution):
    """Multivariate normal distribution of mean ``loc`` and exactly one of
    ``covariance_matrix``, ``precision_matrix`` or ``scale_tril`` (the lower Cholesky
    factor of the covariance)."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m is not None for m in (covariance_matrix, scale_tril, precision_matrix)]
        if sum(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        name, matrix = next((n, m) for n, m in (("scale_tril", scale_tril),
                                                  ("covariance_matrix", covariance_matrix),
                                                  ("precision_matrix", precision_matrix))
                            if m is not None)
        _at_least_2d(matrix, name)
        batch_shape = Size(rt.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        setattr(self, name, matrix.expand(*batch_shape, -1, -1))
        self.loc = loc.expand(*batch_shape, -1)
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = scale_tril
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = rt.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape: Any, _instance: Any = None) -> MultivariateNormal:
        new = self._expanded(MultivariateNormal, batch_shape, _instance,
                             {"loc": 1, "covariance_matrix": 2, "precision_matrix": 2,
                              "scale_tril": 2})
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return new

    @lazy_property
    def scale_tril(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return L.expand(*self._batch_shape, *self._event_shape, *self._event_shape)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(*self._batch_shape, *self._event_shape, *self._event_shape)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        eye = rt.eye(L.shape[-1], dtype=L.dtype, device=L.device)
        L_inv = _solve_lower(L, eye, lower_gradient=False)  # torch's cholesky_inverse
        return (L_inv.mT @ L_inv).expand(*self._batch_shape, *self._event_shape,
                                         *self._event_shape)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            *self._batch_shape, *self._event_shape)

    def rsample(self, sample_shape: Any = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = rt.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - half_log_det

    def entropy(self) -> Tensor:
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        return H if len(self._batch_shape) == 0 else H.expand(*self._batch_shape)
