"""The backward node of common ops carries PyTorch's name: ``type(y.grad_fn).__name__``,
``y.grad_fn.name()`` and its repr, as scripts and tools that walk the graph read them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.ops.registry import REGISTRY

F_ = "nn.functional"
A = np.arange(12.0).reshape(3, 4) / 7 - 0.8
B = np.arange(20.0).reshape(4, 5) / 9 - 1.0


def _f(m: Any) -> Any:
    return m.nn.functional


# (label, op on (module, x (3, 4), y (4, 5)), PyTorch 2.13's node name)
CASES: list[tuple[str, Callable[..., Any], str]] = [
    ("sigmoid", lambda m, x, y: x.sigmoid(), "SigmoidBackward0"),
    ("relu", lambda m, x, y: _f(m).relu(x), "ReluBackward0"),
    ("gelu", lambda m, x, y: _f(m).gelu(x), "GeluBackward0"),
    ("silu", lambda m, x, y: _f(m).silu(x), "SiluBackward0"),
    ("leaky_relu", lambda m, x, y: _f(m).leaky_relu(x), "LeakyReluBackward0"),
    ("elu", lambda m, x, y: _f(m).elu(x), "EluBackward0"),
    ("hardtanh", lambda m, x, y: _f(m).hardtanh(x), "HardtanhBackward0"),
    ("softplus", lambda m, x, y: _f(m).softplus(x), "SoftplusBackward0"),
    ("softmax", lambda m, x, y: x.softmax(-1), "SoftmaxBackward0"),
    ("log_softmax", lambda m, x, y: _f(m).log_softmax(x, dim=1), "LogSoftmaxBackward0"),
    ("log1p", lambda m, x, y: x.abs().log1p(), "Log1PBackward0"),
    ("expm1", lambda m, x, y: x.expm1(), "Expm1Backward0"),
    ("rsqrt", lambda m, x, y: x.abs().rsqrt(), "RsqrtBackward0"),
    ("pow_tensor", lambda m, x, y: x.abs() ** x, "PowBackward1"),
    ("rpow", lambda m, x, y: 2 ** x, "PowBackward2"),
    ("square", lambda m, x, y: x.square(), "PowBackward0"),
    ("sum_dim", lambda m, x, y: x.sum(1), "SumBackward1"),
    ("mean", lambda m, x, y: x.mean(), "MeanBackward0"),
    ("mean_dim", lambda m, x, y: x.mean(-1), "MeanBackward1"),
    ("max", lambda m, x, y: x.max(), "MaxBackward1"),
    ("max_dim", lambda m, x, y: x.max(1)[0], "MaxBackward0"),
    ("min_dim", lambda m, x, y: x.min(1).values, "MinBackward0"),
    ("prod", lambda m, x, y: x.prod(), "ProdBackward0"),
    ("var", lambda m, x, y: x.var(1), "VarBackward0"),
    ("std", lambda m, x, y: x.std(), "StdBackward0"),
    ("norm", lambda m, x, y: x.norm(), "LinalgVectorNormBackward0"),
    ("logsumexp", lambda m, x, y: x.logsumexp(1), "LogsumexpBackward0"),
    ("clamp", lambda m, x, y: x.clamp(-0.5, 0.5), "ClampBackward1"),
    ("masked_fill", lambda m, x, y: x.masked_fill(x > 0, 0.0), "MaskedFillBackward0"),
    ("view", lambda m, x, y: x.view(12), "ViewBackward0"),
    ("reshape", lambda m, x, y: x.reshape(2, 6), "ViewBackward0"),
    ("flatten", lambda m, x, y: x.flatten(), "ViewBackward0"),
    ("transpose", lambda m, x, y: x.transpose(0, 1), "TransposeBackward0"),
    ("t", lambda m, x, y: x.t(), "TBackward0"),
    ("permute", lambda m, x, y: x.permute(1, 0), "PermuteBackward0"),
    ("unsqueeze", lambda m, x, y: x.unsqueeze(0), "UnsqueezeBackward0"),
    ("squeeze", lambda m, x, y: x[None].squeeze(), "SqueezeBackward0"),
    ("squeeze_dim", lambda m, x, y: x[None].squeeze(0), "SqueezeBackward1"),
    ("squeeze_dims", lambda m, x, y: x[None].squeeze((0, 1)), "SqueezeBackward2"),
    ("expand", lambda m, x, y: x[:1].expand(3, 4), "ExpandBackward0"),
    ("to_float32", lambda m, x, y: x.to(m.float32), "ToCopyBackward0"),
    ("clone", lambda m, x, y: x.clone(), "CloneBackward0"),
    ("select", lambda m, x, y: x[0], "SelectBackward0"),
    ("slice", lambda m, x, y: x[:, 1:3], "SliceBackward0"),
    ("select_after_slice", lambda m, x, y: x[1:, 0], "SelectBackward0"),
    ("select_full_slice", lambda m, x, y: x[0, :], "SelectBackward0"),
    ("none_index", lambda m, x, y: x[0, None], "UnsqueezeBackward0"),
    ("ellipsis", lambda m, x, y: x[...], "AliasBackward0"),
    ("advanced", lambda m, x, y: x[m.tensor([0, 2])], "IndexBackward0"),
    ("mask", lambda m, x, y: x[x > 0], "IndexBackward0"),
    ("index_select", lambda m, x, y: x.index_select(0, m.tensor([0, 2])), "IndexSelectBackward0"),
    ("gather", lambda m, x, y: x.gather(1, m.tensor([[0], [1], [2]])), "GatherBackward0"),
    ("chunk", lambda m, x, y: x.chunk(2, 1)[0], "SplitBackward0"),
    ("split_sizes", lambda m, x, y: x.split([1, 3], 1)[1], "SplitWithSizesBackward0"),
    ("unbind", lambda m, x, y: x.unbind(0)[1], "UnbindBackward0"),
    ("cat", lambda m, x, y: m.cat([x, x]), "CatBackward0"),
    ("stack", lambda m, x, y: m.stack([x, x]), "StackBackward0"),
    ("tril", lambda m, x, y: x.tril(), "TrilBackward0"),
    ("triu", lambda m, x, y: x.triu(1), "TriuBackward0"),
    ("diagonal", lambda m, x, y: x.diagonal(), "DiagonalBackward0"),
    ("diag_embed", lambda m, x, y: x[0].diag(), "DiagEmbedBackward0"),
    ("matmul_2d", lambda m, x, y: x @ y, "MmBackward0"),
    ("matmul_dot", lambda m, x, y: x[0] @ x[1], "DotBackward0"),
    ("matmul_mv", lambda m, x, y: x @ y[:, 0], "MvBackward0"),
    ("matmul_3d", lambda m, x, y: x[None] @ y[None], "UnsafeViewBackward0"),
    ("mm", lambda m, x, y: m.mm(x, y), "MmBackward0"),
    ("bmm", lambda m, x, y: m.bmm(x[None], y[None]), "BmmBackward0"),
    ("addmm", lambda m, x, y: m.addmm(y[0], x, y), "AddmmBackward0"),
    ("linear", lambda m, x, y: _f(m).linear(x, y.t(), y[0]), "AddmmBackward0"),
    ("linear_no_bias", lambda m, x, y: _f(m).linear(x, y.t()), "MmBackward0"),
    ("linear_3d", lambda m, x, y: _f(m).linear(x[None], y.t(), y[0]), "ViewBackward0"),
    ("layer_norm", lambda m, x, y: _f(m).layer_norm(x, (4,)), "NativeLayerNormBackward0"),
    ("embedding", lambda m, x, y: _f(m).embedding(m.tensor([0, 2]), x), "EmbeddingBackward0"),
    ("conv2d", lambda m, x, y: _f(m).conv2d(x[None, None], y[None, None, :2, :2]),
     "ConvolutionBackward0"),
    ("mse_loss", lambda m, x, y: _f(m).mse_loss(x, x.detach() * 0), "MseLossBackward0"),
    ("cross_entropy", lambda m, x, y: _f(m).cross_entropy(x, m.tensor([0, 1, 2])),
     "NllLossBackward0"),
    ("bce_logits", lambda m, x, y: _f(m).binary_cross_entropy_with_logits(x, x.detach() * 0),
     "BinaryCrossEntropyWithLogitsBackward0"),
    ("lerp", lambda m, x, y: m.lerp(x, x * 2, 0.5), "LerpBackward0"),
    ("addcmul", lambda m, x, y: m.addcmul(x, x, x), "AddcmulBackward0"),
    ("sort", lambda m, x, y: x.sort(1)[0], "SortBackward0"),
    ("topk", lambda m, x, y: x.topk(2)[0], "TopkBackward0"),
    ("where", lambda m, x, y: m.where(x > 0, x, 0.0), "WhereBackward0"),
    ("mul_scalar", lambda m, x, y: x * 2, "MulBackward0"),
    ("sgn", lambda m, x, y: x.sgn(), "SgnBackward0"),
    ("amin", lambda m, x, y: x.amin(1), "AminBackward0"),
    ("cummax", lambda m, x, y: x.cummax(1)[0], "CummaxBackward0"),
    ("cummin", lambda m, x, y: x.cummin(0).values, "CumminBackward0"),
    ("pad_constant", lambda m, x, y: _f(m).pad(x, (1, 1)), "ConstantPadNdBackward0"),
    ("pad_reflect", lambda m, x, y: _f(m).pad(x[None], (1, 1), mode="reflect"),
     "ReflectionPad1DBackward0"),
    ("pad_replicate", lambda m, x, y: _f(m).pad(x[None, None], (1, 1, 1, 1), mode="replicate"),
     "ReplicationPad2DBackward0"),
    ("max_pool2d", lambda m, x, y: _f(m).max_pool2d(x[None, None], 2),
     "MaxPool2DWithIndicesBackward0"),
    ("avg_pool2d", lambda m, x, y: _f(m).avg_pool2d(x[None, None], 2), "AvgPool2DBackward0"),
    ("adaptive_avg_pool2d_1", lambda m, x, y: _f(m).adaptive_avg_pool2d(x[None, None], 1),
     "MeanBackward1"),
    ("adaptive_avg_pool2d_2", lambda m, x, y: _f(m).adaptive_avg_pool2d(x[None, None], 2),
     "AdaptiveAvgPool2DBackward0"),
    ("batch_norm", lambda m, x, y: _f(m).batch_norm(x, None, None, training=True),
     "NativeBatchNormBackward0"),
    # in place: the op's node, not the copy's
    ("relu_", lambda m, x, y: (x * 1).relu_(), "ReluBackward0"),
    ("sigmoid_", lambda m, x, y: (x * 1).sigmoid_(), "SigmoidBackward0"),
    ("silu_inplace", lambda m, x, y: _f(m).silu(x * 1, inplace=True), "SiluBackward0"),
    ("masked_fill_", lambda m, x, y: (x * 1).masked_fill_(x > 0, 0.0), "MaskedFillBackward0"),
    ("index_fill_", lambda m, x, y: (x * 1).index_fill_(0, m.tensor([1]), 2.0),
     "IndexFillBackward0"),
    ("lerp_", lambda m, x, y: (x * 1).lerp_(x.detach(), 0.3), "LerpBackward0"),
    ("lerp_high", lambda m, x, y: (x * 1).lerp_(x.detach(), 0.7), "LerpBackward0"),
    ("addcmul_", lambda m, x, y: (x * 1).addcmul_(x, x), "AddcmulBackward0"),
    ("dropout_inplace", lambda m, x, y: _f(m).dropout(x * 1, 0.5, inplace=True),
     "MulBackward0"),
    ("zero_", lambda m, x, y: (x * 1).zero_(), "ZeroBackward0"),
]


def _node(m: Any, op: Callable[..., Any]) -> Any:
    x = m.tensor(A, dtype=m.float64, requires_grad=True)
    y = m.tensor(B, dtype=m.float64, requires_grad=True)
    return op(m, x, y).grad_fn


@pytest.mark.parametrize("label,op,expected", CASES, ids=[c[0] for c in CASES])
def test_grad_fn_name(label: str, op: Callable[..., Any], expected: str) -> None:
    fn = _node(rt, op)
    assert type(fn).__name__ == expected
    assert fn.name() == expected
    assert repr(fn).startswith(f"<{expected} object at ")


@pytest.mark.parametrize("label,op,expected", CASES, ids=[c[0] for c in CASES])
def test_grad_fn_name_is_torchs(label: str, op: Callable[..., Any], expected: str) -> None:
    torch = pytest.importorskip("torch")
    assert _node(torch, op).name() == expected


def test_renamed_nodes_still_differentiate() -> None:
    """A renamed node is its primitive's node: the gradient is unchanged."""
    x = rt.tensor(A, requires_grad=True)
    (x.sigmoid() * x[0]).sum().backward()
    s = 1 / (1 + np.exp(-A))
    expected = s * (1 - s) * A[0] + np.eye(3, 1).repeat(4, 1) * s.sum(0)
    assert np.allclose(x.grad.numpy(), expected)


def test_a_composite_that_returns_its_input_keeps_its_node() -> None:
    x = rt.tensor(A, requires_grad=True) * 1.0
    assert x.t().t().grad_fn.name() == "TBackward0"
    assert x.grad_fn.name() == "MulBackward0"
    assert rt.nn.functional.dropout(x, 0.5, training=False).grad_fn.name() == "MulBackward0"


def test_registry_spelling_capitalizes_after_a_digit() -> None:
    assert REGISTRY["log1p"].backward_name == "Log1PBackward0"
    assert REGISTRY["log10"].backward_name == "Log10Backward0"
    assert REGISTRY["expm1"].backward_name == "Expm1Backward0"
    assert REGISTRY["atan2"].backward_name == "Atan2Backward0"


def test_a_view_rebuilt_after_its_base_was_written_is_as_strided() -> None:
    x = rt.ones(3, 4, requires_grad=True) * 1
    v = x[0]
    x.mul_(2)
    assert type(v.grad_fn).__name__ == v.grad_fn.name() == "AsStridedBackward0"
    v.sum().backward()

