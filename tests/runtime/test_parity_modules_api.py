"""Parity with PyTorch of the Module API: load_state_dict's result and assign=, state dict
metadata and hooks, extra state, get_parameter/get_buffer, and module reprs."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

nn = rt.nn


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)
        self.register_buffer("tmp", rt.zeros(1), persistent=False)


def test_load_state_dict_result_names_and_repr():
    net = _Net()
    sd = net.state_dict()
    ok = net.load_state_dict(sd)
    assert repr(ok) == str(ok) == "<All keys matched successfully>"
    assert ok.missing_keys == [] and ok.unexpected_keys == []
    del sd["fc.bias"]
    sd["extra"] = rt.ones(1)
    res = net.load_state_dict(sd, strict=False)
    assert res == (["fc.bias"], ["extra"])
    assert repr(res) == "_IncompatibleKeys(missing_keys=['fc.bias'], unexpected_keys=['extra'])"
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "fc.bias". \n\t'
                                           'Unexpected key\\(s\\) in state_dict: "extra". '):
        net.load_state_dict(sd)


def test_load_state_dict_assign_takes_the_checkpoints_tensors():
    net = _Net()
    net.fc.weight.requires_grad_(False)
    sd = {k: v.clone() for k, v in net.state_dict().items()}
    net.load_state_dict(sd, assign=True)
    assert isinstance(net.fc.weight, nn.Parameter) and not net.fc.weight.requires_grad
    assert net.fc.bias.requires_grad and not isinstance(net.bn.running_mean, nn.Parameter)
    with rt.no_grad():
        sd["fc.bias"].fill_(7.0)
        sd["bn.running_mean"].fill_(3.0)
    assert net.fc.bias.tolist() == [7.0] * 4  # the same storage, not a copy
    assert net.bn.running_mean is sd["bn.running_mean"]
    before = net.fc.weight
    net.load_state_dict({k: v.clone() for k, v in sd.items()})
    assert net.fc.weight is before  # without assign: copied into the existing parameter


def test_batch_norm_loads_a_plain_dict_without_num_batches_tracked_as_torch():
    bn = nn.BatchNorm1d(3)
    with rt.no_grad():
        bn.num_batches_tracked.fill_(5)
    plain = dict(bn.state_dict())
    del plain["num_batches_tracked"]
    assert repr(bn.load_state_dict(plain)) == "<All keys matched successfully>"
    assert int(bn.num_batches_tracked) == 5
    versioned = bn.state_dict()  # its _metadata says version 2: the key is required
    assert versioned._metadata[""] == {"version": 2}
    del versioned["num_batches_tracked"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: '
                                           '"num_batches_tracked"'):
        bn.load_state_dict(versioned)


def test_state_dict_and_load_state_dict_hooks():
    net = _Net()
    calls: list[object] = []
    net.register_state_dict_pre_hook(lambda m, prefix, keep: calls.append(("pre", prefix)))
    net.fc.register_state_dict_post_hook(
        lambda m, sd, prefix, meta: sd.__setitem__(prefix + "seen", rt.ones(1)))
    sd = net.state_dict()
    assert calls == [("pre", "")] and "fc.seen" in sd
    handle = net._register_state_dict_hook(lambda m, sd, prefix, meta: {"replaced": 1})
    assert net.state_dict() == {"replaced": 1}
    handle.remove()
    bad = net.register_state_dict_post_hook(lambda *a: {})
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        net.state_dict()
    bad.remove()

    def pre(module, state_dict, prefix, meta, strict, missing, unexpected, errors):
        calls.append(("load-pre", type(module).__name__, prefix))
        state_dict.pop(prefix + "seen", None)

    net.fc.register_load_state_dict_pre_hook(pre)
    net.register_load_state_dict_post_hook(lambda m, keys: keys.unexpected_keys.clear())
    sd["bogus"] = rt.ones(1)
    assert repr(net.load_state_dict(sd)) == "<All keys matched successfully>"
    assert ("load-pre", "Linear", "fc.") in calls


def test_extra_state_is_saved_and_restored():
    class WithState(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.count = 3

        def get_extra_state(self) -> dict[str, int]:
            return {"count": self.count}

        def set_extra_state(self, state: dict[str, int]) -> None:
            self.count = state["count"]

    m = WithState()
    sd = m.state_dict()
    assert list(sd) == ["_extra_state", "lin.weight", "lin.bias"]  # its own, then children
    m2 = WithState()
    m2.count = 0
    m2.load_state_dict(sd)
    assert m2.count == 3
    del sd["_extra_state"]
    assert m2.load_state_dict(sd, strict=False).missing_keys == ["_extra_state"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "_extra_state"'):
        m2.load_state_dict(sd)
    plain = nn.Linear(2, 2)
    res = plain.load_state_dict({**plain.state_dict(), "_extra_state": 1}, strict=False)
    assert res.unexpected_keys == ["_extra_state"]  # as torch: no set_extra_state to take it


def test_get_parameter_and_get_buffer():
    net = _Net()
    assert net.get_parameter("fc.bias") is net.fc.bias
    assert net.get_buffer("bn.running_var") is net.bn.running_var
    with pytest.raises(AttributeError, match="Linear has no attribute `nope`"):
        net.get_parameter("fc.nope")
    with pytest.raises(AttributeError, match="`running_mean` is not an nn.Parameter"):
        net.get_parameter("bn.running_mean")
    with pytest.raises(AttributeError, match="`weight` is not a buffer"):
        net.get_buffer("fc.weight")
    with pytest.raises(KeyError, match='contain ".", got: a.b'):
        net.add_module("a.b", nn.ReLU())


def test_reprs_and_default_arguments():
    assert repr(nn.AvgPool1d(3)) == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"
    assert repr(nn.Unflatten(1, (2, 2))) == "Unflatten(dim=1, unflattened_size=(2, 2))"
    assert repr(nn.Softmax()) == "Softmax(dim=None)"
    assert repr(nn.LogSoftmax()) == "LogSoftmax(dim=None)"
    x = rt.arange(6.0).reshape(1, 6)
    np.testing.assert_allclose(nn.AvgPool1d(3)(x).numpy(), [[1.0, 4.0]])


def test_module_api_matches_torch():
    torch = pytest.importorskip("torch")
    cases = [("AvgPool1d", (3,), {"stride": 2, "padding": 1}), ("Unflatten", (1, (2, 3)), {}),
             ("Conv2d", (3, 4, 3), {"padding": "same", "padding_mode": "reflect"}),
             ("LSTM", (4, 6), {"proj_size": 2, "num_layers": 2}), ("BatchNorm3d", (4,), {}),
             ("AdaptiveMaxPool1d", (3,), {}), ("Dropout3d", (0.2,), {}),
             ("Upsample", (), {"scale_factor": 2.0, "mode": "bicubic"}),
             ("Embedding", (5, 3), {"max_norm": 1.0, "scale_grad_by_freq": True})]
    for name, args, kw in cases:
        assert repr(getattr(nn, name)(*args, **kw)) == repr(getattr(torch.nn, name)(*args, **kw))
    tl, rl = torch.nn.Linear(2, 3), nn.Linear(2, 3)
    assert repr(rl.load_state_dict({"weight": rt.ones(3, 2)}, strict=False)) == repr(
        tl.load_state_dict({"weight": torch.ones(3, 2)}, strict=False))


# ------------------------------------------------------------------------------- nn.init


def test_calculate_gain_covers_transposed_convolutions_and_checks_its_param():
    assert nn.init.calculate_gain("conv_transpose2d") == 1
    assert nn.init.calculate_gain("leaky_relu", 0.2) == pytest.approx((2 / 1.04) ** 0.5)
    with pytest.raises(ValueError, match="negative_slope x not a valid number"):
        nn.init.calculate_gain("leaky_relu", "x")
    with pytest.raises(ValueError, match=r"please use one of \['fan_in', 'fan_out'\]"):
        nn.init.kaiming_uniform_(rt.empty(3, 3), mode="fan")


def test_init_functions_take_a_generator():
    for fn in (nn.init.uniform_, nn.init.normal_, nn.init.kaiming_uniform_,
               nn.init.kaiming_normal_, nn.init.xavier_uniform_, nn.init.xavier_normal_,
               nn.init.trunc_normal_, nn.init.orthogonal_):
        a, b = rt.empty(3, 4), rt.empty(3, 4)
        fn(a, generator=rt.Generator().manual_seed(7))
        fn(b, generator=rt.Generator().manual_seed(7))
        assert a.tolist() == b.tolist(), fn.__name__


def test_dirac_and_sparse():
    w = nn.init.dirac_(rt.empty(4, 2, 3), groups=2)
    want = np.zeros((4, 2, 3))
    for out, inp in ((0, 0), (1, 1), (2, 0), (3, 1)):
        want[out, inp, 1] = 1
    assert w.tolist() == want.tolist()
    x = rt.randn(1, 2, 5)
    np.testing.assert_allclose(_conv1d_padded(x, nn.init.dirac_(rt.empty(2, 2, 3))), x.numpy(),
                               atol=1e-6)
    s = nn.init.sparse_(rt.empty(10, 4), 0.3, std=1.0)
    assert (s.numpy() == 0).sum(0).tolist() == [3, 3, 3, 3]
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions"):
        nn.init.dirac_(rt.empty(2, 2))


def _conv1d_padded(x: rt.Tensor, w: rt.Tensor) -> np.ndarray:
    return rt.nn.functional.conv1d(x, w, padding=1).numpy()


def test_buffer_assignment_registers_a_buffer():
    class WithBuffers(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stats = nn.Buffer(rt.ones(2))
            self.scratch = nn.Buffer(rt.zeros(1), persistent=False)
            self.plain = rt.ones(3)

    m = WithBuffers()
    assert [n for n, _ in m.named_buffers()] == ["stats", "scratch"]
    assert list(m.state_dict()) == ["stats"]
    assert isinstance(m.stats, nn.Buffer) and not isinstance(rt.ones(1), nn.Buffer)
    m.scratch = rt.ones(1)  # stays a non-persistent buffer
    assert list(m.state_dict()) == ["stats"] and m.scratch.tolist() == [1.0]
    with pytest.raises(KeyError, match="attribute 'plain' already exists"):
        m.plain = nn.Buffer(rt.ones(1))
    with pytest.raises(TypeError, match="cannot assign 'int' as buffer 'stats'"):
        m.stats = 3


def test_set_submodule():
    net = _Net()
    net.set_submodule("bn", nn.Identity())
    assert isinstance(net.bn, nn.Identity)
    net.set_submodule("fc.act", nn.ReLU())  # added: not strict
    assert isinstance(net.fc.act, nn.ReLU)
    with pytest.raises(AttributeError, match="Linear has no attribute `nope`"):
        net.set_submodule("fc.nope", nn.ReLU(), strict=True)
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        net.set_submodule("fc.weight", nn.ReLU())
    with pytest.raises(ValueError, match="Cannot set the submodule without a target name"):
        net.set_submodule("", nn.ReLU())


def test_module_list_repr_groups_equal_entries_and_dir_hides_indices():
    layers = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU()])
    assert repr(layers) == ("ModuleList(\n  (0-1): 2 x Linear(in_features=2, out_features=2, "
                            "bias=True)\n  (2): ReLU()\n)")
    assert repr(nn.ModuleList()) == "ModuleList()"
    assert "0" not in dir(layers) and "0" not in dir(nn.Sequential(nn.ReLU()))
    assert "append" in dir(layers)


def test_upsample_and_triplet_with_distance_reprs():
    assert repr(nn.Upsample()) == "Upsample(size=None, mode='nearest')"
    assert repr(nn.Upsample(size=3)) == "Upsample(size=3, mode='nearest')"
    assert repr(nn.Upsample(scale_factor=2)) == "Upsample(scale_factor=2.0, mode='nearest')"
    assert repr(nn.TripletMarginWithDistanceLoss()) == (
        "TripletMarginWithDistanceLoss(\n  (distance_function): PairwiseDistance()\n)")
