"""PyTorch 2.13's test/nn/test_pruning.py, ported to runtime (``import runtime as torch``),
plus checks of ``runtime.nn.utils.prune``'s error texts against torch's.

Left out (outside this project's scope): test_random_pruning_pickle and
test_pruning_serialization_model (pickling whole modules; rt.load runs no code). The CUDA
memory-leak/stream flags of NNTestCase have nothing to port. ``self.subTest`` loops are
plain loops; ``mock.patch`` targets runtime's module path.
"""

from __future__ import annotations

import unittest.mock as mock
from pathlib import Path

import pytest

import runtime as torch
import runtime.nn as nn
import runtime.nn.utils.prune as prune


def _assert_equal(a: object, b: object) -> None:
    torch.testing.assert_close(a, b, check_dtype=False)


def _modules() -> list[nn.Module]:
    return [nn.Linear(5, 7), nn.Conv3d(2, 2, 2)]


NAMES = ["weight", "bias"]


def test_validate_pruning_amount_init() -> None:
    with pytest.raises(TypeError):
        prune._validate_pruning_amount_init(amount="I'm a string")
    with pytest.raises(ValueError):
        prune._validate_pruning_amount_init(amount=1.1)
    with pytest.raises(ValueError):
        prune._validate_pruning_amount_init(amount=20.0)
    with pytest.raises(ValueError):
        prune._validate_pruning_amount_init(amount=-10)
    for amount in (0.34, 1500, 0, 0.0, 1, 1.0):
        prune._validate_pruning_amount_init(amount=amount)


def test_validate_pruning_amount() -> None:
    with pytest.raises(ValueError):
        prune._validate_pruning_amount(amount=20, tensor_size=19)
    prune._validate_pruning_amount(amount=0.3, tensor_size=0)
    prune._validate_pruning_amount(amount=19, tensor_size=20)
    prune._validate_pruning_amount(amount=0, tensor_size=0)
    prune._validate_pruning_amount(amount=1, tensor_size=1)


def test_compute_nparams_to_prune() -> None:
    assert prune._compute_nparams_toprune(amount=0, tensor_size=15) == 0
    assert prune._compute_nparams_toprune(amount=10, tensor_size=15) == 10
    assert prune._compute_nparams_toprune(amount=1, tensor_size=15) == 1
    assert prune._compute_nparams_toprune(amount=1.0, tensor_size=15) == 15
    assert prune._compute_nparams_toprune(amount=0.4, tensor_size=17) == 7


def test_random_pruning_sizes() -> None:
    for m in _modules():
        for name in NAMES:
            original_tensor = getattr(m, name)
            prune.random_unstructured(m, name=name, amount=0.1)
            assert original_tensor.size() == getattr(m, name + "_mask").size()
            assert original_tensor.size() == getattr(m, name + "_orig").size()
            assert original_tensor.size() == getattr(m, name).size()


def test_random_pruning_orig() -> None:
    for m in _modules():
        for name in NAMES:
            original_tensor = getattr(m, name)
            prune.random_unstructured(m, name=name, amount=0.1)
            _assert_equal(original_tensor, getattr(m, name + "_orig"))


def test_random_pruning_new_weight() -> None:
    for m in _modules():
        for name in NAMES:
            original_tensor = getattr(m, name)
            prune.random_unstructured(m, name=name, amount=0.1)
            _assert_equal(getattr(m, name), getattr(m, name + "_orig")
                          * getattr(m, name + "_mask").to(dtype=original_tensor.dtype))


def _check_mask_of_ones_changes_nothing(prune_it: object) -> None:
    input_ = torch.ones(1, 5)
    m = nn.Linear(5, 2)
    y_prepruning = m(input_)
    y_prepruning.sum().backward()
    old_grad_weight = m.weight.grad.clone()
    _assert_equal(old_grad_weight, torch.ones_like(m.weight))
    old_grad_bias = m.bias.grad.clone()
    _assert_equal(old_grad_bias, torch.ones_like(m.bias))
    m.zero_grad()
    prune_it(m)  # type: ignore[operator]
    y_postpruning = m(input_)
    _assert_equal(y_prepruning, y_postpruning)
    y_postpruning.sum().backward()
    _assert_equal(old_grad_weight, m.weight_orig.grad)
    _assert_equal(old_grad_bias, m.bias.grad)
    _assert_equal(m(input_), m(input_))


def test_identity_pruning() -> None:
    _check_mask_of_ones_changes_nothing(lambda m: prune.identity(m, name="weight"))


def test_random_pruning_0perc() -> None:
    def prune_it(m: nn.Linear) -> None:
        with mock.patch("runtime.nn.utils.prune.RandomUnstructured.compute_mask"
                        ) as compute_mask:
            compute_mask.return_value = torch.ones_like(m.weight)
            prune.random_unstructured(m, name="weight", amount=0.9)

    _check_mask_of_ones_changes_nothing(prune_it)


def _mocked_random_pruning(m: nn.Linear, mask: torch.Tensor) -> None:
    with mock.patch("runtime.nn.utils.prune.RandomUnstructured.compute_mask") as compute_mask:
        compute_mask.return_value = mask
        prune.random_unstructured(m, name="weight", amount=0.9)


def test_random_pruning() -> None:
    input_ = torch.ones(1, 5)
    m = nn.Linear(5, 2)
    mask = torch.ones_like(m.weight)
    mask[1, 0] = 0
    mask[0, 3] = 0
    _mocked_random_pruning(m, mask)
    m(input_).sum().backward()
    _assert_equal(m.weight_orig.grad, mask)
    _assert_equal(m.bias.grad, torch.ones_like(m.bias))
    old_weight_orig = m.weight_orig.clone()
    for p in m.parameters():
        p.data.sub_(p.grad.data * 1.0)
    _assert_equal(old_weight_orig[1, 0], m.weight_orig[1, 0])
    _assert_equal(old_weight_orig[0, 3], m.weight_orig[0, 3])


def test_random_pruning_forward() -> None:
    input_ = torch.ones(1, 5)
    m = nn.Linear(5, 2)
    mask = torch.zeros_like(m.weight)
    mask[1, 0] = 1
    mask[0, 3] = 1
    _mocked_random_pruning(m, mask)
    yhat = m(input_)
    _assert_equal(yhat[0, 0], m.weight_orig[0, 3] + m.bias[0])
    _assert_equal(yhat[0, 1], m.weight_orig[1, 0] + m.bias[1])


def test_remove_pruning_forward() -> None:
    input_ = torch.ones(1, 5)
    m = nn.Linear(5, 2)
    mask = torch.ones_like(m.weight)
    mask[1, 0] = 0
    mask[0, 3] = 0
    _mocked_random_pruning(m, mask)
    y_postpruning = m(input_)
    prune.remove(m, "weight")
    _assert_equal(y_postpruning, m(input_))


def test_pruning_id_consistency() -> None:
    m = nn.Linear(5, 2, bias=False)
    tensor_id = id(next(iter(m.parameters())))
    prune.random_unstructured(m, name="weight", amount=0.9)
    assert tensor_id == id(next(iter(m.parameters())))
    prune.remove(m, "weight")
    assert tensor_id == id(next(iter(m.parameters())))


def test_multiple_pruning_calls() -> None:
    m = nn.Conv3d(2, 2, 2)
    prune.l1_unstructured(m, name="weight", amount=0.1)
    weight_mask0 = m.weight_mask
    prune.ln_structured(m, name="weight", amount=0.3, n=2, dim=0)
    hook = next(iter(m._forward_pre_hooks.values()))
    assert isinstance(hook, prune.PruningContainer)
    assert hook._tensor_name == "weight"
    assert len(hook) == 2
    assert isinstance(hook[0], prune.L1Unstructured)
    assert isinstance(hook[1], prune.LnStructured)
    assert bool(torch.all(m.weight_mask[weight_mask0 == 0] == 0))
    prune.ln_structured(m, name="weight", amount=0.1, n=float("inf"), dim=1)
    hook = next(iter(m._forward_pre_hooks.values()))
    assert hook._tensor_name == "weight"


def test_pruning_container() -> None:
    container = prune.PruningContainer()
    container._tensor_name = "test"
    assert len(container) == 0
    p = prune.L1Unstructured(amount=2)
    p._tensor_name = "test"
    container.add_pruning_method(p)
    q = prune.L1Unstructured(amount=2)
    q._tensor_name = "another_test"
    with pytest.raises(ValueError):
        container.add_pruning_method(q)
    with pytest.raises(TypeError):
        container.add_pruning_method(10)
    with pytest.raises(TypeError):
        container.add_pruning_method("ugh")


def test_pruning_container_compute_mask() -> None:
    container = prune.PruningContainer()
    container._tensor_name = "test"
    p = prune.L1Unstructured(amount=2)
    p._tensor_name = "test"
    container.add_pruning_method(p)
    t = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]]).to(dtype=torch.float32)
    default_mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 1]])
    expected_mask = torch.tensor([[0, 0, 1, 0], [1, 1, 0, 1]], dtype=torch.float32)
    _assert_equal(expected_mask, container.compute_mask(t, default_mask))

    q = prune.LnStructured(amount=1, n=2, dim=0)
    q._tensor_name = "test"
    container.add_pruning_method(q)
    expected_mask = torch.tensor([[0, 0, 0, 0], [1, 1, 0, 1]], dtype=torch.float32)
    _assert_equal(expected_mask, container.compute_mask(t, default_mask))

    r = prune.LnStructured(amount=1, n=2, dim=1)
    r._tensor_name = "test"
    container.add_pruning_method(r)
    expected_mask = torch.tensor([[0, 1, 1, 0], [0, 1, 0, 1]], dtype=torch.float32)
    _assert_equal(expected_mask, container.compute_mask(t, default_mask))


def _linear_4_2() -> nn.Linear:
    m = nn.Linear(4, 2)
    m.weight = nn.Parameter(torch.tensor([[1, 2, 3, 4], [-4, -3, -2, -1]], dtype=torch.float32))
    return m


def test_l1_unstructured_pruning() -> None:
    m = _linear_4_2()
    prune.l1_unstructured(m, "weight", amount=2)
    _assert_equal(torch.tensor([[0, 2, 3, 4], [-4, -3, -2, 0]], dtype=m.weight.dtype), m.weight)
    prune.l1_unstructured(m, "weight", amount=2)
    _assert_equal(torch.tensor([[0, 0, 3, 4], [-4, -3, 0, 0]], dtype=m.weight.dtype), m.weight)


def test_l1_unstructured_pruning_with_importance_scores() -> None:
    m = _linear_4_2()
    importance_scores = torch.tensor([[4, 2, 1, 3], [-3, -1, -2, -4]], dtype=torch.float32)
    prune.l1_unstructured(m, "weight", amount=2, importance_scores=importance_scores)
    _assert_equal(torch.tensor([[1, 2, 0, 4], [-4, 0, -2, -1]], dtype=m.weight.dtype), m.weight)
    prune.l1_unstructured(m, "weight", amount=2, importance_scores=importance_scores)
    _assert_equal(torch.tensor([[1, 0, 0, 4], [-4, 0, 0, -1]], dtype=m.weight.dtype), m.weight)


def test_unstructured_pruning_same_magnitude() -> None:
    amount = 0.2
    p = prune.L1Unstructured(amount=amount)
    t = 2 * torch.randint(low=-1, high=2, size=(10, 7))
    nparams_toprune = prune._compute_nparams_toprune(amount, t.nelement())
    computed_mask = p.compute_mask(t, default_mask=torch.ones_like(t))
    assert nparams_toprune == int(torch.sum(computed_mask == 0))


def test_random_structured_pruning_amount() -> None:
    amount, axis = 0.6, 2
    p = prune.RandomStructured(amount=amount, dim=axis)
    t = 2 * torch.randint(low=-1, high=2, size=(5, 4, 2)).to(dtype=torch.float32)
    computed_mask = p.compute_mask(t, default_mask=torch.ones_like(t))
    remaining_axes = [d for d in range(len(t.shape)) if d != axis]
    per_column_sums = sorted(torch.sum(computed_mask == 0, axis=remaining_axes).tolist())
    assert per_column_sums == [0, 20]


def _conv_3_1_2() -> nn.Conv2d:
    m = nn.Conv2d(3, 1, 2)
    m.weight.data = torch.tensor([[[[1.0, 2.0], [1.0, 2.5]], [[0.5, 1.0], [0.1, 0.1]],
                                   [[-3.0, -5.0], [0.1, -1.0]]]])
    return m


def test_ln_structured_pruning() -> None:
    m = _conv_3_1_2()
    expected_mask_axis1 = torch.ones_like(m.weight)
    expected_mask_axis1[:, 1] = 0.0
    prune.ln_structured(m, "weight", amount=1, n=2, dim=1)
    _assert_equal(expected_mask_axis1, m.weight_mask)
    expected_mask_axis3 = expected_mask_axis1
    expected_mask_axis3[:, :, :, 0] = 0.0
    prune.ln_structured(m, "weight", amount=1, n=1, dim=-1)
    _assert_equal(expected_mask_axis3, m.weight_mask)


def test_ln_structured_pruning_importance_scores() -> None:
    m = _conv_3_1_2()
    importance_scores = torch.tensor([[[[10.0, 1.0], [10.0, 1.0]], [[30.0, 3.0], [30.0, 3.0]],
                                       [[-20.0, -2.0], [-20.0, -2.0]]]])
    expected_mask_axis1 = torch.ones_like(m.weight)
    expected_mask_axis1[:, 0] = 0.0
    prune.ln_structured(m, "weight", amount=1, n=2, dim=1, importance_scores=importance_scores)
    _assert_equal(expected_mask_axis1, m.weight_mask)
    expected_mask_axis3 = expected_mask_axis1
    expected_mask_axis3[:, :, :, 1] = 0.0
    prune.ln_structured(m, "weight", amount=1, n=1, dim=-1,
                        importance_scores=importance_scores)
    _assert_equal(expected_mask_axis3, m.weight_mask)


def test_remove_pruning() -> None:
    for m in _modules():
        for name in NAMES:
            prune.random_unstructured(m, name, amount=0.5)
            assert name + "_orig" in dict(m.named_parameters())
            assert name + "_mask" in dict(m.named_buffers())
            assert name not in dict(m.named_parameters())
            assert hasattr(m, name)
            pruned_t = getattr(m, name)
            prune.remove(m, name)
            assert name in dict(m.named_parameters())
            assert name + "_orig" not in dict(m.named_parameters())
            assert name + "_mask" not in dict(m.named_buffers())
            _assert_equal(pruned_t, getattr(m, name))


def test_remove_pruning_exception() -> None:
    for m in _modules():
        for name in NAMES:
            assert not prune.is_pruned(m)
            with pytest.raises(ValueError):
                prune.remove(m, name)


def _global_pair() -> tuple[nn.Linear, nn.Linear]:
    m = _linear_4_2()
    n = nn.Linear(3, 1)
    n.weight = nn.Parameter(torch.tensor([[0, 0.1, -2]]).to(dtype=torch.float32))
    return m, n


def test_global_pruning() -> None:
    m, n = _global_pair()
    prune.global_unstructured(((m, "weight"), (n, "weight")),
                              pruning_method=prune.L1Unstructured, amount=4)
    _assert_equal(torch.tensor([[0, 2, 3, 4], [-4, -3, -2, 0]], dtype=m.weight.dtype), m.weight)
    _assert_equal(torch.tensor([[0, 0, -2]]).to(dtype=n.weight.dtype), n.weight)


def test_global_pruning_importance_scores() -> None:
    m, n = _global_pair()
    importance_scores = {
        (m, "weight"): torch.tensor([[4, 2, 1, 3], [-3, -1, -2, -4]], dtype=torch.float32),
        (n, "weight"): torch.tensor([[0, 10.0, -0.2]]).to(dtype=torch.float32),
    }
    prune.global_unstructured(((m, "weight"), (n, "weight")),
                              pruning_method=prune.L1Unstructured, amount=4,
                              importance_scores=importance_scores)
    _assert_equal(torch.tensor([[1, 2, 0, 4], [-4, 0, -2, -1]], dtype=m.weight.dtype), m.weight)
    _assert_equal(torch.tensor([[0, 0.1, 0]]).to(dtype=n.weight.dtype), n.weight)


def test_custom_from_mask_pruning() -> None:
    mask = torch.tensor([[0, 1, 1, 0], [0, 0, 1, 1]])
    default_mask = torch.tensor([[0, 0, 0, 0], [1, 1, 1, 1]])
    t = torch.rand_like(mask.to(dtype=torch.float32))
    p = prune.CustomFromMask(mask=mask)
    computed_mask = p.compute_mask(t, default_mask)
    _assert_equal(computed_mask,
                  torch.tensor([[0, 0, 0, 0], [0, 0, 1, 1]], dtype=computed_mask.dtype))


def test_pruning_rollback() -> None:
    for m in _modules():
        for name in NAMES:
            with mock.patch("runtime.nn.utils.prune.L1Unstructured.compute_mask"
                            ) as compute_mask:
                compute_mask.side_effect = Exception("HA!")
                with pytest.raises(Exception, match="HA!"):
                    prune.l1_unstructured(m, name=name, amount=0.9)
                assert name in dict(m.named_parameters())
                assert name + "_mask" not in dict(m.named_buffers())
                assert name + "_orig" not in dict(m.named_parameters())


def _mlp() -> nn.Sequential:
    return nn.Sequential(nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 1))


def test_pruning_serialization_state_dict(tmp_path: Path) -> None:
    model = _mlp()
    assert "0.weight_orig" not in model.state_dict()
    assert "0.weight_mask" not in model.state_dict()
    assert "0.weight" in model.state_dict()
    prune.l1_unstructured(module=model[0], name="weight", amount=0.9)
    assert "0.weight_orig" in model.state_dict()
    assert "0.weight_mask" in model.state_dict()
    assert "0.weight" not in model.state_dict()
    assert hasattr(model[0], "weight")
    pruned_weight = model[0].weight
    prune.remove(module=model[0], name="weight")
    assert "0.weight_orig" not in model.state_dict()
    assert "0.weight_mask" not in model.state_dict()
    assert "0.weight" in model.state_dict()
    new_model = _mlp()
    fname = tmp_path / "sd.pt"
    torch.save(model.state_dict(), fname)
    new_model.load_state_dict(torch.load(fname))
    assert "0.weight_orig" not in new_model.state_dict()
    assert "0.weight_mask" not in new_model.state_dict()
    assert "0.weight" in new_model.state_dict()
    _assert_equal(pruned_weight, new_model[0].weight)


_T = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]]).to(dtype=torch.float32)
_DEFAULT_MASK = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 1]])


def test_prune() -> None:
    p = prune.L1Unstructured(amount=2)
    expected_mask = torch.tensor([[0, 0, 1, 0], [1, 1, 0, 1]])
    _assert_equal(_T * expected_mask, p.prune(_T, _DEFAULT_MASK))


def test_prune_importance_scores() -> None:
    p = prune.L1Unstructured(amount=2)
    importance_scores = torch.tensor([[1, 2, 3, 4], [1.5, 1.6, 1.7, 1.8]]).to(
        dtype=torch.float32)
    expected_mask = torch.tensor([[0, 1, 1, 0], [0, 1, 0, 1]])
    _assert_equal(_T * expected_mask,
                  p.prune(_T, _DEFAULT_MASK, importance_scores=importance_scores))


def test_prune_importance_scores_mimic_default() -> None:
    p = prune.L1Unstructured(amount=2)
    expected_mask = torch.tensor([[0, 0, 1, 0], [1, 1, 0, 1]])
    without = p.prune(_T, _DEFAULT_MASK)
    _assert_equal(without, p.prune(_T, _DEFAULT_MASK, importance_scores=_T))
    _assert_equal(_T * expected_mask, without)


def test_rnn_pruning() -> None:
    lstm = nn.LSTM(32, 32)
    prune.l1_unstructured(lstm, "weight_ih_l0", 0.5)
    assert sum(isinstance(p, nn.Parameter) for p in lstm._flat_weights) == 3
    prune.remove(lstm, "weight_ih_l0")
    assert sum(isinstance(p, nn.Parameter) for p in lstm._flat_weights) == 4
    assert "weight_ih_l0" in lstm._parameters
    assert lstm._parameters["weight_ih_l0"] is not None
    assert "weight_ih_l0_orig" not in lstm._parameters
    assert "weight_ih_l0" in dict(lstm.named_parameters())
    assert dict(lstm.named_parameters())["weight_ih_l0"] is not None
    assert "weight_ih_l0_orig" not in dict(lstm.named_parameters())


def test_pruned_lstm_runs_on_the_masked_weight() -> None:
    """Beyond torch's test: the LSTM's forward reads the pruned weight the hook set."""
    lstm = nn.LSTM(3, 4)
    x = torch.randn(2, 1, 3)
    mask = torch.zeros_like(lstm.weight_ih_l0)
    prune.custom_from_mask(lstm, "weight_ih_l0", mask)
    ref = nn.LSTM(3, 4)
    ref.load_state_dict({k.replace("_orig", ""): v for k, v in lstm.state_dict().items()
                         if not k.endswith("_mask")})
    with torch.no_grad():
        ref.weight_ih_l0.zero_()
    _assert_equal(lstm(x)[0], ref(x)[0])


# --- error texts against torch's ------------------------------------------------------------


def _message(fn: object) -> tuple[type[BaseException], str]:
    with pytest.raises(Exception) as info:
        fn()  # type: ignore[operator]
    return info.type, str(info.value)


@pytest.mark.parametrize("case", ["amount_type", "amount_range", "amount_size", "structured_1d",
                                  "dim", "global_type", "global_params", "global_scores",
                                  "container_type", "importance_shape", "custom_shape",
                                  "global_generator"])
def test_error_texts_match_torch(case: str) -> None:
    real = pytest.importorskip("torch")
    pytest.importorskip("torch.nn.utils.prune")

    def run(lib: object) -> tuple[type[BaseException], str]:
        p = lib.nn.utils.prune  # type: ignore[attr-defined]
        t = lib.ones(3, 4)  # type: ignore[attr-defined]
        calls = {
            "amount_type": lambda: p.L1Unstructured("x"),
            "amount_range": lambda: p.L1Unstructured(1.5),
            "amount_size": lambda: p.L1Unstructured(20).compute_mask(t, t),
            "structured_1d": lambda: p.LnStructured(1, 2, 0).compute_mask(t[0], t[0]),
            "dim": lambda: p.LnStructured(1, 2, 2).compute_mask(t, t),
            "global_type": lambda: p.global_unstructured(
                [(lib.nn.Linear(2, 2), "weight")],  # type: ignore[attr-defined]
                p.LnStructured, amount=1, n=2, dim=0),
            "global_params": lambda: p.global_unstructured(3, p.L1Unstructured, amount=1),
            "global_scores": lambda: p.global_unstructured([], p.L1Unstructured, [1], amount=1),
            "container_type": lambda: p.PruningContainer(3),
            "importance_shape": lambda: p.L1Unstructured(1).prune(t, importance_scores=t[0]),
            "custom_shape": lambda: p.CustomFromMask(t[0]).compute_mask(t, t),
            # torch reads ``parameters`` three times: a generator is spent after the first
            "global_generator": lambda: p.global_unstructured(
                ((lib.nn.Linear(3, 2), "weight") for _ in range(2)),  # type: ignore[attr-defined]
                p.L1Unstructured, amount=2),
        }
        return _message(calls[case])

    got, want = run(torch), run(real)
    assert got[0] is want[0]
    assert got[1].replace("runtime", "torch") == want[1]


def test_chained_pruning_matches_torch() -> None:
    """Beyond torch's tests: four methods chained on one conv weight (a PruningContainer),
    the same weights in both libraries: the same mask and pruned weight, state_dict keys and
    parameter order."""
    real = pytest.importorskip("torch")
    pytest.importorskip("torch.nn.utils.prune")
    np = pytest.importorskip("numpy")
    w = np.random.default_rng(0).standard_normal((3, 2, 2, 2)).astype(np.float32)

    def run(lib: object) -> tuple[object, ...]:
        p = lib.nn.utils.prune  # type: ignore[attr-defined]
        m = lib.nn.Conv2d(2, 3, 2)  # type: ignore[attr-defined]
        with lib.no_grad():  # type: ignore[attr-defined]
            m.weight.copy_(lib.tensor(w))  # type: ignore[attr-defined]
        p.l1_unstructured(m, "weight", 0.3)
        p.ln_structured(m, "weight", 1, 2, 0)
        p.ln_structured(m, "weight", 0.5, float("inf"), -1)
        p.l1_unstructured(m, "weight", 3)
        p.random_unstructured(m, "bias", 1)
        return (m.weight_mask.numpy().copy(), m.weight.detach().numpy().copy(),
                list(m.state_dict()), [k for k, _ in m.named_parameters()],
                len(m._forward_pre_hooks[next(iter(m._forward_pre_hooks))]))

    got, want = run(torch), run(real)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[2:] == want[2:]
