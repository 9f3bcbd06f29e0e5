"""rt.nn's modules against torch on PyTorch's ModuleInfo samples (tools/moduleinfo_diff.py):
the tool runs and finds a planted difference, cheap modules agree sample for sample, and
the differences its runs found, each compared with torch."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # torch.testing._internal's module_db needs it

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import moduleinfo_diff  # noqa: E402

# modules whose samples (float64, a few each) run in well under a second together
CHEAP = ["Linear", "BatchNorm1d", "LayerNorm", "Conv1d", "LazyConv1d", "MaxPool2d", "GELU",
         "Embedding", "PReLU", "GRUCell", "CrossEntropyLoss", "FractionalMaxPool2d",
         "ReflectionPad1d", "CircularPad2d"]


def _info(name: str) -> Any:
    return next(i for i in moduleinfo_diff.module_db if i.module_cls.__name__ == name)


def test_the_tool_runs_on_linear(capsys: pytest.CaptureFixture[str]) -> None:
    totals = moduleinfo_diff.main(["Linear", "--dtypes", "float64", "--samples", "2"])
    assert totals["same"] > 0 and totals["differ"] == 0
    assert "Linear: ok" in capsys.readouterr().out


def test_the_tool_finds_a_gradient_difference(monkeypatch: pytest.MonkeyPatch) -> None:
    forward = rt.nn.Linear.forward

    def wrong(self: Any, input: Any) -> Any:  # noqa: A002 (the sample passes input=)
        return forward(self, input.detach()) + 0 * input.sum()  # the same values, no input grad

    monkeypatch.setattr(rt.nn.Linear, "forward", wrong)
    report = moduleinfo_diff.check_module(_info("Linear"), [torch.float64], False, 1,
                                          np.random.default_rng(0))
    assert report.differences and "grad input0" in report.differences[0]


def test_the_tool_finds_a_warning_torch_does_not_give(monkeypatch: pytest.MonkeyPatch) -> None:
    import warnings

    forward = rt.nn.Linear.forward

    def warns(self: Any, input: Any) -> Any:  # noqa: A002
        warnings.warn("planted", UserWarning, stacklevel=2)
        return forward(self, input)

    monkeypatch.setattr(rt.nn.Linear, "forward", warns)
    report = moduleinfo_diff.check_module(_info("Linear"), [torch.float64], False, 1,
                                          np.random.default_rng(0))
    assert report.differences and "UserWarning: planted" in report.differences[0]


@pytest.mark.parametrize("name", CHEAP)
def test_module_agrees_with_torch_on_its_samples(name: str) -> None:
    report = moduleinfo_diff.check_module(_info(name), [torch.float64], False, 3,
                                          np.random.default_rng(0), strides=True)
    assert report.counts["same"] > 0
    assert not report.differences, report.differences[0]


@pytest.mark.parametrize("dims", [2, 3])
def test_fractional_max_pool_compiles_without_falling_back(dims: int) -> None:
    """Its window starts were computed in numpy from the samples' values (.numpy(): the
    whole step ran eagerly); now tensor ops, captured with the samples the step draws."""
    import warnings

    import planner

    cls = getattr(rt.nn, f"FractionalMaxPool{dims}d")
    pool = cls(2, output_ratio=0.5, return_indices=True)
    x = rt.from_numpy(np.random.default_rng(0).standard_normal((2, 3) + (7,) * dims))

    def step(x: Any) -> Any:
        out, idx = pool(x)
        return out, idx, rt.autograd.grad((out * out).sum(), [x])[0]

    x.requires_grad_()
    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for seed in (1, 1, 2):
            rt.manual_seed(seed)
            want = step(x)
            rt.manual_seed(seed)
            got = compiled(x)
            for w, g in zip(want, got):
                np.testing.assert_array_equal(g.detach().numpy(), w.detach().numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fractional_max_pool_windows_as_torchs(dtype: str) -> None:
    """The window starts in the input's precision (float32's alpha rounds), as torch's."""
    gen = np.random.default_rng(3)
    x = torch.from_numpy(gen.standard_normal((2, 3, 11, 13))).to(getattr(torch, dtype))
    samples = torch.from_numpy(gen.uniform(0, 1, (2, 3, 2))).to(x.dtype)
    want, want_idx = torch.nn.functional.fractional_max_pool2d(
        x, (3, 2), output_size=(5, 6), return_indices=True, _random_samples=samples)
    got, got_idx = rt.nn.functional.fractional_max_pool2d(
        rt.from_numpy(x.numpy()), (3, 2), output_size=(5, 6), return_indices=True,
        _random_samples=rt.from_numpy(samples.numpy()))
    np.testing.assert_array_equal(got_idx.numpy(), want_idx.numpy())
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def _ctc_inputs(lib: Any) -> tuple[Any, Any]:
    gen = np.random.default_rng(5)
    logits = gen.standard_normal((12, 3, 6))
    targets = gen.integers(1, 6, 4 + 2 + 5)
    if lib is torch:
        return torch.from_numpy(logits).requires_grad_(), torch.from_numpy(targets)
    return rt.from_numpy(logits).requires_grad_(), rt.from_numpy(targets)


def test_ctc_loss_of_1d_targets_with_int_lengths_compiles_without_falling_back() -> None:
    """1-D targets were split by reading them and their lengths (.numpy(), .tolist(): the
    whole step ran eagerly) though the lengths were Python ints; now a gather at the given
    lengths, captured. Values and gradients as torch's."""
    import warnings

    import planner

    lengths = ((12, 10, 11), (4, 2, 5))

    def step(logits: Any, targets: Any) -> Any:
        loss = rt.nn.CTCLoss()(logits.log_softmax(2), targets, *lengths)
        return loss, rt.autograd.grad(loss, [logits])[0]

    x, t = _ctc_inputs(torch)
    want = torch.nn.CTCLoss()(x.log_softmax(2), t, *lengths)
    want.backward()
    rx, rtgt = _ctc_inputs(rt)
    compiled = planner.compile(step)
    eager = step(rx, rtgt)
    np.testing.assert_allclose(eager[0].detach().numpy(), want.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(eager[1].numpy(), x.grad.numpy(), rtol=1e-9, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            got = compiled(rx, rtgt)
            for w, g in zip(eager, got):  # fused kernels sum in another order: ulps
                np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(),
                                           rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("kw", [dict(label_smoothing=0.1), dict(reduction="none"),
                                dict(out_features=(2,)), dict(target_dtype="int32")])
def test_linear_cross_entropy_warns_as_torch_when_its_options_cannot_apply(
        kw: dict[str, Any]) -> None:
    """PyTorch warns that ``options`` are ignored where its chunked path cannot run (label
    smoothing, a K-dimensional weight, another target dtype); rt was silent."""
    import warnings

    kw = dict(kw)
    out_features, target_dtype = kw.pop("out_features", ()), kw.pop("target_dtype", "int64")
    gen = np.random.default_rng(1)
    x = gen.standard_normal((4, 5))
    w = gen.standard_normal((3, *out_features, 5))
    t = gen.integers(0, 3, (4, *out_features))
    options = torch.nn.modules.loss.LinearCrossEntropyOptions()
    said = []
    for lib, make in ((torch, torch.from_numpy), (rt, rt.from_numpy)):
        target = make(t).to(getattr(lib, target_dtype))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:  # an int32 target: torch's cross_entropy refuses it, after the warning
                lib.nn.functional.linear_cross_entropy(make(x), make(w), target,
                                                       options=options, **kw)
                error = None
            except RuntimeError as e:
                error = str(e)
        said.append(([(w.category, str(w.message)) for w in caught], error))
    assert said[1] == said[0]


def _indexed(lib: Any, x: Any) -> list[Any]:
    i = lib.tensor([0, 2, 1])
    return [x[:, i], x[..., i], lib.index_select(x, 1, i), x.t()[:, i], x[i][:, i],
            lib.nn.ReflectionPad1d(2)(x), lib.nn.ReplicationPad2d(1)(x[None]),
            lib.nn.CircularPad1d(1)(x)]


def test_array_indexed_results_are_row_major_as_torchs() -> None:
    """numpy's x[:, i] keeps the indexed dim innermost: rt's index_select and reflect,
    replicate and circular pads gave non-contiguous results whose .view(-1) failed; PyTorch
    writes them row-major."""
    x = np.arange(12.0).reshape(3, 4)
    for want, got in zip(_indexed(torch, torch.from_numpy(x)), _indexed(rt, rt.from_numpy(x))):
        strides = [[s for s, n in zip(t.stride(), t.shape) if n > 1] for t in (want, got)]
        assert strides[1] == strides[0] and got.is_contiguous()  # a size-1 dim's: any
        np.testing.assert_array_equal(got.view(-1).numpy(), want.view(-1).numpy())


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("bias", [True, False])
def test_conv_output_is_row_major_so_view_flattens_it(dims: int, bias: bool) -> None:
    """The classic flatten, conv(x).view(n, -1): rt's conv output kept the GEMM's
    channel-major layout (the bias added after the permute; conv3d's a permuted view), so
    view raised; PyTorch's is row-major. Values as torch's."""
    x = np.random.default_rng(2).standard_normal((2, 3) + (5,) * dims)
    tm = getattr(torch.nn, f"Conv{dims}d")(3, 4, 2, bias=bias).double()
    rm = getattr(rt.nn, f"Conv{dims}d")(3, 4, 2, bias=bias).double()
    rm.load_state_dict({k: rt.from_numpy(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})
    want, got = tm(torch.from_numpy(x)), rm(rt.from_numpy(x))
    assert got.stride() == want.stride()
    np.testing.assert_allclose(got.view(2, -1).detach().numpy(),
                               want.view(2, -1).detach().numpy(), rtol=1e-12)
