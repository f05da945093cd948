"""UNIDIRECTIONAL_SEQUENCE_LSTM: the QDQ step of ``tvm_ext.frontend.tflite_ops.lstm`` -> TFLM's integer LSTM as one kernel.

``output = q(lstm(dq(x), dq(H0), dq(C0), dq(W_input[4]), dq(W_recurrent[4]), bias[4]))`` -> ``lstm_int8`` on the
int8 input, the hidden and cell states, the four gates' weights stacked (gate-major, TFLite's gate order), their
products' offsets (the biases with the input and hidden zero points folded in at compile time,
``tvm_ext.kernels.lstm.gate_products``) and TFLite's sigmoid table laid out over signed inputs
(``tvm_ext.kernels.lstm.signed_sigmoid_table``); where the backend asks
(``LoweringContext.interleaved_gate_weights``) each gate's weights interleaved per tile of four units
(``tvm_ext.kernels.lstm.interleave_gate_weights``, padded with zero weights to whole tiles and groups: the
kernel then carries its layer's MAC count), and widened to int16 where the backend asks and the flash holds their
extra byte each (``tvm_ext.transform.int8.lowering.widen_gate_weights``); else where it asks
(``LoweringContext.whole_gate_rows``) in TFLite's rows, units padded to whole tiles by zero rows
(``tvm_ext.kernels.extern_mac.rows_padded``; its MAC count likewise), each gate's product one block over all of
them. Its PrimFunc is marked with ``STATE_OPERANDS_ATTR`` (the hidden and cell state operands: the plan makes them
the bundle's static state, ``H0`` and ``C0`` their reset values; the kernel rewrites them in place) and opaque, so
that fusion never turns a state into a kernel-local buffer. The scales are TFLM's
(``tvm_ext.kernels.lstm.lstm_params``).
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Union

import numpy as np
from tvm import relax

from backends.code_price import INSTRUCTIONS_PER_BYTE
from ...frontend.tflite_ops.lstm import CELL_CLIP_ATTR, LSTM, TIME_MAJOR_ATTR
from ...kernels.extern_mac import rows_padded
from ...kernels.lstm import (GATES, GateProducts, LstmParams, LstmQuantization, gate_groups, gate_products,
                             interleave_gate_weights, lstm_int8, lstm_params, signed_sigmoid_table,
                             with_gate_multipliers)
from .graph import Quant
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch, widen_gate_weights
from tvm_ext.layers import MACS_ATTR, OPAQUE_PATTERN, STATE_OPERANDS_ATTR

_HIDDEN, _CELL = 1, 2  # the kernel's state operands
_NOT_PER_TENSOR = Mismatch("UNIDIRECTIONAL_SEQUENCE_LSTM with operands that are not per-tensor quantized")


def _dequantized_constants(fields, ctx: LoweringContext) -> Optional[list[tuple[np.ndarray, Quant]]]:
    """Each dequantized constant of ``fields`` as (value, quantization), None unless all are."""
    constants = []
    for field in fields:
        source, quant = ctx.graph.dequantized(field)
        value = None if source is None else ctx.graph.constant(source)
        if value is None or quant is None:
            return None
        constants.append((value, quant))
    return constants


ROLLED_GATE_EXTRA = 30
"""The instructions a gate rolled into one loop with others adds per step, at the most (its pointers and row no
longer constant offsets, the loop's control; its multipliers one load each: ``tvm_ext.kernels.lstm._gate_mbqm``),
measured on rv32imc with the three sigmoid gates in one loop: kws_lstm27_37x11 (seed 71) 886,769 -> 889,706
instructions over 37 steps (26.5 a gate a step), kws_lstm_40x16 7,068,840 -> 7,072,413 over 40 (29.8)."""


def rolls_gates(params: LstmParams, products: GateProducts, gate_loop_bytes: int, steps: int) -> bool:
    """Whether the kernel's whole gates (``products.whole_gates``) of one form run in one loop (``gate_groups``):
    where the code of the gate loops this saves, ``gate_loop_bytes`` each (a core's, 0: never), at the price of code
    (``backends.code_price.INSTRUCTIONS_PER_BYTE``) exceeds ROLLED_GATE_EXTRA instructions per rolled gate over
    ``steps`` steps (of every batch row)."""
    if not gate_loop_bytes or not products.whole_gates:
        return False
    groups = [group for group in gate_groups(params, dataclasses.replace(products, rolled=True)) if len(group) > 1]
    saved = sum(len(group) - 1 for group in groups) * gate_loop_bytes
    return saved * INSTRUCTIONS_PER_BYTE > steps * ROLLED_GATE_EXTRA * sum(len(group) for group in groups)


def _match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    step = ctx.graph.quantized_packed_call(quantize, LSTM)
    fields = step.args[1].fields
    source, input_quant = ctx.graph.dequantized(fields[0])
    constants = _dequantized_constants(fields[1:11], ctx)
    biases = [ctx.graph.constant(field) for field in fields[11:15]]
    if source not in ctx.lowered or input_quant is None or constants is None or any(b is None for b in biases):
        return _NOT_PER_TENSOR
    (hidden, hidden_quant), (cell, cell_quant) = constants[:2]
    input_weights, recurrent_weights = constants[2:6], constants[6:10]
    quant = LstmQuantization(
        input_scale=float(input_quant.scale), input_zero_point=input_quant.zero_point,
        input_weight_scales=tuple(float(q.scale) for _, q in input_weights),
        input_weight_zero_points=tuple(q.zero_point for _, q in input_weights),
        recurrent_weight_scales=tuple(float(q.scale) for _, q in recurrent_weights),
        recurrent_weight_zero_points=tuple(q.zero_point for _, q in recurrent_weights),
        hidden_scale=float(hidden_quant.scale), hidden_zero_point=hidden_quant.zero_point,
        cell_scale=float(cell_quant.scale),
    )
    callee = step.args[0]
    params = lstm_params(quant, cell_clip=float(callee.attrs[CELL_CLIP_ATTR]),
                         time_major=bool(callee.attrs[TIME_MAJOR_ATTR]), rounding=ctx.rounding)
    stacked_input = np.stack([w for w, _ in input_weights])
    stacked_recurrent = np.stack([w for w, _ in recurrent_weights])
    rows = int(np.prod([int(extent) for extent in ctx.lowered[source].ty.shape][:2]))  # steps x batch rows
    input_offsets, recurrent_offsets, products = gate_products(np.stack(biases).astype(np.int32), stacked_input,
                                                               stacked_recurrent, params,
                                                               interleave=ctx.interleaved_gate_weights,
                                                               rows=ctx.whole_gate_rows)
    if rolls_gates(params, products, ctx.gate_loop_bytes, rows):
        products = dataclasses.replace(products, rolled=True)
        input_offsets = with_gate_multipliers(input_offsets, params, "input_fc")
        recurrent_offsets = with_gate_multipliers(recurrent_offsets, params, "recurrent_fc")
    func_attrs = {STATE_OPERANDS_ATTR: (_HIDDEN, _CELL), "op_pattern": OPAQUE_PATTERN}
    if products.whole_gates:
        units, depth = stacked_recurrent.shape[1], stacked_input.shape[2]
        # the layer's MACs, not the zero weights' of the padding (tvm_ext.plan.macs.with_mac_count keeps this)
        func_attrs[MACS_ATTR] = rows * len(GATES) * units * (depth + units)
    if products.rows:
        stacked_input, stacked_recurrent = rows_padded(stacked_input), rows_padded(stacked_recurrent)
    if products.interleaved:
        stacked_input = interleave_gate_weights(stacked_input)
        stacked_recurrent = interleave_gate_weights(stacked_recurrent)
        stacked_input, stacked_recurrent = widen_gate_weights(ctx, step, stacked_input, stacked_recurrent)
    operands = (ctx.lowered[source], relax.const(hidden), relax.const(cell), relax.const(stacked_input),
                relax.const(stacked_recurrent), relax.const(input_offsets), relax.const(recurrent_offsets),
                relax.const(signed_sigmoid_table()))
    return FixedCall(KernelCall("UNIDIRECTIONAL_SEQUENCE_LSTM", step, lstm_int8, operands,
                                {"params": params, "products": products}, func_attrs))


def _completes(value: relax.Expr, ctx: LoweringContext) -> bool:
    return ctx.graph.quantized_packed_call(value, LSTM) is not None


LOWERING = Lowering(frozenset({"UNIDIRECTIONAL_SEQUENCE_LSTM"}), _completes, _match)
