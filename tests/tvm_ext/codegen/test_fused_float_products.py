"""tvm_ext.codegen.fused_float_products: in a kernel marked FUSED_FLOAT_PRODUCTS_ATTR (a quantized ONNX model's,
tvm_ext.lower.ScheduleKernels), each float32 store ``b[i] = b[i] + x * y`` becomes a fused multiply-add, and
nothing else changes; an unmarked kernel (a float model's, a TFLite model's) keeps its multiply and add apart."""

from __future__ import annotations

import pytest

tvm = pytest.importorskip("tvm")
from tvm.script import tirx as T  # noqa: E402

from tvm_ext.codegen.fused_float_products import with_fused_float_products  # noqa: E402
from tvm_ext.kernels.fused_multiply_add import FUSED_MULTIPLY_ADD_OP  # noqa: E402
from tvm_ext.layers import FUSED_FLOAT_PRODUCTS_ATTR  # noqa: E402


@T.prim_func(private=True)
def macs(x: T.Buffer((8,), "float32"), w: T.Buffer((8,), "float32"), q: T.Buffer((8,), "int32"),
         acc: T.Buffer((2,), "float32"), total: T.Buffer((2,), "int32"), other: T.Buffer((2,), "float32")):
    for i in range(8):
        acc[0] = acc[0] + x[i] * w[i]  # a float MAC
        acc[1] = x[i] * w[i] + acc[1]  # the same, the addition's operands the other way round
        total[0] = total[0] + q[i] * q[i]  # an integer MAC
        other[0] = acc[1] + x[i] * w[i]  # a multiply-add into another buffer
        other[1] = other[0] + x[i] * w[i]  # into another element of the same buffer
        acc[0] = acc[0] + x[i]  # an accumulation of no product


@T.prim_func(private=True)
def macs_fused(x: T.Buffer((8,), "float32"), w: T.Buffer((8,), "float32"), q: T.Buffer((8,), "int32"),
               acc: T.Buffer((2,), "float32"), total: T.Buffer((2,), "int32"), other: T.Buffer((2,), "float32")):
    for i in range(8):
        acc[0] = T.call_intrin("float32", FUSED_MULTIPLY_ADD_OP, x[i], w[i], acc[0])
        acc[1] = T.call_intrin("float32", FUSED_MULTIPLY_ADD_OP, x[i], w[i], acc[1])
        total[0] = total[0] + q[i] * q[i]
        other[0] = acc[1] + x[i] * w[i]
        other[1] = other[0] + x[i] * w[i]
        acc[0] = acc[0] + x[i]


def test_a_marked_kernels_float_macs_become_fused_multiply_adds_and_nothing_else_changes():
    fused = with_fused_float_products(macs.with_attr(FUSED_FLOAT_PRODUCTS_ATTR, True))
    tvm.ir.assert_structural_equal(fused, macs_fused.with_attr(FUSED_FLOAT_PRODUCTS_ATTR, True))


def test_an_unmarked_kernel_is_left_as_it_is():
    assert with_fused_float_products(macs).same_as(macs)
