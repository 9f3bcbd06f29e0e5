"""Lazy modules (LazyLinear, LazyConv1d/2d/3d, LazyBatchNorm1d/2d/3d), as a d2l-style script
uses them: shapes taken from the first input, an optimizer made before it, state dicts."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import runtime as rt


def lazy_net(lib: ModuleType) -> Any:
    nn = lib.nn
    return nn.Sequential(nn.LazyConv2d(4, 3, padding=1), nn.LazyBatchNorm2d(), nn.ReLU(),
                         nn.Flatten(), nn.LazyLinear(6), nn.LazyBatchNorm1d(),
                         nn.LazyLinear(2, bias=False))


def batch(lib: ModuleType) -> Any:
    return lib.from_numpy(np.linspace(-1, 1, 150, dtype=np.float32).reshape(2, 3, 5, 5))


def train(lib: ModuleType, weights: dict[str, np.ndarray] | None
          ) -> tuple[Any, list[float], dict[str, np.ndarray]]:
    """Adam made before the first input; the weights then copied in (or kept, for None);
    the model, its losses and the weights it started from."""
    model = lazy_net(lib)
    opt = lib.optim.Adam(model.parameters(), lr=0.01)
    x = batch(lib)
    model(x)
    if weights is not None:
        model.load_state_dict({k: lib.from_numpy(v.copy()) for k, v in weights.items()})
    start = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, losses, start


def test_first_input_gives_the_shapes() -> None:
    rt.manual_seed(0)
    model = lazy_net(rt)
    assert model[0].has_uninitialized_params()
    assert [type(p).__name__ for p in model.parameters()] == ["UninitializedParameter"] * 9
    model, losses, _ = train(rt, None)
    assert [type(m).__name__ for m in model] == ["Conv2d", "BatchNorm2d", "ReLU", "Flatten",
                                                 "Linear", "BatchNorm1d", "Linear"]
    assert [tuple(p.shape) for p in model.parameters()] == [
        (4, 3, 3, 3), (4,), (4,), (4,), (6, 100), (6,), (6,), (6,), (2, 6)]
    assert tuple(model[1].running_var.shape) == (4,) and model[1].num_batches_tracked.item() == 4
    assert len(set(losses)) == 3  # the optimizer made before the first input updates them


def test_lazy_training_equals_pytorch() -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    _, want, weights = train(torch, None)
    _, got, _ = train(rt, weights)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_loading_a_checkpoint_materializes(tmp_path: Path) -> None:
    rt.manual_seed(0)
    trained, _, _ = train(rt, None)
    rt.save(trained.state_dict(), tmp_path / "net.pt")
    fresh = lazy_net(rt)
    fresh.load_state_dict(rt.load(tmp_path / "net.pt"))
    trained.eval()
    fresh.eval()
    np.testing.assert_array_equal(fresh(batch(rt)).detach().numpy(),
                                  trained(batch(rt)).detach().numpy())
    assert type(fresh[4]).__name__ == "Linear"  # the first call finished the change


def test_state_dict_of_a_lazy_module_keeps_it_lazy() -> None:
    lazy = lazy_net(rt)
    state = lazy.state_dict()
    assert [type(v).__name__ for v in state.values()][:4] == [
        "UninitializedParameter", "UninitializedParameter", "UninitializedParameter",
        "UninitializedParameter"]
    other = lazy_net(rt)
    other.load_state_dict(state)
    assert other[0].has_uninitialized_params()
    assert repr(rt.nn.UninitializedParameter()) == "<UninitializedParameter>"


@pytest.mark.parametrize("lib_name", ["runtime", "torch"])
@pytest.mark.parametrize(("make", "shape", "error", "text"), [
    (lambda nn: nn.LazyConv2d(4, 3), (3, 5), RuntimeError,
     "Expected 3D (unbatched) or 4D (batched) input to LazyConv2d, but got input of size: "
     "torch.Size([3, 5])"),
    (lambda nn: nn.LazyConv1d(4, 3, groups=2), (1, 3, 5), ValueError,
     "in_channels must be divisible by groups"),
])
def test_lazy_errors(make: Any, shape: tuple[int, ...], error: type, text: str,
                     lib_name: str) -> None:
    lib = pytest.importorskip(lib_name)
    with pytest.raises(error) as e:
        make(lib.nn)(lib.ones(*shape))
    assert str(e.value) == text


def test_lazy_conv3d_unbatched() -> None:
    conv = rt.nn.LazyConv3d(2, 1)
    assert tuple(conv(rt.ones(3, 2, 2, 2)).shape) == (2, 2, 2, 2)
    assert tuple(conv.weight.shape) == (2, 3, 1, 1, 1)
    norm = rt.nn.LazyBatchNorm3d(affine=False)
    norm(rt.ones(2, 5, 1, 1, 1))
    assert norm.weight is None and tuple(norm.running_mean.shape) == (5,)
