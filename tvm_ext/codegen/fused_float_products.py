"""A quantized ONNX model's float multiply-accumulates rounded once per step, as onnxruntime's MLAS computes them.

Why: onnxruntime keeps some operators of a QDQ model float (a Conv whose bias scale is not x_scale * w_scale,
an operator it has no quantized kernel for) and quantizes their float results. Its float Conv, Gemm and
MatMul run MLAS's SGEMM kernels, which accumulate each output with fused multiply-adds (x86-64's FMA3 and
AVX-512 kernels, Arm64's NEON ones): ``acc = fma(x, w, acc)``, one rounding per step, where the C line
``acc = acc + x * w`` rounds the product and then the sum. The two differ in the last place now and then,
and where the sum lies near a rounding tie of the QuantizeLinear after it that is one LSB of the int8 result,
which the rest of the network carries on (torchvision MNASNet 0.5's QDQ export: a float 1x1 Conv's output
9.5000004 quantization steps, 9 in onnxruntime and in ONNX's reference evaluator, 10 with separate roundings).

The rewrite: in each kernel marked with FUSED_FLOAT_PRODUCTS_ATTR, every float32 store
``b[i] = b[i] + x * y`` becomes ``b[i] = fma(x, y, b[i])`` (`tvm_ext.kernels.fused_multiply_add`: exact on
every core, one instruction where the core has it). The order of the additions is the schedule's: for these
kernels a convolution's taps by (input channel, kernel row, kernel column), im2col's order, as MLAS's SGEMM
reads them (tvm_ext.lower.ScheduleKernels). MLAS splits a long sum into blocks (a Conv's SGEMM in blocks of
128 taps or more, as many as its output pixels allow; a MatMul with constant weights in blocks of 256), sums
each block from zero and adds the blocks: such an output can still round apart from onnxruntime's
(README, "ONNX models quantized by onnxruntime").
"""

from __future__ import annotations

import tvm_ffi
from tvm import ir, tirx
from tvm.ir.prim import expr as prim

from tvm_ext.kernels.fused_multiply_add import fused_multiply_add
from tvm_ext.layers import FUSED_FLOAT_PRODUCTS_ATTR
from tvm_ext.tir.tir_walk import map_nodes


def _same_element(load, store: tirx.BufferStore) -> bool:
    """Whether the expression `load` reads the element `store` writes."""
    return (isinstance(load, ir.TensorLoad) and load.source.same_as(store.buffer)
            and tvm_ffi.structural_equal(list(load.indices), list(store.indices)))


def _fused(node):
    """`node` as a store of a fused multiply-add when it is ``b[i] = b[i] + x * y`` of float32 (either
    operand order of the addition), else None (looked into further)."""
    if not isinstance(node, tirx.BufferStore) or str(node.value.ty.dtype) != "float32":
        return None
    value = node.value
    if not isinstance(value, prim.Add):
        return None
    for accumulator, product in ((value.a, value.b), (value.b, value.a)):
        if _same_element(accumulator, node) and isinstance(product, prim.Mul):
            return tirx.BufferStore(node.buffer, fused_multiply_add(product.a, product.b, accumulator),
                                    list(node.indices))
    return None


def with_fused_float_products(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` with each float32 multiply-accumulate store a fused multiply-add if it is marked with
    FUSED_FLOAT_PRODUCTS_ATTR, else unchanged. Contract: flat TIR (no blocks), only roundings change."""
    if func.attrs is None or FUSED_FLOAT_PRODUCTS_ATTR not in func.attrs:
        return func
    body = map_nodes(func.body, _fused)
    return func if body.same_as(func.body) else tirx.PrimFunc(func.params, body, func.ret_type, func.attrs)


@tirx.transform.prim_func_pass(opt_level=0, name="tvm_ext.FusedFloatProducts")
def fused_float_products(func: tirx.PrimFunc, _mod, _ctx) -> tirx.PrimFunc:
    """The pass form of `with_fused_float_products`."""
    return with_fused_float_products(func)
