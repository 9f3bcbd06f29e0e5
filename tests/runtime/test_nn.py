"""runtime.nn: module bookkeeping, layers and state dicts (structural), and parity with torch.nn."""

from __future__ import annotations

import copy
import math
from collections import OrderedDict
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime import nn
from runtime.nn import functional as F


def arr(t: Any) -> np.ndarray:
    """A numpy view of a runtime or torch tensor (detached first: numpy() refuses grad tensors)."""
    return t.detach().numpy()


def mlp(lib: ModuleType) -> object:
    """The same architecture built from runtime.nn or torch.nn."""
    return lib.Sequential(
        lib.Linear(8, 16),
        lib.ReLU(),
        lib.Linear(16, 16),
        lib.GELU(),
        lib.LayerNorm(16),
        lib.Linear(16, 8),
        lib.Tanh(),
        lib.Linear(8, 4),
        lib.Sigmoid(),
    )


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 3)
        self.norm = nn.LayerNorm(3)
        self.register_buffer("running", rt.zeros(3))
        self.register_buffer("scratch", rt.ones(2), persistent=False)
        self.scale = nn.Parameter(rt.ones(1))

    def forward(self, x: rt.Tensor) -> rt.Tensor:
        return self.norm(self.proj(x)) * self.scale + self.running


def to_torch(model: object, torch_model: object) -> None:
    """Copy runtime parameters/buffers into a torch model of the same architecture."""
    import torch

    sd = {k: torch.from_numpy(np.array(arr(v), copy=True)) for k, v in model.state_dict().items()}
    torch_model.load_state_dict(sd)


# ---- Parameter -----------------------------------------------------------------------------------


def test_parameter_is_leaf_tensor_requiring_grad() -> None:
    p = nn.Parameter(rt.tensor([1.0, 2.0]))
    assert isinstance(p, rt.Tensor)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    q = nn.Parameter(np.zeros((2, 3), dtype=np.float32), requires_grad=False)
    assert q.shape == (2, 3) and not q.requires_grad
    assert repr(p).startswith("Parameter containing:\n")


def test_parameter_shares_storage_with_source() -> None:
    t = rt.tensor([1.0, 2.0])
    p = nn.Parameter(t)
    with rt.no_grad():
        p.add_(1.0)
    np.testing.assert_array_equal(arr(t), [2.0, 3.0])


def test_parameter_gets_gradient() -> None:
    p = nn.Parameter(rt.tensor([1.0, 2.0, 3.0]))
    (p * p).sum().backward()
    np.testing.assert_allclose(arr(p.grad), [2.0, 4.0, 6.0])


# ---- Module bookkeeping --------------------------------------------------------------------------


def test_registration_and_named_parameters() -> None:
    b = Block()
    names = [n for n, _ in b.named_parameters()]
    assert names == ["scale", "proj.weight", "proj.bias", "norm.weight", "norm.bias"]
    assert [n for n, _ in b.named_buffers()] == ["running", "scratch"]
    assert [n for n, _ in b.named_children()] == ["proj", "norm"]
    assert [n for n, _ in b.named_modules()] == ["", "proj", "norm"]
    assert list(b.children()) == [b.proj, b.norm]
    assert len(list(b.modules())) == 3
    assert [n for n, _ in b.named_parameters(recurse=False)] == ["scale"]
    assert all(isinstance(p, nn.Parameter) for p in b.parameters())


def test_shared_parameters_are_deduplicated() -> None:
    lin = nn.Linear(3, 3)
    seq = nn.Sequential(lin, nn.ReLU(), lin)
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias"]
    assert len(list(seq.parameters())) == 2
    assert [n for n, _ in seq.named_modules()] == ["", "0", "1"]


def test_setattr_rules() -> None:
    b = Block()
    b.proj = nn.Linear(4, 3, bias=False)
    assert b.proj.bias is None
    assert [n for n, _ in b.proj.named_parameters()] == ["weight"]
    with pytest.raises(TypeError, match=r"^cannot assign 'runtime.FloatTensor' as parameter "
                       r"'scale' \(runtime.nn.Parameter or None expected\)$"):
        b.scale = rt.ones(1)
    b.running = rt.ones(3)
    assert "running" in b.state_dict()
    with pytest.raises(KeyError, match="attribute 'proj' already exists"):
        b.register_buffer("proj", rt.zeros(1))
    b.extra = 5
    assert b.extra == 5 and "extra" not in b.state_dict()
    del b.proj
    with pytest.raises(AttributeError, match="no attribute 'proj'"):
        _ = b.proj

    class Early(nn.Module):
        # PyTorch keeps a plain value (a tensor too) set before Module.__init__
        def __init__(self) -> None:
            self.x = 1
            self.t = rt.ones(1)
            super().__init__()
            self.lin = nn.Linear(1, 1)

    early = Early()
    assert early.x == 1 and "t" not in early.state_dict() and "lin.weight" in early.state_dict()
    for value, what in ((nn.Parameter(rt.ones(1)), "parameters"), (nn.Linear(1, 1), "module"),
                        (nn.Buffer(rt.ones(1)), "buffer")):

        class Bad(nn.Module):
            def __init__(self) -> None:
                self.x = value

        with pytest.raises(AttributeError, match=f"^cannot assign {what} before Module.__init__"
                                                 r"\(\) call$"):
            Bad()


def test_parameter_counts() -> None:
    assert sum(p.numel() for p in nn.Linear(8, 16).parameters()) == 8 * 16 + 16
    assert sum(p.numel() for p in nn.Linear(8, 16, bias=False).parameters()) == 8 * 16
    assert sum(p.numel() for p in nn.LayerNorm(16).parameters()) == 32
    assert sum(p.numel() for p in nn.LayerNorm((2, 3), elementwise_affine=False).parameters()) == 0
    expected = (8 * 16 + 16) + (16 * 16 + 16) + 32 + (16 * 8 + 8) + (8 * 4 + 4)
    assert sum(p.numel() for p in mlp(nn).parameters()) == expected


def test_train_eval_flags() -> None:
    model = mlp(nn)
    assert model.training and all(m.training for m in model.modules())
    assert model.eval() is model
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())
    model[0].train(False)
    assert model.training and not model[0].training


def test_dropout_follows_training_flag() -> None:
    rt.manual_seed(0)
    drop = nn.Dropout(0.5)
    x = rt.ones(200, 50)
    y = arr(drop(x))
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert 0.4 < (y == 0).mean() < 0.6
    drop.eval()
    np.testing.assert_array_equal(arr(drop(x)), arr(x))
    with pytest.raises(
        ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"
    ):
        nn.Dropout(1.5)


def test_zero_grad_set_to_none_or_zero() -> None:
    model = nn.Linear(3, 2)
    model(rt.ones(4, 3)).sum().backward()
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None for g in grads)
    model.zero_grad(set_to_none=False)
    for p, g in zip(model.parameters(), grads):
        assert p.grad is g
        np.testing.assert_array_equal(arr(p.grad), 0.0)
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    assert model.requires_grad_(False) is model
    assert not any(p.requires_grad for p in model.parameters())


def test_apply_visits_children_then_self() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
    seen: list[str] = []
    assert model.apply(lambda m: seen.append(type(m).__name__)) is model
    assert seen == ["Linear", "ReLU", "Sequential", "Sequential"]


def test_to_same_device_keeps_parameter_objects() -> None:
    model = nn.Linear(2, 2)
    params = list(model.parameters())
    assert model.to("cpu") is model
    assert all(a is b for a, b in zip(params, model.parameters()))


def test_to_dtype_casts_floating_parameters_in_place() -> None:
    model = Block()
    params = list(model.parameters())
    opt = rt.optim.SGD(model.parameters(), lr=0.1)
    model(rt.ones(2, 4)).sum().backward()
    assert model.double() is model
    assert all(a is b for a, b in zip(params, model.parameters()))  # same objects, like torch
    assert all(p.dtype == rt.float64 and p.grad.dtype == rt.float64 for p in model.parameters())
    opt.step()
    assert all(p.dtype == rt.float64 for p in model.parameters())
    assert model.running.dtype == rt.float64
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in model.parameters())
    assert model(rt.ones(2, 4, dtype=rt.float64)).dtype == rt.float64


def test_missing_forward() -> None:
    with pytest.raises(
        NotImplementedError, match=r'Module \[Module\] is missing the required "forward" function'
    ):
        nn.Module()(1)


# ---- layers --------------------------------------------------------------------------------------


def test_linear_init_bounds_and_seed() -> None:
    rt.manual_seed(0)
    lin = nn.Linear(100, 50)
    bound = 1 / math.sqrt(100)
    w, b = arr(lin.weight), arr(lin.bias)
    assert w.shape == (50, 100) and b.shape == (50,)
    assert w.dtype == np.float32
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.95 * bound and abs(w.mean()) < 0.01  # uniform over the whole range
    rt.manual_seed(0)
    again = nn.Linear(100, 50)
    np.testing.assert_array_equal(arr(again.weight), w)
    np.testing.assert_array_equal(arr(again.bias), b)


def test_linear_forward() -> None:
    lin = nn.Linear(3, 2)
    x = rt.randn(5, 3)
    expected = arr(x) @ arr(lin.weight).T + arr(lin.bias)
    np.testing.assert_allclose(arr(lin(x)), expected, rtol=1e-6, atol=1e-6)
    assert lin(rt.randn(4, 7, 3)).shape == (4, 7, 2)


def test_layer_norm_defaults() -> None:
    ln = nn.LayerNorm(6)
    np.testing.assert_array_equal(arr(ln.weight), np.ones(6, np.float32))
    np.testing.assert_array_equal(arr(ln.bias), np.zeros(6, np.float32))
    y = arr(ln(rt.randn(3, 6)))
    np.testing.assert_allclose(y.mean(-1), 0.0, atol=1e-6)
    np.testing.assert_allclose(y.var(-1), 1.0, rtol=1e-3)
    assert nn.LayerNorm(6, elementwise_affine=False).weight is None


def test_simple_modules() -> None:
    x = rt.randn(3, 5)
    assert nn.Identity(1, key=2)(x) is x
    np.testing.assert_allclose(arr(nn.Softmax(dim=1)(x)).sum(1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(np.exp(arr(nn.LogSoftmax(dim=-1)(x))).sum(1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(arr(nn.ReLU()(x)), np.maximum(arr(x), 0))
    np.testing.assert_allclose(arr(nn.Tanh()(x)), np.tanh(arr(x)), rtol=1e-6)
    np.testing.assert_allclose(arr(nn.Sigmoid()(x)), 1 / (1 + np.exp(-arr(x))), rtol=1e-6)
    target = rt.randn(3, 5)
    assert nn.MSELoss(reduction="none")(x, target).shape == (3, 5)
    np.testing.assert_allclose(
        nn.MSELoss(reduction="sum")(x, target).item(),
        ((arr(x) - arr(target)) ** 2).sum(),
        rtol=1e-5,
    )
    bad = nn.CrossEntropyLoss(reduction="bad")  # PyTorch's: checked by the call, not here
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        bad(rt.randn(3, 5), rt.tensor([0, 1, 2]))


def test_sequential_container() -> None:
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and list(seq) == [a, b, c]
    assert seq[0] is a and seq[-1] is c
    sub = seq[1:]
    assert isinstance(sub, nn.Sequential) and list(sub) == [b, c]
    assert [n for n, _ in sub.named_children()] == ["1", "2"]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        seq[3]
    x = rt.randn(4, 2)
    np.testing.assert_array_equal(arr(seq(x)), arr(c(b(a(x)))))
    named = nn.Sequential(OrderedDict([("fc", a), ("act", b)]))
    assert named.fc is a and [n for n, _ in named.named_parameters()] == ["fc.weight", "fc.bias"]
    seq.append(nn.Sigmoid())
    assert len(seq) == 4
    del seq[0]
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2"] and seq[0] is b


def test_repr() -> None:
    p = nn.Parameter(rt.ones(2))
    assert repr(p).startswith("Parameter containing:\n")
    block = Block()
    assert repr(block) == (
        "Block(\n"
        "  (proj): Linear(in_features=4, out_features=3, bias=True)\n"
        "  (norm): LayerNorm((3,), eps=1e-05, elementwise_affine=True, bias=True)\n"
        ")"
    )
    assert repr(nn.Dropout(0.25)) == "Dropout(p=0.25, inplace=False)"  # as PyTorch's


# ---- state dict ----------------------------------------------------------------------------------


def test_state_dict_contents() -> None:
    block = Block()
    sd = block.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["scale", "running", "proj.weight", "proj.bias", "norm.weight", "norm.bias"]
    assert all(not v.requires_grad for v in sd.values())
    with rt.no_grad():
        block.proj.weight.fill_(3.0)
    np.testing.assert_array_equal(arr(sd["proj.weight"]), 3.0)  # detached aliases, like torch
    kept = block.state_dict(keep_vars=True)
    assert kept["proj.weight"] is block.proj.weight


def test_state_dict_round_trip() -> None:
    src, dst = mlp(nn), mlp(nn)
    params_before = list(dst.parameters())
    result = dst.load_state_dict(src.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert all(a is b for a, b in zip(params_before, dst.parameters()))  # loaded in place
    for (k1, v1), (k2, v2) in zip(src.state_dict().items(), dst.state_dict().items()):
        assert k1 == k2
        np.testing.assert_array_equal(arr(v1), arr(v2))
    with rt.no_grad():
        src[0].weight.add_(1.0)
    assert not np.array_equal(arr(src[0].weight), arr(dst[0].weight))  # copied, not aliased


def test_load_state_dict_errors() -> None:
    model = nn.Linear(3, 2)
    sd = model.state_dict()
    missing = OrderedDict(weight=sd["weight"])
    with pytest.raises(RuntimeError) as err:
        model.load_state_dict(missing)
    assert (
        str(err.value)
        == 'Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "bias". '
    )
    extra = OrderedDict(sd, extra=rt.zeros(1))
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "extra". '):
        model.load_state_dict(extra)
    bad = OrderedDict(weight=rt.zeros(2, 4), bias=sd["bias"])
    with pytest.raises(RuntimeError) as err:
        model.load_state_dict(bad)
    assert str(err.value) == (
        "Error(s) in loading state_dict for Linear:\n"
        "\tsize mismatch for weight: copying a param with shape "
        "torch.Size([2, 4]) from checkpoint, the shape in current model is torch.Size([2, 3])."
    )
    result = model.load_state_dict(
        OrderedDict(weight=rt.ones(2, 3), other=rt.ones(1)), strict=False
    )
    assert result.missing_keys == ["bias"] and result.unexpected_keys == ["other"]
    np.testing.assert_array_equal(arr(model.weight), 1.0)
    seq = nn.Sequential(nn.Linear(2, 2))
    with pytest.raises(RuntimeError) as err:
        seq.load_state_dict({"1.weight": rt.zeros(2, 2)})
    assert str(err.value) == (
        "Error(s) in loading state_dict for Sequential:\n"
        '\tMissing key(s) in state_dict: "0.weight", "0.bias". \n'
        '\tUnexpected key(s) in state_dict: "1.weight". '
    )


def test_load_state_dict_buffers_and_non_persistent() -> None:
    src, dst = Block(), Block()
    with rt.no_grad():
        src.running.fill_(7.0)
        src.scratch.fill_(5.0)
    dst.load_state_dict(src.state_dict())
    np.testing.assert_array_equal(arr(dst.running), 7.0)
    np.testing.assert_array_equal(arr(dst.scratch), 1.0)  # non-persistent: not saved, not loaded


def test_deepcopy_gives_independent_parameters() -> None:
    model = mlp(nn)
    clone = copy.deepcopy(model)
    pairs = list(zip(model.parameters(), clone.parameters()))
    assert len(pairs) == len(list(model.parameters()))
    for a, b in pairs:
        assert a is not b and isinstance(b, nn.Parameter) and b.requires_grad and b.is_leaf
        np.testing.assert_array_equal(arr(a), arr(b))
    before = [arr(p).copy() for p in model.parameters()]
    opt = rt.optim.SGD(clone.parameters(), lr=0.5)
    F.mse_loss(clone(rt.randn(4, 8)), rt.zeros(4, 4)).backward()
    opt.step()
    for p, old in zip(model.parameters(), before):
        np.testing.assert_array_equal(arr(p), old)
        assert p.grad is None
    assert any(
        not np.array_equal(arr(a), arr(b)) for a, b in zip(model.parameters(), clone.parameters())
    )


# ---- parity with torch.nn ------------------------------------------------------------------------


def test_names_and_repr_match_torch() -> None:
    torch = pytest.importorskip("torch")
    ours, theirs = mlp(nn), mlp(torch.nn)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [p.shape for p in ours.parameters()] == [tuple(p.shape) for p in theirs.parameters()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert repr(ours) == repr(theirs)
    assert repr(nn.GELU(approximate="tanh")) == repr(torch.nn.GELU(approximate="tanh"))
    assert repr(nn.Softmax(dim=1)) == repr(torch.nn.Softmax(dim=1))
    assert repr(nn.CrossEntropyLoss()) == repr(torch.nn.CrossEntropyLoss())


def test_forward_backward_match_torch() -> None:
    torch = pytest.importorskip("torch")
    ours, theirs = mlp(nn), mlp(torch.nn)
    to_torch(ours, theirs)
    x = np.random.default_rng(0).standard_normal((6, 8)).astype(np.float32)
    target = np.random.default_rng(1).random((6, 4)).astype(np.float32)
    loss = nn.MSELoss()(ours(rt.tensor(x)), rt.tensor(target))
    tloss = torch.nn.MSELoss()(theirs(torch.from_numpy(x)), torch.from_numpy(target))
    loss.backward()
    tloss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5)
    for (name, p), tp in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(arr(p.grad), arr(tp.grad), rtol=1e-4, atol=1e-6, err_msg=name)


def test_torch_state_dict_loads_into_runtime() -> None:
    torch = pytest.importorskip("torch")
    theirs = mlp(torch.nn)
    ours = mlp(nn)
    ours.load_state_dict({k: rt.tensor(arr(v)) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(2).standard_normal((5, 8)).astype(np.float32)
    np.testing.assert_allclose(
        arr(ours(rt.tensor(x))), arr(theirs(torch.from_numpy(x))), rtol=1e-5, atol=1e-6
    )
