"""SVDF: the two QDQ steps of ``tvm_ext.frontend.tflite_ops.svdf`` -> TFLM's integer SVDF as two kernels.

``new_state = q(svdf_state_update(dq(x), dq(W_feature), dq(S0)))`` -> ``svdf_state_update`` on the int8 input,
the state, the int8 feature weights and their sums times the input zero point (``svdf_feature_offsets``); where
the backend asks (``LoweringContext.interleaved_gate_weights``) the feature weights interleaved per tile of four
filters (``tvm_ext.kernels.extern_mac.interleave_weights``: one helper call for every filter's product; the
kernel then carries its layer's MAC count, not its padding's), widened to int16 where the backend asks and the flash
holds their extra byte each (``tvm_ext.transform.int8.lowering.widen_gate_weights``); else where it asks
(``LoweringContext.whole_gate_rows``) in TFLite's rows, filters padded to whole tiles by zero rows
(``tvm_ext.kernels.extern_mac.rows_padded``: one helper call too; its MAC count likewise). Its
PrimFunc is marked with ``STATE_OPERAND_ATTR`` (the index of the state among its operands: the plan makes that
operand the bundle's static state, ``S0`` its reset value, and the kernel's output a view of it, written in
place) and opaque, so that fusion never turns the state into a kernel-local buffer.
``output = q(svdf_output(dq(new_state), dq(W_time), dq(b)))`` -> ``svdf_output``, the state zero point folded
into the bias where it fits (``svdf_time_offsets``); where the backend asks (``LoweringContext.svdf_unit_rows``, up to
``svdf_unit_rows_max_macs`` time-product MACs)
``svdf_output_rows`` instead, each unit's rank filters' time weights in one row (``svdf_unit_rows``); int8 rows of
whole groups of four widened to int16 as the feature weights are, in SXTB16's lane order
(``tvm_ext.kernels.extern_mac.lane_order``: the DSP core's row dot product then widens only the state's bytes).
Both kernels are the layer's ("SVDF"); the scales are TFLM's (``tvm_ext.kernels.svdf``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import numpy as np
from tvm import relax

from ...frontend.tflite_ops.svdf import SVDF_OUTPUT, SVDF_STATE_UPDATE
from ...kernels.extern_mac import LANE_GROUP, interleave_weights, lane_order, padded_to_tiles, rows_padded
from ...kernels.fixed_point import largest_centered, shifts_right_only
from ...kernels.svdf import (svdf_feature_multiplier, svdf_feature_offsets, svdf_output, svdf_output_rows,
                             svdf_state_update, svdf_time_multiplier, svdf_time_offsets, svdf_unit_rows)
from .graph import Quant
from .mac import fits_small_accumulator
from tvm_ext.layers import MACS_ATTR, OPAQUE_PATTERN, STATE_OPERAND_ATTR

from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch, widen_gate_weights



def _step(value: relax.Expr, ctx: LoweringContext, symbol: str) -> Optional[relax.Call]:
    """The frontend's SVDF step ``symbol`` that ``value`` quantizes, else None."""
    return ctx.graph.quantized_packed_call(value, symbol)


def _constant(expr: relax.Expr, ctx: LoweringContext) -> tuple[Optional[np.ndarray], Optional[Quant]]:
    source, quant = ctx.graph.dequantized(expr)
    return (None, None) if source is None else (ctx.graph.constant(source), quant)


@dataclass(frozen=True)
class _Operands:
    """A step's operands: an int8/int16 activation of the lowered graph, then two dequantized constants."""

    activation: relax.Expr
    activation_quant: Quant
    first: np.ndarray
    first_quant: Quant
    second: np.ndarray
    second_quant: Optional[Quant]


def _operands(step: relax.Call, ctx: LoweringContext) -> Optional[_Operands]:
    activation, first, second = step.args[1].fields
    source, activation_quant = ctx.graph.dequantized(activation)
    first, first_quant = _constant(first, ctx)
    second, second_quant = _constant(second, ctx)
    if source not in ctx.lowered or activation_quant is None or first is None or first_quant is None \
            or second is None:
        return None
    return _Operands(ctx.lowered[source], activation_quant, first, first_quant, second, second_quant)


_NOT_PER_TENSOR = Mismatch("SVDF with operands that are not per-tensor quantized")

FEATURE_INPUTS_MAX = 2**16 - 1
"""The most inputs of an SVDF whose feature sums are exact in int32: a filter's running sum (its accumulator, from
the folded offset ``svdf_feature_offsets``, up to 2^14 * I in magnitude, plus the raw int8 products so far, up to
2^14 * I; the interleaved dual MAC's contract, and the row-major product's alike) stays within 2^15 * I, which
fits int32 below 2^16 inputs."""


def _match_state_update(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    """Operands: the input, weights_feature, the state's reset value."""
    step = _step(quantize, ctx, SVDF_STATE_UPDATE)
    operands = _operands(step, ctx)
    if operands is None or operands.second_quant is None:
        return _NOT_PER_TENSOR
    data, feature, initial, state = operands.activation_quant, operands.first, operands.second, operands.second_quant
    if int(feature.shape[1]) > FEATURE_INPUTS_MAX:
        return Mismatch(f"SVDF of {int(feature.shape[1]):,} inputs (at most {FEATURE_INPUTS_MAX:,}: its int32 "
                        f"feature sums could overflow)")
    multiplier, shift = svdf_feature_multiplier(data.scale, operands.first_quant.scale, state.scale, ctx.rounding)
    offsets = svdf_feature_offsets(feature, data.zero_point)
    func_attrs = {STATE_OPERAND_ATTR: 1, "op_pattern": OPAQUE_PATTERN}
    weights = feature
    rows = ctx.whole_gate_rows and not ctx.interleaved_gate_weights
    if ctx.interleaved_gate_weights or rows:  # every filter's product in one helper call
        # the layer's MACs, not the zero weights' of the padding (tvm_ext.plan.macs.with_mac_count keeps this)
        func_attrs[MACS_ATTR] = int(initial.shape[0]) * feature.size
        offsets = np.pad(offsets, (0, padded_to_tiles(offsets.size) - offsets.size))
    if ctx.interleaved_gate_weights:  # ... of the interleaved dual MAC
        weights, = widen_gate_weights(ctx, step, interleave_weights(feature))
    elif rows:  # ... of the rows MAC
        weights = rows_padded(feature)
    return FixedCall(KernelCall(
        "SVDF", step, svdf_state_update,
        (operands.activation, relax.const(initial), relax.const(weights), relax.const(offsets)),
        {"memory": int(initial.shape[1]) // int(feature.shape[0]), "state_zero_point": state.zero_point,
         "multiplier": multiplier, "shift": shift, "rounding": ctx.rounding,
         **({"interleaved": True} if ctx.interleaved_gate_weights else {"rows": True} if rows else {})},
        func_attrs,
    ))


def _match_output(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    """Operands: the new state, weights_time, the bias."""
    step = _step(quantize, ctx, SVDF_OUTPUT)
    operands = _operands(step, ctx)
    output = ctx.graph.quant(quantize.args[1], quantize.args[2])
    if operands is None or output is None:
        return _NOT_PER_TENSOR
    state, time = operands.activation_quant, operands.first
    multiplier, shift = svdf_time_multiplier(state.scale, operands.first_quant.scale, output.scale, ctx.rounding)
    rank = int(time.shape[0]) // int(quantize.ty.shape.values[1])
    folded = svdf_time_offsets(operands.second, time, rank, state.zero_point)
    bias, state_zero_point = (operands.second, state.zero_point) if folded is None else (folded, 0)
    stage = {"state_zero_point": state_zero_point, "multiplier": multiplier, "shift": shift,
             "output_zero_point": output.zero_point, "rounding": ctx.rounding,
             "right_shift_only": shifts_right_only(multiplier, shift),
             "small_accumulator": fits_small_accumulator(_time_reach(time, rank, state_zero_point), bias)}
    macs = int(quantize.ty.shape.values[0]) * time.size  # the time product's, per call
    if str(time.dtype) in ctx.svdf_unit_rows and (ctx.svdf_unit_rows_max_macs is None
                                                   or macs <= ctx.svdf_unit_rows_max_macs):
        # unit after unit, one row dot product each
        rows = svdf_unit_rows(time, rank)
        widened, = widen_gate_weights(ctx, step, rows) if rows.dtype == np.int8 and \
            rows.shape[1] % LANE_GROUP == 0 else (rows,)
        lanes = widened.dtype != rows.dtype  # int8 rows against int16 weights, no widening of theirs in the loop
        return FixedCall(KernelCall(
            "SVDF", step, svdf_output_rows,
            (operands.activation, relax.const(lane_order(widened) if lanes else rows), relax.const(bias)),
            {**stage, **({"lanes": True} if lanes else {})},
            {"op_pattern": OPAQUE_PATTERN},
        ))
    return FixedCall(KernelCall(
        "SVDF", step, svdf_output, (operands.activation, relax.const(time), relax.const(bias)),
        {"rank": rank, **stage},
    ))


def _time_reach(time: np.ndarray, rank: int, state_zero_point: int) -> np.ndarray:
    """The largest |time product summed over a unit's rank filters| of each unit (int64): the sum of its time
    weights' |w| times the largest |state - state_zero_point| of the state's type."""
    weight_l1 = np.abs(time.astype(np.int64)).reshape(time.shape[0] // rank, -1).sum(axis=1)
    return weight_l1 * largest_centered(str(time.dtype), state_zero_point)


def _completes(value: relax.Expr, ctx: LoweringContext) -> bool:
    return any(_step(value, ctx, symbol) is not None for symbol in (SVDF_STATE_UPDATE, SVDF_OUTPUT))


def _match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    """Either step of the SVDF: each is one kernel of the layer."""
    if _step(quantize, ctx, SVDF_STATE_UPDATE) is not None:
        return _match_state_update(quantize, ctx)
    return _match_output(quantize, ctx)


LOWERING = Lowering(frozenset({"SVDF"}), _completes, _match)
