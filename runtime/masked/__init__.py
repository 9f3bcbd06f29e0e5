"""``torch.masked``'s functional masked reductions and normalizations on strided tensors
(``rt.masked.sum(x, 1, mask=m)``, ...). ``MaskedTensor`` and sparse layouts are left out."""

from ._ops import (
    _canonical_dim as _canonical_dim,
    _combine_input_and_mask as _combine_input_and_mask,
    _input_mask as _input_mask,
    _output_mask as _output_mask,
    _reduction_identity as _reduction_identity,
    amax,
    amin,
    argmax,
    argmin,
    cumprod,
    cumsum,
    log_softmax,
    logaddexp,
    logsumexp,
    mean,
    median,
    norm,
    normalize,
    prod,
    softmax,
    softmin,
    std,
    sum,
    var,
)

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp",
           "logsumexp", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin",
           "std", "sum", "var"]
