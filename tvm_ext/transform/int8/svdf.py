"""SVDF: the two QDQ steps of ``tvm_ext.frontend_svdf`` -> TFLM's integer SVDF as two kernels.

``new_state = q(svdf_state_update(dq(x), dq(W_feature), dq(S0)))`` -> ``svdf_state_update`` on the int8 input,
the state and the int8 feature weights. Its PrimFunc is marked with ``STATE_OPERAND_ATTR`` (the index of the state
among its operands: the plan makes that operand the bundle's static state, ``S0`` its reset value, and the
kernel's output a view of it, written in place) and opaque, so that fusion never turns the state into a
kernel-local buffer. ``output = q(svdf_output(dq(new_state), dq(W_time), dq(b)))`` -> ``svdf_output``.
Both kernels are the layer's ("SVDF"); the scales are TFLM's (``tvm_ext.kernels.svdf``).
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
from tvm import relax
from tvm.relax.dpl import is_op, wildcard

from ...frontend_svdf import SVDF_OUTPUT, SVDF_STATE_UPDATE
from ...kernels.svdf import svdf_feature_multiplier, svdf_output, svdf_state_update, svdf_time_multiplier
from .graph import Quant, is_call_to
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch

STATE_OPERAND_ATTR = "tvm_ext.state_operand"
_OPAQUE = 8  # TVM's OpPatternKind kOpaque: FuseOps leaves the kernel alone

_QUANTIZE = is_op("relax.quantize")(wildcard(), wildcard(), wildcard())


def _step(value: relax.Expr, ctx: LoweringContext, symbol: str) -> Optional[relax.Call]:
    """The frontend's SVDF step ``symbol`` that ``value`` quantizes, else None."""
    if not _QUANTIZE.match(value):
        return None
    step = ctx.graph.value_of(value.args[0])
    if is_call_to(step, "relax.call_dps_packed") and getattr(step.args[0], "global_symbol", None) == symbol:
        return step
    return None


def _dequantized(expr: relax.Expr, ctx: LoweringContext) -> tuple[Optional[relax.Expr], Optional[Quant]]:
    """The source and per-tensor quantization of the dequantize producing ``expr``."""
    value = ctx.graph.value_of(expr)
    if not is_call_to(value, "relax.dequantize"):
        return None, None
    return value.args[0], ctx.graph.quant(value.args[1], value.args[2])


def _constant(expr: relax.Expr, ctx: LoweringContext) -> tuple[Optional[np.ndarray], Optional[Quant]]:
    source, quant = _dequantized(expr, ctx)
    return (None, None) if source is None else (ctx.graph.constant(source), quant)


def _activation(expr: relax.Expr, ctx: LoweringContext) -> tuple[Optional[relax.Expr], Optional[Quant]]:
    source, quant = _dequantized(expr, ctx)
    return (ctx.lowered[source], quant) if source in ctx.lowered else (None, None)


def _match_state_update(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    step = _step(quantize, ctx, SVDF_STATE_UPDATE)
    data, feature, state = step.args[1].fields
    data, data_quant = _activation(data, ctx)
    feature, feature_quant = _constant(feature, ctx)
    initial, state_quant = _constant(state, ctx)
    if data is None or feature is None or initial is None or None in (data_quant, feature_quant, state_quant):
        return Mismatch("SVDF with operands that are not per-tensor quantized")
    multiplier, shift = svdf_feature_multiplier(data_quant.scale, feature_quant.scale, state_quant.scale,
                                                ctx.rounding)
    memory = int(initial.shape[1]) // int(feature.shape[0])
    return FixedCall(KernelCall(
        "SVDF", step, svdf_state_update, (data, relax.const(initial), relax.const(feature)),
        {"memory": memory, "input_zero_point": data_quant.zero_point, "state_zero_point": state_quant.zero_point,
         "multiplier": multiplier, "shift": shift, "rounding": ctx.rounding},
        {STATE_OPERAND_ATTR: 1, "op_pattern": _OPAQUE},
    ))


def _match_output(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    step = _step(quantize, ctx, SVDF_OUTPUT)
    state, time, bias = step.args[1].fields
    state, state_quant = _activation(state, ctx)
    time, time_quant = _constant(time, ctx)
    bias, _ = _constant(bias, ctx)
    output_quant = ctx.graph.quant(quantize.args[1], quantize.args[2])
    if state is None or time is None or bias is None or None in (state_quant, time_quant, output_quant):
        return Mismatch("SVDF with operands that are not per-tensor quantized")
    multiplier, shift = svdf_time_multiplier(state_quant.scale, time_quant.scale, output_quant.scale, ctx.rounding)
    units = int(quantize.ty.shape.values[1])
    return FixedCall(KernelCall(
        "SVDF", step, svdf_output, (state, relax.const(time), relax.const(bias)),
        {"rank": int(time.shape[0]) // units, "state_zero_point": state_quant.zero_point, "multiplier": multiplier,
         "shift": shift, "output_zero_point": output_quant.zero_point, "rounding": ctx.rounding},
    ))


def _completes(value: relax.Expr, ctx: LoweringContext) -> bool:
    return any(_step(value, ctx, symbol) is not None for symbol in (SVDF_STATE_UPDATE, SVDF_OUTPUT))


def _match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    """Either step of the SVDF: each is one kernel of the layer."""
    if _step(quantize, ctx, SVDF_STATE_UPDATE) is not None:
        return _match_state_update(quantize, ctx)
    return _match_output(quantize, ctx)


LOWERING = Lowering(frozenset({"SVDF"}), _completes, _match)
