"""QUANTIZE between integer types: ``q(dq(x))`` (int8/int16 -> int8/int16), or our frontend's marker for an int32
output (``tvm_ext.frontend.tflite_ops.quantize``) -> TFLM's Requantize, with its effective scale double(in) / double(out).
Registered as part of ``edges.QUANTIZE``: one lowering per TFLite operator."""

from __future__ import annotations

from typing import Optional, Union

from tvm import relax

from ...frontend.tflite_ops.quantize import REQUANTIZE_TO_INT32
from ...kernels.edges import requantize_integer
from ...kernels.quant_params import quantize_multiplier
from .graph import Quant, is_call_to
from .lowering import FixedCall, KernelCall, LoweringContext, Mismatch


def _operands(value: relax.Expr, ctx: LoweringContext) -> Optional[tuple[relax.Expr, relax.Expr, relax.Expr]]:
    """(dequantize of the input, output scale, output zero point) of an integer QUANTIZE, else None."""
    if is_call_to(value, "relax.quantize"):
        dequantize = ctx.graph.value_of(value.args[0])
        scale, zero_point = value.args[1], value.args[2]
    elif is_call_to(value, "relax.call_dps_packed") and getattr(value.args[0], "global_symbol", None) == \
            REQUANTIZE_TO_INT32:
        dequantize, scale, zero_point = ctx.graph.value_of(value.args[1].fields[0]), *value.args[1].fields[1:]
    else:
        return None
    if not is_call_to(dequantize, "relax.dequantize") or dequantize.args[0] not in ctx.lowered:
        return None
    return dequantize, scale, zero_point


def completes(value: relax.Expr, ctx: LoweringContext) -> bool:
    """Whether ``value`` is an integer QUANTIZE of a tensor already lowered."""
    return _operands(value, ctx) is not None


def match(value: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    """The requantization kernel of the integer QUANTIZE ``value`` (``completes`` holds)."""
    dequantize, scale, zero_point = _operands(value, ctx)
    source: Optional[Quant] = ctx.graph.quant(dequantize.args[1], dequantize.args[2])
    target: Optional[Quant] = ctx.graph.quant(scale, zero_point)
    if source is None or target is None:
        return Mismatch("per-channel activation quantization")
    multiplier, shift = quantize_multiplier(float(source.scale) / float(target.scale), ctx.rounding)
    return FixedCall(KernelCall(
        "QUANTIZE", value, requantize_integer, (ctx.lowered[dequantize.args[0]],),
        {"input_zero_point": source.zero_point, "multiplier": multiplier, "shift": shift,
         "output_zero_point": target.zero_point, "out_dtype": str(value.ty.dtype), "rounding": ctx.rounding},
    ))

