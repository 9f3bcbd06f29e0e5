"""h9's differential sweep of nn losses, normalization layers, activations and the Module API
against PyTorch: each test pins a discrepancy that was found and fixed."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _outcome(fn: Any) -> tuple[str, str]:
    """("ok", result dtype name) or (the error's builtin type name, message)."""
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - the comparison is the point
        kind = next(k for k in type(e).__mro__ if k.__module__ == "builtins")
        return kind.__name__, str(e)
    return "ok", str(out.dtype).split(".")[-1]


def _both(make: Any) -> None:
    """``make(lib)`` is a thunk: the same outcome in PyTorch and here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _outcome(make(rt)) == _outcome(make(torch))


_DTYPES = ["float32", "float64", "float16", "bfloat16"]


@pytest.mark.parametrize(("dt_in", "dt_tgt"), [
    (a, b) for a in _DTYPES for b in _DTYPES if a != b or a == "bfloat16"])
def test_binary_cross_entropy_target_dtype_must_match_input(dt_in: str, dt_tgt: str) -> None:
    x = np.random.RandomState(0).rand(3, 4) * 0.8 + 0.1
    t = np.random.RandomState(1).rand(3, 4)
    _both(lambda lib: lambda: lib.nn.functional.binary_cross_entropy(
        lib.tensor(x).to(getattr(lib, dt_in)), lib.tensor(t).to(getattr(lib, dt_tgt))))


def test_binary_cross_entropy_int_input_float_target_names_the_dtype_first() -> None:
    _both(lambda lib: lambda: lib.nn.functional.binary_cross_entropy(
        lib.ones(3, 4).int(), lib.ones(3, 4)))


@pytest.mark.parametrize(("dt_in", "dt_w"), [
    ("float32", "float64"), ("float16", "float32"), ("float16", "float64"),
    ("bfloat16", "float32"), ("bfloat16", "float64"), ("bfloat16", "float16"),
    ("bfloat16", "int32")])
def test_binary_cross_entropy_weight_keeps_input_dtype(dt_in: str, dt_w: str) -> None:
    x = np.random.RandomState(0).rand(3, 4) * 0.8 + 0.1
    t = np.random.RandomState(1).rand(3, 4)
    w = np.random.RandomState(2).rand(4) * 3

    def make(lib: Any) -> Any:
        def run() -> Any:
            xi = lib.tensor(x).to(getattr(lib, dt_in)).requires_grad_()
            out = lib.nn.functional.binary_cross_entropy(
                xi, lib.tensor(t).to(xi.dtype), weight=lib.tensor(w).to(getattr(lib, dt_w)),
                reduction="none")
            out.float().sum().backward()
            assert xi.grad.dtype == xi.dtype
            return out
        return run
    _both(make)


def test_binary_cross_entropy_bfloat16_value_and_gradient() -> None:
    rng = np.random.RandomState(3)
    x, t = rng.rand(5, 3) * 0.8 + 0.1, rng.rand(5, 3)
    res = []
    for lib in (torch, rt):
        xi = lib.tensor(x).to(lib.bfloat16).requires_grad_()
        out = lib.nn.functional.binary_cross_entropy(xi, lib.tensor(t).to(lib.bfloat16))
        out.backward()
        assert out.dtype == lib.bfloat16
        res.append((float(out.float()), xi.grad.float().numpy()))
    assert res[1][0] == pytest.approx(res[0][0], rel=1e-2)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=2e-2, atol=1e-3)


@pytest.mark.parametrize(("dt_in", "dt_tgt"), [
    ("float32", "float64"), ("float16", "float32"), ("float16", "float64"),
    ("float16", "bfloat16"), ("bfloat16", "float32"), ("bfloat16", "float64"),
    ("bfloat16", "float16")])
@pytest.mark.parametrize("reduction", ["none", "sum"])
def test_soft_margin_loss_is_input_typed(dt_in: str, dt_tgt: str, reduction: str) -> None:
    x = np.random.RandomState(0).randn(3, 4)
    t = np.sign(np.random.RandomState(1).randn(3, 4))
    _both(lambda lib: lambda: lib.nn.functional.soft_margin_loss(
        lib.tensor(x).to(getattr(lib, dt_in)), lib.tensor(t).to(getattr(lib, dt_tgt)),
        reduction=reduction))


@pytest.mark.parametrize("shapes", [((4,), (3, 4)), ((1, 4), (3, 4)), ((2, 1, 4), (3, 1))])
def test_soft_margin_loss_target_broadcasts_into_the_input_only(shapes: Any) -> None:
    a, b = shapes
    _both(lambda lib: lambda: lib.nn.functional.soft_margin_loss(lib.ones(*a), lib.ones(*b)))


def test_soft_margin_loss_bool_input_is_negated_first() -> None:
    _both(lambda lib: lambda: lib.nn.functional.soft_margin_loss(
        lib.ones(3, 4).bool(), lib.ones(3, 4)))


_IDX = [0, 1, 2]


def _class_weight_cases(lib: Any, dt_in: str, dt_w: str) -> list[Any]:
    F = lib.nn.functional
    x = lib.tensor(np.random.RandomState(0).rand(3, 4)).to(getattr(lib, dt_in))
    w = lib.tensor(np.random.RandomState(1).rand(4)).to(getattr(lib, dt_w))
    y = lib.tensor(_IDX)
    return [lambda: F.nll_loss(x, y, weight=w),
            lambda: F.nll_loss(x, y + 7, weight=w),  # the dtype error before the bounds
            lambda: F.nll_loss(x[:0], y[:0], weight=w),
            lambda: F.nll_loss(x.reshape(3, 4, 1), y.reshape(3, 1), weight=w),
            lambda: F.cross_entropy(x, y, weight=w),
            lambda: F.cross_entropy(x, y * 0 - 100, weight=w),
            lambda: F.cross_entropy(x, y, weight=w, label_smoothing=0.2),
            lambda: F.multi_margin_loss(x, y, weight=w),
            lambda: F.multi_margin_loss(x, y + 7, weight=w),
            lambda: F.multi_margin_loss(x[:0], y[:0], weight=w)]


@pytest.mark.parametrize(("dt_in", "dt_w", "case"), [
    (a, b, k) for a in ("float32", "float64")
    for b in ("float32", "float64", "float16", "bfloat16", "int32") for k in range(9) if a != b]
    + [("float32", "float64", 9)])  # no rows: no error, the input's dtype
def test_class_weight_must_have_the_input_dtype(dt_in: str, dt_w: str, case: int) -> None:
    _both(lambda lib: _class_weight_cases(lib, dt_in, dt_w)[case])


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_margin_losses_have_no_half_cpu_kernel(dt: str) -> None:
    for make in (
            lambda lib: lambda: lib.nn.functional.multi_margin_loss(
                lib.rand(3, 4).to(getattr(lib, dt)), lib.tensor(_IDX)),
            lambda lib: lambda: lib.nn.functional.multi_margin_loss(
                lib.rand(4).to(getattr(lib, dt)), lib.tensor([1])),
            lambda lib: lambda: lib.nn.functional.multi_margin_loss(
                lib.rand(3, 4).to(getattr(lib, dt)), lib.tensor(_IDX).int()),
            lambda lib: lambda: lib.nn.functional.multi_margin_loss(
                lib.rand(3, 4).to(getattr(lib, dt)), lib.tensor([0, 1, 2, 3])),
            lambda lib: lambda: lib.nn.functional.multi_margin_loss(
                lib.rand(0, 4).to(getattr(lib, dt)), lib.zeros(0).long()),
            lambda lib: lambda: lib.nn.functional.multilabel_margin_loss(
                lib.rand(3, 4).to(getattr(lib, dt)), lib.zeros(3, 4).long()),
            lambda lib: lambda: lib.nn.functional.multilabel_margin_loss(
                lib.rand(3, 4).to(getattr(lib, dt)), lib.zeros(3, 4).int()),
            lambda lib: lambda: lib.nn.functional.multilabel_margin_loss(
                lib.rand(3, 4).to(getattr(lib, dt)), lib.zeros(2, 4).long()),
            lambda lib: lambda: lib.nn.functional.multilabel_margin_loss(
                lib.rand(0, 4).to(getattr(lib, dt)), lib.zeros(0, 4).long()),
            lambda lib: lambda: lib.nn.MultiMarginLoss()(
                lib.rand(3, 4).to(getattr(lib, dt)), lib.tensor(_IDX))):
        _both(make)


def test_multilabel_margin_loss_int_input_has_no_kernel() -> None:
    _both(lambda lib: lambda: lib.nn.functional.multilabel_margin_loss(
        lib.ones(3, 4).int(), lib.zeros(3, 4).long()))


def test_cross_entropy_probabilities_weight_size_error_names_cross_entropy() -> None:
    for make in (
            lambda lib: lambda: lib.nn.functional.cross_entropy(
                lib.rand(3, 5), lib.rand(3, 5), weight=lib.rand(3)),
            lambda lib: lambda: lib.nn.functional.cross_entropy(
                lib.rand(2, 5, 3), lib.rand(2, 5, 3), weight=lib.rand(5, 1)),
            lambda lib: lambda: lib.nn.CrossEntropyLoss(weight=lib.rand(4))(
                lib.rand(3, 5), lib.rand(3, 5))):
        _both(make)


def test_poisson_nll_loss_full_target_gradient_is_nan_where_target_le_0() -> None:
    x = np.random.RandomState(0).randn(2, 4)
    t = np.array([[0.0, 0.5, 1.0, 2.0], [3.0, -1.0, 0.0, 7.5]])
    grads = []
    for lib in (torch, rt):
        xi = lib.tensor(x, requires_grad=True)
        ti = lib.tensor(t, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # PyTorch is silent
            out = lib.nn.functional.poisson_nll_loss(xi, ti, full=True, reduction="sum")
            out.backward()
        grads.append((float(out), xi.grad.numpy(), ti.grad.numpy()))
    assert grads[1][0] == pytest.approx(grads[0][0], rel=1e-12)
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-12)
    np.testing.assert_allclose(grads[1][2], grads[0][2], rtol=1e-12)
    assert np.isnan(grads[1][2]).sum() == 3


@pytest.mark.parametrize("alpha", [0.7, 0.3, 1e-3])
@pytest.mark.parametrize("inplace", [False, True])
def test_celu_float64_gradient_scales_by_float32_alpha(alpha: float, inplace: bool) -> None:
    """PyTorch's celu backward uses 1 / alpha.toFloat(): off exp(x / alpha) by ~1e-8."""
    x = np.concatenate([np.random.RandomState(4).randn(20) * 3, [0.0, -0.0, -50.0]])
    grads = []
    for lib in (torch, rt):
        xi = lib.tensor(x, requires_grad=True)
        nn = lib.nn.CELU(alpha, inplace=inplace)
        out = nn(xi * 1)
        out.backward(lib.ones_like(out))
        grads.append(xi.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-14, atol=1e-15)


def _two(lib: Any) -> Any:
    return lib.nn.ModuleList([lib.nn.ReLU(), lib.nn.Tanh()])


def test_module_list_setitem_is_setattr() -> None:
    """None empties a slot (the list keeps its length); another non-Module is setattr's error."""
    def put(lib: Any, value: Any) -> Any:
        m = _two(lib)
        m[-2] = value(lib)
        return repr(m), len(m), [type(x).__name__ for x in m]
    for value in (lambda lib: None, lambda lib: 3, lambda lib: lib.nn.Sigmoid()):
        got, want = _outcome_value(lambda: put(rt, value)), _outcome_value(lambda: put(torch, value))
        assert got == want.replace("torch.nn", "runtime.nn")


def _outcome_value(fn: Any) -> str:
    try:
        return repr(fn())
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"


@pytest.mark.parametrize("kind", ["ParameterList", "ParameterDict"])
def test_parameter_containers_refuse_a_call(kind: str) -> None:
    for lib in (torch, rt):
        with pytest.raises(RuntimeError, match=f"^{kind} should not be called.$"):
            getattr(lib.nn, kind)()(lib.ones(1))


def test_parameter_list_dir_hides_its_indices() -> None:
    for lib in (torch, rt):
        names = dir(lib.nn.ParameterList([lib.ones(1), lib.ones(2)]))
        assert "0" not in names and "1" not in names and "append" in names


def test_parameter_dict_errors() -> None:
    for make in (lambda lib: lambda: lib.nn.ParameterDict().popitem(),
                 lambda lib: lambda: lib.nn.ParameterDict().__setitem__(1, lib.ones(1)),
                 lambda lib: lambda: lib.nn.ParameterDict({(1, 2): lib.ones(1)}),
                 lambda lib: lambda: lib.nn.ParameterDict().update([(3.5, lib.ones(1))])):
        got, want = _outcome_value(make(rt)), _outcome_value(make(torch))
        assert got == want


_KEPT_AXIS = [  # (shape, scale_factor, mode, antialias): an axis whose size the factor keeps
    ((1, 2, 3), (1.3,), "linear", False),
    ((1, 2, 3), (1.3,), "nearest", False),
    ((1, 1, 3, 4), (1.3, 1.7), "bilinear", False),
    ((2, 1, 4, 3), (1.7, 1.3), "bilinear", True),
    ((1, 1, 3, 4), (1.3, 1.2), "bicubic", False),
    ((1, 1, 3, 4), (1.3, 1.7), "bicubic", True),
    ((1, 2, 3, 4, 4), (1.3, 1.7, 1.0), "trilinear", False),
    ((1, 2, 3, 4, 4), (1.3, 1.7, 1.0), "nearest", False),
]


@pytest.mark.parametrize(("shape", "factor", "mode", "antialias"), _KEPT_AXIS)
def test_interpolate_an_axis_the_factor_keeps_at_its_size(shape: Any, factor: Any, mode: str,
                                                          antialias: bool) -> None:
    """PyTorch's CPU kernels copy such an axis in the linear modes' forward and backward and
    in the antialiased forward; the 1-d/3-d nearest backward copies it, and the bicubic
    backward copies a whole unchanged input."""
    x = np.random.RandomState(5).randn(*shape)
    res = []
    for lib in (torch, rt):
        xi = lib.tensor(x, requires_grad=True)
        out = lib.nn.functional.interpolate(xi, scale_factor=factor, mode=mode,
                                            antialias=antialias)
        g = np.sin(np.arange(out.numel())).reshape(tuple(out.shape))
        out.backward(lib.tensor(g))
        res.append((out.detach().numpy(), xi.grad.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("approximate", ["foo", "TANH", None, 3])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_gelu_approximate_errors(approximate: Any, dtype: str) -> None:
    """PyTorch's errors for a wrong approximate: before its kernel's dtype check."""
    for make in (lambda lib: lambda: lib.nn.functional.gelu(
                     lib.ones(2).to(getattr(lib, dtype)), approximate=approximate),
                 lambda lib: lambda: lib.nn.GELU(approximate)(lib.ones(2).to(getattr(lib, dtype)))):
        _both(make)


def test_binary_cross_entropy_weight_is_not_differentiable() -> None:
    """PyTorch refuses a weight that requires grad (under grad mode), after the weight's
    broadcast check and before the dtype and range checks; under no_grad it computes."""
    x = np.random.RandomState(6).rand(4, 5)
    for make in (
            lambda lib: lambda: lib.nn.functional.binary_cross_entropy(
                lib.tensor(x), lib.tensor(x), weight=lib.rand(5, requires_grad=True)),
            lambda lib: lambda: lib.nn.BCELoss(weight=lib.rand(4, 5, requires_grad=True))(
                lib.tensor(x, requires_grad=True), lib.tensor(x)),
            lambda lib: lambda: lib.nn.functional.binary_cross_entropy(
                lib.tensor(x) * 3, lib.tensor(x), weight=lib.rand(5, requires_grad=True)),
            lambda lib: lambda: lib.nn.functional.binary_cross_entropy(
                lib.tensor(x), lib.tensor(x).float(), weight=lib.rand(5, requires_grad=True)),
            lambda lib: lambda: lib.nn.functional.binary_cross_entropy(
                lib.tensor(x), lib.tensor(x), weight=lib.rand(3, 5, requires_grad=True))):
        _both(make)
    with rt.no_grad():
        w = rt.rand(5, requires_grad=True)
        assert rt.nn.functional.binary_cross_entropy(rt.tensor(x), rt.tensor(x), w).ndim == 0


@pytest.mark.parametrize("kind", ["AlphaDropout", "FeatureAlphaDropout"])
def test_alpha_dropout_modules_never_write_their_input(kind: str) -> None:
    """PyTorch's AlphaDropout.forward passes no inplace: inplace=True only shows in the repr
    (a leaf requiring grad is no error, the input keeps its version)."""
    res = []
    for lib in (torch, rt):
        lib.manual_seed(0)
        x = lib.randn(2, 3, 4, requires_grad=True)
        module = getattr(lib.nn, kind)(0.5, inplace=True)
        y = module(x)
        z = x * 1
        w = module(z)
        res.append((y is x, w is z, z._version, repr(module), y.detach().numpy(),
                    w.detach().numpy()))
    assert res[1][:4] == res[0][:4]
    np.testing.assert_allclose(res[1][4], res[0][4], rtol=1e-6)
    np.testing.assert_allclose(res[1][5], res[0][5], rtol=1e-6)


@pytest.mark.parametrize("fn", ["alpha_dropout", "feature_alpha_dropout"])
@pytest.mark.parametrize("dtype", ["int32", "bool", "int64"])
@pytest.mark.parametrize("p", [0.5, 1.0])
def test_alpha_dropout_of_integers(fn: str, dtype: str, p: float) -> None:
    """PyTorch's noise.mul_(a) refuses an integer (bool: Long) input; p = 1 keeps its dtype."""
    def make(lib: Any) -> Any:
        def run() -> Any:
            lib.manual_seed(0)
            try:
                out = getattr(lib.nn.functional, fn)(lib.ones(2, 3, 4).to(getattr(lib, dtype)),
                                                     p, True)
            finally:
                assert lib.rand(1).item() == pytest.approx(0.2782524824142456 if fn[0] == "a"
                                                           else 0.022325754165649414) \
                    if p < 1 else True
            return out
        return run
    _both(make)


@pytest.mark.parametrize("dtype", ["int32", "bool", "float16"])
@pytest.mark.parametrize("inplace", [False, True])
def test_rrelu_training_kernel_dtypes(dtype: str, inplace: bool) -> None:
    """PyTorch's CPU rrelu while training has no float16 or integer kernel of its own (its
    error names rrelu_with_noise_out_cpu, not leaky_relu's), even for an empty input."""
    for shape in ((2, 3), (0,)):
        _both(lambda lib, shape=shape: lambda: lib.nn.functional.rrelu(
            lib.ones(*shape).to(getattr(lib, dtype)), training=True, inplace=inplace))
        _both(lambda lib, shape=shape: lambda: lib.nn.RReLU(inplace=inplace)(
            lib.ones(*shape).to(getattr(lib, dtype))))


@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 3, 4, 5), (1, 1, 4, 5), (2, 3, 4, 5, 2),
                                   (0, 3, 4)])
@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "int16", "bool"])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_interpolate_nearest_has_no_integer_kernel_but_uint8(shape: Any, dtype: str,
                                                             mode: str) -> None:
    _both(lambda lib: lambda: lib.nn.functional.interpolate(
        lib.zeros(*shape).to(getattr(lib, dtype)), scale_factor=2, mode=mode))


def _bilinear_cases(lib: Any) -> list[Any]:
    F = lib.nn.functional
    x = lib.ones(2, 4)
    w = lib.ones(3, 4, 4)
    return [lambda: F.bilinear(x, lib.ones(2, 4, 1).double(), w),
            lambda: F.bilinear(x, x.half(), w),
            lambda: F.bilinear(x, x.byte(), w),
            lambda: F.bilinear(x, x, lib.ones(3, 5, 4).double()),
            lambda: F.bilinear(x, x, w, lib.ones(3).double()),
            lambda: F.bilinear(x.int(), x.int(), w.int()),
            lambda: F.bilinear(x.byte(), x.byte(), w.byte(), lib.ones(3).byte()),
            lambda: F.bilinear(x.bool(), x.bool(), w.bool()),
            lambda: lib.nn.Bilinear(4, 4, 3).double()(x, x)]


@pytest.mark.parametrize("case", range(9))
def test_bilinear_dtypes(case: int) -> None:
    """PyTorch's bilinear: one dtype for all its tensors (checked first, its C++ type names),
    an integer result of the inputs' dtype, no bool kernel."""
    _both(lambda lib: _bilinear_cases(lib)[case])


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "float16", "bfloat16"])
def test_pdist_and_cosine_similarity_dtypes(dtype: str) -> None:
    for make in (
            lambda lib: lambda: lib.nn.functional.pdist(lib.ones(3, 2).to(getattr(lib, dtype))),
            lambda lib: lambda: lib.nn.functional.pdist(lib.ones(1, 2).to(getattr(lib, dtype))),
            lambda lib: lambda: lib.nn.functional.pdist(lib.ones(3, 2).to(getattr(lib, dtype)),
                                                        p=-1.0),
            lambda lib: lambda: lib.nn.functional.cosine_similarity(
                lib.ones(2, 3).to(getattr(lib, dtype)), lib.ones(4, 3).to(getattr(lib, dtype))),
            lambda lib: lambda: lib.nn.CosineSimilarity()(
                lib.ones(2, 3).to(getattr(lib, dtype)), lib.ones(2, 3).to(getattr(lib, dtype)))):
        _both(make)


def _argument_cases(lib: Any) -> list[Any]:
    F = lib.nn.functional
    return [lambda: F.softmax(lib.ones(2), "a"),
            lambda: F.log_softmax(lib.ones(2), 1.0),
            lambda: F.softmin(lib.ones(2), "a"),
            lambda: lib.nn.LogSoftmax(dim="a")(lib.ones(2)),
            lambda: F.pixel_shuffle(lib.ones(1, 4, 2, 2), 2.0),
            lambda: F.pixel_unshuffle(lib.ones(1, 1, 4, 4), 2.0),
            lambda: lib.nn.PixelShuffle(2.0)(lib.ones(1, 4, 2, 2)),
            lambda: F.glu(lib.ones(2, 2), "a"),
            lambda: F.glu(lib.ones(2, 2), 1.0),
            lambda: F.celu(lib.ones(2), 0.0),
            lambda: lib.nn.CELU(0.0, inplace=True)(lib.ones(2)),
            lambda: F.softshrink(lib.ones(2).half(), -1),
            lambda: F.softshrink(lib.ones(2), 1e39),
            lambda: F.softshrink(lib.ones(2).double(), -0.5),
            lambda: lib.nn.Softshrink(-1)(lib.ones(2).bfloat16())]


@pytest.mark.parametrize("case", range(15))
def test_activation_argument_errors(case: int) -> None:
    """PyTorch's texts: its argument parser's for a non-int dim or factor, celu's for
    alpha = 0, softshrink's range of lambda (the dtype's max, as C++'s %g)."""
    _both(lambda lib: _argument_cases(lib)[case])


@pytest.mark.parametrize("kind", ["L1Loss", "CrossEntropyLoss", "CTCLoss", "BCEWithLogitsLoss",
                                  "GaussianNLLLoss", "TripletMarginWithDistanceLoss"])
def test_loss_module_takes_any_reduction_until_called(kind: str) -> None:
    for lib in (torch, rt):
        assert getattr(lib.nn, kind)(reduction="foo").reduction == "foo"


@pytest.mark.parametrize("var", [2, True, np.float32(2.0), np.int64(2), np.float64(2.0), 2.0])
def test_gaussian_nll_loss_number_var(var: Any) -> None:
    """PyTorch takes a Python float (a float subclass too) as var; another number reaches its
    torch.any(var < 0): that call's TypeError."""
    _both(lambda lib: lambda: lib.nn.functional.gaussian_nll_loss(
        lib.ones(2, 3), lib.zeros(2, 3), var))


def _multilabel_cases(lib: Any) -> list[Any]:
    F = lib.nn.functional
    return [(lib.tensor(0.5, requires_grad=True), lib.tensor(0)),
            (lib.tensor(0.5, requires_grad=True), lib.tensor([0])),
            (lib.tensor([0.5], requires_grad=True), lib.tensor(0)),
            (lib.tensor(0.5, requires_grad=True), lib.tensor(1)),
            (lib.ones(2, 0), lib.ones(2, 0).long()),
            (lib.ones(0), lib.ones(0).long()),
            (lib.ones(2, 3, 5), lib.ones(2, 3).long()),
            F]


@pytest.mark.parametrize("case", range(7))
@pytest.mark.parametrize("reduction", ["none", "sum"])
def test_multilabel_margin_loss_shapes(case: int, reduction: str) -> None:
    """PyTorch's shape checks: a 0-d input is one class (a target of one element), (C,) and
    (N, C) must be non-empty, no 3-d input."""
    def make(lib: Any) -> Any:
        def run() -> Any:
            cases = _multilabel_cases(lib)
            x, y = cases[case]
            out = cases[-1].multilabel_margin_loss(x, y, reduction=reduction)
            if x.requires_grad:
                out.sum().backward()
                assert x.grad.shape == x.shape
            return out
        return run
    _both(make)


def test_multilabel_soft_margin_loss_0d_input_has_no_class_dim() -> None:
    _both(lambda lib: lambda: lib.nn.functional.multilabel_soft_margin_loss(
        lib.tensor(0.3), lib.tensor(1.0)))
