"""``rt.special``: PyTorch's torch.special names that the runtime has (the same functions as
``rt.*``; the other Bessel functions are not provided)."""

from __future__ import annotations

from .ops.composite import log_softmax_along as log_softmax, sigmoid as expit
from .ops.composite import softmax_along as softmax
from .ops.functional import erf, expm1, log1p, round
from .ops.numeric_names import igamma as gammainc, igammac as gammaincc
from .ops.math_ops import (
    digamma, entr, erfc, erfcx, erfinv, exp2, i0, i0e, i1, i1e, lgamma as gammaln, log_ndtr,
    logit, ndtr, ndtri, sinc, xlog1py, xlogy)
from .ops.reductions import logsumexp
from .ops.zeta import polygamma, zeta

psi = digamma

__all__ = ["digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc",
           "gammaincc", "gammaln",
           "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "ndtr", "ndtri", "psi", "round",
           "polygamma", "sinc", "softmax", "xlog1py", "xlogy", "zeta"]
