"""The optimizers' eager updates bit for bit as torch's single-tensor (for-loop) updates on CPU
float32: 20 steps of each optimizer and option combination from the same weights, with the
same gradients each step (made in numpy from the weights, so only the updates' arithmetic is
compared), and the parameters compared with ``np.array_equal``.

torch's float32 ``sqrt`` on this CPU is its vectorized one, which is not correctly rounded (one
ulp off in about one element in six, with AVX-512), where numpy's and the runtime's are: on the
torch side ``Tensor.sqrt``/``sqrt_`` are replaced by a correctly rounded square root (a test
below shows the two differ only there), so that the rest of each update, the order of its
operations and where it rounds, is compared bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt
from tests.optim_cases import C, CASES, STEPS, W0, R, gradient

torch = pytest.importorskip("torch")


def _rounded_sqrt(t: Any) -> Any:
    return torch.from_numpy(np.sqrt(t.detach().numpy()))


def _rounded_sqrt_(t: Any) -> Any:
    return t.copy_(_rounded_sqrt(t))


@pytest.fixture
def exact_torch_sqrt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.Tensor, "sqrt", _rounded_sqrt)
    monkeypatch.setattr(torch.Tensor, "sqrt_", _rounded_sqrt_)


def test_torch_sqrt_differs_from_the_rounded_one_by_an_ulp_at_most() -> None:
    """What the fixture replaces: torch's own sqrt is within an ulp of the correctly rounded
    one (numpy's), which the runtime's equals bit for bit."""
    x = (np.abs(R.standard_normal(4096)) + 0.1).astype(np.float32)
    exact = np.sqrt(x)
    assert np.array_equal(rt.tensor(x).sqrt().numpy(), exact)
    theirs = torch.tensor(x).sqrt().numpy()
    assert np.abs(theirs.view(np.int32) - exact.view(np.int32)).max() <= 1


def _run(lib: Any, name: str, options: dict[str, Any]) -> list[np.ndarray]:
    params = [lib.tensor(w.copy(), requires_grad=True) for w in W0]
    extra = {"foreach": False} if lib is torch else {}
    opt = getattr(lib.optim, name)(params, **options, **extra)
    for _ in range(STEPS):
        for p, c in zip(params, C):
            p.grad = lib.tensor(gradient(p.detach().numpy(), c))
        opt.step()
    return [p.detach().numpy().copy() for p in params]


@pytest.mark.usefixtures("exact_torch_sqrt")
@pytest.mark.parametrize("case", sorted(CASES))
def test_parameters_bitwise_equal_to_torch(case: str) -> None:
    name, options = CASES[case]
    ours, theirs = _run(rt, name, options), _run(torch, name, options)
    moved = [not np.array_equal(w, t) for w, t in zip(W0, theirs)]
    assert all(moved)  # the steps did something
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype == np.float32
        assert np.array_equal(a, b), (case, np.abs(a - b).max(), np.argwhere(a != b)[:5])
