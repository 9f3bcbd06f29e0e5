"""Regressions a differential fuzzer of planner.compile against eager mode found: each a
minimised step, compiled equal to eager (and to a value worked out by hand)."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pytest

import planner
import runtime as rt


def f32(values: object) -> rt.Tensor:
    return rt.tensor(np.asarray(values, np.float32))


def shift_in_place(x: rt.Tensor, y: rt.Tensor) -> rt.Tensor:
    x.add_(1)
    return (y * 1).sum()


def test_a_write_to_an_argument_overlapping_another_runs_eagerly() -> None:
    # a[1:] and a[:2] share a[1]: the write through the first shows in the second
    a = f32([1.0, 2.0, 3.0])
    step = planner.compile(shift_in_place)
    with pytest.warns(RuntimeWarning, match="argument 0, whose memory overlaps"):
        got = step(a[1:], a[:2])
    assert got.item() == 1.0 + 3.0
    np.testing.assert_array_equal(a.numpy(), [1.0, 3.0, 4.0])
    b = f32([1.0, 2.0, 3.0])
    assert shift_in_place(b[1:], b[:2]).item() == got.item()


def test_overlapping_arguments_read_only_are_captured() -> None:
    # a language model's inputs and targets: two views of one batch of tokens
    def make() -> tuple[rt.Tensor, rt.optim.SGD, Callable[..., rt.Tensor]]:
        w = rt.tensor(np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3),
                      requires_grad=True)
        opt = rt.optim.SGD([w], lr=0.5)

        def step(inputs: rt.Tensor, targets: rt.Tensor) -> rt.Tensor:
            logits = rt.nn.functional.embedding(inputs, w)
            loss = rt.nn.functional.cross_entropy(logits.reshape(-1, 3),
                                                  targets.reshape(-1).remainder(3))
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss.detach()

        return w, opt, step

    w_eager, _, eager = make()
    w, _, step = make()
    compiled = planner.compile(step)
    rng = np.random.default_rng(0)
    for _ in range(3):
        tokens = rt.tensor(rng.integers(0, 4, (2, 6)))
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            got = compiled(tokens[:, :-1], tokens[:, 1:])
        expected = eager(tokens[:, :-1], tokens[:, 1:])
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)
        np.testing.assert_allclose(w.detach().numpy(), w_eager.detach().numpy(), rtol=1e-6,
                                   atol=1e-7)
    assert compiled.captures == 1


def test_a_step_that_seeds_its_generator_runs_eagerly() -> None:
    # the capture ran the seeding and the plan's draws went on from there: the first replay
    # gave eager's mask, every later one another
    w = rt.tensor(np.ones(16, np.float32), requires_grad=True)

    def step(x: rt.Tensor) -> rt.Tensor:
        rt.manual_seed(0)
        loss = rt.nn.functional.dropout(x * w, 0.5).sum()
        loss.backward()
        return loss.detach()

    compiled = planner.compile(step)
    x = rt.arange(16.0)
    with pytest.warns(RuntimeWarning, match="seeds a random generator"):
        first = compiled(x).item()
    assert [compiled(x).item() for _ in range(3)] == [first] * 3
    assert step(x).item() == first


def test_a_generator_seeded_between_its_draws_runs_eagerly() -> None:
    g = rt.Generator()

    def step(x: rt.Tensor) -> rt.Tensor:
        a = rt.rand(4, generator=g)
        g.manual_seed(1)
        return (x * a + rt.rand(4, generator=g)).sum()

    compiled = planner.compile(step)
    x = f32([1.0, 2.0, 3.0, 4.0])
    g.manual_seed(5)
    with pytest.warns(RuntimeWarning, match="seeds a random generator"):
        got = [compiled(x).item() for _ in range(3)]
    g.manual_seed(5)
    assert got == [step(x).item() for _ in range(3)]


def twin_steps(body: Callable[[rt.Tensor, rt.Tensor], rt.Tensor], x: Callable[[], rt.Tensor],
               calls: int = 4) -> tuple[list[tuple[float, np.ndarray]], list[str], int]:
    """``body(x, w)``'s loss, in a step that updates ``w`` (2 x 3) with SGD, run eagerly then
    compiled: the eager (loss, w) per call, the compiled ones, the compiled run's warnings
    and its captures."""
    runs, seen, captures = [], [], 0
    for compiled in (False, True):
        w = rt.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 4, requires_grad=True)
        opt = rt.optim.SGD([w], lr=0.1)

        def step(x: rt.Tensor, w: rt.Tensor = w, opt: rt.optim.SGD = opt) -> rt.Tensor:
            loss = body(x, w)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss.detach()

        fn = planner.compile(step) if compiled else step
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            runs.append([(fn(x()).item(), w.detach().numpy().copy()) for _ in range(calls)])
        if compiled:
            seen = [str(c.message) for c in caught]
            captures = fn.captures
    for (gl, gw), (wl, ww) in zip(runs[1], runs[0], strict=True):
        assert gl == pytest.approx(wl, rel=1e-5)
        np.testing.assert_allclose(gw, ww, rtol=1e-5, atol=1e-6)
    return runs, seen, captures


def write_through_reshape(view: Callable[[rt.Tensor], rt.Tensor]) -> Callable[..., rt.Tensor]:
    def body(x: rt.Tensor, w: rt.Tensor) -> rt.Tensor:
        h = x * w
        t = view(h)
        y = t.reshape(-1)  # a copy in eager mode: the write leaves h and t as they were
        y.mul_(2)
        return (h * h).sum() + (t * t).sum() + y.sum()
    return body


def ones() -> rt.Tensor:
    return rt.ones(2, 3)


@pytest.mark.parametrize("view", [lambda h: h.t(), lambda h: h[:, ::2],
                                  lambda h: h.t() * 2, lambda h: h.expand(2, 2, 3)],
                         ids=["transposed", "sliced", "computed_from_transposed", "expanded"])
def test_an_in_place_write_to_a_copying_reshape_leaves_its_source(
        view: Callable[[rt.Tensor], rt.Tensor]) -> None:
    # the capture recorded every reshape as a view: the write through a copying one changed
    # its source, a silently wrong loss and update
    _, seen, captures = twin_steps(write_through_reshape(view), ones)
    assert seen == [] and captures == 1


def test_a_copying_reshape_of_a_parameter_read_after_its_update() -> None:
    # w.t().reshape(-1) is a copy: reading it after the update is no stale view (the step ran
    # eagerly, with a warning)
    results = []
    for compiled in (False, True):
        w = rt.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
        opt = rt.optim.SGD([w], lr=0.1)

        def step(x: rt.Tensor, w: rt.Tensor = w, opt: rt.optim.SGD = opt) -> rt.Tensor:
            z = w.t().reshape(-1)
            loss = (x * w).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            return z * 1

        fn = planner.compile(step) if compiled else step
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            results.append([fn(rt.ones(2, 3)).detach().numpy().copy() for _ in range(3)])
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)


def test_a_view_of_a_transposed_argument_is_captured() -> None:
    # the argument x.t() is contiguous again after .t(): view(-1) works eagerly; the capture
    # took every argument for C order and raised view()'s error
    def body(x: rt.Tensor, w: rt.Tensor) -> rt.Tensor:
        return (x.t().view(-1).reshape(2, 3) * w).sum()

    _, seen, captures = twin_steps(body, lambda: rt.tensor(
        np.arange(6, dtype=np.float32).reshape(3, 2)).t())
    assert seen == [] and captures == 1


def test_contiguous_of_a_value_computed_from_a_transposed_one_copies() -> None:
    # (h.t() * 2) is in F order eagerly (numpy keeps its operand's order): contiguous()
    # copies, and a write to the copy leaves it; the capture returned the value itself
    def body(x: rt.Tensor, w: rt.Tensor) -> rt.Tensor:
        y = (x * w).t() * 2
        z = y.contiguous()
        z.mul_(3)
        return (y * y).sum() + z.sum()

    _, seen, captures = twin_steps(body, ones)
    assert seen == [] and captures == 1


def test_a_view_of_contiguous_of_a_transposed_value_is_captured() -> None:
    # fuzz seed 840: contiguous() of x.t() is a clone in C order (ndarray.copy()); taken for
    # an elementwise op keeping its operand's F order, its view(-1) raised view()'s error
    def body(x: rt.Tensor, w: rt.Tensor) -> rt.Tensor:
        v = (x * 2).transpose(0, 1).contiguous().view(-1)
        return (v.reshape(3, 2).t() * w).sum()

    _, seen, captures = twin_steps(body, ones)
    assert seen == [] and captures == 1


def test_clipping_the_gradients_of_a_batch_norm_is_captured() -> None:
    # fuzz seed 2123: BatchNorm1d's weight gradient (one sample) is a sum over axes of a
    # permuted value, reshaped to (C,); the capture took that reshape's layout for unknown
    # and ran the step eagerly at clip_grad_norm_'s write to the .grad (a reshape to one axis
    # longer than 1 is a view whatever the strides)
    results, captures = [], []
    for compiled in (False, True):
        rt.manual_seed(0)
        bn = rt.nn.BatchNorm1d(5)
        opt = rt.optim.SGD(bn.parameters(), lr=0.1)

        def step(x: rt.Tensor, bn: rt.nn.BatchNorm1d = bn, opt: rt.optim.SGD = opt) -> rt.Tensor:
            loss = (rt.nn.functional.pad(bn(x), (1, 1)) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            rt.nn.utils.clip_grad_norm_(bn.parameters(), 0.5)
            opt.step()
            return loss.detach()

        fn = planner.compile(step) if compiled else step
        rng = np.random.default_rng(0)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            results.append([(fn(f32(rng.standard_normal((1, 5, 4)))).item(),
                             bn.weight.detach().numpy().copy(),
                             bn.running_var.numpy().copy()) for _ in range(3)])
        captures.append(getattr(fn, "captures", 1))
    for (gl, gw, gv), (wl, ww, wv) in zip(results[1], results[0], strict=True):
        assert gl == pytest.approx(wl, rel=1e-5)
        np.testing.assert_allclose(gw, ww, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gv, wv, rtol=1e-5, atol=1e-6)
    assert captures[1] == 1
