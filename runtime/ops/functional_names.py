"""PyTorch's torch-level names of nn.functional's ops (``torch.conv2d``, ``torch.layer_norm``,
``torch.batch_norm``, ``torch.embedding``, ``torch.dropout``, the ``*_loss`` names ...), with
the native signatures they have there: the norms' argument order (weight and bias before the
running statistics), ``embedding(weight, indices)``, dropout's required ``train``, losses'
``reduction`` as an int (0: none, 1: mean, 2: sum), pools without ``return_indices``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import _dtype as D
from ..tensor import Tensor
from . import functional as F

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _nn() -> Any:
    from ..nn import functional as nnf  # nn loads after the ops

    return nnf


def _conv() -> Any:
    from . import conv

    return conv


def _reduction(name: str, reduction: Any, position: int) -> str:
    """An aten loss's ``reduction`` (an int) as nn.functional's string."""
    if isinstance(reduction, bool) or not isinstance(reduction, int):
        raise TypeError(f"{name}(): argument 'reduction' (position {position}) must be int, "
                        f"not {type(reduction).__name__}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _REDUCTIONS[reduction]


def _reduced(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return F.mean(loss)
    return F.sum(loss) if reduction == "sum" else loss


# --- convolutions, norms, embedding -------------------------------------------------------------


def layer_norm(input: Tensor, normalized_shape: Sequence[int] | int,  # noqa: A002
               weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-05,
               cudnn_enable: bool = True) -> Tensor:
    return _nn().layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-05,
               cudnn_enabled: bool = True) -> Tensor:
    return _nn().group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,  # noqa: A002
               running_mean: Tensor | None, running_var: Tensor | None, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:
    return _conv().batch_norm_op(input, running_mean, running_var, weight, bias, training,
                                 momentum, eps)


def instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,  # noqa: A002
                  running_mean: Tensor | None, running_var: Tensor | None,
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Tensor:
    return _nn().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                               momentum, eps)


def rms_norm(input: Tensor, normalized_shape: Sequence[int] | int,  # noqa: A002
             weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    return _nn().rms_norm(input, normalized_shape, weight, eps)


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """weight's rows at ``indices`` (weight first, as aten's); ``padding_idx`` -1: none (its
    row gets no gradient otherwise)."""
    if sparse:
        raise RuntimeError("sparse gradients are not supported: use sparse=False")
    pad = None if padding_idx == -1 else padding_idx
    return _nn().embedding(indices, weight, pad, scale_grad_by_freq=scale_grad_by_freq)


# --- dropout ------------------------------------------------------------------------------------


def _check_p(p: float) -> float:
    """aten's check (a RuntimeError, where nn.functional raises a ValueError)."""
    if not 0 <= p <= 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    return p


def dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _nn().dropout(input, _check_p(p), train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _nn().dropout(input, _check_p(p), train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _nn().alpha_dropout(input, _check_p(p), train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _nn().alpha_dropout(input, _check_p(p), train, inplace=True)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _nn().feature_alpha_dropout(input, _check_p(p), train)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _nn().feature_alpha_dropout(input, _check_p(p), train, inplace=True)


def _feature_dropout(input: Tensor, p: float, train: bool, inplace: bool) -> Tensor:  # noqa: A002
    from .activations import _channel_dropout

    _check_p(p)
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _channel_dropout(input, p, train, inplace, 2)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """Whole channels (dim 1) of each sample zeroed with probability p."""
    return _feature_dropout(input, p, train, False)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    return _feature_dropout(input, p, train, True)


# --- activations and the like ------------------------------------------------------------------


def rrelu(input: Tensor, lower: float = 0.125, upper: float = 1.0 / 3,  # noqa: A002
          training: bool = False, generator: Any = None) -> Tensor:
    if generator is not None:
        raise NotImplementedError("rrelu(generator=...) is not supported: leave it None")
    return _nn().rrelu(input, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 0.125, upper: float = 1.0 / 3,  # noqa: A002
           training: bool = False, generator: Any = None) -> Tensor:
    if generator is not None:
        raise NotImplementedError("rrelu_(generator=...) is not supported: leave it None")
    return _nn().rrelu_(input, lower, upper, training)


def celu(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    return _nn().celu(input, alpha)


def selu(input: Tensor) -> Tensor:  # noqa: A002
    return _nn().selu(input)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:  # noqa: A002
    return _nn().threshold(input, threshold, value)


def constant_pad_nd(input: Tensor, pad: Sequence[int], value: float = 0) -> Tensor:  # noqa: A002
    return _nn().pad(input, list(pad), "constant", value)


# --- pools --------------------------------------------------------------------------------------


def _stride(stride: Any) -> Any:
    """aten's pools take ``stride=[]`` (its default) for the kernel size."""
    return None if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else stride


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0,  # noqa: A002
               dilation: Any = 1, ceil_mode: bool = False) -> Tensor:
    return _nn().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0,  # noqa: A002
               dilation: Any = 1, ceil_mode: bool = False) -> Tensor:
    return _nn().max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0,  # noqa: A002
               dilation: Any = 1, ceil_mode: bool = False) -> Tensor:
    return _nn().max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = (),  # noqa: A002
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False
                            ) -> tuple[Tensor, Tensor]:
    return _nn().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode,
                            return_indices=True)


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    return _nn().avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                            count_include_pad)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    return _nn().adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input: Tensor, output_size: Any) -> tuple[Tensor, Tensor]:  # noqa: A002
    """The pooled values and their indices (aten's returns both)."""
    return _nn().adaptive_max_pool1d(input, output_size, return_indices=True)


# --- losses (reduction an int) ------------------------------------------------------------------


def kl_div(input: Tensor, target: Tensor, reduction: int = 0, *,  # noqa: A002
           log_target: bool = False) -> Tensor:
    """The pointwise KL divergence, reduced; "mean" is over all elements (aten's, without
    nn.functional's warning that it is not the batch mean)."""
    mode = _reduction("kl_div", reduction, 3)
    return _reduced(_nn().kl_div(input, target, reduction="none", log_target=log_target), mode)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,  # noqa: A002
                                     weight: Tensor | None = None,
                                     pos_weight: Tensor | None = None,
                                     reduction: int = 0) -> Tensor:
    mode = _reduction("binary_cross_entropy_with_logits", reduction, 5)
    return _nn().binary_cross_entropy_with_logits(input, target, weight, reduction=mode,
                                                  pos_weight=pos_weight)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor,
                          margin: float = 0.0, reduction: int = 0) -> Tensor:
    mode = _reduction("cosine_embedding_loss", reduction, 5)
    return _nn().cosine_embedding_loss(input1, input2, target, margin, reduction=mode)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,  # noqa: A002
                         reduction: int = 0) -> Tensor:
    mode = _reduction("hinge_embedding_loss", reduction, 4)
    return _nn().hinge_embedding_loss(input, target, margin, reduction=mode)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 0) -> Tensor:
    mode = _reduction("margin_ranking_loss", reduction, 5)
    return _nn().margin_ranking_loss(input1, input2, target, margin, reduction=mode)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool,  # noqa: A002
                     eps: float, reduction: int) -> Tensor:
    mode = _reduction("poisson_nll_loss", reduction, 6)
    return _nn().poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=mode)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2.0, eps: float = 1e-06,
                        swap: bool = False, reduction: int = 0) -> Tensor:
    mode = _reduction("triplet_margin_loss", reduction, 8)
    return _nn().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                     reduction=mode)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any,
             blank: int = 0, reduction: int = 0, zero_infinity: bool = False) -> Tensor:
    mode = _reduction("ctc_loss", reduction, 6)
    return _nn().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, mode,
                          zero_infinity)


# --- aten's convolution, native norms and dropout ------------------------------------------------


def convolution(input: Tensor, weight: Tensor, bias: Tensor | None,  # noqa: A002
                stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                transposed: bool, output_padding: Sequence[int], groups: int) -> Tensor:
    """aten's one convolution: conv{1,2,3}d or conv_transpose{1,2,3}d by weight's rank."""
    nnf = _nn()
    dims = weight.ndim - 2
    if dims not in (1, 2, 3):
        raise RuntimeError(f"Expected 3D, 4D or 5D weight for convolution, but got weight of "
                           f"size {list(weight.shape)}")
    if transposed:
        return getattr(nnf, f"conv_transpose{dims}d")(input, weight, bias, stride, padding,
                                                      output_padding, groups, dilation)
    return getattr(nnf, f"conv{dims}d")(input, weight, bias, stride, padding, dilation, groups)


def _axes_stats(input: Tensor, axes: tuple[int, ...], eps: float,  # noqa: A002
                history: bool = False) -> tuple[Tensor, Tensor]:
    """The mean and 1 / sqrt(biased variance + eps) over ``axes``, kept as size-1 dims;
    without ``history`` (aten's layer and batch norms give no gradient through them)."""
    if not history:
        input = input.detach()  # noqa: A001
    mean = F.mean(input, axes, keepdim=True)
    centred = F.sub(input, mean)
    var = F.mean(F.mul(centred, centred), axes, keepdim=True)
    return mean, F.div(1.0, F.sqrt(F.add(var, eps)))


def native_layer_norm(input: Tensor, normalized_shape: Sequence[int],  # noqa: A002
                      weight: Tensor | None, bias: Tensor | None, eps: float
                      ) -> tuple[Tensor, Tensor, Tensor]:
    """(layer_norm's result, the mean, 1 / std), the statistics with size-1 normalized dims."""
    axes = tuple(range(input.ndim - len(tuple(normalized_shape)), input.ndim))
    out = layer_norm(input, normalized_shape, weight, bias, eps)
    mean, rstd = _axes_stats(input, axes, eps)
    return out, mean, rstd


def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,  # noqa: A002
                      running_mean: Tensor | None, running_var: Tensor | None,
                      training: bool, momentum: float, eps: float
                      ) -> tuple[Tensor, Tensor, Tensor]:
    """(batch_norm's result, the batch mean, its 1 / std): training only; empty in eval."""
    from ..creation import empty

    out = _conv().batch_norm_op(input, running_mean, running_var, weight, bias, training,
                                momentum, eps)
    if not training:
        return out, empty(0, dtype=input.dtype, device=input.device), \
            empty(0, dtype=input.dtype, device=input.device)
    axes = tuple(d for d in range(input.ndim) if d != 1)
    mean, rstd = _axes_stats(input, axes, eps)
    return out, F.reshape(mean, (-1,)), F.reshape(rstd, (-1,))


def native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,  # noqa: A002
                      N: int, C: int, HxW: int, group: int, eps: float  # noqa: N803
                      ) -> tuple[Tensor, Tensor, Tensor]:
    """(group_norm's result, each (sample, group)'s mean, its 1 / std)."""
    out = _nn().group_norm(input, group, weight, bias, eps)
    grouped = F.reshape(input, (N, group, -1))
    mean, rstd = _axes_stats(grouped, (2,), eps, history=True)
    return out, F.reshape(mean, (N, group)), F.reshape(rstd, (N, group))


def native_dropout(input: Tensor, p: float, train: bool | None  # noqa: A002
                   ) -> tuple[Tensor, Tensor]:
    """(dropout's result, the bool mask of kept elements); not training: a copy, all kept."""
    from ..creation import ones, rand

    _check_p(p)
    if train is False or p == 0.0:
        return F.clone(input), ones(input.shape, dtype=D.bool_, device=input.device)
    keep = F.ge(rand(input.shape, dtype=input.dtype, device=input.device), p)
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    return F.mul(F.mul(input, F.cast(keep, input.dtype)), scale), keep


def embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float,  # noqa: A002
                      norm_type: float) -> Tensor:
    """The rows of ``input`` (a weight) that ``indices`` reads scaled in place to a
    ``norm_type`` norm of at most max_norm."""
    from .embedding import _renorm_rows_

    _renorm_rows_(input, indices, max_norm, norm_type)
    return input


# --- aten's recurrent cells, grid sampling -----------------------------------------------------


def _rnn_cell(mode: str, input: Tensor, h: Tensor, c: Tensor | None,  # noqa: A002
              w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None
              ) -> tuple[Tensor, Tensor | None]:
    from ..nn.rnn import _cell

    return _cell(mode, _nn().linear(input, w_ih, b_ih), h, c, w_hh, b_hh)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,  # noqa: A002
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    return _rnn_cell("RNN_TANH", input, hx, None, w_ih, w_hh, b_ih, b_hh)[0]


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,  # noqa: A002
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    return _rnn_cell("RNN_RELU", input, hx, None, w_ih, w_hh, b_ih, b_hh)[0]


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,  # noqa: A002
             b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    return _rnn_cell("GRU", input, hx, None, w_ih, w_hh, b_ih, b_hh)[0]


def lstm_cell(input: Tensor, hx: Sequence[Tensor], w_ih: Tensor, w_hh: Tensor,  # noqa: A002
              b_ih: Tensor | None = None, b_hh: Tensor | None = None
              ) -> tuple[Tensor, Tensor]:
    """(h', c') of one LSTM step from hx = (h, c)."""
    if len(hx) != 2:
        raise RuntimeError(f"lstm_cell expects two hidden states, got {len(hx)}")
    h, c = _rnn_cell("LSTM", input, hx[0], hx[1], w_ih, w_hh, b_ih, b_hh)
    assert c is not None
    return h, c


_INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int,  # noqa: A002
                 padding_mode: int, align_corners: bool) -> Tensor:
    """grid_sample with aten's int modes (interpolation 0 bilinear, 1 nearest, 2 bicubic;
    padding 0 zeros, 1 border, 2 reflection)."""
    if interpolation_mode not in _INTERPOLATION:
        raise RuntimeError(f"grid_sampler(): invalid interpolation_mode {interpolation_mode}")
    if padding_mode not in _PADDING:
        raise RuntimeError(f"grid_sampler(): invalid padding_mode {padding_mode}")
    return _nn().grid_sample(input, grid, _INTERPOLATION[interpolation_mode],
                             _PADDING[padding_mode], align_corners)


def grid_sampler_2d(input: Tensor, grid: Tensor, interpolation_mode: int,  # noqa: A002
                    padding_mode: int, align_corners: bool) -> Tensor:
    _grid_ranks(input, grid, 4)
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input: Tensor, grid: Tensor, interpolation_mode: int,  # noqa: A002
                    padding_mode: int, align_corners: bool) -> Tensor:
    _grid_ranks(input, grid, 5)
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def _grid_ranks(input: Tensor, grid: Tensor, rank: int) -> None:  # noqa: A002
    from .resample import check_grid_common

    check_grid_common(input, grid)  # first, as PyTorch's grid_sampler_2d/3d
    if input.ndim != rank or grid.ndim != rank:
        raise RuntimeError(f"grid_sampler(): expected {rank}D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")


def affine_grid_generator(theta: Tensor, size: Sequence[int], align_corners: bool) -> Tensor:
    return _nn().affine_grid(theta, list(size), align_corners)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:  # noqa: A002
    return _nn().conv_tbc(input, weight, bias, pad)


# the same signature at torch level as in nn.functional
_SAME = ("conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d prelu "
         "hardshrink pixel_shuffle pixel_unshuffle channel_shuffle native_channel_shuffle "
         "cosine_similarity pairwise_distance pdist bilinear celu_ selu_ threshold_").split()


def _forward(name: str) -> Callable[..., Any]:
    def fn(*args: Any, **kwargs: Any) -> Any:
        return getattr(_nn(), name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}``: ``nn.functional.{name}``."
    return fn


def _prelu_method(self: Tensor, weight: Tensor) -> Tensor:
    return _nn().prelu(self, weight)


def _hardshrink_method(self: Tensor, lambd: float = 0.5) -> Tensor:
    return _nn().hardshrink(self, lambd)


FUNCTIONS: dict[str, Callable[..., Any]] = {n: _forward(n) for n in _SAME}
FUNCTIONS.update({fn.__name__: fn for fn in (
    layer_norm, group_norm, batch_norm, instance_norm, rms_norm, embedding, dropout, dropout_,
    alpha_dropout, alpha_dropout_, feature_alpha_dropout, feature_alpha_dropout_,
    feature_dropout, feature_dropout_, rrelu, rrelu_, celu, selu, threshold, constant_pad_nd,
    max_pool1d, max_pool2d, max_pool3d, max_pool1d_with_indices, avg_pool1d,
    adaptive_avg_pool1d, adaptive_max_pool1d, kl_div, binary_cross_entropy_with_logits,
    cosine_embedding_loss, hinge_embedding_loss, margin_ranking_loss, poisson_nll_loss,
    triplet_margin_loss, ctc_loss, convolution, native_layer_norm, native_batch_norm,
    native_group_norm, native_dropout, embedding_renorm_, rnn_tanh_cell, rnn_relu_cell, gru_cell,
    lstm_cell, grid_sampler, grid_sampler_2d, grid_sampler_3d, affine_grid_generator,
    conv_tbc)})
METHODS: dict[str, Any] = {"prelu": _prelu_method, "hardshrink": _hardshrink_method}


def finish() -> None:
    """nn.functional's signatures on the torch-level names that pass straight to it."""
    import inspect

    for name in _SAME:
        FUNCTIONS[name].__signature__ = inspect.signature(  # type: ignore[attr-defined]
            getattr(_nn(), name))
