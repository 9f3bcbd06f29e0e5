"""The gpt workload trains as PyTorch does: 20 Adam steps on the same batches give the same
losses, eagerly and compiled (which never falls back), and the same weights."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import planner
import runtime as rt
from benchmarks.models_gpt import GPT, GPTConfig, build_gpt, corpus, gpt_arrays, gpt_batches

STEPS = 20
# float32 rounding (summation orders differ between the libraries and fused kernels) moves
# the losses of the three runs apart by ~1e-7 over 20 steps; a wrong gradient by far more
LOSS_RTOL = 1e-5


def train(case, batches, lib, step=None) -> list[float]:  # noqa: ANN001
    step = step or case.fn
    losses = []
    for x, y in batches:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a fallback to eager warns: a failure here
            losses.append(float(step(lib.from_numpy(x), lib.from_numpy(y)).item()))
    return losses


def test_corpus_and_batches_are_deterministic() -> None:
    data, vocab = corpus()
    assert data.dtype == np.int64 and len(data) > 100_000
    assert 50 < len(vocab) < 200 and vocab == "".join(sorted(set(vocab)))
    (x, y), = gpt_batches(3, 1)
    assert x.shape == y.shape == (GPT.batch, GPT.context)
    np.testing.assert_array_equal(x[:, 1:], y[:, :-1])  # the targets are the next characters
    for a, b in zip(gpt_batches(3, 4), gpt_batches(3, 4), strict=True):
        np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(gpt_batches(3, 1)[0][0], gpt_batches(4, 1)[0][0])


def test_gpt_trains_like_torch_eager_and_compiled() -> None:
    torch = pytest.importorskip("torch")
    arrays = gpt_arrays(0)
    batches = gpt_batches(0, STEPS)
    eager, compiled = build_gpt(rt, arrays), build_gpt(rt, arrays)
    step = planner.compile(compiled.fn)
    ours = train(eager, batches, rt)
    theirs = train(build_gpt(torch, arrays), batches, torch)
    got = train(compiled, batches, rt, step)
    assert step.captures <= 2  # the first call finds every .grad None, later ones set
    np.testing.assert_allclose(ours, theirs, rtol=LOSS_RTOL)
    np.testing.assert_allclose(got, ours, rtol=LOSS_RTOL)
    assert ours[-1] < ours[0] - 1.5  # it learns: from ln(vocab) ~ 4.6 to below 3


def test_untied_head_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    cfg = GPTConfig(layers=1, batch=4, tied=False)
    arrays = gpt_arrays(1, cfg)
    assert "head.weight" in arrays
    ours = build_gpt(rt, arrays, cfg)
    theirs = build_gpt(torch, arrays, cfg)
    a, b = ours.outputs(ours.run()), theirs.outputs(theirs.run())
    assert a.keys() == b.keys() and "grad_head.weight" in a
    for k in b:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-4, atol=2e-6, err_msg=k)


def test_compiled_gpt_rejects_a_character_out_of_range() -> None:
    cfg = GPTConfig(layers=1, batch=2)
    arrays = gpt_arrays(2, cfg)
    case = build_gpt(rt, arrays, cfg)
    step = planner.compile(case.fn)
    x, y = case.args
    step(x, y)
    bad = x.clone()
    bad[0, 3] = len(corpus()[1])  # one past the vocabulary
    with pytest.raises(IndexError, match="index out of range in self"):
        step(bad, y)
