"""Compiled-vs-eager differences found by running PyTorch's OpInfo sample inputs through
planner.compile: each compiled result equals eager mode's on the same inputs."""

from __future__ import annotations

import math
import warnings

import pytest

import planner
import runtime as rt


def _same(a: rt.Tensor, b: rt.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return all((x == y) or (math.isnan(x) and math.isnan(y))
               for x, y in zip(a.flatten().tolist(), b.flatten().tolist()))


STEPS = {
    "mean": lambda x: rt.mean(x),
    "mean_of_fused": lambda x: rt.mean(x * 2 + 1),
    "mean_dim0_of_fused": lambda x: rt.mean(x * 2 + 1, 0),
    "mean_dim1_of_fused": lambda x: rt.mean(x * 2 + 1, 1),
    "exp_mean": lambda x: x.exp().mean(),
    "std_biased": lambda x: rt.std(x, unbiased=False),
    "var_mean": lambda x: rt.var_mean(x * 3, 0, correction=0)[1],
    "sum_of_fused": lambda x: (x * 2 + 1).sum(),
}


@pytest.mark.parametrize("shape", [(0, 5), (3, 0), (2, 3)])
def test_means_of_no_elements_are_nan_as_eager(shape):
    """A fused mean scaled each row's sum by 1/count: over no rows the kernel left 0 (and
    over a count of 0 the kernel failed to build, with a warning); eager's is nan."""
    def fn(x):
        return tuple(STEPS[name](x) for name in sorted(STEPS))

    x = rt.zeros(*shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # eager's degrees-of-freedom warning
        warnings.simplefilter("error", RuntimeWarning)  # no "failed to build" fallback
        want = fn(x)
        step = planner.compile(fn)
        for _ in range(2):  # the capture, the replay
            got = step(x)
            for name, a, b in zip(sorted(STEPS), got, want):
                assert _same(a, b), name


def test_mean_of_no_elements_backward_as_eager():
    def step(w):
        loss = (w * 2).mean(0).sum()
        return loss, rt.autograd.grad(loss, [w])[0]

    w = rt.zeros(0, 4, requires_grad=True)
    want = step(w)
    got = planner.compile(step)(w)
    assert _same(got[0], want[0]) and _same(got[1], want[1])


@pytest.mark.parametrize("op", ["atleast_1d", "mT", "channel_shuffle", "adaptive_avg_pool3d"])
def test_returned_view_of_a_copied_constant_is_made_after_its_copy(op):
    """The gradient of a sum is a view (expand) of a constant; a returned view of a constant
    reads a copy made at every call, a step the pass added after the view, so the plan ran
    the view first (UnboundLocalError in the plan's program)."""
    fns = {
        "atleast_1d": lambda t: rt.atleast_1d(t),
        "mT": lambda t: t.mT,
        "channel_shuffle": lambda t: rt.nn.functional.channel_shuffle(t, 2),
        "adaptive_avg_pool3d": lambda t: rt.nn.functional.adaptive_avg_pool3d(t, 1),
    }

    def step(x):
        out = fns[op](x)
        return out, rt.autograd.grad([out.sum()], [x])[0]

    x = rt.randn(2, 4, 9, 9, dtype=rt.float64, requires_grad=True)  # > 512: a view of a constant
    want = step(x)
    compiled = planner.compile(step)
    for _ in range(2):
        got = compiled(x)
        assert rt.equal(got[0], want[0]) and rt.equal(got[1], want[1])
    assert got[1].stride() == want[1].stride()  # an expanded view, as eager's (stride 0)


def test_topk_kthvalue_mode_pick_tied_indices_as_eager_at_each_replay():
    """Among equal values eager mode returns PyTorch's index (its kernel's libstdc++
    selection, emulated on the host); a captured step kept the stable sort's, silently
    another index. The pick is a primitive now, made at each replay."""
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(0)

    def step(x):
        return (rt.topk(x, 5, 1), rt.topk(x, 30, 1, sorted=False), rt.kthvalue(x, 7, 1),
                rt.mode(x, 1), rt.topk(x.float(), 3, 0, largest=False))

    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="planner")
        for _ in range(3):  # the capture, then replays on other values with other ties
            x = rt.from_numpy(rng.integers(0, 3, (6, 40)))
            for got, want in zip(compiled(x), step(x)):
                assert rt.equal(got.values, want.values)
                assert rt.equal(got.indices, want.indices)
    assert compiled.captures == 1


def test_tied_picks_are_pytorchs():
    torch = pytest.importorskip("torch")
    np = pytest.importorskip("numpy")
    a = np.random.default_rng(1).integers(0, 3, (6, 40))
    x, t = rt.from_numpy(a.copy()), torch.from_numpy(a.copy())
    got = planner.compile(lambda x: (rt.topk(x, 5, 1), rt.kthvalue(x, 7, 1), rt.mode(x, 1)))(x)
    want = (torch.topk(t, 5, 1), torch.kthvalue(t, 7, 1), torch.mode(t, 1))
    for g, w in zip(got, want):
        assert g.indices.tolist() == w.indices.tolist()


def test_host_special_functions_are_captured_and_computed_at_each_replay():
    """polygamma(n >= 1), special.zeta and igamma/igammac read their inputs' values at
    capture (a host series), so a step using one ran eagerly; they are a primitive now."""
    def step(x, a):
        y = (rt.polygamma(2, x).sum() + rt.special.zeta(3.0, x + a).sum()
             + rt.igamma(a.detach(), x).sum() + rt.igammac(a.detach(), x).sum()
             + rt.distributions.Gamma(a.detach(), rt.ones(5, dtype=rt.float64)).cdf(x).sum())
        return y, rt.autograd.grad(y, [x, a])

    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="planner")
        for scale in (1.0, 2.0, 0.5):  # the capture, then replays on other values
            x = (rt.linspace(0.5, 1.5, 5, dtype=rt.float64) * scale).requires_grad_()
            a = rt.linspace(1.0, 2.0, 5, dtype=rt.float64).requires_grad_()
            got, want = compiled(x, a), step(x, a)
            assert float(got[0]) == pytest.approx(float(want[0]), rel=1e-12)
            for g, w in zip(got[1], want[1]):
                assert rt.allclose(g, w, rtol=1e-12, atol=1e-12)
    assert compiled.captures == 1
