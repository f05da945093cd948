"""QUANTIZE (of a float model input, or between integer types: requantize.py) and DEQUANTIZE of a model output."""

from __future__ import annotations

from typing import Union

from tvm import relax
from tvm.ir.expr import Constant
from tvm.relax.dpl import is_const, is_op, wildcard

from ...kernels import dequantize_int8, quantize_int8
from ...kernels.onnx_qlinear import dequantize_linear, quantize_linear
from . import requantize
from .onnx_qlinear import tensor_operand
from .graph import describe, is_call_to
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch, Site

_QUANTIZE = is_op("relax.quantize")(wildcard(), wildcard(), wildcard())
ONNX_EDGES = ("QuantizeLinear", "DequantizeLinear")  # the frontend's records of the ONNX operators
_DEQUANTIZE = is_op("relax.dequantize")(wildcard(), is_const(), is_const())


def _ends_quantize(value: relax.Expr, ctx: LoweringContext) -> bool:
    """A quantize of a tensor already in the lowered graph (a float model input)."""
    return bool(_QUANTIZE.match(value)) and value.args[0] in ctx.lowered


def _ends_dequantize(value: relax.Expr, ctx: LoweringContext) -> bool:
    return bool(_DEQUANTIZE.match(value)) or (is_call_to(value, "relax.dequantize") and _is_onnx(value, ctx))


def _is_onnx(call: relax.Call, ctx: LoweringContext) -> bool:
    """Whether ``call`` is the frontend's ONNX QuantizeLinear or DequantizeLinear."""
    return any(record.kind in ONNX_EDGES for record in ctx.graph.records_of(call))


def _edge(kind: str, call: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    """The element-wise edge kernel of ``call`` (a quantize or dequantize) on its lowered input."""
    source = call.args[0]
    if source not in ctx.lowered:
        return Mismatch(describe(ctx.graph.value_of(source)))
    if _is_onnx(call, ctx):
        return onnx_edge(kind, call, ctx)
    q = ctx.graph.quant(call.args[1], call.args[2])
    if q is None:
        return Mismatch("per-channel activation quantization")
    params = {"scale": float(q.scale), "zero_point": q.zero_point}
    if kind == "QUANTIZE":  # to int8, or to int16 (16x8): the kernel writes the call's own type
        return FixedCall(KernelCall(kind, call, quantize_int8, (ctx.lowered[source],),
                                    {**params, "dtype": str(call.ty.dtype)}))
    return FixedCall(KernelCall(kind, call, dequantize_int8, (ctx.lowered[source],), params))


def onnx_edge(kind: str, call: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    """ONNX QuantizeLinear or DequantizeLinear, per tensor or per axis, their scale and zero point constants
    or graph inputs: onnxruntime's float32 arithmetic, rounding half to even (TFLite's QUANTIZE rounds half
    away from zero)."""
    operands = [tensor_operand(arg, ctx) for arg in call.args[:3]]
    mismatch = next((o for o in operands if isinstance(o, Mismatch)), None)
    if mismatch is not None:
        return mismatch
    rank = len(call.args[0].ty.shape.values)
    axis = int(call.attrs.axis) % rank if rank else 0  # a scalar's scale and zero point are per tensor
    if kind == "QUANTIZE":
        return FixedCall(KernelCall(kind, call, quantize_linear, (operands[0],), {
            "scale": _value(operands[1], float), "zero_point": _value(operands[2], int), "axis": axis,
            "dtype": str(call.ty.dtype)}))
    return FixedCall(KernelCall(kind, call, dequantize_linear, tuple(operands), {"axis": axis}))


def _value(operand: relax.Expr, kind: type) -> Union[relax.Expr, int, float]:
    """A constant of one value as that value (``kind``: int or float; the kernel's immediate), else ``operand``."""
    if isinstance(operand, Constant) and operand.value.numpy().size == 1:
        return kind(operand.value.numpy().reshape(-1)[0])
    return operand


def _completes_quantize(value: relax.Expr, ctx: LoweringContext) -> bool:
    return _ends_quantize(value, ctx) or requantize.completes(value, ctx)


def _match_quantize(call: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    """A float model input's QUANTIZE, or an integer one (a requantization, ``requantize.py``)."""
    if requantize.completes(call, ctx):
        return requantize.match(call, ctx)
    return _edge("QUANTIZE", call, ctx)


def _match_dequantize(call: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    return _edge("DEQUANTIZE", call, ctx)


QUANTIZE = Lowering(frozenset({"QUANTIZE"}), _completes_quantize, _match_quantize)
DEQUANTIZE = Lowering(frozenset({"DEQUANTIZE"}), _ends_dequantize, _match_dequantize, Site.MODEL_OUTPUT)
