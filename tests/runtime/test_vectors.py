"""F.one_hot, F.normalize, F.cosine_similarity (and nn.CosineSimilarity) against PyTorch:
values, gradients, error texts; compiled steps equal to eager with no fallback; and the small
PyTorch entry points beside them (inference_mode, bare no_grad, as_tensor, device.type)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

F = rt.nn.functional


def torch_or_skip() -> Any:
    return pytest.importorskip("torch")


@pytest.mark.parametrize(("values", "classes"), [
    ([[0, 3], [2, 1]], -1), ([[0, 3], [2, 1]], 6), ([4], 5), ([], 3), (2, 4)])
def test_one_hot_matches_torch(values: Any, classes: int) -> None:
    torch = torch_or_skip()
    ours = F.one_hot(rt.tensor(values, dtype=rt.int64), classes)
    theirs = torch.nn.functional.one_hot(torch.tensor(values, dtype=torch.int64), classes)
    assert ours.dtype is rt.int64
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize(("values", "classes", "error", "text"), [
    ([0, -1], 3, RuntimeError, "Class values must be non-negative."),
    ([0, 3], 3, RuntimeError, "Class values must be smaller than num_classes."),
    ([0.0, 1.0], 3, RuntimeError, "one_hot is only applicable to index tensor of type "
                                  "LongTensor."),
    ([], -1, RuntimeError, "Can not infer total number of classes from empty tensor."),
])
def test_one_hot_errors(values: Any, classes: int, error: type, text: str) -> None:
    x = rt.tensor(values) if values else rt.tensor(values, dtype=rt.int64)
    with pytest.raises(error) as info:
        F.one_hot(x, classes)
    assert str(info.value) == text


def test_one_hot_compiled_checks_its_values() -> None:
    def step(x: rt.Tensor, y: rt.Tensor) -> rt.Tensor:
        return (F.one_hot(y, 5).float() * x).sum(1)

    x = rt.tensor(np.arange(15, dtype=np.float32).reshape(3, 5))
    y = rt.tensor([0, 4, 2])
    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(compiled(x, y).numpy(), step(x, y).numpy())
        with pytest.raises(RuntimeError, match="^Class values must be smaller than"):
            compiled(x, rt.tensor([0, 5, 1]))
        with pytest.raises(RuntimeError, match="^Class values must be non-negative"):
            compiled(x, rt.tensor([0, -1, 1]))
    # num_classes=-1 reads the values: that step runs eagerly, and says so
    with pytest.warns(RuntimeWarning, match="runs eagerly"):
        out = planner.compile(lambda y: F.one_hot(y))(y)
    assert tuple(out.shape) == (3, 5)


CASES = {
    "normalize": (lambda lib, a, b: lib.nn.functional.normalize(a), [(3, 4, 5)]),
    "normalize_p1_last": (lambda lib, a, b: lib.nn.functional.normalize(a, p=1.0, dim=-1),
                          [(3, 4, 5)]),
    "normalize_eps": (lambda lib, a, b: lib.nn.functional.normalize(a * 1e-14, dim=0, eps=1e-12),
                      [(3, 4)]),
    "cosine": (lambda lib, a, b: lib.nn.functional.cosine_similarity(a, b), [(3, 4, 5)] * 2),
    "cosine_broadcast": (lambda lib, a, b: lib.nn.functional.cosine_similarity(a, b, dim=-1),
                         [(3, 1, 5), (4, 5)]),
    "cosine_1d": (lambda lib, a, b: lib.nn.functional.cosine_similarity(a, b, dim=0),
                  [(5,), (5,)]),
    "cosine_module": (lambda lib, a, b: lib.nn.CosineSimilarity(dim=0, eps=1e-6)(a, b),
                      [(5, 2), (5, 2)]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_vector_functions_match_torch(case: str) -> None:
    torch = torch_or_skip()
    fn, shapes = CASES[case]
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    ours = [rt.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    a = fn(rt, *ours, *([None] * (2 - len(ours))))
    b = fn(torch, *theirs, *([None] * (2 - len(theirs))))
    up = rng.standard_normal(tuple(b.shape)).astype(np.float32)
    (a * rt.tensor(up)).sum().backward()
    (b * torch.tensor(up)).sum().backward()
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    for r, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", ["normalize", "cosine_broadcast"])
def test_vector_functions_gradcheck(case: str) -> None:
    fn, shapes = CASES[case]
    rng = np.random.default_rng(1)
    inputs = tuple(rt.tensor(rng.standard_normal(s), dtype=rt.float64, requires_grad=True)
                   for s in shapes)
    assert rt.autograd.gradcheck(lambda *xs: fn(rt, *xs, *([None] * (2 - len(xs)))), inputs)


def test_cosine_similarity_errors() -> None:
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(3\) must match the size of "
                                           r"tensor b \(4\) at non-singleton dimension 1$"):
        F.cosine_similarity(rt.ones(2, 3), rt.ones(2, 4))
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.cosine_similarity(rt.ones(2, 3), rt.ones(2, 3), dim=2)


def test_compiled_cosine_loss_equals_eager() -> None:
    rng = np.random.default_rng(2)
    models = []
    for _ in range(2):
        rt.manual_seed(4)
        models.append(rt.nn.Linear(6, 6))
    x = rt.tensor(rng.standard_normal((8, 6)).astype(np.float32))
    y = rt.tensor(rng.standard_normal((8, 6)).astype(np.float32))

    def make(model: Any) -> Any:
        opt = rt.optim.SGD(model.parameters(), lr=0.5)

        def step(x: rt.Tensor, y: rt.Tensor) -> rt.Tensor:
            opt.zero_grad()
            z = F.normalize(model(x), dim=1)
            loss = (1 - F.cosine_similarity(z, y)).mean()
            loss.backward()
            opt.step()
            return loss
        return step

    eager, compiled = make(models[0]), planner.compile(make(models[1]))
    for _ in range(3):
        want = float(eager(x, y))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert float(compiled(x, y)) == pytest.approx(want, rel=1e-5)
    np.testing.assert_allclose(models[1].weight.detach().numpy(),
                               models[0].weight.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_inference_mode_and_bare_grad_decorators() -> None:
    x = rt.ones(2, requires_grad=True)
    with rt.inference_mode():
        assert rt.is_inference_mode_enabled() and not rt.is_grad_enabled()
        assert not (x * 2).requires_grad
    assert not rt.is_inference_mode_enabled() and rt.is_grad_enabled()
    with rt.inference_mode(False):
        assert (x * 2).requires_grad and not rt.is_inference_mode_enabled()

    @rt.inference_mode
    def bare() -> bool:
        return rt.is_grad_enabled() or not rt.autograd.is_inference_mode_enabled()

    @rt.no_grad
    def no_grad_bare() -> bool:
        return rt.is_grad_enabled()

    @rt.enable_grad
    def enable_grad_bare() -> bool:
        return rt.is_grad_enabled()

    assert bare() is False and no_grad_bare() is False
    with rt.no_grad():
        assert enable_grad_bare() is True
    assert rt.is_grad_enabled()


def test_as_tensor_shares_what_it_can() -> None:
    a = np.arange(6, dtype=np.float32)
    t = rt.as_tensor(a)
    a[0] = 9.0
    assert t[0].item() == 9.0  # memory shared with the array
    assert rt.as_tensor(t) is t
    assert rt.as_tensor(t, dtype=rt.float64).dtype is rt.float64
    copied = rt.as_tensor(a, dtype=rt.float64)
    a[1] = 7.0
    assert copied[1].item() == 1.0
    assert rt.as_tensor([1, 2]).dtype is rt.int64
    assert rt.as_tensor(3.5).shape == ()


def test_device_type_is_a_plain_string() -> None:
    for name, kind in (("cpu", "cpu"), ("cuda:1", "cuda"), ("cuda", "cuda")):
        d = rt.device(name)
        assert type(d.type) is str and d.type == kind
        assert repr(d.type) == repr(kind)
