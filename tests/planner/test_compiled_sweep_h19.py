"""planner.compile fed by rt.utils.data and around rt.save/rt.load: a DataLoader-fed
training loop (shuffled with a seeded generator, in worker threads, with a last short
batch) equals eager mode's losses and parameters (within the project's compiled-vs-eager
tolerance: fused kernels round tanh and the momentum update in their own order) with no
fallback and one capture per batch shape, not per batch; a checkpoint saved and loaded between compiled calls (into the
same model and optimizer, or into new ones) continues the run as eager mode does."""

from __future__ import annotations

import copy
import io
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from runtime.utils.data import DataLoader, TensorDataset


def _model() -> rt.nn.Module:
    rt.manual_seed(0)
    return rt.nn.Sequential(rt.nn.Linear(6, 16), rt.nn.Tanh(), rt.nn.Linear(16, 3))


def _data(n: int = 44) -> TensorDataset:
    g = rt.Generator().manual_seed(1)
    return TensorDataset(rt.randn(n, 6, generator=g), rt.randint(0, 3, (n,), generator=g))


def _trainer(model: rt.nn.Module, opt: rt.optim.Optimizer) -> Callable[..., Any]:
    def step(x: rt.Tensor, y: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = rt.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()
    return step


def _sgd(model: rt.nn.Module) -> rt.optim.Optimizer:
    return rt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


TOL = 1e-5


def _same(a: rt.nn.Module, b: rt.nn.Module) -> None:
    for (na, pa), (nb, pb) in zip(a.named_parameters(), b.named_parameters(), strict=True):
        assert na == nb
        np.testing.assert_allclose(pa.detach().numpy(), pb.detach().numpy(), rtol=TOL,
                                   atol=TOL, err_msg=na)


def _same_losses(got: list[float], want: list[float]) -> None:
    assert len(got) == len(want)
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL)


def _loader(**kwargs: Any) -> DataLoader:
    return DataLoader(_data(), batch_size=8, shuffle=True,
                      generator=rt.Generator().manual_seed(5), **kwargs)


def _run(step: Callable[..., Any], loader: DataLoader, epochs: int) -> list[float]:
    losses = []
    for _ in range(epochs):
        for x, y in loader:
            losses.append(float(step(x, y)))
    return losses


@pytest.mark.parametrize("kwargs,shapes", [({"drop_last": True}, 1), ({}, 2),
                                           ({"num_workers": 2}, 2)])
def test_dataloader_fed_training_equals_eager(kwargs: dict[str, Any], shapes: int) -> None:
    eager_model, model = _model(), _model()
    eager = _trainer(eager_model, _sgd(eager_model))
    compiled = planner.compile(_trainer(model, _sgd(model)))
    want = _run(eager, _loader(**kwargs), epochs=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _run(compiled, _loader(**kwargs), epochs=3)
    assert not _fallbacks(caught)
    _same_losses(got, want)
    _same(model, eager_model)
    assert compiled.captures == shapes  # one per batch shape, not one per batch


def _checkpoint(model: rt.nn.Module, opt: rt.optim.Optimizer) -> bytes:
    f = io.BytesIO()
    rt.save({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": 1}, f)
    return f.getvalue()


def _restore(blob: bytes, model: rt.nn.Module, opt: rt.optim.Optimizer) -> None:
    ckpt = rt.load(io.BytesIO(blob), weights_only=True)
    assert ckpt["epoch"] == 1
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["opt"])


def test_checkpoint_into_the_same_model_between_compiled_calls() -> None:
    """Train, save, train on, then load the checkpoint back into the same model and
    optimizer and train again: the compiled step replays from the loaded values (and
    momentum buffers), as eager mode."""
    results = []
    for compile_it in (False, True):
        model = _model()
        opt = _sgd(model)
        step = _trainer(model, opt)
        if compile_it:
            step = planner.compile(step)
        loader = _loader(drop_last=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _run(step, loader, epochs=1)
            blob = _checkpoint(model, opt)
            _run(step, loader, epochs=1)
            _restore(blob, model, opt)
            losses = _run(step, loader, epochs=2)
        assert not _fallbacks(caught)
        results.append((losses, copy.deepcopy(model)))
        if compile_it:
            assert step.captures <= 2  # at most once more, for the loaded momentum buffers
    _same_losses(results[1][0], results[0][0])
    _same(results[0][1], results[1][1])


def test_checkpoint_into_a_new_model_continues_the_run() -> None:
    """A run interrupted by a checkpoint and resumed in a new model and optimizer (a new
    compiled step) ends where the uninterrupted eager run ends."""
    eager_model = _model()
    eager = _trainer(eager_model, _sgd(eager_model))
    want = _run(eager, _loader(drop_last=True), epochs=2)

    model = _model()
    opt = _sgd(model)
    first = planner.compile(_trainer(model, opt))
    loader = _loader(drop_last=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _run(first, loader, epochs=1)
        blob = _checkpoint(model, opt)
        resumed_model = rt.nn.Sequential(rt.nn.Linear(6, 16), rt.nn.Tanh(), rt.nn.Linear(16, 3))
        resumed_opt = _sgd(resumed_model)
        _restore(blob, resumed_model, resumed_opt)
        second = planner.compile(_trainer(resumed_model, resumed_opt))
        got += _run(second, loader, epochs=1)
    assert not _fallbacks(caught)
    _same_losses(got, want)
    _same(resumed_model, eager_model)
    assert first.captures == 1 and second.captures == 1


def test_save_inside_a_compiled_step_falls_back_with_a_warning() -> None:
    """rt.save of a tensor the step computes, inside the step: it needs the tensor's value
    (as .numpy() does), so the step runs eagerly with a warning naming the line, never
    writing a stale or wrong value."""
    model = _model()
    x, y = _data()[0:8]
    sink: list[bytes] = []

    def step(x: rt.Tensor, y: rt.Tensor) -> rt.Tensor:
        loss = rt.nn.functional.cross_entropy(model(x), y)
        f = io.BytesIO()
        rt.save(loss.detach(), f)
        sink.append(f.getvalue())
        return loss

    compiled = planner.compile(step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for scale in (1.0, 2.0, 3.0):
            got = float(compiled(x * scale, y))
            assert float(rt.load(io.BytesIO(sink[-1]))) == got == float(step(x * scale, y))
    fallbacks = _fallbacks(caught)
    assert fallbacks and all("runs eagerly" in m for m in fallbacks)


def test_a_compiled_step_drawing_random_numbers_in_workers_equals_eager() -> None:
    """A compiled step that draws from the default generator (rt.rand, rt.randn), called
    from a dataset in DataLoader worker threads: each worker's call draws from that
    worker's own generator, as eager mode's, not from the one of the thread that captured
    it (the plan held the capturing worker's generator: the other worker's batches
    differed)."""
    def noisy(x: rt.Tensor) -> rt.Tensor:
        return (x + rt.rand(3)).sum() + rt.randn(2).sum()

    class DS(rt.utils.data.Dataset):
        def __init__(self, f: Callable[..., Any]) -> None:
            self.f = f

        def __getitem__(self, i: int) -> rt.Tensor:
            return self.f(rt.ones(3) * i)

        def __len__(self) -> int:
            return 8

    compiled = planner.compile(noisy)
    runs = []
    for f in (noisy, compiled):
        loader = DataLoader(DS(f), batch_size=2, num_workers=2,
                            generator=rt.Generator().manual_seed(0))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            runs.append([b.tolist() for b in loader])
        assert not _fallbacks(caught)
    np.testing.assert_allclose(runs[1], runs[0], rtol=TOL, atol=TOL)
    assert compiled.captures == 1
    rt.manual_seed(3)
    want = [float(noisy(rt.ones(3))) for _ in range(3)]
    rt.manual_seed(3)
    got = [float(compiled(rt.ones(3))) for _ in range(3)]
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL)


def test_a_collated_dict_batch_with_strings_and_ints_is_not_captured_per_batch() -> None:
    """default_collate's dict batches: a tensor, an int column (a tensor) and a string
    column (a tuple of new strings every batch): at most one more capture, not one per
    batch, and the losses of eager mode."""
    class DS(rt.utils.data.Dataset):
        def __getitem__(self, i: int) -> dict[str, Any]:
            return {"x": rt.ones(3) * i / 10, "name": f"s{i}", "idx": i}

        def __len__(self) -> int:
            return 24

    runs = []
    for compile_it in (False, True):
        rt.manual_seed(0)
        model = rt.nn.Linear(3, 1)
        opt = rt.optim.SGD(model.parameters(), lr=0.1)

        def step(batch: dict[str, Any]) -> rt.Tensor:
            opt.zero_grad()
            loss = model(batch["x"]).pow(2).mean() + batch["idx"].float().mean() * 0
            loss.backward()
            opt.step()
            return loss.detach()

        fn = planner.compile(step) if compile_it else step
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            runs.append([float(fn(b)) for b in DataLoader(DS(), batch_size=4)])
        assert not _fallbacks(caught)
        if compile_it:
            assert fn.captures <= 2
    _same_losses(runs[1], runs[0])


def _fallbacks(caught: list[warnings.WarningMessage]) -> list[str]:
    """The planner's RuntimeWarnings (not the os.fork() one of a JAX that another test of the
    run imported, where the bench extra is installed: a background compile forks)."""
    return [str(w.message) for w in caught
            if w.category is RuntimeWarning and str(w.message).startswith("planner")]
