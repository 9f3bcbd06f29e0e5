"""`BatchNorm1d`, `BatchNorm2d` and `BatchNorm3d`: running statistics are buffers a training step updates
in place (a compiled step writes them back like eager, as any state it updates)."""

from __future__ import annotations

from typing import Any

import runtime as rt
from runtime.nn import init
from runtime.nn.lazy import LazyModuleMixin
from runtime.nn.module import Module
from runtime.nn.parameter import Parameter, UninitializedBuffer, UninitializedParameter
from runtime.ops import conv as C
from runtime.tensor import Tensor


class _NormBase(Module):
    """What batch and instance normalization share (PyTorch's ``_NormBase``): the optional
    affine parameters, the running statistics, their reset and the repr."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(rt.empty(num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(rt.empty(num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", rt.zeros(num_features, device=device,
                                                          dtype=dtype))
            self.register_buffer("running_var", rt.ones(num_features, device=device,
                                                        dtype=dtype))
            self.register_buffer("num_batches_tracked", rt.tensor(0, dtype=rt.int64,
                                                                  device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    _version = 2  # version 2 added num_batches_tracked

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: dict[str, Any],
                              *args: Any) -> None:
        """PyTorch's: a state dict without version 2 in its metadata (an older checkpoint, or
        a plain dict) may lack ``num_batches_tracked``, which then keeps its value."""
        key = prefix + "num_batches_tracked"
        if (local_metadata.get("version", 1) < 2 and self.track_running_stats
                and key not in state_dict):
            state_dict[key] = self.num_batches_tracked
        super()._load_from_state_dict(state_dict, prefix, local_metadata, *args)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    _expected: tuple[int, ...] = ()

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        if input.ndim not in self._expected:
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self._expected)} input "
                             f"(got {input.ndim}D input)")
        return self._normalize(input)

    def _normalize(self, input: Tensor) -> Tensor:  # noqa: A002
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with rt.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                # a cumulative moving average; 1 / n as a tensor, since the .item() of a
                # float() would make a compiled step run eagerly
                momentum = 1.0 / self.num_batches_tracked.to(self.running_mean.dtype)
        use_batch = self.training or self.running_mean is None
        track = not self.training or self.track_running_stats
        return C.batch_norm(input, self.running_mean if track else None,
                            self.running_var if track else None, self.weight, self.bias,
                            use_batch, momentum, self.eps)


class SyncBatchNorm(_BatchNorm):
    """PyTorch's SyncBatchNorm: batch statistics over every rank of ``process_group`` in
    training once a process group is initialized, else a BatchNorm of any rank >= 2. As
    PyTorch refuses a CPU tensor for the synchronized case, so does this; synchronizing GPU
    tensors across ranks is not supported here (an error, never unsynchronized statistics)."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 process_group: Any = None, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = process_group

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        from runtime import distributed

        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        if self.training and distributed.is_initialized():
            if str(input.device) == "cpu":
                raise ValueError("SyncBatchNorm expected input tensor to be on GPU or XPU or "
                                 "privateuseone")
            if distributed.get_world_size() > 1:
                raise NotImplementedError("SyncBatchNorm: synchronizing batch statistics "
                                          "across ranks is not supported here")
        return self._normalize(input)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """``module`` with each batch norm in it replaced by a SyncBatchNorm holding the same
        parameters and buffers (and training flag)."""
        output = module
        if isinstance(module, _BatchNorm):
            output = SyncBatchNorm(module.num_features, module.eps, module.momentum,
                                   module.affine, module.track_running_stats, process_group,
                                   bias=module.bias is not None)
            if module.affine:
                with rt.no_grad():
                    output.weight = module.weight
                    output.bias = module.bias
            output.running_mean = module.running_mean
            output.running_var = module.running_var
            output.num_batches_tracked = module.num_batches_tracked
            output.training = module.training
        for name, child in module.named_children():
            output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return output


class BatchNorm1d(_BatchNorm):
    _expected = (2, 3)


class BatchNorm2d(_BatchNorm):
    _expected = (4,)


class BatchNorm3d(_BatchNorm):
    _expected = (5,)


class _LazyNormBase(LazyModuleMixin):
    """Batch normalization whose num_features is its first input's dimension 1."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        # no affine parameters nor statistics made only to be replaced
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = rt.tensor(0, dtype=rt.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, input: Tensor) -> None:  # noqa: A002
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        with rt.no_grad():
            lazy = [self.weight, self.bias] if self.affine else []
            lazy += [self.running_mean, self.running_var] if self.track_running_stats else []
            for t in lazy:
                if t is not None:
                    t.materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, BatchNorm1d):
    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNormBase, BatchNorm2d):
    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNormBase, BatchNorm3d):
    cls_to_become = BatchNorm3d
