"""bfloat16 steps compiled: a step under ``rt.autocast("cpu", dtype=rt.bfloat16)``, a step on
bfloat16 parameters and a bfloat16 elementwise chain with reductions are captured and replayed
(no fallback to eager, which warns), their fused kernels storing bfloat16 (codegen.ir's
storage-only dtype: loaded as float32, computed in float32, rounded once at the store, as
torch.compile's Inductor does). The interpreter computes every step as eager mode does (the
same bits); fused plans equal eager within bfloat16's rounding, and a fused chain is no less
accurate than eager's rounding after every op. On the CPU (LLVM) and on the fake GPU whose
kernels are the CUDA C built for the host (tests/planner/test_cuda_compiled.py's host_gpu)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from planner.steps import CommitStep, PrimitiveStep
from tests.fakecuda import fake_cuda_fixture  # noqa: F401
from tests.planner.test_cuda_compiled import host_gpu_fixture  # noqa: F401

LR = 1e-3
STEPS = 3
EPS = 2.0 ** -8  # bfloat16's relative spacing at 1 (8 bits of significand)


def _f64(t: Any) -> np.ndarray:
    return t.detach().cpu().float().numpy().astype(np.float64)


def _compile(fn: Callable[..., Any], backend: str) -> Any:
    return planner.compile(fn, backend=backend, background=False)


def _replayed(step: Any, *args: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a fallback to eager warns
        return step(*args)


def _bf16_kernels(step: Any) -> list[Any]:
    """The plan's kernels that read or write bfloat16."""
    return [k for k in step.plan.kernels
            if "bfloat16" in {x.dtype for x in (*k.kernel.inputs, *k.kernel.outputs)}]


def _mlp(params_bf16: bool) -> tuple[Any, Any]:
    rt.manual_seed(0)
    nn = rt.nn
    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.LayerNorm(64), nn.Linear(64, 10))
    if params_bf16:
        model = model.to(rt.bfloat16)
    return model, rt.optim.AdamW(model.parameters(), lr=LR)


def _train_step(model: Any, opt: Any, autocast: bool) -> Callable[..., Any]:
    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        with rt.autocast("cpu", dtype=rt.bfloat16, enabled=autocast):
            logits = model(x)
            loss = rt.nn.functional.cross_entropy(logits.float(), y)
        loss.backward()
        grads = [p.grad.clone() for p in model.parameters()]
        opt.step()
        return loss.detach(), grads
    return step


def _runs(backend: str, autocast: bool) -> tuple[list[Any], list[Any], Any, Any, Any]:
    """Eager and compiled runs of the MLP's AdamW step (losses and gradients per step), both
    models, and the compiled step."""
    rt.manual_seed(1)
    x, y = rt.randn(32, 16), rt.randint(0, 10, (32,))
    if not autocast:
        x = x.to(rt.bfloat16)
    eager_model, eager_opt = _mlp(not autocast)
    model, opt = _mlp(not autocast)
    eager = _train_step(eager_model, eager_opt, autocast)
    compiled = _compile(_train_step(model, opt, autocast), backend)
    want = [eager(x, y) for _ in range(STEPS)]
    got = [_replayed(compiled, x, y) for _ in range(STEPS)]
    return want, got, eager_model, model, compiled


@pytest.mark.parametrize("autocast", [True, False], ids=["autocast", "bf16_params"])
def test_interpreted_bf16_step_is_eagers_bits(autocast: bool) -> None:
    """Steps that are no kernel compute bfloat16 as eager does: float32 inside, one rounding
    (a plan's column sum of a bfloat16 gradient rounded at every add, before: a Linear's
    bias gradient under autocast came out as zeros)."""
    want, got, eager_model, model, step = _runs("interpreter", autocast)
    assert step.captures == 1 and not step.plan.kernels
    (loss, grads), (loss_c, grads_c) = want[0], got[0]  # the same parameters: the same bits
    assert loss.item() == loss_c.item()
    for g, gc in zip(grads, grads_c, strict=True):
        assert g.dtype == gc.dtype
        np.testing.assert_array_equal(_f64(gc), _f64(g))
    if autocast:  # float32 parameters: AdamW's float32 update
        for p, pc in zip(eager_model.parameters(), model.parameters(), strict=True):
            np.testing.assert_allclose(_f64(pc), _f64(p), rtol=1e-5, atol=LR * 1e-3)


@pytest.mark.parametrize("autocast", [True, False], ids=["autocast", "bf16_params"])
def test_fused_bf16_step_equals_eager_within_bf16_rounding(autocast: bool) -> None:
    want, got, eager_model, model, step = _runs("llvm", autocast)
    assert step.captures == 1 and _bf16_kernels(step)
    for (loss, grads), (loss_c, grads_c) in zip(want, got, strict=True):
        np.testing.assert_allclose(loss_c.item(), loss.item(), rtol=4 * EPS)
        for g, gc in zip(grads, grads_c, strict=True):
            assert g.dtype == gc.dtype and g.shape == gc.shape
            scale = np.abs(_f64(g)).max()
            np.testing.assert_allclose(_f64(gc), _f64(g), rtol=0, atol=4 * EPS * scale)
    for p, pc in zip(eager_model.parameters(), model.parameters(), strict=True):
        assert p.dtype == pc.dtype
        # AdamW moves a parameter about LR a step; a bfloat16 one, by whole spacings of it
        spacing = EPS * np.abs(_f64(p)) if not autocast else 0
        assert (np.abs(_f64(pc) - _f64(p)) <= STEPS * LR + 2 * spacing).all()


def _chain(x: Any, w: Any) -> Any:
    x.grad = None
    y = ((x * w).tanh() * 1.5 + x * x).sum(-1)  # a row sum of a bfloat16 chain
    y.backward(rt.ones_like(y))
    return y.detach(), x.grad


def _all_fused(step: Any) -> bool:
    """Whether every value of the plan is computed by its bfloat16 kernels (forward and
    backward: one kernel here), no step by eager's bfloat16 wrapper."""
    return bool(_bf16_kernels(step)) and not any(
        isinstance(s, PrimitiveStep) for s in step.plan.steps)


def _chain_reference(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The chain and its gradient in float64 over the same bfloat16 inputs."""
    t = np.tanh(x * w)
    return (t * 1.5 + x * x).sum(-1), 1.5 * (1 - t * t) * w + 2 * x


def _chain_inputs() -> tuple[Any, Any]:
    rt.manual_seed(2)
    return rt.randn(48, 300).to(rt.bfloat16), rt.randn(300).to(rt.bfloat16)


def _assert_chain_close(got: tuple[Any, Any], ref: tuple[np.ndarray, np.ndarray],
                        x: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """Each result within bfloat16 rounding of the float64 reference (a row sum: of its
    terms' magnitudes); returns the largest errors, relative to those bounds."""
    terms = np.abs(np.tanh(x * w) * 1.5) + x * x
    bounds = (4 * EPS * terms.sum(-1), 4 * EPS * (1.5 * np.abs(w) + 2 * np.abs(x)) + 1e-30)
    errs = []
    for g, r, bound in zip(got, ref, bounds, strict=True):
        assert g.dtype is rt.bfloat16
        err = np.abs(_f64(g) - r) / bound
        assert err.max() <= 1, err.max()
        errs.append(float(err.max()))
    return errs[0], errs[1]


def test_fused_bf16_chain_is_as_accurate_as_eager() -> None:
    x0, w = _chain_inputs()
    x, w64 = _f64(x0), _f64(w)
    ref = _chain_reference(x, w64)
    want = _chain(x0.clone().requires_grad_(), w)
    step = _compile(_chain, "llvm")
    got = _replayed(step, x0.clone().requires_grad_(), w)
    assert _all_fused(step)
    eager_err = _assert_chain_close(want, ref, x, w64)
    fused_err = _assert_chain_close(got, ref, x, w64)
    # each op rounded as eager rounds it: as accurate (a little slack:
    # a float32 sum's order differs)
    assert fused_err[0] <= eager_err[0] * 1.05 and fused_err[1] <= eager_err[1] * 1.05


def test_fused_bf16_chain_on_the_gpus_cuda_kernels(host_gpu: Any) -> None:
    """The same chain planned on the fake GPU: its kernels, CUDA C reading and writing
    bfloat16 with integer ops, built and launched on the host; equal to the LLVM plan's
    within a float32 sum's reordering, which rounds to at most one bfloat16 spacing apart."""
    x0, w = _chain_inputs()
    step = _compile(_chain, "cuda")
    got = _replayed(step, x0.to("cuda").requires_grad_(), w.to("cuda"))
    kernels = _bf16_kernels(step)
    assert _all_fused(step) and all(k.language == "cuda" and "bp_bf16_store(" in k.source for k in kernels)
    x, w64 = _f64(x0), _f64(w)
    _assert_chain_close(got, _chain_reference(x, w64), x, w64)
    cpu = _replayed(_compile(_chain, "llvm"), x0.clone().requires_grad_(), w)
    for g, c in zip(got, cpu, strict=True):
        np.testing.assert_allclose(_f64(g), _f64(c), rtol=2 * EPS, atol=0)


def test_bf16_step_scalars_round_as_eager() -> None:
    """A kernel of one rounding op (and an exact one) rounds as eager: a Python number of
    an add converted to bfloat16 first (0.3 is 0.30078125), a 0-d float32 factor of a mul
    kept in float32 (the capture does not cast it to bfloat16)."""
    rt.manual_seed(3)
    x, t = rt.randn(256, 300).to(rt.bfloat16), rt.tensor(0.3)

    def add(x: Any) -> Any:
        return (x + 0.3).abs()

    def mul(x: Any, t: Any) -> Any:
        return (x * t).neg()

    for fn, args in ((add, (x,)), (mul, (x, t))):
        want = fn(*args)
        for backend in ("interpreter", "llvm"):
            step = _compile(fn, backend)
            got = _replayed(step, *args)
            assert got.dtype is rt.bfloat16
            np.testing.assert_array_equal(_f64(got), _f64(want), err_msg=f"{fn.__name__} "
                                                                         f"{backend}")
            assert bool(step.plan.kernels) == (backend == "llvm")


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast")  # NaN's, in numpy
def test_lone_cast_to_bf16_is_a_kernel_with_eagers_bits() -> None:
    """A large cast to bfloat16 alone (autocast's cast of a weight) is a kernel, rounding as
    ml_dtypes does for eager: ties to even, overflow to inf, NaNs, subnormals."""
    rng = np.random.default_rng(4)
    bits = rng.integers(0, 1 << 32, (256, 300), dtype=np.uint32)
    bits[0, :6] = [0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x7FC00000, 0xFF800001, 0x00008000]
    x = rt.from_numpy(bits.view(np.float32))

    def cast(x: Any) -> Any:
        return x.to(rt.bfloat16)

    step = _compile(cast, "llvm")
    got = _replayed(step, x)
    assert [k.kernel.outputs[0].dtype for k in step.plan.kernels] == ["bfloat16"]
    np.testing.assert_array_equal(got.numpy().view(np.uint16),
                                  cast(x).numpy().view(np.uint16))


def test_bf16_comparison_with_a_number_rounds_it_as_eager() -> None:
    """x > 0.3 of bfloat16 x compares with 0.30078125, as eager does (x equal to it: False)."""
    x = rt.tensor(np.resize(np.array([0.30078125, 0.298828125, 0.3046875, -1.0], np.float32),
                            (256, 300))).bfloat16()

    def pick(x: Any) -> Any:
        return rt.where(x > 0.3, x, -x)

    step = _compile(pick, "llvm")
    got = _replayed(step, x)
    assert _bf16_kernels(step)
    np.testing.assert_array_equal(_f64(got), _f64(pick(x)))


def test_bf16_update_committed_into_the_parameters() -> None:
    """A large bfloat16 parameter's SGD update with momentum is a kernel storing into the
    parameter and its momentum buffer at write-back (a CommitStep), within a bfloat16
    spacing or two of eager's almost everywhere."""
    def run(wrap: Callable[..., Any]) -> tuple[np.ndarray, Any]:
        rt.manual_seed(0)
        lin = rt.nn.Linear(512, 512).to(rt.bfloat16)
        opt = rt.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)
        x = rt.randn(64, 512).to(rt.bfloat16)

        def step(x: Any) -> None:
            opt.zero_grad()
            lin(x).float().pow(2).mean().backward()
            opt.step()

        run = wrap(step)
        for _ in range(STEPS):
            _replayed(run, x)
        assert lin.weight.dtype is rt.bfloat16
        return _f64(lin.weight), run

    want, _ = run(lambda f: f)
    got, step = run(lambda f: _compile(f, "llvm"))
    commits = [s for s in step.plan.steps if isinstance(s, CommitStep)]
    assert commits and all(o.dtype == "bfloat16" for s in commits for o in s.kernel.outputs)
    # a spacing or two of the value, or of the largest where an update cancels the value
    # (eager's rounding of each op, of p's, there)
    spacing = EPS * np.maximum(np.abs(want), np.abs(got))
    assert (np.abs(got - want) <= 2 * spacing + EPS * np.abs(want).max()).all()
    assert np.mean(np.abs(got - want) <= 2 * spacing) > 0.99


@pytest.mark.parametrize("name", ["SGD", "RMSprop", "Adam", "AdamW"])
def test_a_bfloat16_optimizer_step_compiled_has_eagers_bits(name: str) -> None:
    """A captured hyperparameter meets a bfloat16 parameter in float32, as eager's Python
    number does (it was rounded to bfloat16 first: SGD's momentum buffers differed in 15 of
    64 entries after three steps)."""
    def run(compiled: bool) -> np.ndarray:
        rt.manual_seed(0)
        p = rt.randn(64).bfloat16().requires_grad_()
        kw = {"lr": 1e-3, "momentum": 0.9} if name == "SGD" else {"lr": 1e-3}
        opt = getattr(rt.optim, name)([p], **kw)
        g = rt.randn(64).bfloat16()

        def step(g: Any) -> None:
            opt.zero_grad()
            (p * g).sum().backward()
            opt.step()

        call = planner.compile(step, backend="interpreter") if compiled else step
        for _ in range(3):
            call(g)
        return p.detach().float().numpy()

    np.testing.assert_array_equal(run(True), run(False))


def test_fused_bf16_ops_round_between_them_as_eager() -> None:
    """Each bfloat16 op of a kernel rounds its float32 result, as eager mode's (and PyTorch's)
    op does: a bfloat16 tanh's gradient, 1 - y * y times the incoming one, was up to 3e-3 off
    eager mode's where the kernel rounded only what it stored."""
    def step(x: Any) -> Any:
        x.grad = None
        loss = x.to(rt.bfloat16).tanh().sum()
        loss.backward()
        return loss.detach(), x.grad

    rt.manual_seed(0)
    x = rt.randn(3, 8, requires_grad=True)
    want = step(x)
    compiled = _compile(step, "llvm")
    got = _replayed(compiled, x)
    assert _bf16_kernels(compiled)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(_f64(g), _f64(w))
    torch = pytest.importorskip("torch")
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    tx.to(torch.bfloat16).tanh().sum().backward()
    np.testing.assert_array_equal(_f64(got[1]), tx.grad.numpy())
