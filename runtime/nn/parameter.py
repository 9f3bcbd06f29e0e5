"""`Parameter`: a leaf Tensor that a `Module` registers as a learnable parameter; `Buffer`:
a Tensor that a `Module` registers as a buffer when assigned as an attribute."""

from __future__ import annotations

from typing import Any

from runtime.tensor import Tensor


class Parameter(Tensor):
    """A leaf alias of `data` (same storage and version counter) with `requires_grad` set."""

    __slots__ = ()

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            data = Tensor._of([])
        elif not isinstance(data, Tensor):
            data = Tensor._of(data)
        param = cls._make(data._data, data.dtype, data.device, None, 0, data._vc)
        param._factory_requires_grad_(requires_grad)
        return param  # type: ignore[return-value]

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        """Everything is set up by `__new__`; `Tensor.__init__` must not run again."""

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]  # type: ignore[no-any-return]
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


class _BufferMeta(type):
    """``isinstance(t, Buffer)`` holds for the tensors ``Buffer(...)`` marked, as PyTorch's."""

    def __instancecheck__(cls, instance: Any) -> bool:
        if cls is Buffer:
            return isinstance(instance, Tensor) and bool(getattr(instance, "_is_buffer", False))
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """PyTorch's ``nn.Buffer``: ``Buffer(data, persistent=True)`` is ``data`` detached and
    marked, so assigning it to a module attribute registers a buffer (``persistent=False``
    keeps it out of the state dict)."""

    def __new__(cls, data: Any = None, *, persistent: bool = True) -> Tensor:  # type: ignore[misc]
        if data is None:
            data = Tensor._of([])
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


class UninitializedTensorMixin:
    """A lazy module's parameter or buffer before its first input: no shape yet (PyTorch's
    ``torch.nn.parameter``). ``materialize(shape)`` gives it one in place, so an optimizer
    made before then holds the materialized tensor."""

    __slots__ = ()
    cls_to_become: type[Tensor]

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        import runtime as rt

        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.data = rt.empty(shape, device=device or self.device,  # type: ignore[attr-defined]
                             dtype=dtype or self.dtype)  # type: ignore[attr-defined]
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: Any = None, dtype: Any = None
                ) -> UninitializedParameter:
        import runtime as rt

        return super().__new__(cls, rt.empty(0, device=device, dtype=dtype),  # type: ignore[return-value]
                               requires_grad)

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None
                 ) -> None:
        """Everything is set up by `__new__`."""


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                persistent: bool = True) -> UninitializedBuffer:
        import runtime as rt

        data = rt.empty(0, device=device, dtype=dtype)
        buffer = cls._make(data._data, data.dtype, data.device, None, 0, data._vc)
        buffer.requires_grad_(requires_grad)
        return buffer  # type: ignore[return-value]

    def __init__(self, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                 persistent: bool = True) -> None:
        """Everything is set up by `__new__`."""


def is_lazy(value: Any) -> bool:
    return isinstance(value, UninitializedTensorMixin)
