"""Composite ops, written from primitives (so their backward comes from the primitives')."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _dtype as D
from .._dtype import bfloat16, scalar_type_name
from ..amp.policy import autocast_lower
from ..autograd.grad_mode import _state as _grad_state
from ..autograd.node import Edge, Meta, Node, SavedTensor
from ..tensor import Tensor
from . import functional as F
from .dispatch import PrimitiveBackward, named, named_backward
from .losses import cross_entropy, mse_loss  # noqa: F401  (their home is ops.losses)
from .shapes import int_argument, int_dim, int_list_argument, wrap_dim

tanh = F.tanh


def float_kernel(kernel: str) -> Any:
    """An activation PyTorch computes for floating dtypes only: an integer or bool input is
    its error naming the kernel (``"silu_cpu" not implemented for 'Long'``)."""

    def decorate(fn: Any) -> Any:
        @functools.wraps(fn)
        def op(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:  # noqa: A002 - as torch
            if isinstance(input, Tensor) and not input.dtype.is_floating_point:
                raise NotImplementedError(f'"{kernel}" not implemented for '
                                          f"'{scalar_type_name(input.dtype)}'")
            return fn(input, *args, **kwargs)

        return op

    return decorate


class _PiecewiseLinearBackward(PrimitiveBackward):
    """The backward node of an op whose gradient is the incoming one masked, scaled or moved
    (relu, leaky_relu, hardtanh, pooling, prelu), built from primitives. Under
    ``create_graph`` its gradients would not depend on the op's inputs; PyTorch's backward
    (threshold_backward, max_pool2d_with_indices_backward...) is a function of them with a
    zero derivative, and double backward through it gives them zeros. This node links each
    gradient it makes to the tensors it saved ("link0", "link1"...) by a ``where`` that always
    picks the gradient: the same values, and a zero second derivative that reaches them."""

    __slots__ = ()

    def gradients(self, grads: list[Any]) -> list[Any]:
        """The gradients of the op's inputs: its primitive's formula."""
        return PrimitiveBackward.apply(self, grads)

    def apply(self, grads: list[Any]) -> list[Any]:
        out = self.gradients(grads)
        if not _grad_state.enabled or self._released or "link0" not in self.saved:
            return out
        anchors: list[Tensor] | None = None
        for i, g in enumerate(out):
            if isinstance(g, Tensor) and not g.requires_grad:
                if anchors is None:
                    anchors = [s.unpack(self) for key, s in self.saved.items()
                               if isinstance(key, str) and key.startswith("link")]
                out[i] = _linked(g, anchors)
        return out


class _ThresholdBackward(_PiecewiseLinearBackward):
    """relu's node: its forward keeps x where ``x < 0`` does not hold (-0.0 stays -0.0, as
    PyTorch's), and its gradient passes where the result ``<= 0`` does not hold, as PyTorch's
    threshold_backward (0 at x = 0, NaN passing), from the result it saved ("link0")."""

    __slots__ = ()

    def gradients(self, grads: list[Any]) -> list[Any]:
        g = grads[0]
        if g is None or self.next_edges[2] is None:
            return [None, None, None]
        result = self.saved["link0"].unpack(self)
        return [None, None, F.where(F.le(result, 0), 0.0 if g.dtype.is_floating_point else 0, g)]


def _linked(g: Tensor, anchors: list[Tensor]) -> Tensor:
    """g's values, with a zero gradient to each anchor that requires grad (one of another
    shape or dtype through its sum, cast to g's dtype)."""
    for anchor in anchors:
        if not anchor.requires_grad:
            continue
        if anchor.shape != g.shape:
            anchor = F.sum(anchor)
        if anchor.dtype is not g.dtype:
            anchor = F.cast(anchor, g.dtype)
        g = F.where(_always(), g, anchor)
    return g


def _always() -> Tensor:
    """A 0-d True: where(_always(), a, b) is a's values, b's gradient zeros."""
    return Tensor._make(np.array(True), D.bool_, "cpu")


class _StraightThroughBackward(PrimitiveBackward):
    """The node of ``where(True, value, path)`` made by straight_through: the gradient goes
    to ``path`` whole (a where would give it zeros)."""

    __slots__ = ()

    def apply(self, grads: list[Any]) -> list[Any]:
        g = grads[0]
        if g is None or self.next_edges[2] is None:
            return [None, None, None]
        return [None, None, F.sum_to(g, self.metas[2].shape)]


class _NoGradientBackward(PrimitiveBackward):
    """The node of a result PyTorch records but whose backward gives no gradient (an
    undefined tensor: the inputs' ``.grad`` stays None), as its norm of order 0."""

    __slots__ = ()

    def apply(self, grads: list[Any]) -> list[Any]:
        return [None, None, None]


class _NoDerivativeBackward(PrimitiveBackward):
    """The node of a result PyTorch records whose derivative it does not implement
    (floor_divide, unique): a backward that reaches it is PyTorch's error."""

    __slots__ = ()
    error: type[Exception] = NotImplementedError
    message = ""

    def apply(self, grads: list[Any]) -> list[Any]:
        raise self.error(self.message)


def no_derivative(value: Tensor, inputs: Sequence[Any], error: type[Exception], message: str,
                  name: str = "NotImplemented") -> Tensor:
    """``value`` (a float result computed off the graph) recorded, where grad mode is on and
    an input requires grad, in a node named PyTorch's ``name``: backward through it raises
    ``error(message)``."""
    needing = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    if not (needing and _grad_state.enabled and value.dtype.is_floating_point):
        return value
    path = F.sum(needing[0]) if len(needing) == 1 else F.add(*(F.sum(t) for t in needing[:2]))
    out = F.where(_always(), value.detach(), F.cast(path, value.dtype))
    node = out._grad_fn
    if isinstance(node, PrimitiveBackward):
        named(out, name)
        attrs: dict[str, Any] = {"__slots__": (), "error": error, "message": message}
        if name == "NotImplemented":  # PyTorch's C++ name for it
            attrs["name"] = lambda self: "torch::autograd::NotImplemented"
        node.__class__ = type(name, (_NoDerivativeBackward,), attrs)
    return out


class _OneNodeBackward(Node):
    """The one node of several outputs of a composite op (PyTorch's AminmaxBackward0 has
    outputs 0 and 1): output i's gradient goes on to the node that computed it."""

    __slots__ = ()

    def apply(self, grads: list[Any]) -> list[Any]:
        return list(grads)


_ONE_NODE_CLASSES: dict[str, type[_OneNodeBackward]] = {}


def one_node(outputs: Sequence[Tensor], name: str) -> None:
    """Make ``outputs`` (those with history) outputs 0, 1, ... of one node called ``name``,
    as PyTorch's multi-output ops (aminmax, std_mean) give them: the same ``grad_fn``, their
    ``output_nr`` their place."""
    recorded = [o for o in outputs if o._grad_fn is not None]
    if len(recorded) < 2 or any(o._base is not None for o in recorded):
        for o in recorded:
            named(o, name)
        return
    cls = _ONE_NODE_CLASSES.get(name)
    if cls is None:
        cls = _ONE_NODE_CLASSES[name] = type(name, (_OneNodeBackward,), {"__slots__": ()})
    node = cls([Edge(o._grad_fn, o.output_nr) for o in recorded],
               [Meta(o.shape, o.dtype, o.device) for o in recorded])
    for i, o in enumerate(recorded):
        o._grad_fn, o.output_nr = node, i


_STRAIGHT_CLASSES: dict[tuple[str, bool], type[PrimitiveBackward]] = {}


def straight_through(value: Tensor, path: Tensor, name: str, gradient: bool = True) -> Tensor:
    """``value``'s values (exactly: no arithmetic on them), with the gradient of ``path`` (of
    the same shape), in a node named ``name``. For a result whose gradient rule arithmetic
    on its value cannot carry: an inf minus itself is NaN. Without ``gradient`` the node
    gives none at all."""
    out = F.where(_always(), value.detach(), path)
    node = out._grad_fn
    if node is not None and isinstance(node, PrimitiveBackward):
        cls = _STRAIGHT_CLASSES.get((name, gradient))
        if cls is None:
            base = _StraightThroughBackward if gradient else _NoGradientBackward
            cls = _STRAIGHT_CLASSES[name, gradient] = type(name, (base,), {"__slots__": ()})
        named(out, name)
        node.__class__ = cls
    return out


def spread_among(x: Tensor, value: Tensor, name: str) -> Tensor:
    """``value`` (0-d, one of x's values) with its gradient shared evenly among the elements
    of x equal to it, NaN equal to NaN: PyTorch's evenly_distribute_backward (max(), min(),
    median() over all of x)."""
    v = value.detach()
    if not x.requires_grad:
        return v
    hit = F.eq(x, v)
    if x.dtype.is_floating_point:
        from .extra_ops import logical_or
        from .tensor_ops import isnan

        hit = logical_or(hit, F.logical_and(isnan(x), isnan(v)))
    count = F.sum(F.cast(hit, x.dtype))
    return straight_through(v, F.div(F.sum(F.where(hit, x, 0.0)), count), name)


_PIECEWISE_CLASSES: dict[tuple[str, type], type[_PiecewiseLinearBackward]] = {}


def linked_backward(out: Tensor, name: str, *anchors: Tensor,
                    base: type[_PiecewiseLinearBackward] = _PiecewiseLinearBackward) -> Tensor:
    """``out`` with its node named PyTorch's ``name`` and made a ``base`` (a
    _PiecewiseLinearBackward) that saves ``anchors`` (what PyTorch's backward reads): double
    backward gives them zeros."""
    node = out._grad_fn
    if node is None or not isinstance(node, PrimitiveBackward):
        return out
    cls = _PIECEWISE_CLASSES.get((name, base))
    if cls is None:
        cls = _PIECEWISE_CLASSES[name, base] = type(name, (base,), {"__slots__": ()})
    named(out, name)
    node.__class__ = cls
    for i, anchor in enumerate(a for a in anchors if a.requires_grad):
        node.saved[f"link{i}"] = SavedTensor(anchor, anchor is out)
    return out


def linked_to_inputs(name: str) -> Any:
    """named_backward for an op whose gradient is the incoming one masked or moved (pooling,
    prelu): its node is PyTorch's ``name`` and links its gradients to the op's tensor
    arguments, which double backward gives zeros, as PyTorch's."""

    def decorate(fn: Any) -> Any:
        @functools.wraps(fn)
        def op(*args: Any, **kwargs: Any) -> Tensor:
            out = fn(*args, **kwargs)
            if args and out is args[0]:
                return out
            tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
            return linked_backward(out, name, *tensors)

        return op

    return decorate


def piecewise_linear(name: str, base: type[_PiecewiseLinearBackward] = _PiecewiseLinearBackward
                     ) -> Any:
    """named_backward for a piecewise linear activation: its node is PyTorch's ``name`` and
    a ``base`` (a _PiecewiseLinearBackward), which saves the result (as PyTorch's
    ReluBackward0)."""

    def decorate(fn: Any) -> Any:
        @functools.wraps(fn)
        def op(*args: Any, **kwargs: Any) -> Tensor:
            out = fn(*args, **kwargs)
            if args and out is args[0]:
                return out
            return linked_backward(out, name, out, base=base)

        return op

    return decorate


@piecewise_linear("ReluBackward0", _ThresholdBackward)
def relu(input: Tensor) -> Tensor:
    """PyTorch's ``x < 0 ? 0 : x``: a NaN stays NaN (a diverging run shows its NaN loss; as
    ``x > 0 ? x : 0`` it became 0), -0.0 stays -0.0, and the gradient passes where the
    result ``<= 0`` does not hold, NaN included, as PyTorch's threshold_backward."""
    if input.dtype is D.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    return F.where(F.lt(input, 0), 0.0 if input.dtype.is_floating_point else 0, input)


class _SigmoidBackward(PrimitiveBackward):
    """sigmoid's node (of ``where(True, y, x)``): PyTorch's sigmoid_backward, g (1 - y) y from
    the result y it saved. Its rounding matters where y rounds to 1: the gradient is 0 there,
    as PyTorch's (the exact derivative e / (1 + e)^2 is not), and a loss's huge gradient
    times it stays 0 (binary_cross_entropy's 1e12 at sigmoid(25))."""

    __slots__ = ()

    def apply(self, grads: list[Any]) -> list[Any]:
        g = grads[0]
        if g is None or self.next_edges[2] is None:
            return [None, None, None]
        y = self.saved["result"].unpack(self)
        return [None, None, F.mul(F.mul(g, F.sub(1.0, y)), y)]


_SIGMOID_NODE = type("SigmoidBackward0", (_SigmoidBackward,), {"__slots__": ()})


def sigmoid(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    if out is not None:
        return F.written_to(out, sigmoid(input), "sigmoid")
    result = _sigmoid(F.as_float(input))  # an integer or bool x: float, as PyTorch's
    if result._grad_fn is not None and not isinstance(result._grad_fn, _SigmoidBackward):
        named(result, "SigmoidBackward0")  # a half x's: computed in float32, then cast
    return result


@F.half_in_float32
def _sigmoid(x: Tensor) -> Tensor:
    # 1 / (1 + exp(-x)) had exp overflow below -88 (float32): a NaN gradient (0 * inf)
    y = _stable_sigmoid(x.detach())
    if not (x.requires_grad and _grad_state.enabled):
        return y
    out = F.where(_always(), y, x)
    node = out._grad_fn
    if isinstance(node, PrimitiveBackward):
        named(out, "SigmoidBackward0")
        node.__class__ = _SIGMOID_NODE
        node.saved["result"] = SavedTensor(out, True)
    return out


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:  # noqa: A002
    # PyTorch's checks of approximate come before its kernel's of the dtype
    if not isinstance(approximate, str):
        raise TypeError("gelu(): argument 'approximate' must be str, not "
                        f"{type(approximate).__name__}")
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _gelu(input, approximate)


@named_backward("GeluBackward0")
@float_kernel("GeluKernelImpl")
@F.half_in_float32
def _gelu(input: Tensor, approximate: str) -> Tensor:  # noqa: A002
    if approximate == "tanh":
        cube = F.mul(F.mul(input, input), input)
        inner = F.mul(F.add(input, F.mul(cube, 0.044715)), _SQRT_2_OVER_PI)
        return F.mul(F.mul(input, 0.5), F.add(F.tanh(inner), 1.0))
    return F.mul(F.mul(input, 0.5), F.add(F.erf(F.mul(input, _INV_SQRT_2)), 1.0))


def _shift_by_max(x: Tensor, dim: int) -> Tensor:
    """x minus its max along dim (for a stable exp); an empty x, which has no max along an
    empty dim, is returned as it is: PyTorch gives an empty softmax there, not an error."""
    if not x.numel():
        F._axes(dim, x.ndim)  # still rejects a dim out of range
        return x
    return F.sub(x, F.amax(x.detach(), dim, keepdim=True))


def _softmax_input(x: Tensor, dim: int | None, dtype: Any, name: str) -> tuple[Tensor, int]:
    """The input cast to ``dtype`` first (as PyTorch's ``dtype=``), and the dimension: without
    one, PyTorch's legacy choice (0 for 0-, 1- and 3-D inputs, else 1), with its warning."""
    if dim is None:
        import warnings

        warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the "
                      "call to include dim=X as an argument.", UserWarning, stacklevel=3)
        dim = 0 if x.ndim in (0, 1, 3) else 1
    if not isinstance(dim, (tuple, list)):
        int_argument(name, "dim", 1, dim)
    int_dim(name, dim, x.ndim, " (position 1)")
    x = x if dtype is None else F.cast(x, dtype)
    if not x.dtype.is_floating_point and x.numel():  # PyTorch's error, naming its CPU
        # kernel (a 0-dim input's dim is its last); an empty input reaches no kernel
        last = "_lastdim" if not x.ndim or wrap_dim(dim, x.ndim) == x.ndim - 1 else ""
        raise NotImplementedError(f'"{name}{last}_kernel_impl" not implemented for '
                                  f"'{scalar_type_name(x.dtype)}'")
    return x, dim


def _empty_integer(x: Tensor) -> Tensor:
    """softmax's result for an empty integer or bool input: a new empty tensor of its dtype,
    as PyTorch's (whose kernel, which has no integer version, never runs for it)."""
    return F.clone(x)


@named_backward("SoftmaxBackward0")
def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None
            ) -> Tensor:
    x, dim = _softmax_input(input, dim, dtype, "softmax")
    return _softmax(x, dim) if x.dtype.is_floating_point else _empty_integer(x)


@F.half_in_float32
def _softmax(x: Tensor, dim: int) -> Tensor:
    e = F.exp(_shift_by_max(x, dim))
    return F.div(e, F.sum(e, dim, keepdim=True))


@named_backward("LogSoftmaxBackward0")
def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None
                ) -> Tensor:
    x, dim = _softmax_input(input, dim, dtype, "log_softmax")
    return _log_softmax(x, dim) if x.dtype.is_floating_point else _empty_integer(x)


def softmax_along(input: Tensor, dim: int, dtype: Any = None) -> Tensor:  # noqa: A002
    """torch.softmax and Tensor.softmax: ``dtype`` third (nn.functional's softmax has its
    ``_stacklevel`` there, which took a dtype passed third, silently)."""
    return softmax(input, dim, dtype=dtype)


def log_softmax_along(input: Tensor, dim: int, dtype: Any = None) -> Tensor:  # noqa: A002
    """torch.log_softmax and Tensor.log_softmax (see softmax_along)."""
    return log_softmax(input, dim, dtype=dtype)


def _log_softmax(x: Tensor, dim: int) -> Tensor:
    if x.dtype in D.LOW_FLOATS and x.ndim and wrap_dim(dim, x.ndim) == x.ndim - 1:
        return _log_softmax_lastdim_low(x, dim)
    return _log_softmax_wide(x, dim)


@F.half_in_float32
def _log_softmax_wide(x: Tensor, dim: int) -> Tensor:
    shifted = _shift_by_max(x, dim)
    return F.sub(shifted, F.log(F.sum(F.exp(shifted), dim, keepdim=True)))


def _log_softmax_lastdim_low(x: Tensor, dim: int) -> Tensor:
    """A float16/bfloat16 log_softmax along the last dim as PyTorch's CPU kernel for it: in
    float32, but its sum of exps and that sum's log each rounded to the input's dtype (the
    kernel keeps them in buffers of it); float32 throughout is an ulp off on 7% of values."""
    def rounded(t: Tensor) -> Tensor:
        return F.cast(F.cast(t, x.dtype), D.float32)

    shifted = _shift_by_max(F.cast(x, D.float32), dim)
    log_sum = rounded(F.log(rounded(F.sum(F.exp(shifted), dim, keepdim=True))))
    return F.cast(F.sub(shifted, log_sum), x.dtype)


def _float_only(x: Tensor, kernel: str) -> None:
    """PyTorch's error for an op whose kernel has floating dtypes only (checked after its
    shapes, as its)."""
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{scalar_type_name(x.dtype)}'")


def _normalized_shape(x: Tensor, normalized_shape: int | Sequence[int], op: str
                      ) -> tuple[int, ...]:
    """layer_norm's and rms_norm's normalized_shape as a tuple, which must be the input's
    trailing dimensions (PyTorch's error and text where it is not: its rms_norm writes the
    expected shape "[*4]", its layer_norm "[*, 4]")."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(
        map(int, normalized_shape))
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    if op == "rms_norm" and len(shape) > x.ndim:
        raise ValueError(f"Input tensor must have at least {len(shape)} dimensions, but got "
                         f"{x.ndim}")
    if len(shape) > x.ndim or tuple(x.shape[x.ndim - len(shape):]) != shape:
        dims = ", ".join(map(str, shape)) if op == "rms_norm" else "".join(
            f", {d}" for d in shape)
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*{dims}], but got input of size{list(x.shape)}")
    return shape


@named_backward("NativeLayerNormBackward0")
def layer_norm(input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    from .conv import check_norm_dtypes

    int_list_argument("layer_norm", "normalized_shape", 2, normalized_shape, single=False)
    # the dtypes as given: a float16 input's parameters are float16 or float32, not bfloat16
    check_norm_dtypes(input, weight, bias)
    return _layer_norm(input, normalized_shape, weight, bias, eps)


@F.half_in_float32
def _layer_norm(input: Tensor, normalized_shape: int | Sequence[int],  # noqa: A002
                weight: Tensor | None, bias: Tensor | None, eps: float) -> Tensor:
    wanted = [normalized_shape] if isinstance(normalized_shape, int) else [
        int(d) for d in normalized_shape]
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and list(t.shape) != wanted:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but "
                               f"got {name} of shape {list(t.shape)} and normalized_shape = "
                               f"{wanted}")
    shape = _normalized_shape(input, normalized_shape, "layer_norm")
    _float_only(input, "LayerNormKernelImpl")
    axes = tuple(range(input.ndim - len(shape), input.ndim))
    centered = F.sub(input, F.mean(input, axes, keepdim=True))
    var = F.mean(F.mul(centered, centered), axes, keepdim=True)
    y = F.div(centered, F.sqrt(F.add(var, eps)))
    if weight is not None:
        y = F.mul(y, weight)
    if bias is not None:
        y = F.add(y, bias)
    return y


@autocast_lower
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight.T + bias. With a bias PyTorch runs addmm and checks dtypes with its texts;
    without one, matmul's checks speak. A non-contiguous input of other than 2 dims is not
    flattened into addmm there: its bias is added in place to the product (at::linear's
    ``output.add_(bias)``), so a bias of another dtype is cast into the product's."""
    if (bias is not None and weight.ndim == 2 and bias.dtype is not weight.dtype
            and input.ndim != 2 and not input.is_contiguous()):
        y = linear(input, weight)
        out = F.add(y, bias)
        return out if out.dtype is y.dtype else out.to(y.dtype)
    if bias is not None and weight.ndim == 2:
        if input.dtype is not weight.dtype:
            raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                               f"{scalar_type_name(input.dtype)} and "
                               f"{scalar_type_name(weight.dtype)}")
        if bias.dtype is not weight.dtype:
            raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                               f"{scalar_type_name(bias.dtype)} and "
                               f"{scalar_type_name(weight.dtype)}")
    if input.ndim > 2 and weight.ndim == 2:
        # one GEMM over the flattened leading axes: numpy runs (B, T, K) @ (K, N) as B small
        # GEMMs, 8x slower at (16, 64, 128) @ (128, 512), and its weight gradient likewise
        lead = tuple(input.shape[:-1])
        y = linear(F.reshape(input, (-1, input.shape[-1])), weight, bias)
        return F.reshape(y, (*lead, weight.shape[0]))
    if bias is not None and input.dtype is bfloat16 and input.ndim == 2 and weight.ndim == 2:
        from .products import addmm  # its bfloat16 product plus bias is rounded once

        return addmm(bias, input, F.transpose(weight, 0, 1))
    y = F.matmul(input, F.transpose(weight, 0, 1) if weight.ndim == 2 else weight)
    if bias is None:
        return y
    # PyTorch runs addmm for a 2-d input
    return named(F.add(y, bias), "AddmmBackward0") if input.ndim == 2 else F.add(y, bias)


def check_dropout_p(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def drop(x: Tensor, p: float, training: bool, inplace: bool, noise_shape: tuple[int, ...],
         generator: Any = None, dtype: Any = None) -> Tensor:
    """``x`` with the elements (or the slices) a Bernoulli draw of ``noise_shape`` (PyTorch's
    ``bernoulli_(1 - p)``: ``creation.bernoulli_uniforms``), broadcast to x's shape, zeroes
    and the rest scaled by 1/(1-p) while ``training``; ``inplace``: written into ``x``, as
    ``x.copy_``. ``p`` is checked before. (``dtype``: kept for callers; the noise has x's.)"""
    if not training or p == 0.0:
        return x
    if p == 1.0:  # PyTorch's x * zeros_like(x): x's dtype, -0.0 for negative floats
        from ..creation import zeros_like

        out = F.mul(x, 0.0) if x.dtype.is_floating_point else F.mul(x, zeros_like(x))
    elif not x.dtype.is_floating_point:  # its float mask scaled into x
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{scalar_type_name(x.dtype)}")
    else:  # PyTorch's: noise = bernoulli_(1 - p) of x's dtype, noise /= 1 - p, x * noise
        from ..creation import bernoulli_uniforms

        keep = F.lt(bernoulli_uniforms(noise_shape, generator, x.device), 1.0 - p)
        out = F.mul(x, F.div(F.cast(keep, x.dtype), 1.0 - p))
    return F.overwrite(x, out) if inplace else out


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False, *,
            generator: Any = None) -> Tensor:
    """Elements zeroed with probability ``p`` and the rest scaled by 1/(1-p) while
    ``training`` (``inplace``: written into ``x``, as ``x.copy_``)."""
    check_dropout_p(p)
    return drop(input, p, training, inplace, tuple(input.shape), generator)


def _stable_sigmoid(x: Tensor) -> Tensor:
    """sigmoid from e = exp(-|x|) <= 1: no exp overflows, so no inf * 0 = nan in backward
    (1 / (1 + exp(-x)) has one at x = -100). -|x| is written with where so its derivative
    at 0 is -1 (abs's would be 0)."""
    nonneg = F.ge(x, 0)
    e = F.exp(F.where(nonneg, F.neg(x), x))
    r = F.div(1.0, F.add(e, 1.0))
    return F.where(nonneg, r, F.mul(e, r))


@named_backward("SiluBackward0")
@float_kernel("silu_cpu")
def silu(input: Tensor, inplace: bool = False) -> Tensor:
    return _inplace(silu, input) if inplace else _silu(input)


@F.half_in_float32
def _silu(x: Tensor) -> Tensor:
    return F.mul(x, _stable_sigmoid(x))


@piecewise_linear("LeakyReluBackward0")
@float_kernel("leaky_relu_cpu")
def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    if inplace:
        return _inplace(lambda t: leaky_relu(t, negative_slope), input, "LeakyReluBackward1",
                        ERR_INPLACE_LEAKY_RELU if negative_slope < 0 else None)
    if isinstance(negative_slope, float) and input.dtype is not D.float64 \
            and math.isfinite(negative_slope) and abs(negative_slope) > _FLOAT32_MAX:
        raise RuntimeError("value cannot be converted to type float without overflow")
    if isinstance(negative_slope, float) and not math.isfinite(negative_slope):
        # x times 1 or the slope: the gradient is 1 where x > 0, not 0 * inf (a NaN) from
        # the unpicked branch, as PyTorch's leaky_relu_backward
        factor = F.where(F.gt(input, 0), 1.0, negative_slope)
        return F.mul(input, factor if factor.dtype is input.dtype else F.cast(factor,
                                                                              input.dtype))
    # x > 0 picks the branch: at 0 the gradient is negative_slope, as PyTorch's
    return F.where(F.gt(input, 0), input, F.mul(input, negative_slope))


_FLOAT32_MAX = float(np.finfo(np.float32).max)


@named_backward("SoftplusBackward0")
@float_kernel("softplus_cpu")
@F.half_in_float32
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log1p(exp(beta x)) / beta, x where beta x > threshold, as PyTorch's. The curve reads 0
    where the identity is taken: its exp never overflows there (an inf would make a nan of the
    zero gradient it passes back)."""
    z = F.mul(input, beta)
    linear = F.gt(z, threshold)
    if beta == 0:  # log(2) / 0: inf, whose gradient PyTorch takes as sigmoid(beta x) (0.5;
        # nan for an infinite x), where the quotient's would be 0 * inf, a nan: inf plus
        # s x - s x for that s, the value inf (nan for an infinite x) and the gradient s
        s = sigmoid(z).detach()
        soft = F.add(F.mul(F.sub(input, input.detach()), s), math.inf)
        return F.where(linear, input, soft)
    soft = F.log1p(F.exp(F.where(linear, 0.0, z)))
    return F.where(linear, input, F.div(soft, beta) if beta != 1.0 else soft)


def _inplace(fn: Any, x: Tensor, name: str | None = None, refused: str | None = None
             ) -> Tensor:
    """x overwritten with fn(x). fn reads a clone: its backward keeps what it saved, which
    x's new value would otherwise overwrite (the same values, not the memory saved).
    ``name``: the node PyTorch's in-place op records (EluBackward1, where the out-of-place op
    records EluBackward0); ``refused``: the error its backward raises (an in-place leaky_relu
    of a negative slope, whose gradient PyTorch does not derive from the result)."""
    value = fn(F.clone(x))
    if refused is not None and name is not None and value.requires_grad:
        value = no_derivative(value, [value], RuntimeError, refused, name)
    out = F.overwrite(x, value, kept=True)
    return out if name is None else named(out, name)


ERR_INPLACE_LEAKY_RELU = (
    "In-place leakyReLu backward calculation is triggered with a negative slope which is not "
    "supported. This is caused by calling in-place forward function with a negative slope, "
    "please call out-of-place version instead. File an issue at "
    "https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu "
    "backward calculation with negative slope")
ERR_INPLACE_ELU = (
    "In-place elu backward calculation is triggered with a negative slope which is not "
    "supported. This is caused by calling in-place forward function with a negative slope, "
    "please call out-of-place version instead.")


@F.half_in_float32
def rms_norm(input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x², trailing axes) + eps) (times weight); eps None is the dtype's
    machine epsilon, as PyTorch's; the result has the input's dtype, whatever the weight's."""
    int_list_argument("rms_norm", "normalized_shape", 2, normalized_shape, single=False)
    wanted = [normalized_shape] if isinstance(normalized_shape, int) else [
        int(d) for d in normalized_shape]
    if weight is not None and list(weight.shape) != wanted:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got "
                           f"weight of shape {list(weight.shape)} and normalized_shape = {wanted}")
    shape = _normalized_shape(input, normalized_shape, "rms_norm")
    _float_only(input, "rms_norm")
    if eps is None:
        eps = float(np.finfo(input.dtype.np).eps)
    axes = tuple(range(input.ndim - len(shape), input.ndim))
    y = F.div(input, F.sqrt(F.add(F.mean(F.mul(input, input), axes, keepdim=True), eps)))
    y = y if weight is None else F.mul(y, weight)
    return y if y.dtype is input.dtype else F.cast(y, input.dtype)
