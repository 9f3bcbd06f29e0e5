"""Bad input to issue 11's layers against PyTorch 2.13: wrong ranks, channels, dtypes,
strides, paddings and groups of convolutions, embedding indices out of range or of the
wrong dtype, attention masks, heads and key/value widths of the wrong shape, norms, pools
and reshaping layers given the wrong sizes, constructor arguments torch refuses: the same
exception type and text (or the same result shape where torch accepts)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _outcome(lib: Any, code: str) -> str:
    scope = {"lib": lib, "F": lib.nn.functional, "nn": lib.nn}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(code, scope)  # noqa: S102 - the table below
    except Exception as e:  # noqa: BLE001 - the texts are compared
        name = "RuntimeError" if type(e).__name__ == "ShapeError" else type(e).__name__
        return f"{name}: {e}".replace("torch", "X").replace("runtime", "X")
    r = scope.get("r")
    return "OK " + (str(tuple(r.shape)) if hasattr(r, "shape") else repr(r)).replace(
        "torch", "X").replace("runtime", "X")


CODES = [
    "r = F.conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 2, 3, 3))",
    "r = F.conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 3, 3))",
    "r = F.conv2d(lib.ones(3, 5), lib.ones(4, 3, 3, 3))",
    "r = F.conv2d(lib.ones(1, 1, 3, 5, 5), lib.ones(4, 3, 3, 3))",
    "r = F.conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 3, 3, 3), lib.ones(3))",
    "r = F.conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 3, 3, 3), stride=0)",
    "r = F.conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 3, 3, 3), padding=-1)",
    "r = F.conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 3, 3, 3), padding='foo')",
    "r = F.conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 3, 3, 3), padding='same', stride=2)",
    "r = F.conv2d(lib.ones(1, 3, 2, 2), lib.ones(4, 3, 3, 3))",
    "r = F.conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 3, 3, 3), groups=2)",
    "r = F.conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 3, 3, 3), groups=0)",
    "r = F.conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 3, 3, 3).double())",
    "r = F.conv2d(lib.ones(1, 3, 5, 5, dtype=lib.int64), lib.ones(4, 3, 3, 3, dtype=lib.int64))",
    "r = F.conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 3, 3, 3), dilation=0)",
    "r = F.conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 3, 3, 3), stride=(1, 2, 3))",
    "r = F.conv1d(lib.ones(1, 3, 5), lib.ones(4, 2, 3))",
    "r = F.conv1d(lib.ones(1, 3, 5), lib.ones(4, 3, 3, 3))",
    "r = F.conv1d(lib.ones(5), lib.ones(4, 3, 3))",
    "r = F.conv1d(lib.ones(1, 3, 2), lib.ones(4, 3, 3))",
    "r = nn.Conv2d(3, 4, 3)(lib.ones(1, 2, 5, 5))",
    "r = nn.Conv2d(3, 4, 3, groups=2)",
    "r = nn.Conv2d(4, 4, 3, padding='same', stride=2)",
    "r = nn.Conv1d(3, 4, 3, padding_mode='reflect', padding=5)(lib.ones(1, 3, 4))",
    "r = nn.Conv2d(3, 4, 0)",
    "r = F.embedding(lib.tensor([1, 5]), lib.ones(5, 2))",
    "r = F.embedding(lib.tensor([-1]), lib.ones(5, 2))",
    "r = F.embedding(lib.tensor([1.0]), lib.ones(5, 2))",
    "r = F.embedding(lib.tensor([1]), lib.ones(5))",
    "r = F.embedding(lib.tensor([1], dtype=lib.int32), lib.ones(5, 2))",
    "r = F.embedding(lib.tensor([1]), lib.ones(5, 2), padding_idx=5)",
    "r = nn.Embedding(5, 2, padding_idx=-6)",
    "r = nn.Embedding(5, 2)(lib.tensor([[1, 7]]))",
    "r = nn.Embedding.from_pretrained(lib.ones(5, 2))(lib.tensor([1]))",
    "r = nn.Embedding.from_pretrained(lib.ones(5))",
    "e = nn.Embedding.from_pretrained(lib.ones(5, 2), freeze=False, padding_idx=1, max_norm=0.5); r = (e.weight.requires_grad, e.padding_idx, e.max_norm, e(lib.tensor([0])).tolist())",
    "e = nn.Embedding.from_pretrained(lib.ones(5, 2)); r = e.weight.requires_grad",
    "r = nn.Embedding(5, 2, _weight=lib.ones(4, 2))",
    "r = nn.Embedding(5, 2, _weight=lib.ones(5, 2)).weight.sum()",
    "r = nn.Embedding(5, 2, sparse=True)",
    "r = repr(nn.Embedding(5, 2, padding_idx=1, max_norm=1.0, scale_grad_by_freq=True))",
    "r = F.scaled_dot_product_attention(lib.ones(2, 3, 4), lib.ones(3, 3, 4), lib.ones(3, 3, 4))",
    "r = F.scaled_dot_product_attention(lib.ones(2, 3, 4), lib.ones(2, 3, 4), lib.ones(2, 5, 4))",
    "r = F.scaled_dot_product_attention(lib.ones(2, 3, 4), lib.ones(2, 3, 4), lib.ones(2, 3, 4), attn_mask=lib.ones(4, 3))",
    "r = F.scaled_dot_product_attention(lib.ones(2, 3, 4), lib.ones(2, 3, 4), lib.ones(2, 3, 4), attn_mask=lib.ones(3, 3, dtype=lib.int64))",
    "r = F.scaled_dot_product_attention(lib.ones(4), lib.ones(2, 3, 4), lib.ones(2, 3, 4))",
    "r = F.scaled_dot_product_attention(lib.ones(2, 3, 4), lib.ones(2, 3, 4), lib.ones(2, 3, 4), dropout_p=1.5)",
    "r = F.scaled_dot_product_attention(lib.ones(2, 3, 4), lib.ones(2, 3, 4), lib.ones(2, 3, 4), is_causal=True, attn_mask=lib.ones(3, 3) > 0)",
    "r = F.scaled_dot_product_attention(lib.ones(1, 2, 3, 4), lib.ones(1, 2, 3, 4), lib.ones(1, 2, 3, 4), is_causal=True, attn_mask=lib.ones(3, 3) > 0)",
    "r = F.scaled_dot_product_attention(lib.ones(1, 4, 3, 4), lib.ones(1, 3, 3, 4), lib.ones(1, 3, 3, 4), enable_gqa=True)",
    "r = F.scaled_dot_product_attention(lib.ones(1, 4, 3, 4), lib.ones(1, 2, 3, 4), lib.ones(1, 2, 3, 4))",
    "r = nn.MultiheadAttention(4, 3)",
    "r = nn.MultiheadAttention(4, 2)(lib.ones(3, 1, 4), lib.ones(2, 1, 4), lib.ones(2, 1, 4), attn_mask=lib.ones(3, 2, dtype=lib.int64))",
    "r = nn.MultiheadAttention(4, 2)(lib.ones(3, 1, 4), lib.ones(2, 1, 4), lib.ones(2, 1, 4), is_causal=True)",
    "r = nn.MultiheadAttention(4, 2)(lib.ones(3, 1, 4), lib.ones(2, 1, 4), lib.ones(2, 1, 4), key_padding_mask=lib.ones(1, 2, 1))",
    "r = nn.MultiheadAttention(4, 2)(lib.ones(3, 1, 4), lib.ones(2, 1, 4), lib.ones(2, 1, 4), attn_mask=lib.ones(1, 1, 3, 2))",
    "r = nn.MultiheadAttention(4, 2, kdim=3)(lib.ones(3, 1, 4), lib.ones(2, 1, 4), lib.ones(2, 1, 4))",
    "r = nn.MultiheadAttention(4, 2)(lib.ones(3, 1, 4), lib.ones(2, 4), lib.ones(2, 4))",
    "r = nn.MultiheadAttention(4, 2)(lib.ones(3, 1, 4, 1), lib.ones(2, 4), lib.ones(2, 4))",
    "r = nn.MultiheadAttention(4, 2, dropout=1.5)",
    "r = nn.MultiheadAttention(0, 1)",
    "r = nn.MultiheadAttention(4, 0)",
    "m = nn.MultiheadAttention(4, 2); r = sorted(m.state_dict())",
    "m = nn.MultiheadAttention(4, 2, kdim=3, vdim=5, add_bias_kv=True, bias=False); r = sorted((k, tuple(v.shape)) for k, v in m.state_dict().items())",
    "m = nn.MultiheadAttention(4, 2, batch_first=True); r = repr(m)",
    "r = nn.BatchNorm2d(3)(lib.ones(2, 4, 2, 2))",
    "r = nn.BatchNorm1d(3)(lib.ones(2, 3, 2, 2))",
    "r = nn.BatchNorm2d(3)(lib.ones(2, 3))",
    "r = nn.BatchNorm1d(3)(lib.ones(1, 3))",
    "r = nn.LayerNorm(4)(lib.ones(2, 3))",
    "r = nn.RMSNorm(4)(lib.ones(2, 3))",
    "r = nn.RMSNorm([2, 4])(lib.ones(3, 4))",
    "r = nn.MaxPool2d(3)(lib.ones(1, 1, 2, 2))",
    "r = nn.AvgPool2d(3)(lib.ones(1, 1, 2, 2))",
    "r = nn.AdaptiveAvgPool2d((2, 3, 4))(lib.ones(1, 1, 2, 2))",
    "r = nn.AdaptiveAvgPool2d(0)(lib.ones(1, 1, 2, 2))",
    "r = nn.AdaptiveAvgPool2d(2)(lib.ones(2, 2))",
    "r = nn.MaxPool2d(2)(lib.ones(2, 2))",
    "r = nn.Flatten()(lib.ones(2))",
    "r = nn.Flatten(2, 1)(lib.ones(2, 3, 4))",
    "r = nn.Unflatten(1, (2, 2))(lib.ones(2, 3))",
    "r = nn.Unflatten('a', (('x', 2),))",
    "r = F.pad(lib.ones(2, 3), (1, 1), mode='reflect', value=1.0)",
    "r = nn.Softplus(beta=0)(lib.ones(2))",
    "r = nn.LeakyReLU(-1.0)(lib.ones(2))",
    "r = F.silu(lib.ones(2, dtype=lib.int64))",
    "r = F.leaky_relu(lib.ones(2, dtype=lib.int64))",
    "r = F.softplus(lib.ones(2, dtype=lib.int64))",
]


@pytest.mark.parametrize("code", CODES)
def test_bad_input_matches_torch(code: str) -> None:
    assert _outcome(rt, code) == _outcome(torch, code)


@pytest.mark.parametrize("code", ["r = nn.Conv2d(4, 4, 3, groups=2, padding_mode='foo')",
                                  "r = nn.Conv2d(4, 4, 3, padding='bar')"])
def test_conv_argument_texts_name_torchs_sets(code: str) -> None:
    # torch's texts print a set, whose order follows the hashes of the process that
    # compiled the module: the members and the words around them are compared
    import ast
    import re

    texts = [_outcome(lib, code) for lib in (torch, rt)]
    parts = [re.fullmatch(r"(.*)(\{.*\})(.*)", t) for t in texts]
    assert all(parts), texts
    assert parts[1].group(1, 3) == parts[0].group(1, 3)
    assert ast.literal_eval(parts[1].group(2)) == ast.literal_eval(parts[0].group(2))
