"""Kernel IR: stages, hashing, and validate()'s error messages."""

from __future__ import annotations

import dataclasses

import pytest

from codegen import ir as K

X = K.Input("x", "float32", (1,))


def kernel(*exprs, outputs=None, n_reduce=0, inputs=(X,), domain=(8,)) -> K.Kernel:
    outputs = outputs or (K.Output("out", len(exprs) - 1, "float32"),)
    return K.Kernel("k", domain, n_reduce, inputs, tuple(exprs), outputs)


def test_stage_of_counts_reductions():
    k = kernel(K.Load(0), K.Reduce("sum", 0, "float32"), K.Binary("sub", 0, 1, "float32"),
               K.Reduce("max", 2, "float32"), K.Const(1.0, "float32"),
               K.Binary("add", 3, 4, "float32"), n_reduce=1)
    assert K.stage_of(k) == [0, 1, 1, 2, 0, 2]
    assert K.per_element(k) == [True, False, True, False, False, False]
    assert K.output_shape(k, k.outputs[0]) == ()


def test_kernel_hash_is_stable_and_content_sensitive():
    a = kernel(K.Load(0), K.Unary("exp", 0, "float32"))
    b = kernel(K.Load(0), K.Unary("exp", 0, "float32"))
    assert K.kernel_hash(a) == K.kernel_hash(b)
    assert len(K.kernel_hash(a)) == 64
    assert K.kernel_hash(a) != K.kernel_hash(dataclasses.replace(a, domain=(9,)))
    assert K.kernel_hash(a) != K.kernel_hash(kernel(K.Load(0), K.Unary("log", 0, "float32")))


@pytest.mark.parametrize("k,fragments", [
    (kernel(K.Load(0), K.Unary("exp", 2, "float32")),
     ["'k'", "expr 1", "exp", "operand 2 is not an earlier expr"]),
    (kernel(K.Load(0), K.Unary("frobnicate", 0, "float32")),
     ["expr 1", "unknown op 'frobnicate'"]),
    (kernel(K.Load(0), K.Const(1, "int64"), K.Binary("add", 0, 1, "float32")),
     ["expr 2", "add", "operands must share a dtype", "('float32', 'int64')"]),
    (kernel(K.Load(0), K.Binary("lt", 0, 0, "float32")),
     ["expr 1", "lt", "result dtype must be bool"]),
    (kernel(K.Load(0), K.Where(0, 0, 0, "float32")),
     ["expr 1", "Where", "bool cond", "('float32', 'float32', 'float32')"]),
    (kernel(K.Load(0), K.Cast(0, "float64"), K.Fma(0, 0, 1, "float32")),
     ["expr 2", "Fma", "three operands of its float result dtype",
      "('float32', 'float32', 'float64')"]),
    (kernel(K.Load(0), K.Cast(0, "int64"), K.Fma(1, 1, 1, "int64"),
            outputs=(K.Output("o", 2, "int64"),)),
     ["expr 2", "Fma", "float result dtype"]),
    (kernel(K.Load(0), K.Fma(0, 2, 0, "float32")), ["operand 2 is not an earlier expr"]),
    (kernel(K.Load(0), K.Unary("exp", 0, "int64"),
            outputs=(K.Output("o", 1, "int64"),)),
     ["exp", "result dtype must be float32"]),
    (kernel(K.Load(0), K.Const(1, "int64"), K.Unary("exp", 1, "int64"),
            outputs=(K.Output("o", 2, "int64"),)),
     ["op exp does not take int64"]),
    (kernel(K.Load(0), K.Reduce("sum", 0, "float32")),
     ["expr 1", "sum", "Reduce in a kernel with n_reduce == 0"]),
    (kernel(K.Load(0), K.Reduce("mean", 0, "float32"), n_reduce=1),
     ["unknown op 'mean'"]),
    (kernel(K.Load(1)), ["expr 0", "loads missing input 1"]),
    (kernel(K.Load(0), inputs=(K.Input("x", "float32", (1, 1)),)),
     ["input 0 (x)", "2 strides (1, 1) for domain (8,)"]),
    (kernel(K.Load(0), outputs=(K.Output("o", 3, "float32"),)),
     ["output 0 (o)", "missing expr 3"]),
    (kernel(K.Load(0), outputs=(K.Output("o", 0, "float64"),)),
     ["output 0 (o)", "dtype float64 but expr 0 is float32"]),
    (kernel(K.Load(0), n_reduce=2), ["n_reduce=2 outside 0..1"]),
])
def test_validate_names_kernel_expr_op_and_dtypes(k, fragments):
    with pytest.raises(K.KernelIRError) as err:
        K.validate(k)
    for fragment in fragments:
        assert fragment in str(err.value)
