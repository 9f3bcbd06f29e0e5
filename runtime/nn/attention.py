"""`MultiheadAttention`: PyTorch's layer (its in_proj/out_proj parameters, masks, need_weights
and average_attn_weights), computed from primitives; F.multi_head_attention_forward; and
`torch.nn.attention`'s SDPBackend and sdpa_kernel (which backends sdpa may use)."""

from __future__ import annotations

import contextlib
import enum
import math
import warnings
from collections.abc import Iterator
from typing import Any

import runtime as rt
from runtime import _dtype as D
from runtime.nn import init
from runtime.nn.linear import Linear
from runtime.nn.module import Module
from runtime.nn.parameter import Parameter
from runtime.ops import composite as C
from runtime.ops.attention import causal_mask, safe_softmax
from runtime.ops import functional as F
from runtime.tensor import Tensor


class NonDynamicallyQuantizableLinear(Linear):
    """PyTorch's name for MultiheadAttention's out_proj (shown by repr)."""


def _masked(scores: Tensor, mask: Tensor) -> Tensor:
    """MultiheadAttention's masks mark what is *not* attended: where a bool mask is True the
    score becomes -inf; a float mask is added."""
    if mask.dtype is D.bool_:
        return F.where(mask, -math.inf, scores)
    return F.add(scores, F.cast(mask, scores.dtype))


def _seq_first_linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """linear of a batch-first (N, L, E) ``x`` run on its (L, N, E) view, the layout
    PyTorch's multi_head_attention_forward projects: F.linear's result for a bias of another
    dtype depends on whether its input is contiguous (see composite.linear)."""
    return F.transpose(C.linear(F.transpose(x, 0, 1), weight, bias), 0, 1)


class MultiheadAttention(Module):
    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device: str | None = None,
        dtype: Any = None,
    ) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(rt.empty((3 * embed_dim, embed_dim), device=device,
                                                     dtype=dtype))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:  # keys and values of other widths: three weights, as PyTorch
            self.q_proj_weight = Parameter(rt.empty((embed_dim, embed_dim), device=device,
                                                    dtype=dtype))
            self.k_proj_weight = Parameter(rt.empty((embed_dim, self.kdim), device=device,
                                                    dtype=dtype))
            self.v_proj_weight = Parameter(rt.empty((embed_dim, self.vdim), device=device,
                                                    dtype=dtype))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(rt.empty(3 * embed_dim, device=device, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        device=device, dtype=dtype)
        if add_bias_kv:  # one more key and value, learned, that every query may attend
            self.bias_k = Parameter(rt.empty(1, 1, embed_dim, device=device, dtype=dtype))
            self.bias_v = Parameter(rt.empty(1, 1, embed_dim, device=device, dtype=dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn  # one more key and value, zeros, per head
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _project(self, x: Tensor, part: int) -> Tensor:
        """x through the part-th (q, k, v) third of in_proj."""
        e = self.embed_dim
        rows = (slice(part * e, (part + 1) * e),)
        b = None if self.in_proj_bias is None else F.getitem(self.in_proj_bias, rows)
        if not self._qkv_same_embed_dim:
            w = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)[part]
            return _seq_first_linear(x, w, b)
        return _seq_first_linear(x, F.getitem(self.in_proj_weight, rows), b)

    def _in_projection(self, q: Tensor, kv: tuple[Tensor, Tensor] | None
                       ) -> tuple[Tensor, Tensor, Tensor]:
        """q, k, v projected; kv None is self-attention: one matmul, as PyTorch's packed
        projection."""
        if kv is None:
            qkv = _seq_first_linear(q, self.in_proj_weight, self.in_proj_bias)
            e = self.embed_dim
            q, k, v = (F.getitem(qkv, (..., slice(i * e, (i + 1) * e))) for i in range(3))
            return q, k, v
        return self._project(q, 0), self._project(kv[0], 1), self._project(kv[1], 2)

    def merge_masks(self, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                    query: Tensor) -> tuple[Tensor | None, int | None]:
        """PyTorch's helper of its fast path: the key padding mask alone (type 1), or the
        attention mask expanded to (N, H, L, L), plus the padding mask where given (type 2:
        its code says 2 for an attention mask alone too)."""
        mask_type: int | None = None
        merged_mask: Tensor | None = None
        if key_padding_mask is not None:
            mask_type, merged_mask = 1, key_padding_mask
        if attn_mask is not None:
            batch_size, seq_len, _ = query.shape
            mask_type = 2
            if attn_mask.dim() == 3:
                merged_mask = attn_mask.view(batch_size, -1, seq_len, seq_len)
            else:
                merged_mask = attn_mask.view(1, 1, seq_len, seq_len).expand(
                    batch_size, self.num_heads, -1, -1)
            if key_padding_mask is not None:
                merged_mask = merged_mask + key_padding_mask.view(
                    batch_size, 1, 1, seq_len).expand(-1, self.num_heads, -1, -1)
        return merged_mask, mask_type

    def _check(self, query: Tensor, key: Tensor, value: Tensor,
               key_padding_mask: Tensor | None, attn_mask: Tensor | None) -> None:
        """PyTorch's checks of the inputs (its _canonical_mask, then _mha_shape_check, then
        the embedding sizes), in its order."""
        for name, mask in (("key_padding_mask", key_padding_mask), ("attn_mask", attn_mask)):
            if mask is not None and mask.dtype is not D.bool_ and \
                    not mask.dtype.is_floating_point:
                raise AssertionError(f"only bool and floating types of {name} are supported")
        if key_padding_mask is not None and attn_mask is not None \
                and key_padding_mask.dtype is not attn_mask.dtype:
            warnings.warn("Support for mismatched key_padding_mask and attn_mask is deprecated. "
                          "Use same type for both instead.", stacklevel=3)
        if query.ndim not in (2, 3):
            raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but "
                                 f"received {query.ndim}-D query tensor")
        kind, dims = ("batched (3-D)", 3) if query.ndim == 3 else ("unbatched (2-D)", 2)
        if key.ndim != dims or value.ndim != dims:
            raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be "
                                 f"{dims}-D but found {key.ndim}-D and {value.ndim}-D tensors "
                                 "respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != dims - 1:
            raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` "
                                 f"or {dims - 1}-D but found {key_padding_mask.ndim}-D tensor "
                                 "instead")
        if attn_mask is not None:
            if attn_mask.ndim not in (2, 3):
                raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, "
                                     f"2-D or 3-D but found {attn_mask.ndim}-D tensor instead")
            want = (self.num_heads, query.shape[0], key.shape[0])
            if dims == 2 and attn_mask.ndim == 3 and tuple(attn_mask.shape) != want:
                raise AssertionError(f"Expected `attn_mask` shape to be {want} but got "
                                     f"{_size(attn_mask)}")
        if query.shape[-1] != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but "
                                 f"got {query.shape[-1]}")
        # PyTorch compares them (S, N, E) as its functional form sees them: transposed where
        # batch_first, unsqueezed at 1 where unbatched
        k_shape, v_shape = (self._seq_first(t) for t in (key, value))
        if self._qkv_same_embed_dim:
            if k_shape != v_shape:
                raise AssertionError(f"key shape torch.Size({k_shape}) does not match value "
                                     f"shape torch.Size({v_shape})")
        elif k_shape[:2] != v_shape[:2]:
            raise AssertionError(f"key's sequence and batch dims torch.Size({k_shape[:2]}) do "
                                 f"not match value's torch.Size({v_shape[:2]})")
        e = self.embed_dim
        if self._qkv_same_embed_dim and key.shape[-1] != e:  # the packed projection's linear
            rows = math.prod(key.shape[:-1])
            width = 2 * e if key is value and query is not key else e
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x"
                               f"{key.shape[-1]} and {e}x{width})")
        for name, got, dim in (("key", key.shape[-1], self.kdim),
                               ("value", value.shape[-1], self.vdim)):
            if got != dim:  # separate projections: _in_projection's checks
                raise AssertionError(f"expecting {name} weights shape of {(e, got)}, but got "
                                     f"torch.Size([{e}, {dim}])")

    def _seq_first(self, t: Tensor) -> list[int]:
        if t.ndim == 2:
            return [t.shape[0], 1, t.shape[1]]
        return [t.shape[1], t.shape[0], t.shape[2]] if self.batch_first else list(t.shape)

    def _apply_masks(self, scores: Tensor, attn_mask: Tensor | None,
                     key_padding_mask: Tensor | None, extra: int) -> Tensor:
        """scores (N, H, L, S + extra) under attn_mask (L, S) or (N·H, L, S) and
        key_padding_mask (N, S), checked with PyTorch's texts; the ``extra`` keys
        (add_bias_kv, add_zero_attn) are never masked."""
        bsz, heads, tgt, src = scores.shape
        src -= extra
        if attn_mask is not None:
            if attn_mask.ndim == 2:
                if tuple(attn_mask.shape) != (tgt, src):
                    raise RuntimeError(f"The shape of the 2D attn_mask is {_size(attn_mask)}, "
                                       f"but should be {(tgt, src)}.")
            elif attn_mask.ndim == 3:
                want = (bsz * heads, tgt, src)
                if tuple(attn_mask.shape) != want:
                    raise RuntimeError(f"The shape of the 3D attn_mask is {_size(attn_mask)}, "
                                       f"but should be {want}.")
                attn_mask = F.reshape(attn_mask, (bsz, heads, tgt, src))
            else:
                raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be "
                                     f"`None`, 2-D or 3-D but found {attn_mask.ndim}-D tensor "
                                     "instead")
            scores = _masked(scores, _unmasked_keys(attn_mask, extra))
        if key_padding_mask is not None:
            # PyTorch pads the mask for each extra key before it checks it
            for i, (want, got) in enumerate(((bsz, key_padding_mask.shape[0]),
                                             (src + extra, key_padding_mask.shape[1] + extra))):
                if got != want:
                    raise AssertionError(f"Expected key_padded_mask.shape[{i}] to be {want}, "
                                         f"but got {got}")
            scores = _masked(scores, _unmasked_keys(
                F.reshape(key_padding_mask, (bsz, 1, 1, src)), extra))
        return scores

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """(attn_output, attn_weights): weights (N, L, S) averaged over heads, (N, H, L, S)
        with average_attn_weights=False, None with need_weights=False; is_causal is a hint
        that attn_mask is causal, which must then be given (as PyTorch)."""
        return self._forward(query, key, value, key_padding_mask, need_weights, attn_mask,
                             average_attn_weights, is_causal)

    def _forward(self, query: Tensor, key: Tensor, value: Tensor,
                 key_padding_mask: Tensor | None, need_weights: bool,
                 attn_mask: Tensor | None, average_attn_weights: bool, is_causal: bool,
                 static: tuple[Tensor | None, Tensor | None] = (None, None)
                 ) -> tuple[Tensor, Tensor | None]:
        """forward, and F.multi_head_attention_forward's ``static`` keys and values (given
        per head as (N·H, S, head_dim), in place of the projected ones)."""
        self._check(query, key, value, key_padding_mask, attn_mask)
        if need_weights:
            _check_weights_mask_dtype(query, key_padding_mask, attn_mask)
        self_attention = query is key and key is value and self._qkv_same_embed_dim
        if is_causal and attn_mask is None:
            raise RuntimeError(
                "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                "module method `generate_square_subsequent_mask` to create this mask.")
        # PyTorch's hint: with no key padding mask and no weights asked for, the given mask
        # is dropped and attention is causal over every key (the extra ones included)
        causal = is_causal and key_padding_mask is None and not need_weights
        if causal:
            attn_mask = None
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = (F.unsqueeze(t, 0) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = F.unsqueeze(key_padding_mask, 0)
        elif not self.batch_first:
            query, key, value = (F.transpose(t, 0, 1) for t in (query, key, value))
        out, weights = self._attend(query, None if self_attention else (key, value),
                                    key_padding_mask, attn_mask, safe=not need_weights,
                                    static=static, causal=causal)
        if unbatched:
            out = out[0]
        elif not self.batch_first:
            out = F.transpose(out, 0, 1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = F.mean(weights, 1)
        return out, weights[0] if unbatched else weights

    def _attend(self, query: Tensor, kv: tuple[Tensor, Tensor] | None,
                key_padding_mask: Tensor | None, attn_mask: Tensor | None, safe: bool,
                static: tuple[Tensor | None, Tensor | None] = (None, None),
                causal: bool = False) -> tuple[Tensor, Tensor]:
        """Batch-first query (N, L, E) and key, value (N, S, E) (kv None: both are query):
        the output (N, L, E) and the per-head weights (N, H, L, S). ``safe``: a query whose
        every key is masked attends to nothing (output 0, as sdpa, which PyTorch runs when
        no weights are asked for), not NaN (PyTorch's softmax, when they are). ``causal``:
        query i sees keys 0..i of all of them (sdpa's is_causal)."""
        bsz, tgt, _ = query.shape
        src = tgt if kv is None else kv[0].shape[1]
        heads, hd = self.num_heads, self.head_dim
        q, k, v = self._in_projection(query, kv)

        def split(t: Tensor, n: int) -> Tensor:  # (N, n, E) -> (N, H, n, hd)
            return F.permute(F.reshape(t, (bsz, n, heads, hd)), 0, 2, 1, 3)

        extra = 0
        if self.bias_k is not None:
            k = F.cat([k, F.expand(self.bias_k, bsz, 1, self.embed_dim)], 1)
            v = F.cat([v, F.expand(self.bias_v, bsz, 1, self.embed_dim)], 1)
            extra += 1
        q, k, v = split(q, tgt), split(k, src + extra), split(v, src + extra)
        if static[0] is not None:  # (N·H, S', hd) keys given in place of the projected ones
            k = F.reshape(static[0], (bsz, heads, static[0].shape[1], hd))
        if static[1] is not None:
            v = F.reshape(static[1], (bsz, heads, static[1].shape[1], hd))
        if self.add_zero_attn:
            zeros = rt.zeros(bsz, heads, 1, hd, dtype=k.dtype, device=k.device)
            k, v = F.cat([k, zeros], 2), F.cat([v, zeros], 2)
            extra += 1
        # q is scaled before the product, as PyTorch's reference (same rounding)
        scores = F.matmul(F.mul(q, 1.0 / math.sqrt(hd)), F.transpose(k, -2, -1))
        scores = self._apply_masks(scores, attn_mask, key_padding_mask, extra)
        if causal:
            scores = F.where(causal_mask(*scores.shape[-2:], scores.device), scores, -math.inf)
        weights = safe_softmax(scores) if safe else C.softmax(scores, -1)
        if self.training and self.dropout > 0.0:
            weights = C.dropout(weights, self.dropout)
        out = F.reshape(F.permute(F.matmul(weights, v), 0, 2, 1, 3), (bsz, tgt, self.embed_dim))
        return self.out_proj(out), weights


def _check_weights_mask_dtype(query: Tensor, key_padding_mask: Tensor | None,
                              attn_mask: Tensor | None) -> None:
    """PyTorch computes the weights by a baddbmm of the merged float mask (a bool mask made
    the query's dtype, the two added): a mask of another float dtype is its error."""
    dtypes = [query.dtype if m.dtype is D.bool_ else m.dtype
              for m in (key_padding_mask, attn_mask) if m is not None]
    if not dtypes:
        return
    merged = dtypes[0] if len(dtypes) == 1 else D.promote(*dtypes)
    if merged is not query.dtype:
        q = D.type_meta_name(query.dtype)
        raise RuntimeError(f"Input dtypes must be the same, got: input "
                           f"{D.type_meta_name(merged)}, batch1: {q}, batch2: {q}")


def _unmasked_keys(mask: Tensor, extra: int) -> Tensor:
    """``mask`` with ``extra`` more keys at the end, none of them masked."""
    if not extra:
        return mask
    return F.cat([mask, rt.zeros(*mask.shape[:-1], extra, dtype=mask.dtype,
                                 device=mask.device)], -1)


def _size(t: Tensor, stop: int | None = None) -> str:
    """A shape (up to axis ``stop``) as PyTorch prints a Size in its messages."""
    return f"torch.Size({list(t.shape[:stop])})"


def multi_head_attention_forward(  # noqa: PLR0913 - PyTorch's signature
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
        bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor,
        out_proj_bias: Tensor | None, training: bool = True,
        key_padding_mask: Tensor | None = None, need_weights: bool = True,
        attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
        q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
        v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
        static_v: Tensor | None = None, average_attn_weights: bool = True,
        is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    """PyTorch's ``F.multi_head_attention_forward`` (sequence-first, or unbatched, inputs):
    MultiheadAttention's computation with the given tensors as its parameters."""
    embed_dim = query.shape[-1]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    weights = (q_proj_weight, k_proj_weight, v_proj_weight)
    if use_separate_proj_weight:
        for name, w in zip(("q_proj_weight", "k_proj_weight", "v_proj_weight"), weights):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name} is None")
    elif in_proj_weight is None:
        raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
    batch = query.shape[1] if query.ndim == 3 else 1
    for name, t in (("static_k", static_k), ("static_v", static_v)):
        if t is not None:
            if t.shape[0] != batch * num_heads:
                raise AssertionError(f"expecting {name}.size(0) of {batch * num_heads}, but got "
                                     f"{t.shape[0]}")
            if t.shape[2] != head_dim:
                raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got "
                                     f"{t.shape[2]}")
    shell = MultiheadAttention.__new__(MultiheadAttention)
    Module.__init__(shell)
    fields = {
        "embed_dim": embed_dim, "num_heads": num_heads, "head_dim": head_dim,
        "kdim": k_proj_weight.shape[1] if use_separate_proj_weight else embed_dim,
        "vdim": v_proj_weight.shape[1] if use_separate_proj_weight else embed_dim,
        "_qkv_same_embed_dim": not use_separate_proj_weight, "batch_first": False,
        "dropout": dropout_p, "training": training, "add_zero_attn": add_zero_attn,
        "in_proj_weight": in_proj_weight, "in_proj_bias": in_proj_bias,
        "q_proj_weight": q_proj_weight, "k_proj_weight": k_proj_weight,
        "v_proj_weight": v_proj_weight, "bias_k": bias_k, "bias_v": bias_v,
        "out_proj": lambda x: C.linear(x, out_proj_weight, out_proj_bias),
    }
    for name, value_ in fields.items():
        object.__setattr__(shell, name, value_)
    return shell._forward(query, key, value, key_padding_mask, need_weights, attn_mask,
                          average_attn_weights, is_causal, (static_k, static_v))


class SDPBackend(enum.IntEnum):
    """PyTorch's scaled_dot_product_attention backends."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


@contextlib.contextmanager
def sdpa_kernel(backends: Any, set_priority: bool = False) -> Iterator[dict[str, Any]]:
    """Within it, scaled_dot_product_attention may use ``backends`` only (PyTorch's): the
    computation here is the math one, which also stands for the CPU flash kernel, so with
    neither of those allowed (or flash alone where PyTorch's does not take the inputs) sdpa
    raises PyTorch's error. ``set_priority`` orders backends, which changes nothing here."""
    from runtime.ops import attention as ops

    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend "
                             f"instances, got {type(backends).__name__}")
    chosen = [backends] if isinstance(backends, SDPBackend) else backends
    previous = ops.enabled_backends
    ops.enabled_backends = frozenset(int(b) for b in chosen)
    try:
        yield {}
    finally:
        ops.enabled_backends = previous

