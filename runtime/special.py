"""``rt.special``: PyTorch's torch.special names (the same functions as ``rt.*`` where torch has
them there too)."""

from __future__ import annotations

from .tensor import Tensor

from .ops.bessel import (
    airy_ai, bessel_j0, bessel_j1, bessel_y0, bessel_y1, chebyshev_polynomial_t,
    chebyshev_polynomial_u, chebyshev_polynomial_v, chebyshev_polynomial_w, hermite_polynomial_h,
    hermite_polynomial_he, laguerre_polynomial_l, legendre_polynomial_p, modified_bessel_i0,
    modified_bessel_i1, modified_bessel_k0, modified_bessel_k1, scaled_modified_bessel_k0,
    scaled_modified_bessel_k1, shifted_chebyshev_polynomial_t, shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v, shifted_chebyshev_polynomial_w, spherical_bessel_j0)
from .ops.composite import log_softmax_along as log_softmax, sigmoid as expit
from .ops.composite import softmax_along as softmax
from . import _dtype as D
from .ops import functional as _functional
from .ops.functional import erf, expm1, log1p
from .ops.numeric_names import igamma as gammainc, igammac as gammaincc, mvlgamma as multigammaln
from .ops.math_ops import (
    digamma, entr, erfc, erfcx, erfinv, exp2, i0, i0e, i1, i1e, lgamma as gammaln, log_ndtr,
    logit, ndtr, ndtri, sinc, xlog1py, xlogy)
from .ops.reductions import logsumexp
from .ops.zeta import polygamma, zeta

psi = digamma


def round(input: Tensor, *, decimals: int = 0,  # noqa: A001, A002 - PyTorch's names
          out: Tensor | None = None) -> Tensor:
    """torch.special.round: torch.round, but for integer and bool tensors PyTorch's error
    (its special_round has no integer kernel, where torch.round returns them)."""
    if not input.dtype.is_floating_point:
        kernel = f"round_{'cpu' if decimals else 'vml_cpu'}" if input.device.type == "cpu" \
            else f"round_{input.device.type}"
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{D.scalar_type_name(input.dtype)}'")
    return _functional.round(input, decimals=decimals, out=out)

__all__ = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
           "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
           "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
           "legendre_polynomial_p", "modified_bessel_i0", "modified_bessel_i1",
           "modified_bessel_k0", "modified_bessel_k1", "multigammaln",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
           "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w",
           "spherical_bessel_j0", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc",
           "gammaincc", "gammaln",
           "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "ndtr", "ndtri", "psi", "round",
           "polygamma", "sinc", "softmax", "xlog1py", "xlogy", "zeta"]
