"""`TransformerEncoderLayer`, `TransformerEncoder`, `TransformerDecoderLayer`,
`TransformerDecoder` and `Transformer`, as PyTorch has them: self-attention (and in a decoder
attention over the encoder's output) then a feed-forward block, each with dropout, a residual
and a LayerNorm (after, or with ``norm_first`` before); a stack holds deep copies of one
layer. Built from MultiheadAttention, Linear, LayerNorm and Dropout, so they differentiate
eagerly and compile without falling back; parameter names are PyTorch's, so a state dict
moves across."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import runtime as rt
from runtime.nn import functional as F
from runtime.nn import init
from runtime.nn.activation import GELU, ReLU
from runtime.nn.attention import MultiheadAttention
from runtime.nn.container import ModuleList
from runtime.nn.dropout import Dropout
from runtime.nn.linear import Linear
from runtime.nn.module import Module
from runtime.nn.normalization import LayerNorm
from runtime.tensor import Tensor


def _canonical_mask(mask: Tensor | None, name: str, other: Tensor | None, other_name: str,
                    target: Any) -> Tensor | None:
    """PyTorch's F._canonical_mask: a bool mask made a float one of ``target`` dtype (-inf
    where True), with its warning where ``other`` is a mask of another dtype."""
    if mask is None:
        return None
    if mask.dtype is not rt.bool and not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    if other is not None and other.dtype is not mask.dtype:
        warnings.warn(f"Support for mismatched {name} and {other_name} is deprecated. Use same "
                      "type for both instead.", stacklevel=3)
    if mask.dtype.is_floating_point:
        return mask
    return rt.zeros_like(mask, dtype=target).masked_fill_(mask, float("-inf"))


def _not_nested(layer: Module) -> str:
    """Why PyTorch's TransformerEncoder would not take its nested-tensor fast path for
    stacks of ``layer`` (its warning's reason), or ""."""
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    attn = layer.self_attn
    for reason, failed in (
            ("norm_first was True", layer.norm_first),
            ("self_attn.batch_first was not True(use batch_first for better inference "
             "performance)", not attn.batch_first),
            ("self_attn._qkv_same_embed_dim was not True", not attn._qkv_same_embed_dim),
            ("self_attn was passed bias=False", attn.in_proj_bias is None),
            ("activation_relu_or_gelu was not True", not layer.activation_relu_or_gelu),
            (f"norm1.eps was not equal to {name}.norm2.eps", layer.norm1.eps != layer.norm2.eps),
            ("self_attn.num_heads is odd", attn.num_heads % 2 == 1)):
        if failed:
            return f"{name}.{reason}"
    return ""


def _activation(activation: str | Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if isinstance(activation, str):
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return activation


class _Layer(Module):
    """What an encoder and a decoder layer share: self-attention with its dropout
    (``self_attn``, ``dropout1``) and the feed-forward block (``linear1``, ``activation``,
    ``dropout``, ``linear2``), each layer ending the latter with its own dropout."""

    self_attn: MultiheadAttention
    linear1: Linear
    linear2: Linear
    dropout: Dropout
    dropout1: Dropout
    activation: Callable[[Tensor], Tensor]

    def _sa_block(self, x: Tensor, attn_mask: Tensor | None,
                  key_padding_mask: Tensor | None, is_causal: bool) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _feed_forward(self, x: Tensor, out_dropout: Dropout) -> Tensor:
        return out_dropout(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoderLayer(_Layer):
    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)
        # PyTorch's record of a relu (1) or gelu (2) activation, read by its fast paths
        self.activation_relu_or_gelu = 1 if self.activation is F.relu or isinstance(
            self.activation, ReLU) else 2 if self.activation is F.gelu or isinstance(
            self.activation, GELU) else 0

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               src_mask, "src_mask", src.dtype)
        src_mask = _canonical_mask(src_mask, "src_mask", None, "", src.dtype)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _ff_block(self, x: Tensor) -> Tensor:
        return self._feed_forward(x, self.dropout2)


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` in turn, then ``norm`` if given."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int,
                 norm: Module | None = None, enable_nested_tensor: bool = True,
                 mask_check: bool = True) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        # kept as PyTorch keeps them: there they choose an inference fast path over nested
        # tensors (and its padding-mask check) that gives the same values as this one path
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why_not = _not_nested(encoder_layer)
        if enable_nested_tensor and why_not:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False "
                          f"because {why_not}", stacklevel=2)
            self.use_nested_tensor = False

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               mask, "mask", src.dtype)
        mask = _canonical_mask(mask, "mask", None, "", src.dtype)
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                           is_causal=bool(is_causal))
        return output if self.norm is None else self.norm(output)


class TransformerDecoderLayer(_Layer):
    """Self-attention over the target, attention over the encoder's ``memory``, then a
    feed-forward block: each with dropout, a residual and a LayerNorm (after, or before with
    ``norm_first``)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask,
                                   tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask,
                                              tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask,
                                               memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask: Tensor | None,
                   key_padding_mask: Tensor | None, is_causal: bool) -> Tensor:
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self._feed_forward(x, self.dropout3)


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer`` in turn, then ``norm`` if given."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int,
                 norm: Module | None = None) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask,
                           tgt_is_causal=bool(tgt_is_causal),
                           memory_is_causal=memory_is_causal)
        return output if self.norm is None else self.norm(output)


class Transformer(Module):
    """An encoder and a decoder of the layers above, each ending in a LayerNorm; every
    parameter of two or more dimensions initialised with ``xavier_uniform_``, as PyTorch's."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = F.relu,
                 custom_encoder: Module | None = None, custom_decoder: Module | None = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        layer_kw = {"dim_feedforward": dim_feedforward, "dropout": dropout,
                    "activation": activation, "layer_norm_eps": layer_norm_eps,
                    "batch_first": batch_first, "norm_first": norm_first, "bias": bias, **kw}
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            TransformerEncoderLayer(d_model, nhead, **layer_kw), num_encoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            TransformerDecoderLayer(d_model, nhead, **layer_kw), num_decoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        batch = 0 if self.batch_first else 1
        if src.dim() == 3 and src.shape[batch] != tgt.shape[batch]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None,
                                        dtype: Any = None) -> Tensor:
        """The causal mask: -inf above the diagonal, 0 on and below it."""
        import runtime as rt

        return rt.triu(rt.full((sz, sz), float("-inf"), dtype=dtype or rt.float32,
                               device=device), diagonal=1)
