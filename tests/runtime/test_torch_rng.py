"""PyTorch's CPU random numbers, bit for bit (runtime._torch_rng): after the same
``manual_seed``, rand, randn, randint, randperm, uniform_, normal_ and the layers' initial
weights equal PyTorch's, and the generator's state is PyTorch's bytes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

torch = pytest.importorskip("torch")

SIZES = [1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 100, 257, 4096 + 5]


def _same(make: Callable[[Any], Any], seed: int = 0) -> None:
    rt.manual_seed(seed)
    torch.manual_seed(seed)
    ours, theirs = make(rt), make(torch)
    ours = ours if isinstance(ours, (list, tuple)) else [ours]
    theirs = theirs if isinstance(theirs, (list, tuple)) else [theirs]
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        a = a.detach().float().numpy() if a.dtype.is_floating_point else a.numpy()
        b = b.detach().float().numpy() if b.dtype.is_floating_point else b.numpy()
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("n", SIZES)
def test_rand_and_randn(n: int, dtype: str) -> None:
    _same(lambda L: [L.rand(n, dtype=getattr(L, dtype)), L.rand(3, n, dtype=getattr(L, dtype))],
          seed=n)
    if dtype in ("float32", "float64"):  # float16 and bfloat16 normals: see below
        _same(lambda L: [L.randn(n, dtype=getattr(L, dtype)),
                         L.randn(2, n, dtype=getattr(L, dtype))], seed=n + 1)


def test_small_randn_keeps_box_mullers_second_sample() -> None:
    """Fewer than 16 normals are drawn a pair at a time, the second kept for the next draw,
    across calls: an odd count leaves one for the next randn."""
    _same(lambda L: [L.randn(3), L.randn(1), L.randn(2, dtype=L.float64), L.rand(2),
                     L.randn(5), L.randn(20), L.randn(1)], seed=4)


@pytest.mark.parametrize("seed", [0, 1, 2**32 + 5, 67280421310721])
def test_interleaved_draws(seed: int) -> None:
    _same(lambda L: [L.rand(5), L.randint(0, 7, (9,)), L.randn(40), L.randperm(12),
                     L.randint(-3, 2**40, (4,)), L.randint(5, 300, (3, 3), dtype=L.int32),
                     L.rand(2, dtype=L.float64), L.randn(17)], seed=seed)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_uniform_and_normal_in_place(dtype: str) -> None:
    def make(L: Any) -> list[Any]:
        t = getattr(L, dtype)
        out = [L.empty(50, dtype=t).uniform_(-2.5, 0.75), L.empty(6, dtype=t).uniform_(3, 4)]
        if dtype in ("float32", "float64"):
            out += [L.empty(50, dtype=t).normal_(1.5, 0.3), L.empty(7, dtype=t).normal_(-1, 2)]
        return out

    _same(make, seed=11)


@pytest.mark.parametrize("name", ["linear", "conv2d", "conv1d_groups", "embedding", "lstm",
                                  "gru", "mha", "encoder", "bilinear", "conv_transpose",
                                  "init_functions"])
def test_layers_start_from_pytorchs_weights(name: str) -> None:
    """The same seed, the same initial weights: a ported script's model starts where
    PyTorch's does."""
    builders: dict[str, Callable[[Any], Any]] = {
        "linear": lambda L: L.nn.Linear(13, 7),
        "conv2d": lambda L: L.nn.Conv2d(3, 8, 3),
        "conv1d_groups": lambda L: L.nn.Conv1d(4, 6, 5, groups=2),
        "embedding": lambda L: L.nn.Embedding(50, 16, padding_idx=3),
        "lstm": lambda L: L.nn.LSTM(5, 7, num_layers=2, bidirectional=True),
        "gru": lambda L: L.nn.GRU(5, 7),
        "mha": lambda L: L.nn.MultiheadAttention(16, 4),
        "encoder": lambda L: L.nn.TransformerEncoderLayer(16, 4, 32),
        "bilinear": lambda L: L.nn.Bilinear(3, 4, 5),
        "conv_transpose": lambda L: L.nn.ConvTranspose2d(3, 4, 3),
        "init_functions": lambda L: L.nn.Sequential(L.nn.Linear(20, 30), L.nn.Linear(30, 5)),
    }

    def make(L: Any) -> list[Any]:
        module = builders[name](L)
        params = list(module.parameters())
        if name == "init_functions":
            L.nn.init.xavier_normal_(params[0])
            L.nn.init.kaiming_normal_(params[2], mode="fan_out")
            L.nn.init.xavier_uniform_(params[1].view(5, 6))
            L.nn.init.kaiming_uniform_(params[3].view(1, 5))
        return params

    _same(make, seed=3)


def test_state_is_pytorchs_bytes() -> None:
    """get_rng_state gives PyTorch's 5056 bytes; either library's state set in the other
    continues with the same numbers."""
    rt.manual_seed(9)
    torch.manual_seed(9)
    for lib in (rt, torch):
        lib.rand(5)
        lib.randn(3)  # keeps a normal sample: part of the state
    ours, theirs = rt.get_rng_state(), torch.get_rng_state()
    assert ours.dtype == rt.uint8 and tuple(ours.shape) == (5056,)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    rt.set_rng_state(rt.tensor(theirs.numpy()))
    np.testing.assert_array_equal(rt.randn(1).numpy(), torch.randn(1).numpy())
    saved = rt.get_rng_state()
    first = rt.randn(20)
    rt.set_rng_state(saved)
    np.testing.assert_array_equal(rt.randn(20).numpy(), first.numpy())
    torch.set_rng_state(torch.from_numpy(saved.numpy()))
    np.testing.assert_array_equal(torch.randn(20).numpy(), first.numpy())


def test_bad_states_are_refused() -> None:
    with pytest.raises(RuntimeError, match="size to be 48"):
        rt.set_rng_state(rt.zeros(48, dtype=rt.uint8))
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        rt.set_rng_state(rt.zeros(5056, dtype=rt.uint8))
    state = rt.get_rng_state().numpy().copy()
    state[8:12] = np.frombuffer(np.uint32(900).tobytes(), np.uint8)  # `left` past 624
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        rt.set_rng_state(rt.tensor(state))


def test_generator_objects() -> None:
    g, tg = rt.Generator().manual_seed(77), torch.Generator().manual_seed(77)
    np.testing.assert_array_equal(rt.randn(33, generator=g).numpy(),
                                  torch.randn(33, generator=tg).numpy())
    np.testing.assert_array_equal(rt.randperm(9, generator=g).numpy(),
                                  torch.randperm(9, generator=tg).numpy())


def test_a_compiled_step_draws_eagers_numbers() -> None:
    """A compiled step's draws (a small randn using the kept sample, a large one) are the
    same numbers eager mode draws, call after call, and leave the generator where eager
    leaves it."""
    w = rt.ones(3, requires_grad=True)

    def step(x: Any) -> Any:
        w.grad = None
        loss = (w * rt.randn(3) + x * rt.randn(40).sum()).sum()
        loss.backward()
        return loss, w.grad

    compiled = planner.compile(step)
    results = {}
    for name, fn in (("eager", step), ("compiled", compiled)):
        rt.manual_seed(5)
        rt.randn(1)  # an odd draw first: a kept sample the step's first randn uses
        results[name] = [[t.detach().numpy().copy() for t in fn(rt.ones(3))]
                         for _ in range(4)] + [[rt.randn(3).numpy()]]
    assert compiled.plan is not None
    for got, want in zip(results["compiled"], results["eager"]):
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)


def test_a_ported_training_script_follows_pytorchs_run() -> None:
    """A script whose data, shuffling and initial weights all come from ``manual_seed(0)``
    runs as PyTorch's does, nothing copied between them: its losses agree to float32
    rounding."""
    def run(L: Any) -> list[float]:
        L.manual_seed(0)
        X, y = L.randn(64, 10), L.randint(0, 3, (64,))
        loader = L.utils.data.DataLoader(L.utils.data.TensorDataset(X, y), batch_size=16,
                                         shuffle=True)
        model = L.nn.Sequential(L.nn.Linear(10, 32), L.nn.ReLU(), L.nn.Linear(32, 3))
        opt = L.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        losses = []
        for _ in range(3):
            for xb, yb in loader:
                opt.zero_grad()
                loss = L.nn.functional.cross_entropy(model(xb), yb)
                loss.backward()
                opt.step()
                losses.append(loss.item())
        return losses

    np.testing.assert_allclose(run(rt), run(torch), rtol=1e-5, atol=1e-6)


def _intel() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            return "GenuineIntel" in f.read(4096)
    except OSError:
        return False


@pytest.mark.skipif(_intel(), reason="PyTorch's CPU bernoulli_(p) draws from MKL's own stream "
                    "on Intel CPUs (elsewhere from its generator, as here)")
@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_masks_and_bernoulli(p: float) -> None:
    def make(L: Any) -> list[Any]:
        F = L.nn.functional
        x = L.arange(105.0).reshape(3, 7, 5)
        return [F.dropout(x, p), L.empty(3, 9).bernoulli_(p), F.dropout2d(L.ones(2, 6, 3, 3), p),
                L.nn.Dropout(p)(L.ones(4, 8, dtype=L.float64)), F.dropout1d(L.ones(3, 4, 5), p)]

    _same(make, seed=int(p * 10))


def test_a_compiled_dropout_step_draws_eagers_masks() -> None:
    model = rt.nn.Sequential(rt.nn.Linear(6, 32), rt.nn.Dropout(0.3), rt.nn.Linear(32, 2))
    opt = rt.optim.SGD(model.parameters(), lr=0.1)

    def step(x: Any) -> Any:
        opt.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        return loss

    x = rt.ones(5, 6)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    results = {}
    for name, fn in (("eager", step), ("compiled", planner.compile(step))):
        model.load_state_dict(start)
        rt.manual_seed(3)
        results[name] = [float(fn(x)) for _ in range(4)] + rt.rand(2).tolist()
    assert results["compiled"] == pytest.approx(results["eager"], rel=1e-6)
    assert results["compiled"][-2:] == results["eager"][-2:]  # the generator left alike


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("shape", "samples", "replacement"), [
    ((10,), 1, False), ((10,), 4, False), ((3, 12), 5, False), ((3, 12), 7, True),
    ((20,), 30, True), ((2, 5), 1, True)])
def test_multinomial_and_exponential(shape: tuple[int, ...], samples: int, replacement: bool,
                                     dtype: str) -> None:
    """multinomial: PyTorch's exponential keys (without replacement, or one sample) and its
    search of the running sum (with): the same categories, a text generator's samples too."""
    w = np.random.default_rng(len(shape) + samples).random(shape).astype(np.float32)
    w[..., 2] = 0  # a category never drawn
    _same(lambda L: [L.multinomial(L.tensor(w).to(getattr(L, dtype)), samples, replacement),
                     L.empty(30, dtype=getattr(L, dtype)).exponential_(2.5)], seed=samples)


@pytest.mark.parametrize("args", [(0.1, 0.5, -0.5, 0.8), (0.0, 1.0, -2.0, 2.0),
                                  (0.0, 1.0, 1.5, 3.0), (0.0, 0.02, -0.04, 0.04)])
def test_trunc_normal_draws_pytorchs_numbers(args: tuple[float, ...]) -> None:
    """PyTorch 2.13's rejection sampling, both branches (a wide window redraws normals, a
    narrow one accepts uniforms by their density)."""
    _same(lambda L: [L.nn.init.trunc_normal_(L.empty(40, 30), *args), L.rand(3)], seed=7)


@pytest.mark.parametrize("shape", [(6, 10), (10, 4), (3, 2, 4)])
def test_orthogonal_draws_pytorchs_normals(shape: tuple[int, ...]) -> None:
    """The normals PyTorch draws, factored as it does (LAPACKs apart: a few ulps)."""
    for seed in (0, 1):
        rt.manual_seed(seed)
        torch.manual_seed(seed)
        ours = rt.nn.init.orthogonal_(rt.empty(*shape), 1.5).numpy()
        theirs = torch.nn.init.orthogonal_(torch.empty(*shape), 1.5).numpy()
        np.testing.assert_allclose(ours, theirs, atol=2e-6)
        assert rt.rand(1).item() == torch.rand(1).item()  # the same draws made


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_other_in_place_fills(dtype: str) -> None:
    """cauchy_, log_normal_ (Box-Muller pairs, the kept sample), geometric_, normal of two
    numbers and bernoulli with a number: PyTorch's CPU kernels' numbers."""
    def make(L: Any) -> list[Any]:
        t = getattr(L, dtype)
        return [L.empty(20, dtype=t).cauchy_(1.0, 2.0), L.empty(7, dtype=t).log_normal_(0.5, 0.3),
                L.empty(20, dtype=t).geometric_(0.3), L.empty(9, dtype=L.int64).geometric_(0.6),
                L.normal(2.0, 3.0, size=(20,), dtype=t), L.randn(3, dtype=t)]

    _same(make, seed=5)


@pytest.mark.skipif(_intel(), reason="PyTorch's CPU bernoulli_(p) draws from MKL's own stream "
                    "on Intel CPUs (elsewhere from its generator, as here)")
def test_bernoulli_of_a_number() -> None:
    _same(lambda L: [L.bernoulli(L.zeros(20), 0.3), L.zeros(3, 4).bernoulli(0.7)], seed=6)


def test_distributions_sample_pytorchs_numbers() -> None:
    """Normal, Uniform, Bernoulli, Exponential, Cauchy and Geometric draw as PyTorch's
    distributions do (Laplace too, but where float32 log1p rounds apart)."""
    def make(L: Any) -> list[Any]:
        d = L.distributions
        return [d.Normal(L.zeros(3), L.ones(3)).sample((4,)), d.Uniform(0.0, 2.0).sample((5,)),
                d.Bernoulli(L.tensor([0.3, 0.6])).sample((4,)),
                d.Exponential(L.tensor([2.0, 0.5])).sample((10,)),
                d.Cauchy(L.tensor([0.5]), L.tensor([2.0])).rsample((10,)),
                d.Geometric(L.tensor([0.3, 0.7])).sample((10,))]

    _same(make, seed=1)


def test_linspace_and_arange_are_pytorchs_points() -> None:
    """Not random, but where a seeded script's numbers start too: linspace's halves with
    PyTorch's fused multiply-adds, arange's vectorized loop (a base rounded to the dtype every
    8 float32 or 4 float64 lanes, two vectors at a time)."""
    rng = np.random.default_rng(5)
    for _ in range(40):
        a, b = (float(v) for v in rng.normal(0, 30, 2))
        n = int(rng.integers(0, 300))
        step = float(rng.choice([0.37, 0.1, 1.3, 0.013]))
        for dt in ("float32", "float64", "float16", "int64"):
            _same(lambda L, a=a, b=b, n=n, dt=dt: L.linspace(
                int(a) if dt == "int64" else a, int(b) if dt == "int64" else b, n,
                dtype=getattr(L, dt)))
        for dt in ("float32", "float64"):
            _same(lambda L, a=a, b=b, step=step, dt=dt: L.arange(a, a + abs(b) + 1, step,
                                                                  dtype=getattr(L, dt)))


@pytest.mark.skipif(_intel(), reason="PyTorch's CPU bernoulli_(p) draws from MKL's own stream "
                    "on Intel CPUs (elsewhere from its generator, as here)")
def test_alpha_dropout_and_rrelu() -> None:
    """alpha_dropout's noise is bernoulli_(1 - p); rrelu draws a slope for each element at
    most 0 only (its value and its gradient there: PyTorch's noise)."""
    def make(L: Any) -> list[Any]:
        F = L.nn.functional
        x = L.linspace(-2, 2, 41).requires_grad_()
        y = F.rrelu(x, 0.1, 0.3, training=True)
        y.sum().backward()
        return [F.alpha_dropout(L.ones(20), 0.5, True),
                F.feature_alpha_dropout(L.arange(24.0).reshape(2, 4, 3), 0.3, True),
                y, x.grad, F.rrelu(L.linspace(-1, 1, 9, dtype=L.float64), training=True)]

    _same(make, seed=5)
