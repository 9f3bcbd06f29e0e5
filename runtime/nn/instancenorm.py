"""`InstanceNorm1d`, `InstanceNorm2d` and `InstanceNorm3d`: each sample's channel normalized over its own
spatial extent; optional affine parameters and running statistics, as PyTorch's (off by
default, and ``num_batches_tracked`` is registered but never counted, as there)."""

from __future__ import annotations

import warnings
from typing import Any

from runtime.nn.batchnorm import _LazyNormBase, _NormBase
from runtime.ops import conv as C
from runtime.tensor import Tensor


class _InstanceNorm(_NormBase):
    _no_batch_dim = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        nb = self._no_batch_dim
        if input.ndim not in (nb, nb + 1):
            raise ValueError(f"expected {nb}D or {nb + 1}D input (got {input.ndim}D input)")
        dim = input.ndim - nb
        if input.shape[dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={dim} to match num_features "
                                 f"({self.num_features}), but got: {input.shape[dim]}.")
            warnings.warn(f"input's size at dim={dim} does not match num_features. You can "
                          "silence this warning by not passing in num_features, which is not "
                          "used because affine=False", stacklevel=2)
        x = input if input.ndim == nb + 1 else input.unsqueeze(0)
        out = C.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              0.0 if self.momentum is None else self.momentum, self.eps)
        return out if input.ndim == nb + 1 else out.squeeze(0)


class InstanceNorm1d(_InstanceNorm):
    """(N, C, L) or unbatched (C, L)."""

    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """(N, C, H, W) or unbatched (C, H, W)."""

    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """(N, C, D, H, W) or unbatched (C, D, H, W)."""

    _no_batch_dim = 4


# PyTorch's lazy instance norms take the lazy batch norms' defaults (affine and running
# statistics on), and num_features from the input's dim 1 even unbatched, as there


class LazyInstanceNorm1d(_LazyNormBase, InstanceNorm1d):
    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyNormBase, InstanceNorm2d):
    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyNormBase, InstanceNorm3d):
    cls_to_become = InstanceNorm3d
