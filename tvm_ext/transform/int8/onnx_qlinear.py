"""ONNX QLinearConv and QLinearMatMul: our frontend's markers (``tvm_ext.onnx_qlinear_ops``) -> one kernel of
``tvm_ext.kernels.onnx_qlinear`` each (onnxruntime's float32 requantization, rounding half to even).

The marker's tensor operands are the node's inputs: constants stay Relax constants, the others must be
tensors the pass has lowered (a model input, or an integer result of another kernel)."""

from __future__ import annotations

from typing import Union

from tvm import relax
from tvm.ir.expr import Constant

from ...kernels.onnx_qlinear import qlinear_conv2d, qlinear_matmul
from ...onnx_qlinear_ops import CONV_OPERANDS, MARKERS, QLINEAR_CONV
from .graph import describe, is_call_to
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch


def marker_of(value: relax.Expr) -> str | None:
    """The marker symbol ``value`` calls (one of ``MARKERS``), else None."""
    if not is_call_to(value, "relax.call_dps_packed"):
        return None
    symbol = getattr(value.args[0], "global_symbol", None)
    return symbol if symbol in MARKERS else None


def tensor_operand(tensor: relax.Expr, ctx: LoweringContext) -> Union[relax.Expr, Mismatch]:
    """A kernel operand for ``tensor``: the constant it is, or its lowered tensor; a Mismatch naming what
    computes it otherwise (a float-path value)."""
    value = ctx.graph.value_of(tensor)
    if isinstance(value, Constant):
        return value
    if tensor in ctx.lowered:
        return ctx.lowered[tensor]
    return Mismatch(describe(value))


def _completes(value: relax.Expr, _ctx: LoweringContext) -> bool:
    return marker_of(value) is not None


def _match(call: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    fields = list(call.args[1].fields)
    is_conv = marker_of(call) == QLINEAR_CONV
    tensors = fields[:-4] if is_conv else fields
    operands = [tensor_operand(tensor, ctx) for tensor in tensors]
    mismatch = next((o for o in operands if isinstance(o, Mismatch)), None)
    if mismatch is not None:
        return mismatch
    kind = "QLinearConv" if is_conv else "QLinearMatMul"
    if not is_conv:
        return FixedCall(KernelCall(kind, call, qlinear_matmul, tuple(operands)))
    strides, pads, dilations = ([int(v) for v in shape.values] for shape in fields[-4:-1])
    geometry = {"strides": strides, "pads": pads, "dilations": dilations, "group": int(fields[-1].value)}
    bias = {"bias": operands[CONV_OPERANDS - 1]} if len(operands) == CONV_OPERANDS else {}
    return FixedCall(KernelCall(kind, call, qlinear_conv2d, tuple(operands[:CONV_OPERANDS - 1]),
                                {**bias, **geometry}))


LOWERING = Lowering(frozenset({"QLinearConv", "QLinearMatMul"}), _completes, _match)
