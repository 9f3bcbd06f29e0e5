"""nn.Embedding / F.embedding against PyTorch: values, the scatter-add gradient (repeated
indices accumulate, padding rows get none), the init, and the errors, eagerly and compiled."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import planner
import runtime as rt

torch = pytest.importorskip("torch")
F = rt.nn.functional


def both(a: np.ndarray, requires_grad: bool = True) -> tuple[rt.Tensor, object]:
    return (rt.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


@pytest.mark.parametrize("padding_idx", [None, 1, -1])
def test_embedding_values_and_scatter_add_grad_match_torch(padding_idx: int | None) -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((6, 4)).astype(np.float32)
    idx = np.array([[1, 2, 1], [0, 5, 1]])  # repeated 1s: their gradients add up
    up = rng.standard_normal((2, 3, 4)).astype(np.float32)
    wr, wt = both(w)
    a = F.embedding(rt.tensor(idx), wr, padding_idx=padding_idx)
    b = torch.nn.functional.embedding(torch.tensor(idx), wt, padding_idx=padding_idx)
    (a * rt.tensor(up)).sum().backward()
    (b * torch.tensor(up)).sum().backward()
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    np.testing.assert_allclose(wr.grad.numpy(), wt.grad.numpy(), rtol=1e-6, atol=1e-7)
    if padding_idx is not None:
        assert not wr.grad.numpy()[padding_idx].any()


def test_embedding_module_init_repr_and_from_pretrained() -> None:
    rt.manual_seed(0)
    emb = rt.nn.Embedding(50, 8, padding_idx=3)
    w = emb.weight.detach().numpy()
    assert w.shape == (50, 8) and not w[3].any()
    assert 0.7 < w[np.arange(50) != 3].std() < 1.3  # N(0, 1), as torch's default init
    assert repr(emb) == repr(torch.nn.Embedding(50, 8, padding_idx=3)) == \
        "Embedding(50, 8, padding_idx=3)"
    table = rt.tensor(np.arange(6, dtype=np.float32).reshape(3, 2))
    frozen = rt.nn.Embedding.from_pretrained(table)
    assert not frozen.weight.requires_grad
    np.testing.assert_array_equal(frozen(rt.tensor([2, 0])).numpy(), [[4, 5], [0, 1]])


@pytest.mark.parametrize("bad", [6, -1])
def test_index_out_of_range_raises_torch_error(bad: int) -> None:
    w = np.zeros((6, 2), np.float32)
    with pytest.raises(IndexError, match="^index out of range in self$"):
        torch.nn.functional.embedding(torch.tensor([0, bad]), torch.tensor(w))
    with pytest.raises(IndexError, match="^index out of range in self$"):
        F.embedding(rt.tensor([0, bad]), rt.tensor(w))


def test_bad_arguments_are_refused() -> None:
    w = rt.zeros(5, 3)
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar"):
        F.embedding(rt.tensor([1.0]), w)
    for padding_idx in (5, -6):
        with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
            F.embedding(rt.tensor([1]), w, padding_idx=padding_idx)
        with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
            rt.nn.Embedding(5, 3, padding_idx=padding_idx)
    with pytest.raises(NotImplementedError, match="sparse"):  # no sparse gradients here
        F.embedding(rt.tensor([1]), w, sparse=True)


def test_compiled_embedding_step_equals_eager_and_checks_bounds() -> None:
    rt.manual_seed(1)
    emb = rt.nn.Embedding(10, 4, padding_idx=0)
    opt = rt.optim.SGD(emb.parameters(), lr=0.5)

    def step(idx: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = (emb(idx) ** 2).sum()
        loss.backward()
        opt.step()
        return loss

    compiled = planner.compile(step)
    start = emb.weight.detach().numpy().copy()
    idx = rt.tensor([[1, 0, 1], [9, 2, 0]])
    eager_losses = [float(step(idx)) for _ in range(3)]
    eager_weight = emb.weight.detach().numpy().copy()
    with rt.no_grad():
        emb.weight.copy_(rt.tensor(start))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager
        losses = [float(compiled(idx)) for _ in range(3)]
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-6)
    np.testing.assert_allclose(emb.weight.detach().numpy(), eager_weight, rtol=1e-6)
    np.testing.assert_array_equal(emb.weight.detach().numpy()[0], start[0])  # padding row
    before = emb.weight.detach().numpy().copy()
    # the plan adds which step raised on a line of its own
    with pytest.raises(IndexError, match="^index out of range in self\n"):
        compiled(rt.tensor([[1, 0, 1], [10, 2, 0]]))  # same shape: the plan replays
    np.testing.assert_array_equal(emb.weight.detach().numpy(), before)
