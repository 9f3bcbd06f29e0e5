"""Differential sweep against PyTorch 2.13 over layers, functional ops and losses (issue 11,
item 1): each case here was a discrepancy (a value, gradient, node name, error, or a compiled
step that ran eagerly) found by comparing with torch."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

torch = pytest.importorskip("torch")


def _lib_f(lib: Any) -> Any:
    return lib.nn.functional


_INPLACE_ACTIVATIONS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("leaky_relu", lambda f, y: f.leaky_relu(y, 0.2, inplace=True)),
    ("leaky_relu zero slope", lambda f, y: f.leaky_relu(y, 0.0, inplace=True)),
    ("leaky_relu negative slope", lambda f, y: f.leaky_relu(y, -0.2, inplace=True)),
    ("leaky_relu_ negative slope", lambda f, y: f.leaky_relu_(y, -1.5)),
    ("elu", lambda f, y: f.elu(y, inplace=True)),
    ("elu zero alpha", lambda f, y: f.elu(y, 0.0, inplace=True)),
    ("elu negative alpha", lambda f, y: f.elu(y, -1.0, inplace=True)),
    ("elu_ negative alpha", lambda f, y: f.elu_(y, -0.5)),
    ("celu", lambda f, y: f.celu(y, 0.7, inplace=True)),
    ("celu negative alpha", lambda f, y: f.celu(y, -1.0, inplace=True)),
    ("selu", lambda f, y: f.selu(y, inplace=True)),
    ("threshold", lambda f, y: f.threshold(y, 0.1, 2.0, inplace=True)),
    ("rrelu", lambda f, y: f.rrelu(y, inplace=True)),
]


@pytest.mark.parametrize("case", _INPLACE_ACTIVATIONS, ids=[c[0] for c in _INPLACE_ACTIVATIONS])
def test_inplace_activation_node_and_backward(case: tuple[str, Any]) -> None:
    """PyTorch's in-place activations record their *Backward1 node (LeakyReluBackward1,
    EluBackward1, ThresholdBackward1...), and the backward of an in-place leaky_relu of a
    negative slope or elu/celu of a negative alpha is its RuntimeError (the gradient is not
    derived from the result)."""
    _, fn = case
    got = []
    for lib in (torch, rt):
        x = lib.tensor([-1.5, -0.25, 0.0, 0.5, 2.0], dtype=lib.float64, requires_grad=True)
        z = fn(_lib_f(lib), x * 1)
        name = z.grad_fn.name()
        try:
            z.backward(lib.tensor([0.3, -1.0, 2.0, 0.5, 1.0], dtype=lib.float64))
            outcome: Any = x.grad.numpy().copy()
        except RuntimeError as e:
            outcome = str(e)
        got.append((name, outcome))
    (tn, to), (rn, ro) = got
    assert rn == tn
    if isinstance(to, str):
        assert ro == to
    else:
        np.testing.assert_allclose(ro, to, rtol=1e-7, atol=1e-7)


def test_sdpa_attn_mask_in_compiled_step_runs_compiled() -> None:
    """A compiled step calling scaled_dot_product_attention with an attn_mask (bool or float,
    of a sliced key) captures: the CPU kernel's choice read the inputs' strides, which a
    capture has not, and the step ran eagerly with the planner's warning."""
    rng = np.random.default_rng(0)
    tokens = rt.tensor(rng.integers(0, 10, (4, 6)))
    for masked in ("bool", "float"):
        weights = []
        for compiled in (False, True):
            rt.manual_seed(0)
            emb = rt.nn.Embedding(10, 8)
            opt = rt.optim.SGD(emb.parameters(), lr=0.1)

            def step(x: rt.Tensor) -> rt.Tensor:
                h = emb(x).reshape(4, 6, 2, 4).transpose(1, 2)
                mask = x[:, None, None, :4] != 0 if masked == "bool" else \
                    x[:, None, None, :4].float() * 0.1
                o = rt.nn.functional.scaled_dot_product_attention(
                    h, h[:, :, :4], h[:, :, :4], attn_mask=mask)
                loss = (o * o).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
                return loss

            run = planner.compile(step) if compiled else step
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                losses = [run(tokens).item() for _ in range(3)]
            weights.append((losses, emb.weight.detach().numpy().copy()))
        np.testing.assert_allclose(weights[1][0], weights[0][0], rtol=1e-5)
        np.testing.assert_allclose(weights[1][1], weights[0][1], rtol=1e-5, atol=1e-6)


_CLASS_WEIGHT_CASES = [
    ("cross_entropy 2-d", "cross_entropy", (5, 4), (5,), {}),
    ("cross_entropy sum smoothing", "cross_entropy", (5, 4), (5,),
     {"reduction": "sum", "label_smoothing": 0.2}),
    ("cross_entropy 1-d", "cross_entropy", (4,), (), {"reduction": "none"}),
    ("cross_entropy 3-d", "cross_entropy", (5, 4, 3), (5, 3), {"ignore_index": 1}),
    ("nll_loss 4-d", "nll_loss", (5, 4, 3, 2), (5, 3, 2), {}),
    ("nll_loss 5-d", "nll_loss", (2, 4, 3, 2, 2), (2, 3, 2, 2), {"reduction": "none"}),
    ("nll_loss target out of range", "nll_loss", (5, 4), (5,), {"offset": 9}),
    ("nll_loss batch mismatch", "nll_loss", (5, 4), (3,), {}),
    ("nll_loss 3-d target shape", "nll_loss", (5, 4, 3), (5, 2), {}),
]


@pytest.mark.parametrize("case", _CLASS_WEIGHT_CASES, ids=[c[0] for c in _CLASS_WEIGHT_CASES])
def test_class_index_loss_refuses_weight_requiring_grad(case: tuple[Any, ...]) -> None:
    """nll_loss and cross_entropy with class-index targets have no derivative for ``weight``:
    under grad mode a weight that requires grad is PyTorch's RuntimeError (naming
    nll_loss_forward, or nll_loss2d_forward for inputs of 3 dims or more), raised after the
    batch-size and target-shape checks and before the kernel's (a target out of range);
    without grad mode the loss is computed. Class probabilities take the weight's gradient."""
    _, fn, in_shape, target_shape, kw = case
    kw = dict(kw)
    offset = kw.pop("offset", 0)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(in_shape).astype(np.float32)
    y = rng.integers(0, 4, target_shape) + offset

    def attempt(lib: Any, grad: bool) -> Any:
        w = lib.tensor([0.5, 1.0, 2.0, 0.25], requires_grad=True)
        f = getattr(lib.nn.functional, fn)
        try:
            with lib.set_grad_enabled(grad):
                return f(lib.tensor(x, requires_grad=True), lib.tensor(y), weight=w,
                         **kw).detach().numpy().copy()
        except (RuntimeError, ValueError, IndexError) as e:
            return type(e).__name__, str(e)

    for grad in (True, False):
        expected, got = attempt(torch, grad), attempt(rt, grad)
        if isinstance(expected, np.ndarray):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
        else:
            assert got == expected


def test_cross_entropy_probabilities_weight_gradient() -> None:
    """With class probabilities as the target the weight takes its gradient, as PyTorch's."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    p = rng.random((5, 4)).astype(np.float32)
    p /= p.sum(1, keepdims=True)
    grads = []
    for lib in (torch, rt):
        w = lib.tensor([0.5, 1.0, 2.0, 0.25], requires_grad=True)
        lib.nn.functional.cross_entropy(lib.tensor(x), lib.tensor(p), weight=w,
                                        label_smoothing=0.1).backward()
        grads.append(w.grad.numpy().copy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6)


def _container_outcome(lib: Any, fn: Callable[[Any], Any]) -> Any:
    try:
        return "ok", fn(lib)
    except Exception as e:  # noqa: BLE001 - the error's type and text are compared
        text = str(e).replace("torch.nn.modules.", "<nn>.").replace("runtime.nn.", "<nn>.")
        return type(e).__name__, text.replace("torch.", "<lib>.").replace("runtime.", "<lib>.")


def _four(lib: Any) -> list[Any]:
    return [lib.nn.Linear(1, 1), lib.nn.ReLU(), lib.nn.Tanh(), lib.nn.Sigmoid()]


def _inserted(lib: Any, index: int) -> Any:
    ml = lib.nn.ModuleList(_four(lib))
    try:
        ml.insert(index, lib.nn.GELU())
        error = None
    except KeyError as e:
        error = str(e)
    return error, list(ml._modules), [type(m).__name__ for m in ml._modules.values()]


def _repeated(lib: Any, factor: Any, how: str) -> Any:
    seq = lib.nn.Sequential(lib.nn.Linear(1, 1), lib.nn.ReLU())
    out = seq * factor if how == "mul" else factor * seq if how == "rmul" else seq.__imul__(
        factor)
    return (list(out._modules), out is seq, len(list(out.parameters())), out[0] is out[2],
            [type(m).__name__ for m in out])


_CONTAINER_CASES: list[tuple[str, Callable[[Any], Any]]] = [
    ("ModuleList.insert past the end", lambda lib: _inserted(lib, 6)),
    ("ModuleList.insert negative", lambda lib: _inserted(lib, -1)),
    ("ModuleList.insert -4", lambda lib: _inserted(lib, -4)),
    ("ModuleList[str]", lambda lib: lib.nn.ModuleList(_four(lib))["1"]),
    ("ModuleList[float]", lambda lib: lib.nn.ModuleList(_four(lib))[1.0]),
    ("Sequential[str]", lambda lib: lib.nn.Sequential(*_four(lib))["0"]),
    ("ModuleList.append(class)", lambda lib: lib.nn.ModuleList().append(lib.nn.ReLU)),
    ("ModuleList.extend(tensor)", lambda lib: lib.nn.ModuleList().extend(lib.ones(2))),
    ("ParameterList.extend(tensor)", lambda lib: lib.nn.ParameterList().extend(lib.ones(2))),
    ("ParameterList(tensor)", lambda lib: lib.nn.ParameterList(lib.ones(2))),
    ("Sequential * 3", lambda lib: _repeated(lib, 3, "mul")),
    ("3 * Sequential", lambda lib: _repeated(lib, 3, "rmul")),
    ("Sequential *= 3", lambda lib: _repeated(lib, 3, "imul")),
    ("Sequential * 0", lambda lib: _repeated(lib, 0, "mul")),
    ("Sequential *= -1", lambda lib: _repeated(lib, -1, "imul")),
    ("Sequential * 2.0", lambda lib: _repeated(lib, 2.0, "mul")),
]


@pytest.mark.parametrize("case", _CONTAINER_CASES, ids=[c[0] for c in _CONTAINER_CASES])
def test_container_methods(case: tuple[str, Callable[[Any], Any]]) -> None:
    """ModuleList.insert moves keys as PyTorch's does (an index past the end is that key, a
    negative one its KeyError), indices go through operator.index, a tensor is no iterable
    for ParameterList.extend, a non-module is named by torch.typename, and a Sequential
    repeats by * and *= (a count that is no positive int is PyTorch's error)."""
    _, fn = case
    assert _container_outcome(rt, fn) == _container_outcome(torch, fn)


def _pool_outcome(lib: Any, call: Callable[[Any, Any], Any], shape: tuple[int, ...]) -> Any:
    x = lib.tensor(np.arange(float(np.prod(shape)), dtype=np.float32).reshape(shape))
    try:
        out = call(lib.nn.functional, x)
    except (RuntimeError, TypeError, ValueError, IndexError) as e:
        return type(e).__name__, str(e)
    out = out[0] if isinstance(out, tuple) else out
    return tuple(out.shape), str(out.numpy().tolist())  # (a str: nan equals nan)


_EMPTY_POOL_CALLS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("max_pool2d", lambda f, x: f.max_pool2d(x, 2)),
    ("max_pool2d indices", lambda f, x: f.max_pool2d(x, 2, return_indices=True)),
    ("max_pool2d ceil", lambda f, x: f.max_pool2d(x, 2, ceil_mode=True)),
    ("avg_pool2d", lambda f, x: f.avg_pool2d(x, 2)),
    ("lp_pool2d", lambda f, x: f.lp_pool2d(x, 2, 2)),
    ("adaptive_avg_pool2d", lambda f, x: f.adaptive_avg_pool2d(x, 2)),
    ("adaptive_avg_pool2d 1", lambda f, x: f.adaptive_avg_pool2d(x, 1)),
    ("adaptive_max_pool2d", lambda f, x: f.adaptive_max_pool2d(x, 2)),
]
_EMPTY_POOL_CALLS_1D: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("max_pool1d", lambda f, x: f.max_pool1d(x, 2)),
    ("max_pool1d indices", lambda f, x: f.max_pool1d(x, 2, return_indices=True)),
    ("avg_pool1d", lambda f, x: f.avg_pool1d(x, 2)),
    ("adaptive_avg_pool1d", lambda f, x: f.adaptive_avg_pool1d(x, 2)),
    ("adaptive_max_pool1d", lambda f, x: f.adaptive_max_pool1d(x, 2)),
]


@pytest.mark.parametrize("shape", [(2, 0, 4, 6), (0, 3, 4, 6), (2, 3, 0, 6), (0, 4, 6),
                                   (3, 0, 6), (3, 4, 0)])
@pytest.mark.parametrize("case", _EMPTY_POOL_CALLS, ids=[c[0] for c in _EMPTY_POOL_CALLS])
def test_pool2d_empty_dims(case: tuple[str, Any], shape: tuple[int, ...]) -> None:
    """PyTorch's 2-d pools take an empty batch only: no channels or an empty plane is its
    pool2d_shape_check error, shown with the input's own shape (unbatched: 3 dims); the
    adaptive average pool takes zero channels."""
    _, call = case
    assert _pool_outcome(rt, call, shape) == _pool_outcome(torch, call, shape)


@pytest.mark.parametrize("shape", [(0, 3, 6), (2, 0, 6), (2, 3, 0), (0, 6), (3, 0)])
@pytest.mark.parametrize("case", _EMPTY_POOL_CALLS_1D, ids=[c[0] for c in _EMPTY_POOL_CALLS_1D])
def test_pool1d_empty_dims(case: tuple[str, Any], shape: tuple[int, ...]) -> None:
    """max_pool1d without indices checks its input as PyTorch's check_max_pool1d (only a
    batch may be empty); the others as their 2-d pool over a height of 1."""
    _, call = case
    assert _pool_outcome(rt, call, shape) == _pool_outcome(torch, call, shape)


@pytest.mark.parametrize("fn", ["adaptive_avg_pool1d", "adaptive_max_pool1d"])
@pytest.mark.parametrize("shape,size", [((3, 6), None), ((3, 6), 2.5), ((3, 6), "a"),
                                        ((3, 6), (None,)), ((3, 6), (2, 3)),
                                        ((2, 3, 4, 6), (2, 3)), ((2, 3, 4, 6), None),
                                        ((3, 6), [4]), ((2, 3, 6), np.int64(4))])
def test_adaptive_pool1d_output_size_argument(fn: str, shape: tuple[int, ...], size: Any) -> None:
    """A 1-d adaptive pool's output_size: PyTorch's parser TypeError for None, a float or a
    str (element types named), then the rank check, then its one-int text."""
    def call(f: Any, x: Any) -> Any:
        return getattr(f, fn)(x, size)

    assert _pool_outcome(rt, call, shape) == _pool_outcome(torch, call, shape)


def _loss_outcome(lib: Any, call: Callable[[Any, Any, Any, Any], Any]) -> Any:
    rng = np.random.default_rng(5)
    x = lib.tensor(rng.standard_normal((3, 4)).astype(np.float32), requires_grad=True)
    t = lib.tensor(rng.random((3, 4)).astype(np.float32), requires_grad=True)
    w = lib.tensor(rng.random(4).astype(np.float32))
    try:
        out = call(lib.nn.functional, x, t, w)
    except RuntimeError as e:
        return "forward", str(e)
    value = (str(out.dtype).split(".")[-1], out.detach().double().numpy().copy())
    try:
        out.double().sum().backward()
    except RuntimeError as e:
        return value, ("backward", str(e))
    grads = tuple(None if g is None else g.double().numpy().copy() for g in (x.grad, t.grad))
    return value, grads


def _assert_same_outcome(got: Any, want: Any, tol: float) -> None:
    if isinstance(want, np.ndarray):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    elif isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same_outcome(g, w, tol)
    else:
        assert got == want


_MIXED_LOSSES: list[tuple[str, Callable[[Any, Any, Any, Any], Any], float]] = [
    ("bce logits float64 input", lambda f, x, t, w: f.binary_cross_entropy_with_logits(
        x.double(), t), 1e-6),
    ("bce logits half target", lambda f, x, t, w: f.binary_cross_entropy_with_logits(
        x, t.half(), reduction="none"), 2e-3),
    ("bce logits float64 pos_weight", lambda f, x, t, w: f.binary_cross_entropy_with_logits(
        x, t, pos_weight=w.double(), reduction="sum"), 1e-5),
    ("bce logits float64 weight", lambda f, x, t, w: f.binary_cross_entropy_with_logits(
        x, t, weight=w.double()), 1e-6),
    ("bce logits float64 target", lambda f, x, t, w: f.binary_cross_entropy_with_logits(
        x, t.double(), reduction="none"), 1e-6),
    ("bce logits int64 target", lambda f, x, t, w: f.binary_cross_entropy_with_logits(
        x, (t > 0.5).long()), 0.0),
    ("bce logits bool target", lambda f, x, t, w: f.binary_cross_entropy_with_logits(
        x, t > 0.5), 0.0),
    ("huber float64 target", lambda f, x, t, w: f.huber_loss(x, t.detach().double()), 1e-6),
    ("huber float64 target grad", lambda f, x, t, w: f.huber_loss(x.detach(), t.double(),
                                                                  reduction="none"), 1e-6),
    ("huber half input", lambda f, x, t, w: f.huber_loss(x.half(), t, reduction="sum"), 2e-3),
    ("huber float64 input", lambda f, x, t, w: f.huber_loss(x.double(), t, delta=0.5), 1e-6),
    ("huber float64 target weight", lambda f, x, t, w: f.huber_loss(
        x, t.detach().double(), weight=w.expand(3, 4)), 1e-6),
    ("huber one dtype", lambda f, x, t, w: f.huber_loss(x, t, delta=0.3), 1e-6),
]


@pytest.mark.parametrize("case", _MIXED_LOSSES, ids=[c[0] for c in _MIXED_LOSSES])
def test_loss_of_mixed_dtypes(case: tuple[str, Any, float]) -> None:
    """binary_cross_entropy_with_logits computes in place on (1 - target): its loss has the
    target's dtype (an integer target: the cast error, bool: the subtraction error); huber_loss
    writes into a tensor like the input (its dtype), and its backward refuses two dtypes
    with PyTorch's 'Found dtype' error."""
    _, call, tol = case
    _assert_same_outcome(_loss_outcome(rt, call), _loss_outcome(torch, call), tol)


_ARGUMENT_CALLS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("layer_norm int", lambda f, x: f.layer_norm(x, 4)),
    ("layer_norm float element", lambda f, x: f.layer_norm(x, (4.0,))),
    ("layer_norm bool element", lambda f, x: f.layer_norm(x, (True,))),
    ("layer_norm None", lambda f, x: f.layer_norm(x, None)),
    ("layer_norm str", lambda f, x: f.layer_norm(x, "a")),
    ("layer_norm list", lambda f, x: f.layer_norm(x, [4])),
    ("layer_norm size", lambda f, x: f.layer_norm(x, x.shape[-2:])),
    ("layer_norm numpy int", lambda f, x: f.layer_norm(x, (np.int64(4),))),
    ("rms_norm int", lambda f, x: f.rms_norm(x, 4)),
    ("rms_norm float element", lambda f, x: f.rms_norm(x, [4.0])),
    ("rms_norm tuple", lambda f, x: f.rms_norm(x, (3, 4))),
    ("rms_norm later float", lambda f, x: f.rms_norm(x, (3, 4.0))),
    ("layer_norm later bool", lambda f, x: f.layer_norm(x, (3, True))),
    ("pad later str", lambda f, x: f.pad(x, (1, 1, 1, "a"))),
    ("group_norm float groups", lambda f, x: f.group_norm(x, 3.0)),
    ("group_norm bool groups", lambda f, x: f.group_norm(x, True)),
    ("group_norm numpy groups", lambda f, x: f.group_norm(x, np.int64(3))),
    ("pad float", lambda f, x: f.pad(x, (1.0, 1))),
    ("pad reflect float", lambda f, x: f.pad(x, (1, 1.5), mode="reflect")),
    ("pad bool", lambda f, x: f.pad(x, (True, 1))),
    ("pad int", lambda f, x: f.pad(x, 1)),
    ("pad None", lambda f, x: f.pad(x, None)),
    ("pad numpy ints", lambda f, x: f.pad(x, [np.int32(1), 2])),
    ("pad value str", lambda f, x: f.pad(x, (1, 1), value="a")),
    ("pad value list", lambda f, x: f.pad(x, (1, 1), value=[1.0])),
    ("pad value complex", lambda f, x: f.pad(x, (1, 1), value=1 + 2j)),
    ("pad value numpy", lambda f, x: f.pad(x, (1, 1), value=np.float32(1.5))),
    ("pad value bool", lambda f, x: f.pad(x, (1, 1), value=True)),
]


@pytest.mark.parametrize("case", _ARGUMENT_CALLS, ids=[c[0] for c in _ARGUMENT_CALLS])
def test_int_list_arguments_parsed_as_pytorch(case: tuple[str, Any]) -> None:
    """layer_norm's and rms_norm's normalized_shape and pad's pad are int lists (not one
    int), group_norm's num_groups an int, pad's value a float: anything else is PyTorch's
    argument parser TypeError (they were taken, a float pad truncated)."""
    _, call = case
    x = np.random.default_rng(6).standard_normal((2, 3, 4)).astype(np.float32)
    outcomes = []
    for lib in (torch, rt):
        try:
            outcomes.append(str(call(lib.nn.functional, lib.tensor(x)).numpy().round(5)))
        except (TypeError, RuntimeError, ValueError) as e:
            outcomes.append(f"{type(e).__name__}: {e}")
    assert outcomes[1] == outcomes[0]


_BATCH_NORM_CALLS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("weight of 2", lambda lib, x: lib.nn.functional.batch_norm(
        x, None, None, lib.ones(2), None, training=True)),
    ("bias of 2", lambda lib, x: lib.nn.functional.batch_norm(
        x, lib.zeros(3), lib.ones(3), None, lib.ones(2), training=False)),
    ("running_mean before weight", lambda lib, x: lib.nn.functional.batch_norm(
        x, lib.ones(2), lib.ones(3), lib.ones(2), None, training=True)),
    ("weight (3, 1)", lambda lib, x: lib.nn.functional.batch_norm(
        x, None, None, lib.ones(3, 1), None, training=True)),
    ("empty input, weight of 2", lambda lib, x: lib.nn.functional.batch_norm(
        x[:0], None, None, lib.ones(2), None, training=True)),
    ("eps 0 training", lambda lib, x: lib.nn.functional.batch_norm(
        x, None, None, training=True, eps=0.0)),
    ("eps 0 eval", lambda lib, x: lib.nn.functional.batch_norm(
        x, lib.zeros(3), lib.ones(3), training=False, eps=0.0)),
    ("eps -1 eval", lambda lib, x: lib.nn.functional.batch_norm(
        x, lib.zeros(3), lib.ones(3), training=False, eps=-1.0)),
    ("one value before eps", lambda lib, x: lib.nn.functional.batch_norm(
        x[:1, :, :1], lib.ones(2), lib.ones(2), training=True, eps=0.0)),
    ("momentum None", lambda lib, x: lib.nn.functional.batch_norm(
        x, lib.zeros(3), lib.ones(3), training=True, momentum=None)),
    ("1-d training", lambda lib, x: lib.nn.functional.batch_norm(
        x[0, 0], None, None, training=True)),
    ("1-d eval", lambda lib, x: lib.nn.functional.batch_norm(
        x[0, 0], lib.zeros(5), lib.ones(5), training=False)),
    ("BatchNorm1d eps 0", lambda lib, x: lib.nn.BatchNorm1d(3, eps=0)(x)),
    ("BatchNorm1d eps 0 eval", lambda lib, x: lib.nn.BatchNorm1d(3, eps=0).eval()(x)),
    ("BatchNorm1d momentum None", lambda lib, x: lib.nn.BatchNorm1d(3, momentum=None)(x)),
    ("aten batch_norm eps 0", lambda lib, x: lib.batch_norm(x, None, None, None, None, True,
                                                            0.1, 0.0, False)),
]


@pytest.mark.parametrize("case", _BATCH_NORM_CALLS, ids=[c[0] for c in _BATCH_NORM_CALLS])
def test_batch_norm_checks(case: tuple[str, Any]) -> None:
    """F.batch_norm's Python checks in PyTorch's order (one value per channel, then eps:
    positive in training, non-negative otherwise, as the modules' too), its parser's refusal
    of a momentum of None (it was taken as 0.1), the op's size checks of the weight and
    bias (an empty input returns before them) and of a 1-d input (PyTorch's IndexError,
    where a ValueError was raised)."""
    _, call = case
    x = np.random.default_rng(7).standard_normal((4, 3, 5)).astype(np.float32)
    outcomes = []
    for lib in (torch, rt):
        try:
            outcomes.append(str(call(lib, lib.tensor(x)).detach().numpy().round(4)))
        except (TypeError, RuntimeError, ValueError, IndexError) as e:
            outcomes.append(f"{type(e).__name__}: {e}")
    assert outcomes[1] == outcomes[0]


@pytest.mark.parametrize("target,kw", [
    ("probs", {"ignore_index": 1}),
    ("probs", {"ignore_index": 0, "reduction": "none"}),
    ("probs", {"ignore_index": 1, "label_smoothing": 2.0}),
    ("probs", {"ignore_index": -5, "label_smoothing": 0.2}),
    ("probs", {"label_smoothing": 1.5}),
    ("long probs", {"ignore_index": 1}),
    ("long probs", {"label_smoothing": 2.0}),
    ("indices", {"ignore_index": 1, "label_smoothing": 0.1}),
    ("indices", {"label_smoothing": -0.5}),
    ("indices", {"label_smoothing": float("nan"), "reduction": "sum"}),
    ("indices", {"label_smoothing": 2.0}),
    ("indices", {"label_smoothing": 1.0000001}),
    ("probs", {"label_smoothing": -0.25, "reduction": "none"}),
])
def test_cross_entropy_probability_target_checks(target: str, kw: dict[str, Any]) -> None:
    """Class probabilities take no ignore_index (one of 0 or more is PyTorch's error, a
    negative one is ignored), checked after the target's dtype and before label_smoothing's
    range; class indices check label_smoothing first. label_smoothing may be at most 1 (the
    error prints it as C++ does), a negative or NaN one smooths nothing."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    p = rng.random((5, 4)).astype(np.float32)
    p /= p.sum(1, keepdims=True)
    outcomes = []
    for lib in (torch, rt):
        t = {"probs": lib.tensor(p), "long probs": lib.tensor((p * 4).astype(np.int64)),
             "indices": lib.tensor([0, 1, 2, 3, 1])}[target]
        try:
            out = lib.nn.functional.cross_entropy(lib.tensor(x), t, **kw)
            outcomes.append(str(out.numpy().round(5)))
        except RuntimeError as e:
            outcomes.append(str(e))
    assert outcomes[1] == outcomes[0]


_LAYER_ERRORS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("conv2d dilation 0", lambda lib, x: lib.nn.functional.conv2d(x, lib.ones(4, 3, 2, 2),
                                                                  dilation=0)),
    ("conv2d dilation (1, 0)", lambda lib, x: lib.nn.functional.conv2d(
        x, lib.ones(4, 3, 2, 2), dilation=(1, 0))),
    ("conv1d dilation 0", lambda lib, x: lib.nn.functional.conv1d(x[:, :, 0], lib.ones(4, 3, 2),
                                                                  dilation=0)),
    ("conv2d same dilation 0", lambda lib, x: lib.nn.functional.conv2d(
        x, lib.ones(4, 3, 2, 2), padding="same", dilation=0)),
    ("Conv2d dilation 0", lambda lib, x: lib.nn.Conv2d(3, 4, 3, dilation=0)(x)),
    ("conv2d batch of 1 dilation 0", lambda lib, x: lib.nn.functional.conv2d(
        x[:1], lib.ones(4, 3, 2, 2), dilation=0)),
    ("conv2d float64 dilation 0", lambda lib, x: lib.nn.functional.conv2d(
        x.double(), lib.ones(4, 3, 2, 2, dtype=lib.float64), dilation=0)),
    ("conv2d unbatched bfloat16 dilation 0", lambda lib, x: lib.nn.functional.conv2d(
        x[0].bfloat16(), lib.ones(4, 3, 2, 2, dtype=lib.bfloat16), dilation=(1, 0))),
    ("conv2d stride 0 before dilation 0", lambda lib, x: lib.nn.functional.conv2d(
        x, lib.ones(4, 3, 2, 2), stride=0, dilation=0)),
    ("adaptive_max_pool2d 3 sizes", lambda lib, x: lib.nn.AdaptiveMaxPool2d((2, 3, 4))(x)),
    ("adaptive_max_pool2d 1 size", lambda lib, x: lib.nn.functional.adaptive_max_pool2d(
        x, (2,))),
    ("adaptive_avg_pool2d 1 size", lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(
        x, (2,))),
    ("Unflatten ()", lambda lib, x: lib.nn.Unflatten(1, ())(x)),
    ("unflatten [] bad dim", lambda lib, x: x.unflatten(7, [])),
    ("unflatten two -1", lambda lib, x: x.unflatten(1, (-1, -1))),
]


@pytest.mark.parametrize("case", _LAYER_ERRORS, ids=[c[0] for c in _LAYER_ERRORS])
def test_layer_error_texts(case: tuple[str, Any]) -> None:
    """A convolution's dilation of 0 is PyTorch's oneDNN "non-positive dilation" error for
    bfloat16 or a batch of float32 (its other kernels' "greater than zero" text otherwise),
    adaptive_max_pool2d's output_size of another length its
    "internal error" text, unflatten's empty sizes its first check (before the dim); PyTorch's
    C++ trace after an unflatten error is left out."""
    _, call = case
    x = np.ones((2, 3, 5, 6), np.float32)
    texts = []
    for lib in (torch, rt):
        with pytest.raises(RuntimeError) as e:
            call(lib, lib.tensor(x))
        texts.append(str(e.value).split("\nException raised from")[0])
    assert texts[1] == texts[0]


@pytest.mark.parametrize("x_dtype,p_dtype", [("float16", "bfloat16"), ("bfloat16", "float16"),
                                             ("float16", "float32"), ("bfloat16", "float32"),
                                             ("float16", "float16"), ("float32", "float16")])
def test_layer_norm_parameter_dtypes(x_dtype: str, p_dtype: str) -> None:
    """layer_norm checks its parameters' dtypes as given: a float16 input with bfloat16
    parameters (or the reverse) is PyTorch's mixed-dtype error (they were widened to float32
    with the input first, and taken); float32 parameters of a half input are taken."""
    x = np.random.default_rng(9).standard_normal((2, 3, 6)).astype(np.float32)
    outcomes = []
    for lib in (torch, rt):
        xt = lib.tensor(x).to(getattr(lib, x_dtype))
        w = lib.ones(6, dtype=getattr(lib, p_dtype)) * 1.5
        b = lib.zeros(6, dtype=getattr(lib, p_dtype)) + 0.25
        try:
            out = lib.nn.functional.layer_norm(xt, (6,), w, b)
            outcomes.append((str(out.dtype).split(".")[-1], str(out.float().numpy().round(2))))
        except RuntimeError as e:
            outcomes.append(str(e))
    assert outcomes[1] == outcomes[0]


@pytest.mark.parametrize("p", [-0.5, -1e-9, float("nan"), 1.5, 1.0])
def test_sdpa_dropout_p_outside_the_unit_interval(p: float) -> None:
    """scaled_dot_product_attention drops out only for a dropout_p above 0: a negative or
    NaN one is no dropout (it was the range error), one above 1 the error, 1 all zeros."""
    q = np.random.default_rng(10).standard_normal((3, 2, 4)).astype(np.float32)
    outcomes = []
    for lib in (torch, rt):
        lib.manual_seed(0)
        t = lib.tensor(q)
        try:
            out = lib.nn.functional.scaled_dot_product_attention(t, t, t, dropout_p=p)
            outcomes.append(str(out.numpy().round(4)))
        except RuntimeError as e:
            outcomes.append(str(e))
    assert outcomes[1] == outcomes[0]
