"""Module API and layer reprs against PyTorch 2.13: repr(module) for every layer class with
non-default arguments, the container reprs, state_dict's positional arguments, Module.type,
Module.__init__'s arguments (call_super_init) and PyTorch's class flags."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

# constructor calls evaluated in both libraries (T is the library, nn its nn)
LAYERS = """
AdaptiveAvgPool1d(3)|AdaptiveAvgPool2d((3, None))|AdaptiveAvgPool3d(2)
AdaptiveMaxPool1d(3, return_indices=True)|AdaptiveMaxPool2d((2, 3))|AdaptiveMaxPool3d(2)
AlphaDropout(0.2, inplace=True)|AvgPool1d(3, 2, 1, ceil_mode=True, count_include_pad=False)
AvgPool2d(3, stride=1, padding=1, divisor_override=2)|AvgPool3d(2)
BCELoss(weight=T.ones(2), reduction='sum')|BCEWithLogitsLoss(pos_weight=T.ones(2))
BatchNorm1d(4, eps=1e-3, momentum=None, affine=False, track_running_stats=False)
BatchNorm2d(4, momentum=0.2)|BatchNorm3d(4)|Bilinear(2, 3, 4, bias=False)|CELU(0.5, inplace=True)
CTCLoss(blank=1, zero_infinity=True)|ChannelShuffle(2)|CircularPad1d(2)|CircularPad2d((1, 2, 3, 4))
CircularPad3d(1)|ConstantPad1d(2, 3.5)|ConstantPad2d((1, 2, 3, 4), 0)|ConstantPad3d(1, -1.0)
Conv1d(2, 4, 3, stride=2, padding=1, dilation=2, groups=2, bias=False, padding_mode='reflect')
Conv2d(2, 4, (3, 2), padding='same')|Conv2d(2, 4, 3, padding='valid', padding_mode='circular')
Conv3d(2, 4, 1)|ConvTranspose2d(2, 4, 3)|ConvTranspose3d(2, 4, (1, 2, 3), stride=(1, 2, 1))
ConvTranspose1d(2, 4, 3, stride=2, padding=1, output_padding=1, groups=2, bias=False, dilation=2)
CosineEmbeddingLoss(margin=0.5, reduction='none')|CosineSimilarity(dim=0, eps=1e-6)
CrossEntropyLoss(ignore_index=3, label_smoothing=0.1, reduction='sum')|Dropout(0.3)
Dropout(0.3, inplace=True)|Dropout1d()|Dropout2d(0.1)|Dropout3d(inplace=True)|ELU(alpha=0.5)
ELU(inplace=True)|Embedding(10, 3)|EmbeddingBag(10, 3, mode='sum', padding_idx=2)
Embedding(10, 3, padding_idx=0, max_norm=1.0, norm_type=3.0, scale_grad_by_freq=True, sparse=True)
EmbeddingBag(10, 3, max_norm=2.0, include_last_offset=True)|FeatureAlphaDropout(0.1)
Flatten(0, 2)|Flatten()|Fold((4, 5), (2, 2), dilation=1, padding=1, stride=2)
GELU(approximate='tanh')|GELU()|GLU(0)|GRU(3, 4)|GRUCell(3, 4, bias=False)
GRU(3, 4, num_layers=2, bias=False, batch_first=True, dropout=0.1, bidirectional=True)
GaussianNLLLoss(full=True, eps=1e-3)|GroupNorm(2, 4, eps=1e-3, affine=False)|Hardshrink(0.3)
Hardsigmoid(inplace=True)|Hardswish(inplace=True)|Hardtanh(-2.0, 2.0, inplace=True)
HingeEmbeddingLoss(margin=2.0)|HuberLoss(delta=0.5)|Identity(54, unused='x')
InstanceNorm1d(4, affine=True)|InstanceNorm2d(4, track_running_stats=True, momentum=None)
InstanceNorm3d(4)|KLDivLoss(reduction='batchmean', log_target=True)|L1Loss(reduction='none')
LPPool1d(2, 3, stride=2, ceil_mode=True)|LPPool2d(1.5, (2, 3))|LPPool3d(2, 2)
LSTM(3, 4, proj_size=2)|LSTM(3, 4, num_layers=2, batch_first=True)|LSTMCell(3, 4)
LayerNorm((3, 4), eps=1e-6, elementwise_affine=False)|LayerNorm(4, bias=False)
LazyBatchNorm1d()|LazyConv2d(4, 3)|LazyLinear(4, bias=False)|LeakyReLU(0.2, inplace=True)
LeakyReLU()|Linear(2, 3, bias=False)|LocalResponseNorm(3, alpha=1e-3, beta=0.5, k=2.0)
LogSigmoid()|LogSoftmax(dim=1)|LogSoftmax()|MSELoss(reduction='sum')|MarginRankingLoss(margin=0.3)
MaxPool1d(3, 2, 1, dilation=2, return_indices=True, ceil_mode=True)|MaxPool2d(2)
MaxPool3d((1, 2, 2))|MaxUnpool1d(2)|MaxUnpool2d(3, stride=2, padding=1)|MaxUnpool3d(2)
Mish(inplace=True)|MultiLabelMarginLoss()|MultiLabelSoftMarginLoss(weight=T.ones(3))
MultiMarginLoss(p=2, margin=0.5)|MultiheadAttention(8, 2)
MultiheadAttention(8, 2, 0.1, False, True, True, kdim=4, vdim=6, batch_first=True)
NLLLoss(ignore_index=1)|PReLU(3, init=0.1)|PReLU()|PairwiseDistance(p=1.0, eps=1e-3, keepdim=True)
PixelShuffle(2)|PixelUnshuffle(3)|PoissonNLLLoss(log_input=False, full=True)
RMSNorm((3, 4), eps=1e-5, elementwise_affine=False)|RMSNorm(4)
RNN(3, 4, nonlinearity='relu', bias=False)|RNN(3, 4, num_layers=3, dropout=0.5)
RNNCell(3, 4, nonlinearity='relu')|RReLU(0.1, 0.2, inplace=True)|RReLU()|ReLU(inplace=True)
ReLU6(inplace=True)|ReflectionPad1d(2)|ReflectionPad2d((1, 0, 2, 0))|ReflectionPad3d(1)
ReplicationPad1d((1, 2))|ReplicationPad2d(1)|ReplicationPad3d(1)|SELU(inplace=True)
SiLU(inplace=True)|Sigmoid()|SmoothL1Loss(beta=0.5)|SoftMarginLoss()|Softmax(dim=-1)|Softmax()
Softmax2d()|Softmin(1)|Softplus(beta=2.0, threshold=10.0)|Softshrink(0.3)|Softsign()|Tanh()
Tanhshrink()|Threshold(0.1, 20.0, inplace=True)
TripletMarginLoss(margin=2.0, p=1.0, eps=1e-3, swap=True)
TripletMarginWithDistanceLoss(margin=0.5, swap=True)|Unflatten(1, (2, 3))
Unfold((2, 3), dilation=2, padding=1, stride=(1, 2))
Upsample(scale_factor=2.0, mode='bilinear', align_corners=True)|Upsample(size=(3, 4))
Upsample(scale_factor=2)|UpsamplingBilinear2d(scale_factor=2)|UpsamplingNearest2d(size=4)
ZeroPad1d(2)|ZeroPad2d((1, 2, 0, 3))|ZeroPad3d(1)|Sequential(Linear(2, 3), ReLU())
ModuleList([ReLU(), ReLU(), ReLU(), Linear(1, 1)])|ModuleDict({'a': ReLU()})
ParameterList([nn.Parameter(T.ones(2)), nn.Parameter(T.ones(2, 3, dtype=T.float64))])
ParameterList([T.ones(2), 3])
ParameterDict({'w': nn.Parameter(T.ones(2)), 'b': T.ones(2, dtype=T.float64)})
TransformerEncoderLayer(8, 2, 16, 0.0, 'gelu', batch_first=True, norm_first=True, bias=False)
TransformerDecoderLayer(8, 2, dim_feedforward=16)
TransformerEncoder(TransformerEncoderLayer(8, 2, 16), 2, enable_nested_tensor=False)
TransformerDecoder(TransformerDecoderLayer(8, 2, dim_feedforward=16), 1, norm=LayerNorm(8))
Transformer(8, 2, 1, 1, 16)
Embedding.from_pretrained(T.ones(3, 2), True, 1, 2.0, 3.0, True, True)
EmbeddingBag.from_pretrained(T.ones(3, 2), mode='max', padding_idx=0)
"""
CALLS = [call for line in LAYERS.strip().splitlines() for call in line.split("|")]


def build(lib: Any, call: str) -> Any:
    scope: dict[str, Any] = {name: getattr(lib.nn, name) for name in dir(lib.nn)}
    scope.update(T=lib, nn=lib.nn)
    lib.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return eval(call, scope)  # noqa: S307 - the table above


@pytest.mark.parametrize("call", CALLS)
def test_layer_repr(call: str) -> None:
    assert repr(build(rt, call)) == repr(build(torch, call)).replace("torch", "runtime")


def test_state_dict_positional_arguments_warn() -> None:
    lin = rt.nn.Linear(2, 3)
    dest: dict[str, Any] = {}
    with pytest.warns(FutureWarning, match="^Positional args are being deprecated, use kwargs "
                      "instead. Refer to https://pytorch.org/docs/main/generated/torch.nn."
                      "Module.html#torch.nn.Module.state_dict for details.$"):
        out = lin.state_dict(dest, "p.", True)
    assert out is dest and list(dest) == ["p.weight", "p.bias"]
    assert dest["p.weight"] is lin.weight  # keep_vars


def test_module_type() -> None:
    lin = rt.nn.Linear(2, 3)
    assert lin.type(rt.float64) is lin and lin.weight.dtype is rt.float64
    lin.type("runtime.FloatTensor")
    assert lin.bias.dtype is rt.float32


def test_module_to_empty() -> None:
    for lib in (rt, torch):
        model = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3))
        weight = model[0].weight
        assert model.to_empty(device="cpu") is model and model[0].weight is weight
        assert tuple(model[0].weight.shape) == (3, 2) and model[1].running_mean.shape[0] == 3
        assert model[0].weight.requires_grad
        top = lib.nn.Linear(2, 2)
        top.inner = lib.nn.Linear(2, 2)
        inner = top.inner.weight.detach().clone()
        top.to_empty(device="cpu", recurse=False)
        assert bool((top.inner.weight == inner).all())
    with pytest.raises(TypeError):
        rt.nn.Linear(1, 1).to_empty("cpu")  # type: ignore[misc]


def test_module_bfloat16() -> None:
    bn = rt.nn.BatchNorm1d(2)
    assert bn.bfloat16() is bn and bn.weight.dtype is rt.bfloat16
    assert bn.running_mean.dtype is rt.bfloat16 and bn.num_batches_tracked.dtype is rt.int64


def test_module_init_arguments() -> None:
    with pytest.raises(TypeError, match=r"^Module.__init__\(\) got an unexpected keyword "
                                        "argument 'x'$"):
        rt.nn.Module(x=1)
    with pytest.raises(TypeError, match=r"^Module.__init__\(\) takes 1 positional argument but "
                                        "3 were given$"):
        rt.nn.Module(1, 2)

    class Mixin:
        def __init__(self, tag: str) -> None:
            self.tag = tag

    class Tagged(rt.nn.Module, Mixin):
        call_super_init = True

    assert Tagged(tag="t").tag == "t"
    assert rt.nn.Module.call_super_init is False and rt.nn.Module.dump_patches is False
    assert hasattr(rt.nn.Module, "T_destination")


def test_modules_remove_duplicate() -> None:
    for lib in (rt, torch):
        shared = lib.nn.ReLU()
        seq = lib.nn.Sequential(shared, shared)
        assert [type(m).__name__ for m in seq.modules(remove_duplicate=False)] == [
            "Sequential", "ReLU", "ReLU"]
        assert len(list(seq.modules())) == 2


def global_hooks_log(lib: Any) -> list[Any]:
    """What module-wide hooks (nn.modules.module.register_module_*_hook) see, and the
    outputs they shape, in one library."""
    hooks = lib.nn.modules.module
    log: list[Any] = []
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(2, 2, dtype=lib.float64), lib.nn.ReLU())
    with lib.no_grad():
        model[0].weight.copy_(lib.tensor([[1.0, 2.0], [3.0, -4.0]], dtype=lib.float64))
        model[0].bias.zero_()
    x = lib.tensor([[1.0, 1.0]], dtype=lib.float64, requires_grad=True)
    handles = [
        hooks.register_module_forward_pre_hook(lambda m, a: log.append(("pre", type(m).__name__))),
        hooks.register_module_forward_hook(lambda m, a, o: log.append(("post", type(m).__name__))),
        model[0].register_forward_pre_hook(lambda m, a: log.append(("own pre", type(m).__name__))),
        hooks.register_module_forward_hook(lambda m, a, kw, o: log.append(("kw", sorted(kw))),
                                           with_kwargs=True)]
    model(x)
    for handle in handles:
        handle.remove()
    model(x)
    log.append("removed")
    handles = [
        hooks.register_module_full_backward_hook(
            lambda m, gi, go: log.append(("bw", type(m).__name__, gi[0].tolist()))),
        hooks.register_module_full_backward_pre_hook(
            lambda m, go: log.append(("bw pre", type(m).__name__)))]
    model(x).sum().backward()
    for handle in handles:
        handle.remove()

    class Failing(lib.nn.Module):
        def forward(self, x: Any) -> Any:
            raise ValueError("forward")

    handle = hooks.register_module_forward_hook(lambda m, a, o: log.append(("always", o)),
                                                always_call=True)
    with pytest.raises(ValueError, match="forward"):
        Failing()(x)
    handle.remove()
    handle = hooks.register_module_forward_pre_hook(lambda m, a: (a[0] * 2,))
    log.append(model(x).tolist())
    handle.remove()
    log.append(model(x).tolist())
    return log


def test_global_module_hooks(monkeypatch: pytest.MonkeyPatch) -> None:
    # which kind of module-wide backward hook came first stays after its handle is removed
    # (torch's too): put it back after this test's full hooks, so that later tests may
    # register the older kind (test_ported_nn_h17's global hook tests)
    for lib in (rt, torch):
        monkeypatch.setattr(lib.nn.modules.module, "_global_is_full_backward_hook", None)
    assert global_hooks_log(rt) == global_hooks_log(torch)


def test_global_hook_recaptures_a_compiled_step() -> None:
    import planner

    rt.manual_seed(0)
    lin = rt.nn.Linear(3, 2)
    x = rt.ones(4, 3)

    def step(x: Any) -> Any:
        lin.zero_grad()
        loss = lin(x).sum()
        loss.backward()
        return loss.detach()

    compiled = planner.compile(step)
    plain = float(compiled(x))
    handle = rt.nn.modules.module.register_module_forward_hook(lambda m, a, out: out * 2)
    try:
        assert float(compiled(x)) == pytest.approx(2 * plain)  # not the plan captured before
        assert lin.weight.grad is not None
        np.testing.assert_allclose(lin.weight.grad.numpy(), np.full((2, 3), 8.0))
    finally:
        handle.remove()
    assert float(compiled(x)) == pytest.approx(plain)
