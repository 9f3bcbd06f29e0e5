"""Tensor: an array (numpy on "cpu", CuPy on "cuda:N") with autograd metadata."""

from __future__ import annotations

import copy
import inspect
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import _dtype as D
from ._device import array_module, as_device, canonical_device, move_array
from ._device import _DEVICES
from ._device import device as rt_device
from ._tensor_str import values_str, with_suffixes
from .autograd import grad_mode
from .autograd.grad_mode import _inference as _inference_state
from .autograd.node import LeafHookDict, Node, RemovableHandle, _HookDict, add_hook
from .autograd.node import _DEFAULT_GRAD_DTYPE, register_post_accumulate_grad_hook
from .tracing import GraphBreak, MetaArray, stands_for_number
from .tracing import _state as _trace_state


class _VersionCounter:
    __slots__ = ("v",)
    inference = False

    def __init__(self) -> None:
        self.v = 0


class _LevelVersionCounter(_VersionCounter):
    """The counter of a storage made while a runtime.func grad or jvp level ran on this thread
    (``_VersionCounter`` is this class while one runs on any thread): the serial of the
    innermost such level, 0 for none here. A level refuses an in-place write into a storage
    made before it (PyTorch's "mutate a captured Tensor")."""

    __slots__ = ("level",)

    def __init__(self) -> None:
        self.v = 0
        stack = func_levels.stack
        self.level = stack[-1][0] if stack else 0


class _FuncLevels(threading.local):
    """Per thread, the running runtime.func grad/jvp levels, outermost first: (serial, the
    version counters of the level's own inputs)."""

    def __init__(self) -> None:
        self.stack: list[tuple[int, set[int]]] = []


func_levels = _FuncLevels()
# runtime.creation._as_array, imported on first use (an import in the call cost 1 us a tensor)
_as_array: Callable[..., tuple[Any, D.DType, str]] | None = None
_PLAIN_VERSION_COUNTER = _VersionCounter
_levels_lock = threading.Lock()
_levels_running = 0


def enter_func_level(serial: int, inputs: set[int]) -> None:
    """A runtime.func grad/jvp level starts on this thread: storages made from now on (on any
    thread, while one runs) get ``_LevelVersionCounter`` (``_make`` reads the module's
    ``_VersionCounter`` at each new storage)."""
    global _VersionCounter, _levels_running
    func_levels.stack.append((serial, inputs))
    with _levels_lock:
        _levels_running += 1
        _VersionCounter = _LevelVersionCounter  # type: ignore[misc]


def exit_func_level() -> None:
    global _VersionCounter, _levels_running
    func_levels.stack.pop()
    with _levels_lock:
        _levels_running -= 1
        if _levels_running == 0:
            _VersionCounter = _PLAIN_VERSION_COUNTER  # type: ignore[misc]


def check_not_captured(t: Any, op: str) -> None:
    """PyTorch's refusal, inside a grad or jvp transform, of an in-place write into a tensor
    made before the innermost level started and not one of its inputs (a captured one)."""
    serial, inputs = func_levels.stack[-1]
    vc = t._vc
    if id(vc) in inputs or getattr(vc, "level", 0) >= serial:
        return
    raise RuntimeError(f"During a grad (vjp, jvp, grad, etc) transform, the function provided "
                       f"attempted to call in-place operation (aten::{op}_) that would mutate a "
                       "captured Tensor. This is not supported; please rewrite the function being "
                       "transformed to explicitly accept the mutated Tensor(s) as inputs.")


class _InferenceVersionCounter(_VersionCounter):
    """The counter of an inference tensor (one made under inference_mode) and of its views:
    PyTorch's have none, so the counter itself is the mark (views share it)."""

    __slots__ = ()
    inference = True


ERR_FACTORY_REQUIRES_GRAD = "Only Tensors of floating point and complex dtype can require gradients"


def _new_shape(name: str, sizes: tuple[Any, ...], size: Any) -> tuple[int, ...]:
    """Tensor.new_*'s size (varargs or one sequence, or ``size=``) checked as PyTorch's parser
    and empty_generic check it: a float is its TypeError, a negative size its RuntimeError
    (the factories' own text differs)."""
    if not sizes and size is None:
        raise TypeError(f'{name}() missing 1 required positional arguments: "size"')
    raw = sizes[0] if len(sizes) == 1 else sizes if sizes else size
    if isinstance(raw, float):
        raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, not "
                        "float")
    given = tuple(raw) if isinstance(raw, (tuple, list)) else (raw,)
    negative = next((d for d in given if isinstance(d, int) and d < 0), None)
    if negative is not None:
        raise RuntimeError(f"Trying to create tensor with negative dimension {negative}: "
                           f"{list(given)}")
    return tuple(F.sizes_or(sizes, size, name, "size")) if sizes else (given,)

def _new_options(name: str, layout: Any, pin_memory: bool | None) -> None:
    """Tensor.new_*'s layout= and pin_memory=, checked as PyTorch's factories check them."""
    if layout is not None or pin_memory:
        from .ops.layouts import check_factory_options

        check_factory_options(name, layout, pin_memory)

class Tensor:
    # hot fields in slots; rarely set ones (views, hooks) default at class level and land in
    # the instance __dict__ only when set, which keeps tensor creation cheap
    __slots__ = ("_data", "dtype", "device", "_rg", "_grad", "_grad_fn", "output_nr", "_vc",
                 "__weakref__", "__dict__")
    _base: Tensor | None = None
    _view_chain: tuple[Any, ...] = ()
    _view_version = 0
    # PyTorch's creation meta of a view: None (default), "multi_output" (an output of
    # split/chunk/unbind or of a custom Function with several differentiable outputs, or a view
    # of one) or "custom_function" (a view a custom Function returned, an input returned as-is
    # included), which forbid writing it in place with grad
    _creation: str | None = None
    _grad_acc: Any = None
    # PyTorch's grad_dtype of a leaf: the dtype its .grad takes (None: any), set only when
    # it differs from the default, the tensor's own dtype
    _grad_dtype: Any = _DEFAULT_GRAD_DTYPE
    _hooks: _HookDict | None = None
    _retains_grad = False
    __array_priority__ = 1000  # numpy defers to our operators

    def __init__(self, *args: Any, device: Any = None) -> None:
        """PyTorch's legacy constructor ``torch.Tensor(...)``, of the default float dtype: no
        argument: empty, of size (0,); sizes (ints or a Size): uninitialized of that shape
        (``nn.Parameter(rt.Tensor(out, in))``); one sequence or array: its values as floats;
        one tensor: shares its storage (not its history). ``rt.tensor`` infers a dtype."""
        from .ops.torch_names import legacy_new

        t = legacy_new(D.default_float, "cpu", args, device, any_tensor=True)
        self._init(t._data, t.dtype, t.device, None, 0, t._vc)

    @classmethod
    def _of(cls, data: Any, dtype: Any = None, device: Any = None,
            requires_grad: bool = False) -> Tensor:
        """A tensor of ``data`` as ``rt.tensor`` makes it (its dtype inferred or given)."""
        global _as_array
        if _as_array is None:  # runtime.creation's, which imports this module: once
            from .creation import _as_array
        arr, dt, dev = _as_array(data, dtype, device)
        t = cls._make(arr, dt, dev, None, 0, _InferenceVersionCounter()
                      if _inference_state.enabled else _VersionCounter())
        if requires_grad:
            t._factory_requires_grad_(True)
        return t

    def _init(self, data: Any, dtype: D.DType, device: str, grad_fn: Node | None,
              output_nr: int, vc: _VersionCounter) -> None:
        self._data = data
        self.dtype = dtype
        self.device = _DEVICES.get(device) or as_device(device)
        self._rg = grad_fn is not None
        self._grad: Tensor | None = None
        self._grad_fn = grad_fn
        self.output_nr = output_nr
        self._vc = vc

    @classmethod
    def _make(cls, data: Any, dtype: D.DType, device: str, grad_fn: Node | None = None,
              output_nr: int = 0, vc: _VersionCounter | None = None) -> Tensor:
        t = object.__new__(cls)
        if vc is None:  # a new storage: an inference tensor's under inference_mode
            vc = (_InferenceVersionCounter()
                  if grad_mode.inference_entered and _inference_state.enabled
                  else _VersionCounter())
        # _init's body, inlined: every op's result is made here, and a call costs a frame
        t._data = data
        t.dtype = dtype
        t.device = _DEVICES.get(device) or as_device(device)
        t._rg = grad_fn is not None
        t._grad = None
        t._grad_fn = grad_fn
        t.output_nr = output_nr
        t._vc = vc
        return t

    # --- autograd metadata ------------------------------------------------------------------
    @property
    def grad_fn(self) -> Node | None:
        if self._base is not None and self._view_version != self._vc.v:
            from .ops.inplace import regenerate_view_history

            regenerate_view_history(self)
        return self._grad_fn

    @property
    def grad(self) -> Tensor | None:
        tracer = _trace_state.tracer
        if tracer is not None:
            return tracer.read_grad(self)
        if self._grad is None and self._grad_fn is not None and not self._retains_grad:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
                "Its .grad attribute won't be populated during autograd.backward(). If you "
                "indeed want the .grad field to be populated for a non-leaf Tensor, use "
                ".retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by "
                "mistake, make sure you access the leaf Tensor instead.", UserWarning,
                stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        tracer = _trace_state.tracer
        if value is not None:  # a capture knows where its tensors are planned to be
            _check_assigned_grad(self, value, _eager_device if tracer is None else tracer.device_of)
        if tracer is not None:
            tracer.write_grad(self, value)
            return
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self.grad = None

    @property
    def grad_dtype(self) -> D.DType | None:
        """PyTorch's: the dtype a leaf's .grad takes (gradients are cast to it), None for any
        dtype; the tensor's own dtype unless set."""
        if self._grad_fn is not None:
            raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
        return effective_grad_dtype(self)

    @grad_dtype.setter
    def grad_dtype(self, value: D.DType | None) -> None:
        if self._grad_fn is not None:
            raise RuntimeError("grad_dtype can only be set on leaf tensors.")
        if value is not None and not isinstance(value, D.DType):
            raise RuntimeError("grad_dtype must be a torch.dtype or None, but got "
                               f"{type(value).__name__}")
        old = self._grad
        if old is not None and value is not None and old.dtype is not value:
            raise RuntimeError(
                f"Cannot set grad_dtype to '{D.scalar_type_name(value)}' because there is "
                f"already a gradient with dtype '{D.type_meta_name(old.dtype)}'. Please clear "
                "the gradient (.grad = None) before changing grad_dtype, or ensure the new "
                "grad_dtype matches the existing gradient's dtype.")
        self._grad_dtype = value
        ref = self._grad_acc
        acc = ref() if ref is not None else None
        if acc is not None:  # an accumulator made before checks gradients against the new one
            from .autograd.node import Meta

            acc.input_metas = [Meta(self._data.shape, value, self.device)]

    @property
    def requires_grad(self) -> bool:
        if not self._rg and self._base is not None and self._view_version != self._vc.v:
            # its base written in place since the view was made: PyTorch's view requires grad
            # when its base does (the history is regenerated where grad_fn is read)
            return self._base._rg
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise RuntimeError("requires_grad must be a bool")
        if value and self._grad_fn is not None:  # requires_grad_ lets this pass, as PyTorch's
            raise RuntimeError("you can only change requires_grad flags of leaf variables.")
        if value and not self.dtype.is_floating_point:  # PyTorch's text for the setter
            raise RuntimeError("only Tensors of floating point and complex dtype can require "
                               "gradients")
        self.requires_grad_(value)

    @requires_grad.deleter
    def requires_grad(self) -> None:  # PyTorch's setter, called with no value
        raise RuntimeError("requires_grad must be a bool")

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if type(requires_grad) is not bool:  # PyTorch's argument parser takes bools only
            raise TypeError("requires_grad_(): argument 'requires_grad' (position 1) must be "
                            f"bool, not {_typename(requires_grad)}")
        if self._grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to "
                    "use a computed variable in a subgraph that doesn't require differentiation "
                    "use var_no_grad = var.detach().")
            return self
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if requires_grad and self._vc.inference and not _inference_state.enabled:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                               "InferenceMode is not allowed.")
        if _trace_state.tracer is not None:  # planner.capture: a replay sets it (also to
            _trace_state.tracer.requires_grad_changes(self)  # what it was: not guarded then)
        self._rg = bool(requires_grad)
        return self

    def _factory_requires_grad_(self, requires_grad: bool) -> Tensor:
        """``requires_grad_`` for a tensor a factory (``ones``, ``tensor``, ``randperm``,
        ``nn.Parameter`` ...) makes: PyTorch's factories refuse an integer or bool dtype with
        their own text, which names complex dtypes too."""
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError(ERR_FACTORY_REQUIRES_GRAD)
        return self.requires_grad_(requires_grad)

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    def is_inference(self) -> bool:
        """Whether this tensor was made under inference_mode (or is a view of one)."""
        return self._vc.inference

    @property
    def _version(self) -> int:
        if self._vc.inference:
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._vc.v

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def retain_grad(self) -> None:
        if not self._rg:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.is_leaf or self._retains_grad:
            return
        import weakref

        ref = weakref.ref(self)
        lock = threading.Lock()  # backward calls on one graph from several threads meet here

        def retain(g: Tensor | None) -> None:
            t = ref()
            if t is None or g is None:
                return
            with lock:
                if t.grad is None:
                    t.grad = g.detach().clone() if not grad_mode.is_grad_enabled() else g.clone()
                else:
                    t.grad = t.grad + g
        self.grad_fn.set_retains_grad_hook(self.output_nr, retain)  # type: ignore[union-attr]
        self._retains_grad = True

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        fn = self.grad_fn
        if fn is not None:
            return fn.add_tensor_pre_hook(self.output_nr, hook)
        if self._hooks is None:
            self._hooks = LeafHookDict()
        return add_hook(self._hooks, hook)

    register_post_accumulate_grad_hook = register_post_accumulate_grad_hook

    def backward(self, gradient: Tensor | None = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Sequence[Tensor] | None = None) -> None:
        from .autograd.api import backward

        backward([self], None if gradient is None else [gradient], retain_graph, create_graph,
                 inputs=inputs)

    def detach(self) -> Tensor:
        t = Tensor._make(self._data, self.dtype, self.device, None, 0, self._vc)
        if _trace_state.tracer is not None:  # a tensor the captured step makes (its .grad)
            _trace_state.tracer.made_alias(t)
        return t

    def detach_(self) -> Tensor:
        if self._base is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
                "called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in runtime/optim/optimizer.py as the solution.")
        self._grad_fn = None
        self._rg = False
        self.output_nr = 0
        return self

    @property
    def data(self) -> Tensor:
        # a new version counter (unlike detach), of the same kind: inference stays inference
        t = Tensor._make(self._data, self.dtype, self.device, None, 0, type(self._vc)())
        if _trace_state.tracer is not None:  # a tensor the captured step makes (its .grad)
            _trace_state.tracer.made_alias(t)
        return t

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self._rg and not value.dtype.is_floating_point:
            raise RuntimeError("data set to a tensor that requires gradients must be floating "
                               "point or complex dtype")
        if _trace_state.tracer is not None:  # before the swap: a traced value kept here leaks
            # a plan does not replace a tensor's storage (the step replayed the old values)
            raise GraphBreak("Tensor.data is assigned")
        if self._grad_acc is not None and (value.dtype is not self.dtype
                                           or value.device != self.device):
            # a leaf's accumulator checks gradients against the metadata it was made with:
            # a new one for the new dtype or device, as PyTorch's set_data resets it (a graph
            # still alive, as the last step's loss, keeps the old one)
            self._grad_acc = None
        self._data = value._data
        self.dtype = value.dtype
        self.device = value.device

    @data.deleter
    def data(self) -> None:
        raise RuntimeError("Deleting tensor data is not allowed. Delete tensor instead!")

    # --- plain properties -------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def size(self, dim: int | None = None) -> Any:
        """The shape (a ``Size``), or the size of dimension ``dim``."""
        shape = self._data.shape
        if dim is None:
            return Size(shape)
        if not shape:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        return shape[wrap_dim(dim, len(shape))]

    def numel(self) -> int:
        return int(self._data.size)

    @property
    def nbytes(self) -> int:
        """The bytes of the elements (numel times the dtype's size), as PyTorch's."""
        return self.numel() * self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    @property
    def is_cuda(self) -> bool:
        return self.device != "cpu"

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The tensor's values as a numpy array, sharing its storage; ``force`` takes them
        from a tensor that requires grad or lives on a GPU (a copy there), as PyTorch's."""
        if _trace_state.tracer is not None:
            raise GraphBreak("Tensor.numpy() reads a tensor's value")
        if force:
            return self.detach().cpu().numpy()
        if self._rg and grad_mode.is_grad_enabled():  # PyTorch lets no_grad code read it
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        if self.device != "cpu":
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use "
                            "Tensor.cpu() to copy the tensor to host memory first.")
        return self._data

    def item(self) -> Any:
        if _trace_state.tracer is not None:  # a step returning it as it is: captured
            return _trace_state.tracer.item_of(self, sys._getframe(1))
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar")
        return self._data.reshape(()).item() if self.device == "cpu" else self._data.item()

    def tolist(self) -> Any:
        if _trace_state.tracer is not None:
            raise GraphBreak("Tensor.tolist() reads a tensor's value")
        return move_array(self._data, "cpu").tolist()  # type: ignore[union-attr]

    def __bool__(self) -> bool:
        tracer = _trace_state.tracer
        if tracer is not None:
            truth_of = getattr(tracer, "truth_of", None)
            if truth_of is None:
                raise GraphBreak("Tensor.bool() reads a tensor's value")
            return bool(truth_of(self))
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._data.reshape(()))

    def __format__(self, format_spec: str) -> str:
        """``f"{loss:.4f}"``: a 0-d tensor formats as its number (PyTorch's rule: plain
        Tensors only, a Parameter or another subclass as an object)."""
        if self.dim() == 0 and type(self) is Tensor:
            if _trace_state.tracer is not None:
                raise GraphBreak("Tensor.__format__() reads a tensor's value")
            return self._data.reshape(()).item().__format__(format_spec) \
                if self.device == "cpu" else self._data.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def __float__(self) -> float:
        return float(self._scalar_item())

    def __int__(self) -> int:
        return int(self._scalar_item())

    def _scalar_item(self) -> Any:
        """item() for Python's number protocols: PyTorch's ValueError for a tensor of other than
        one element (item()'s own error is a RuntimeError)."""
        if self._data.size != 1 and type(self._data) is not MetaArray:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __index__(self) -> int:
        if self.dtype.category != 1 or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __repr__(self) -> str:
        if type(self._data) is MetaArray:
            if stands_for_number(self):  # as text: a value a replay would not format again
                raise GraphBreak("a number argument is formatted as text")
            return f"tensor(<captured {list(self.shape)} {self.dtype.name}>)"
        body = values_str(np.asarray(move_array(self._data, "cpu")), len("tensor("))
        extra = []
        if not self._data.size and self._data.shape != (0,):
            extra.append(f"size={tuple(self._data.shape)}")
        if self.device != "cpu":
            extra.append(f"device='{self.device}'")
        if self.dtype is not D.default_float and (self.dtype not in (D.int64, D.bool_)
                                                  or not self._data.size):  # PyTorch's rule
            extra.append(f"dtype={self.dtype!r}")
        try:  # (a view's history is brought up to date, as PyTorch's repr does)
            grad_fn_name = None if self.grad_fn is None else type(self._grad_fn).__name__
        except RuntimeError:  # a view made and written in no_grad: PyTorch's "Invalid"
            grad_fn_name = "Invalid"
        if grad_fn_name is not None:
            extra.append(f"grad_fn=<{grad_fn_name}>")
        elif self._rg:
            extra.append("requires_grad=True")
        return with_suffixes(f"tensor({body}", extra, len("tensor("))

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.  If you were "
                               "attempting to deepcopy a module, this may be because of a "
                               "torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        if id(self) in memo:
            return memo[id(self)]  # type: ignore[no-any-return]
        # PyTorch deep-copies the storage (once per deepcopy: a base and its view copied
        # together share the copy) and sets the new tensor onto it (set_ bumps its version)
        root, offset = _storage_of(self._data)
        if root is None:
            data = self._data.copy()
        else:
            key = id(root)
            if key not in memo:
                memo[key] = root.copy(order="K")
                memo.setdefault(id(memo), []).append(root)  # copy's rule: keep it alive
            data = _strided(memo[key], offset, self._data)
        new = type(self)._make(data, self.dtype, self.device)
        new._vc.v = 1
        new._rg = self._rg
        memo[id(self)] = new
        if self._grad is not None:
            new._grad = copy.deepcopy(self._grad, memo)
        user = _user_attrs(self)
        if user:
            new.__dict__.update(copy.deepcopy(user, memo))
        return new

    def __copy__(self) -> Tensor:
        """``copy.copy``: PyTorch's rebuild of its ``__reduce_ex__`` without a copy of the
        storage: a leaf of the same type over the same memory (writes show in both), its
        requires_grad and a user's attributes kept, its version 1 (rebuilt with set_)."""
        if type(self._data) is MetaArray:
            raise GraphBreak("copy.copy of a tensor rebuilds it from its storage")
        new = type(self)._make(self._data, self.dtype, self.device)
        new._vc.v = 1
        new._rg = self._rg
        new.__dict__.update(_user_attrs(self))
        return new

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as PyTorch's: its whole storage (a copy of its own in each tensor, so a base
        and its view pickled together come back apart), offset, size and strides, dtype,
        device, requires_grad and the attributes a user set; the gradient and history are
        left out (a tensor comes back a leaf)."""
        if type(self._data) is MetaArray:
            raise GraphBreak("pickling a tensor reads its value")
        root, offset = _storage_of(self._data)
        if root is None:  # not a numpy array (a GPU's): its values, contiguous, on the CPU
            root = np.ascontiguousarray(move_array(self._data, "cpu"))
            offset, strides = 0, root.strides
        else:
            root, strides = root.copy(order="K"), self._data.strides
        return (_rebuild_tensor, (type(self), root, offset, tuple(self._data.shape), strides,
                                  self.dtype, str(self.device), self._rg, _user_attrs(self)))

    def __hash__(self) -> int:
        if type(self._data) is MetaArray and stands_for_number(self):
            # a dict key or set member (``{0: a}.get(it % 3)``, ``it in {1, 4}``): the
            # number's own hash decides the lookup, which its stand-in's id would miss
            raise GraphBreak("a number argument is hashed (a dict key or set member)")
        return id(self)

    # --- conversion -------------------------------------------------------------------------
    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """PyTorch's forms: ``to(device=None, dtype=None, non_blocking=False, copy=False)``,
        ``to(dtype, non_blocking=False, copy=False)``, ``to(other, non_blocking=False,
        copy=False)``. ``non_blocking`` changes nothing here (every copy completes before
        it returns); ``copy`` gives a new tensor even where nothing changes."""
        from .ops.to_arguments import parse_to

        device, dtype, _, copy_, _ = parse_to(args, kwargs)  # memory_format: row-major
        out = self
        if dtype is not None and D.as_dtype(dtype) is not self.dtype:
            out = F.cast(out, D.as_dtype(dtype))
        if device is not None and canonical_device(device) != self.device:
            out = F.to_device(out, canonical_device(device))
        return F.clone(out) if copy_ and out is self else out

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def cuda(self, device: int | None = None) -> Tensor:
        return self.to("cuda" if device is None else f"cuda:{device}")

    def float(self) -> Tensor:
        return self.to(D.float32)

    def double(self) -> Tensor:
        return self.to(D.float64)

    def long(self) -> Tensor:
        return self.to(D.int64)

    def bool(self) -> Tensor:
        return self.to(D.bool_)

    def short(self) -> Tensor:
        return self.to(D.int16)

    def char(self) -> Tensor:
        return self.to(D.int8)

    def byte(self) -> Tensor:
        return self.to(D.uint8)

    def is_signed(self) -> bool:
        return self.dtype.is_signed

    def type_as(self, other: Tensor) -> Tensor:
        return self.to(other.dtype)

    def clone(self, *, memory_format: Any = None) -> Tensor:
        return F.clone(self, memory_format=memory_format)

    def half(self) -> Tensor:
        return self.to(D.float16)

    def bfloat16(self) -> Tensor:
        return self.to(D.bfloat16)

    def contiguous(self, memory_format: Any = None) -> Tensor:
        """self where its storage is in row-major order, else a row-major copy (so that a
        view of it works); ``memory_format``: see ops.layouts (row-major storage here)."""
        if memory_format is not None:
            from .ops.layouts import contiguous

            return contiguous(self, memory_format)
        return self if self._data.flags.c_contiguous else F.clone(self)

    def new_zeros(self, *sizes: Any, size: Any = None, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False, layout: Any = None,
                  pin_memory: bool | None = None) -> Tensor:
        from .creation import zeros

        _new_options("new_zeros", layout, pin_memory)
        shape = _new_shape("new_zeros", sizes, size)
        return zeros(*shape, dtype=dtype or self.dtype,
                     device=device or self.device, requires_grad=requires_grad)

    def new_ones(self, *sizes: Any, size: Any = None, dtype: Any = None, device: Any = None,
                 requires_grad: bool = False, layout: Any = None,
                 pin_memory: bool | None = None) -> Tensor:
        from .creation import ones

        _new_options("new_ones", layout, pin_memory)
        shape = _new_shape("new_ones", sizes, size)
        return ones(*shape, dtype=dtype or self.dtype,
                    device=device or self.device, requires_grad=requires_grad)

    def new_empty(self, *sizes: Any, size: Any = None, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False, layout: Any = None,
                  pin_memory: bool | None = None) -> Tensor:
        from .creation import empty

        _new_options("new_empty", layout, pin_memory)
        shape = _new_shape("new_empty", sizes, size)
        return empty(*shape, dtype=dtype or self.dtype,
                     device=device or self.device, requires_grad=requires_grad)

    def new_full(self, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
                 requires_grad: bool = False, layout: Any = None,
                 pin_memory: bool | None = None) -> Tensor:
        from .creation import full

        _new_options("new_full", layout, pin_memory)
        if isinstance(size, (int, float)):  # no varargs here: a sequence of sizes only
            raise TypeError("new_full(): argument 'size' (position 1) must be tuple of ints, "
                            f"not {type(size).__name__}")
        _new_shape("new_full", (), size)
        return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                    requires_grad=requires_grad)

    def new_tensor(self, data: Any, *, dtype: Any = None, device: Any = None,
                   requires_grad: bool = False) -> Tensor:
        """A new leaf holding a copy of ``data``, of this tensor's dtype and device unless
        given (as PyTorch's, which warns for a tensor ``data``; not for the tensor standing
        for a compiled step's number argument, a Python number in the step)."""
        if isinstance(data, Tensor) and not stands_for_number(data):
            warnings.warn("To copy construct from a tensor, it is recommended to use "
                          "sourceTensor.detach().clone() or sourceTensor.detach().clone()"
                          ".requires_grad_(True), rather than tensor.new_tensor(sourceTensor).",
                          UserWarning, stacklevel=2)
            data = data.detach().cpu().numpy()
        return Tensor._of(data, dtype=dtype or self.dtype, device=device or self.device,
                          requires_grad=requires_grad)

    def stride(self, dim: int | None = None) -> Any:
        """Strides in elements, as PyTorch's (numpy counts bytes). An empty array numpy
        made has all its strides 0: PyTorch's are the contiguous ones (each the product of
        the later sizes, a 0 counting as 1)."""
        data = self._data
        if data.size == 0 and not any(data.strides):
            strides, n = [], 1
            for size in reversed(data.shape):
                strides.append(n)
                n *= max(size, 1)
            strides = tuple(reversed(strides))
        else:
            strides = tuple(s // data.itemsize for s in data.strides)
        if dim is None:
            return strides
        if not strides:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        return strides[wrap_dim(dim, len(strides))]

    def is_contiguous(self, memory_format: Any = None) -> bool:
        if memory_format is not None:
            from .ops.layouts import is_contiguous

            return is_contiguous(self, memory_format)
        return bool(self._data.flags.c_contiguous)

    def ndimension(self) -> int:
        return self.ndim

    def nelement(self) -> int:
        return self.numel()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def where(self, condition: Any, other: Any) -> Tensor:
        """``where(condition, self, other)``."""
        return F.where(condition, self, other)

    def masked_fill_(self, mask: Tensor, value: Any) -> Tensor:
        """In place: ``value`` where ``mask`` is True."""
        result = T.masked_fill(self, mask, value)
        if F.write_expanded(self, result, lambda: np.broadcast_to(mask._data, self.shape),
                            "masked_fill_"):
            return self
        return F.overwrite(self, result)

    @property
    def xp(self) -> Any:
        return array_module(self.device)


def _eager_device(t: Tensor) -> str:
    return t.device


def effective_grad_dtype(t: Tensor) -> D.DType | None:
    """The dtype ``t.grad`` takes: its grad_dtype if set (None: any), else its own dtype."""
    grad_dtype = t._grad_dtype
    return t.dtype if grad_dtype is _DEFAULT_GRAD_DTYPE else grad_dtype


def _check_assigned_grad(t: Tensor, g: Any, device_of: Callable[[Tensor], str]) -> None:
    """PyTorch's checks of ``t.grad = g``, in its order and with its texts."""
    if not isinstance(g, Tensor):
        raise TypeError("assigned grad expected to be a Tensor or None but got grad of type "
                        f"{type(g).__name__}")
    if g is t:
        raise RuntimeError("can't assign Variable as its own grad")
    grad_dtype = effective_grad_dtype(t)
    if grad_dtype is not None and g.dtype is not grad_dtype:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{D.type_meta_name(g.dtype)}' to a "
            f"tensor with grad_dtype '{D.scalar_type_name(grad_dtype)}'. The gradient must match "
            "the tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's "
            "grad_dtype attribute with a specific dtype, or None to allow any dtype. Set "
            "grad_dtype with caution. Diverging the dtypes of a tensor and its gradient may "
            "break downstream systems that assume they match.")
    if device_of(g) != device_of(t):
        gd, td = rt_device(device_of(g)), rt_device(device_of(t))
        same = "'. Please ensure that the gradient and the tensor are on the same device"
        if gd.type != td.type:
            raise RuntimeError(f"attempting to assign a gradient with device type '{gd.type}' "
                               f"to a tensor with device type '{td.type}{same}")
        raise RuntimeError("attempting to assign a gradient located on device with index "
                           f"'{gd.index}' to a tensor located on device with index "
                           f"'{td.index}{same}")
    if g._data.shape != t._data.shape:  # plain tuples: no Size made on the common path
        raise RuntimeError(f"attempting to assign a gradient of size '{list(g.shape)}' to a "
                           f"tensor of size '{list(t.shape)}'. Please ensure that the gradient "
                           "and the tensor are the same size")


def _typename(value: Any) -> str:
    """A value's type as PyTorch's argument parser names it (int, numpy.bool, NoneType)."""
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else \
        f"{kind.__module__}.{kind.__name__}"


def _reflected(name: str) -> Callable[..., Any]:
    def m(self: Tensor, other: Any) -> Any:
        return getattr(F, name)(other, self)

    m.__name__ = "__r" + name + "__"
    return m


_RUNTIME_ATTRS = frozenset(("_base", "_view_chain", "_view_version", "_grad_acc", "_hooks",
                            "_retains_grad", "_creation"))


def _user_attrs(t: Tensor) -> dict[str, Any]:
    """The attributes a user set on ``t`` (its instance dict less the runtime's own)."""
    return {k: v for k, v in t.__dict__.items() if k not in _RUNTIME_ATTRS}


def _storage_of(arr: Any) -> tuple[np.ndarray | None, int]:
    """The numpy array owning ``arr``'s memory and ``arr``'s byte offset into it; (None, 0)
    for an array that is not numpy's."""
    if not isinstance(arr, np.ndarray):
        return None, 0
    root = arr
    while isinstance(root.base, np.ndarray):
        root = root.base
    return root, arr.__array_interface__["data"][0] - root.__array_interface__["data"][0]


def _strided(storage: np.ndarray, offset: int, like: Any) -> np.ndarray:
    """A view of ``storage`` with ``like``'s shape and strides, ``offset`` bytes in."""
    return np.ndarray(like.shape, like.dtype, buffer=storage, offset=offset,
                      strides=like.strides)


def _rebuild_tensor(cls: type[Tensor], storage: np.ndarray, offset: int, shape: tuple[int, ...],
                    strides: tuple[int, ...], dtype: D.DType, device: str, requires_grad: bool,
                    attrs: dict[str, Any]) -> Tensor:
    """A pickled tensor back (``Tensor.__reduce_ex__``): a leaf, set onto its storage."""
    data = np.ndarray(shape, storage.dtype, buffer=storage, offset=offset, strides=strides)
    t = cls._make(move_array(data, device) if device != "cpu" else data, dtype, device)
    t._vc.v = 1  # PyTorch rebuilds with set_, which counts as a write
    t._rg = requires_grad
    t.__dict__.update(attrs)
    return t


from .ops import functional as F  # noqa: E402  (the ops need Tensor defined first)
from .ops.shapes import Size, wrap_dim  # noqa: E402
from .ops import products, reductions  # noqa: E402
from .ops import tensor_ops as T  # noqa: E402

_METHODS = (
    "add sub mul div neg pow exp log sin cos tanh sqrt abs sign erf sigmoid relu maximum "
    "minimum clamp eq ne lt le gt ge sum mean amax max min reshape view view_as transpose "
    "permute expand expand_as unsqueeze squeeze flatten matmul softmax log_softmax "
    "add_ sub_ mul_ div_ zero_ fill_ copy_ clamp_ lerp_ addcmul_ addcdiv_ sqrt_ neg_ "
    "exp_ tanh_ pow_ log1p expm1 log2 log10 tan floor ceil trunc round frac lerp addcmul "
    "addcdiv"
).split()
for _n in _METHODS:
    setattr(Tensor, _n, getattr(F, _n))
# PyTorch's methods give a view of their own also where nothing changes (the runtime's own
# functions return the tensor itself there, which its formulas rely on)
Tensor.expand = F.expand_view  # type: ignore[method-assign]
Tensor.expand_as = F.expand_as_view  # type: ignore[method-assign]
Tensor.squeeze = F.squeeze_view  # type: ignore[method-assign]
_TENSOR_OPS = {
    T: "remainder floor_divide bitwise_not chunk tril triu repeat index_select gather "
       "scatter scatter_add masked_fill cumsum sort argsort topk square rsqrt logical_not "
       "reciprocal isnan isinf isfinite clamp_min clamp_max flip narrow unbind movedim tile "
       "outer dot amin isclose allclose equal scatter_reduce masked_select take_along_dim "
       "cumprod",
    reductions: "any all var std logsumexp prod",
    products: "mm bmm addmm",
}
for _module, _names in _TENSOR_OPS.items():
    for _n in _names.split():
        setattr(Tensor, _n, getattr(_module, _n))
Tensor.sort = T.sort_method  # type: ignore[method-assign]
Tensor.argsort = T.argsort_method  # type: ignore[attr-defined]
from .ops import extra_ops as _extra  # noqa: E402

for _n in ("roll repeat_interleave nan_to_num diag logaddexp count_nonzero logical_or "
           "logical_xor index_add unflatten split_with_sizes scatter_ scatter_add_ index_add_ "
           "nan_to_num_ scatter_reduce_ nonzero argwhere unique").split():
    setattr(Tensor, _n, getattr(_extra, _n))
from . import creation as _creation  # noqa: E402
from .ops import more_ops as _more  # noqa: E402

for _n in "asin acos atan sinh cosh asinh acosh atanh atan2 fmod".split():
    setattr(Tensor, _n, getattr(F, _n))
for _n in ("hypot diff rot90 trace reshape_as uniform_ normal_ bernoulli_ exponential_ "
           "diagonal mv").split():
    setattr(Tensor, _n, getattr(_more, _n))
Tensor.arctan2 = F.atan2  # type: ignore[attr-defined]


def _multinomial(self: Tensor, num_samples: int, replacement: bool = False, *,
                 generator: Any = None) -> Tensor:
    return _creation.multinomial(self, num_samples, replacement, generator=generator)


Tensor.multinomial = _multinomial  # type: ignore[attr-defined]  (creation loads after this)
Tensor.repeat_interleave = _extra.repeat_interleave_method  # type: ignore[attr-defined]
Tensor.int = _more.to_int  # type: ignore[attr-defined]
Tensor.type = _more.type_  # type: ignore[attr-defined]
Tensor.clip = F.clamp  # type: ignore[attr-defined]
Tensor.sgn = F.sgn  # type: ignore[attr-defined]
Tensor.divide = F.div  # type: ignore[attr-defined]
Tensor.divide_ = F.div_  # type: ignore[attr-defined]
Tensor.true_divide = F.true_divide  # type: ignore[attr-defined]
Tensor.true_divide_ = F.true_divide_  # type: ignore[attr-defined]
Tensor.broadcast_to = F.expand_view  # type: ignore[attr-defined]
Tensor.max = F.max_method  # type: ignore[method-assign]
Tensor.min = F.min_method  # type: ignore[method-assign]


def _argmax_method(self: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Tensor.argmax: argmax without out= (PyTorch's method has none)."""
    return F.argmax(self, dim, keepdim)


def _argmin_method(self: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Tensor.argmin: argmin without out= (PyTorch's method has none)."""
    return F.argmin(self, dim, keepdim)


_argmax_method.__name__ = _argmax_method.__qualname__ = "argmax"
_argmin_method.__name__ = _argmin_method.__qualname__ = "argmin"
Tensor.argmax = _argmax_method  # type: ignore[assignment]
Tensor.norm = reductions.norm_method  # type: ignore[attr-defined]
from .ops import composite as _composite  # noqa: E402

Tensor.softmax = _composite.softmax_along  # type: ignore[attr-defined]
Tensor.log_softmax = _composite.log_softmax_along  # type: ignore[attr-defined]
Tensor.argmin = _argmin_method  # type: ignore[assignment]
for _dunder, _n in {"mod": "remainder", "floordiv": "floor_divide"}.items():
    setattr(Tensor, f"__{_dunder}__", getattr(T, _n))
    setattr(Tensor, f"__r{_dunder}__", (lambda fn: lambda self, other: fn(other, self))(
        getattr(T, _n)))
Tensor.__invert__ = T.invert  # type: ignore[assignment]
for _n, _dunder in (("and", "and"), ("or", "or"), ("xor", "xor"), ("left_shift", "lshift"),
                    ("right_shift", "rshift")):
    _fn = getattr(_extra, f"bitwise_{_n}")
    setattr(Tensor, f"bitwise_{_n}", _fn)
    setattr(Tensor, f"__{_dunder}__", _fn)
    setattr(Tensor, f"__r{_dunder}__", (lambda fn: lambda self, other: fn(other, self))(_fn))
    setattr(Tensor, f"__i{_dunder}__", _extra.in_place(_fn))
    setattr(Tensor, f"bitwise_{_n}_", getattr(Tensor, f"__i{_dunder}__"))
Tensor.logical_and = F.logical_and  # type: ignore[attr-defined]
for _n in ("fmax", "fmin"):
    setattr(Tensor, _n, getattr(_extra, _n))
for _dunder, _n in {
    "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "pow": "pow",
    "matmul": "matmul",
}.items():
    setattr(Tensor, f"__{_dunder}__", getattr(F, _n))
    setattr(Tensor, f"__r{_dunder}__", _reflected(_n))
# number / t is PyTorch's t.reciprocal() * number (Tensor.__rdiv__): its bits, MulBackward0
Tensor.__rtruediv__ = lambda self, other: F.mul(T.reciprocal(self), other)  # type: ignore
for _dunder, _n in {
    "neg": "neg", "abs": "abs", "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt",
    "ge": "ge", "iadd": "add_", "isub": "sub_", "imul": "mul_", "itruediv": "div_",
    "getitem": "tensor_getitem", "setitem": "tensor_setitem",
}.items():
    setattr(Tensor, f"__{_dunder}__", getattr(F, _n))


def _delitem(self: Tensor, key: Any) -> None:
    raise TypeError("Tensor does not support deleting items")


Tensor.__delitem__ = _delitem  # type: ignore[attr-defined]
Tensor.t = F.t_  # type: ignore[assignment]
def _reversed_dims(self: Tensor) -> Tensor:
    """Tensor.T: the dims reversed (PyTorch's warning where the tensor is not a matrix)."""
    if self.ndim not in (0, 2):
        warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their "
                      "shape is deprecated and it will throw an error in a future release. "
                      "Consider `x.mT` to transpose batches of matrices or `x.permute(*torch."
                      "arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor.",
                      UserWarning, stacklevel=3)
    return F.permute(self, *reversed(range(self.ndim)))


def _matrix_transpose(name: str, batches: bool) -> Any:
    """Tensor.mT/mH (batches of matrices) and Tensor.H (a matrix): the last two dims swapped
    (real tensors: the conjugate is the tensor), PyTorch's checks and 0-d deprecation."""
    def get(self: Tensor) -> Tensor:
        if self.ndim == 0 and batches:
            warnings.warn(f"Tensor.{name} is deprecated on 0-D tensors. This function is the "
                          "identity in these cases.", UserWarning, stacklevel=3)
            return self
        if batches and self.ndim < 2:
            raise RuntimeError(f"tensor.{name} is only supported on matrices or batches of "
                               f"matrices. Got {self.ndim}-D tensor.")
        if not batches and self.ndim != 2:
            if self.ndim == 0:
                warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().",
                              UserWarning, stacklevel=3)
                return self
            hint = " For batches of matrices, consider using tensor.mH" if self.ndim > 2 else ""
            raise RuntimeError(f"tensor.{name} is only supported on matrices (2-D tensors). "
                               f"Got {self.ndim}-D tensor.{hint}")
        return F.transpose(self, -2, -1)

    return property(get)


Tensor.T = property(_reversed_dims)  # type: ignore[assignment]
Tensor.mT = _matrix_transpose("mT", True)  # type: ignore[attr-defined]
Tensor.mH = _matrix_transpose("mH", True)  # type: ignore[attr-defined]
Tensor.H = _matrix_transpose("H", False)  # type: ignore[attr-defined]


def _ravel(self: Tensor) -> Tensor:
    from .ops.extras import ravel

    return ravel(self)


Tensor.ravel = _ravel  # type: ignore[attr-defined]
from .ops import inplace_ops as _inpl  # noqa: E402

for _n in ("abs_ log_ floor_ ceil_ trunc_ sign_ sin_ cos_ log1p_ expm1_ relu_ sigmoid_ round_ "
           "clamp_min_ clamp_max_ unsqueeze_ squeeze_ transpose_ index_fill index_fill_ "
           "index_copy index_copy_ index_put index_put_ masked_scatter masked_scatter_ "
           "fill_diagonal_ random_ select nansum nanmean bitwise_not_").split():
    setattr(Tensor, _n, getattr(_inpl, _n))
Tensor.t_ = _inpl.t_inplace  # type: ignore[attr-defined]
Tensor.clip_ = F.clamp_  # type: ignore[attr-defined]
Tensor.sgn_ = _inpl.sign_  # type: ignore[attr-defined]
Tensor.swapdims = F.transpose  # type: ignore[attr-defined]
Tensor.swapaxes = F.swapaxes  # type: ignore[attr-defined]
Tensor.split = T.split_method  # type: ignore[attr-defined]
Tensor.moveaxis = T.movedim  # type: ignore[attr-defined]
from .ops import ordering as _ord  # noqa: E402

for _n in ("median nanmedian kthvalue mode quantile nanquantile cummax cummin logcumsumexp "
           "bincount histc aminmax").split():
    setattr(Tensor, _n, getattr(_ord, _n))
from .ops import math_ops as _math  # noqa: E402

for _n in ("erfc erfinv lgamma digamma xlogy sinc logit heaviside copysign signbit logaddexp2 "
           "float_power exp2 i0").split():
    setattr(Tensor, _n, getattr(_math, _n))
def _in_place_of(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The method ``fn_``: fn's result written into self, with fn's signature (``other`` of
    ``xlogy_``)."""
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return F.overwrite(self, fn(F.clone(self), *args, **kwargs), kept=True)  # fn's node

    method.__name__ = method.__qualname__ = fn.__name__ + "_"
    method.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
    return method


for _n in "erfc erfinv lgamma digamma xlogy sinc logit exp2 i0".split():
    setattr(Tensor, _n + "_", _in_place_of(getattr(_math, _n)))


from .ops import structured as _st  # noqa: E402

for _n in ("addmv addr baddbmm addbmm ger cross kron dist tensor_split take diag_embed "
           "cov corrcoef").split():
    setattr(Tensor, _n, getattr(_st, _n))
for _n in "det logdet matrix_power slogdet inverse pinverse".split():
    setattr(Tensor, _n, getattr(_st, _n))
for _n in "positive deg2rad rad2deg angle isreal isposinf isneginf".split():
    setattr(Tensor, _n, getattr(_math, _n))
Tensor.fix = F.trunc  # type: ignore[attr-defined]
from .ops import extras as _extras  # noqa: E402

for _n in ("arccos arccosh arcsin arcsinh arctan arctanh greater greater_equal less less_equal "
           "not_equal fliplr flipud hsplit vsplit dsplit inner vdot msort gcd lcm ldexp frexp "
           "diagflat is_nonzero narrow_copy is_complex conj resolve_conj resolve_neg adjoint "
           "unique_consecutive renorm nextafter").split():
    setattr(Tensor, _n, getattr(_extras, _n))
from .ops import storage as _storage  # noqa: E402

for _n in "data_ptr storage_offset get_device is_pinned resize_ resize_as_ put_".split():
    setattr(Tensor, _n, getattr(_storage, _n))
Tensor.share_memory_ = _storage.share_memory_  # type: ignore[attr-defined]
Tensor.is_shared = _storage.is_shared  # type: ignore[attr-defined]
Tensor.set_ = _storage.set_  # type: ignore[attr-defined]
from .ops import zeta as _zeta  # noqa: E402

Tensor.polygamma = _zeta.polygamma_method  # type: ignore[attr-defined]
Tensor.polygamma_ = _zeta.polygamma_  # type: ignore[attr-defined]
def _in_place_kept(name: str) -> Callable[..., Tensor]:
    """The method ``name_`` of Tensor.``name``: its result written into self, which keeps its
    dtype (PyTorch's error where the result's cannot be cast into it)."""
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        result = getattr(F.clone(self), name)(*args, **kwargs)  # looked up late: set below
        if result.dtype.category > self.dtype.category:
            raise RuntimeError(f"result type {D.scalar_type_name(result.dtype)} can't be cast "
                               f"to the desired output type {D.scalar_type_name(self.dtype)}")
        return F.overwrite(self, result)  # the node named as the op's (CumsumBackward0)

    method.__name__ = method.__qualname__ = name + "_"
    method.__signature__ = inspect.signature(getattr(Tensor, name))  # type: ignore[attr-defined]
    return method


for _n in ("logical_and logical_or logical_not square rsqrt sinh cosh hypot frac remainder "
           "fmod cumsum cumprod addmm baddbmm").split():
    setattr(Tensor, _n + "_", _in_place_kept(_n))
Tensor.absolute_ = Tensor.abs_  # type: ignore[attr-defined]
Tensor.absolute = Tensor.abs  # type: ignore[attr-defined]


from .ops import numpy_aliases as _numpy_aliases  # noqa: E402

_numpy_aliases.install_methods(Tensor)  # last: over every method set above


def _numpy_operand(method: Callable[..., Any]) -> Callable[..., Any]:
    """A binary operator as PyTorch's meets numpy values: a numpy array is not its operand
    (NotImplemented: numpy computes the op on the tensor's values, and ``__array_wrap__``
    makes the result a tensor), and a numpy bool is parsed as a float."""
    def op(self: Tensor, other: Any) -> Any:
        if isinstance(other, np.ndarray):
            return NotImplemented
        return method(self, float(other) if type(other) is np.bool_ else other)

    op.__name__ = op.__qualname__ = method.__name__
    op.__doc__ = method.__doc__
    return op


for _n in ("add sub mul truediv floordiv mod pow and or xor lshift rshift").split():
    setattr(Tensor, f"__{_n}__", _numpy_operand(getattr(Tensor, f"__{_n}__")))
    if _n not in ("truediv",):  # number / t: below
        setattr(Tensor, f"__r{_n}__", _numpy_operand(getattr(Tensor, f"__r{_n}__")))
# comparisons and in-place operators too: numpy's result (t += array rebinds t to a new
# tensor, as PyTorch's)
for _n in ("ne lt le gt ge iadd isub imul itruediv").split():
    setattr(Tensor, f"__{_n}__", _numpy_operand(getattr(Tensor, f"__{_n}__")))


def _eq(self: Tensor, other: Any) -> Any:
    """``==`` as PyTorch's: a numpy array compared as a tensor of its values (``!=`` is
    NotImplemented there, and Python's identity test answers True, as for PyTorch's)."""
    if isinstance(other, np.ndarray):
        from .creation import from_numpy

        other = from_numpy(np.ascontiguousarray(other) if other.ndim else other)
    return F.eq(self, float(other) if type(other) is np.bool_ else other)


Tensor.__eq__ = _eq  # type: ignore[method-assign,assignment]


def _tensors_only(method: Callable[..., Any]) -> Callable[..., Any]:
    """``@`` as PyTorch's: a tensor's operand is a tensor, anything else NotImplemented
    (Python's TypeError; numpy's matmul of a numpy array and the tensor's values)."""
    def op(self: Tensor, other: Any) -> Any:
        return method(self, other) if isinstance(other, Tensor) else NotImplemented

    op.__name__ = op.__qualname__ = method.__name__
    return op


Tensor.__matmul__ = _tensors_only(Tensor.__matmul__)  # type: ignore[method-assign]
Tensor.__rmatmul__ = _tensors_only(Tensor.__rmatmul__)  # type: ignore[method-assign]


def _rtruediv(self: Tensor, other: Any) -> Any:
    """other / self: PyTorch's self.reciprocal() * other (its bits; MulBackward0), a numpy
    array through numpy's multiply of the reciprocal's values."""
    if type(other) is np.bool_:
        other = float(other)
    return T.reciprocal(self) * other if isinstance(other, np.ndarray) else \
        F.mul(T.reciprocal(self), other)


Tensor.__rtruediv__ = _rtruediv  # type: ignore[assignment]
