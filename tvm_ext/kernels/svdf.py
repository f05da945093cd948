"""TE definitions of TFLite Micro's integer SVDF (int8 input and output; int16 or int8 state and time weights).

One SVDF invocation is two kernels, because the activation state is read and rewritten in place:

- ``svdf_state_update(data, state, weight_feature, feature_offsets)`` -> the new state, the same shape and dtype
  as ``state``: every filter's memory moves one step left and its newest (last) column becomes the feature
  product ``clamp_T(MBQM(sum_k (data[b, k] - input_zero_point) * weight_feature[f, k], M1, shift1)) +
  state_zero_point``, narrowed to T (a wrap-around in C's conversion, as TFLM's assignment does); the input
  zero point's part is the compile-time ``feature_offsets`` (``svdf_feature_offsets``). The kernel may write
  over its input state (see ``svdf_state_update``).
- ``svdf_output(state, weight_time, bias)`` -> int8 (batch, units): per filter the time product
  ``sum_m weight_time[f, m] * (state[b, f*memory + m] - state_zero_point)``, summed over the ``rank`` filters
  of each unit, plus the bias, rescaled by (M2, shift2), plus the output zero point, clamped to int8 (the
  zero point's part may be folded into the bias: ``svdf_time_offsets``). TFLM applies no fused activation in
  its integer SVDF: neither does this kernel.

State layout as TFLite stores it: (batch, filters * memory), filter-major. The multipliers are TFLM's
``QuantizeMultiplier`` of the effective scales (``svdf_feature_multiplier``, ``svdf_time_multiplier``).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
from tvm import te, tirx

from packager.fixed_point_c import SATURATE_INT8_OP
from tvm_ext.tir.extern_stage import STATE_SHIFT_ANNOTATION

from .extern_mac import (INTERLEAVED_TILE, ZeroPaddedRow, accumulate_interleaved, accumulate_products,
                         accumulate_row, accumulate_rows, over_tiles, padded_to_tiles)
from .fixed_point import Rounding, multiply_by_constant_quantized_multiplier, saturate_int16
from .quant_params import ActivationRange, quantize_multiplier
from .requantize import OutputStage, requantize
from .zero_point_fold import fold_zero_point_into_bias


def svdf_feature_multiplier(input_scale: float, feature_scale: float, state_scale: float,
                            rounding: Rounding) -> tuple[int, int]:
    """TFLM's effective_scale_1 (input x weights_feature -> state) as (multiplier, shift): a float32 product
    and quotient widened to double, then quantized."""
    return quantize_multiplier(float(np.float32(input_scale) * np.float32(feature_scale) / np.float32(state_scale)),
                               rounding)


def svdf_time_multiplier(state_scale: float, time_scale: float, output_scale: float,
                         rounding: Rounding) -> tuple[int, int]:
    """TFLM's effective_scale_2 (state x weights_time -> output) as (multiplier, shift), computed likewise."""
    return quantize_multiplier(float(np.float32(state_scale) * np.float32(time_scale) / np.float32(output_scale)),
                               rounding)


def svdf_feature_offsets(weight_feature: np.ndarray, input_zero_point: int) -> np.ndarray:
    """The input zero point folded out of the feature product: int32[F] ``-input_zero_point * sum_k
    weight_feature[f, k]``, so that ``sum_k (x_k - zp) * w_fk = offset_f + sum_k x_k * w_fk`` (CMSIS-NN's
    kernel sum): the product's inner loop then multiplies raw int8 values (exact in int32 for any depth
    below 2^16)."""
    sums = weight_feature.astype(np.int64).sum(axis=1)
    return (-np.int64(input_zero_point) * sums).astype(np.int32)


FEATURE_TILE = INTERLEAVED_TILE
"""Filters whose feature products one pass over the input accumulates: the interleaved layout's tile (one source of
truth: ``extern_mac.INTERLEAVED_TILE``, the dual MAC's four channels); a remainder of fewer filters is one shorter
tile."""


def svdf_state_update(data: te.Tensor, state: te.Tensor, weight_feature: te.Tensor, feature_offsets: te.Tensor, *,
                      memory: int, state_zero_point: int, multiplier: int, shift: int,
                      rounding: Rounding, interleaved: bool = False, rows: bool = False) -> te.Tensor:
    """data (B, I) int8, state (B, F*memory) int16/int8, weight_feature (F, I) int8, feature_offsets int32[F]
    (``svdf_feature_offsets``) -> the new state. ``interleaved`` (a backend's choice,
    ``backends.backend.KernelSchedules.interleaved_gate_weights``): weight_feature comes in
    ``tvm_ext.kernels.extern_mac.interleave_weights``' layout (F and I padded to whole tiles and groups of
    four by zero weights), feature_offsets int32[F'] (0 beyond F); else ``rows`` (``whole_gate_rows``):
    weight_feature (F', I) in TFLite's rows, F padded to whole tiles by zero rows
    (``tvm_ext.kernels.extern_mac.rows_padded``), feature_offsets int32[F'] likewise.

    A TE extern stage of plain serial loops, per batch: first the whole row's shift, one ascending copy
    ``new[b, i] = old[b, i + 1]`` (marked ``STATE_SHIFT_ANNOTATION``; it moves every filter's memory one step left;
    each filter's last column
    then holds the next filter's first, overwritten below), then per tile of FEATURE_TILE filters the
    feature products in as many int32 accumulators (a local buffer; the product is one reduction block over
    the input, ``tvm_ext.kernels.extern_mac``), then each filter's
    newest column; interleaved, the products of every filter first (one block over all the tiles, starting at
    the offsets: one helper call on DSP cores, over a zero-padded copy of the input row where I is not whole
    groups; with ``rows`` one block over every row of the weights, one helper call on Helium cores), then every newest
    column. The kernel is correct when its output is its state input: the copy
    writes element i after reading element i + 1, and the products read no state.
    """
    batch, depth = (int(d) for d in data.shape)
    filters = int(state.shape[1]) // memory
    dtype = str(state.dtype)
    largest = depth * 255 * 128  # |sum_k (x_k - zp) * w_k| with x - zp in [-255, 255], w in [-128, 127]

    def build(ins, outs):
        x, old, weights, offsets = ins
        new = outs[0]
        acc = tirx.decl_buffer((padded_to_tiles(filters) if interleaved or rows else FEATURE_TILE,), "int32",
                               name="svdf_feature_acc")
        b = tirx.Var("b", "int32")

        def newest(c: tirx.PrimExpr) -> tirx.PrimExpr:
            """The newest column's value of the filter whose sum is acc[c]."""
            scaled = multiply_by_constant_quantized_multiplier(acc[c], multiplier, shift, rounding, largest)
            return tirx.Cast(dtype, saturated(scaled) + state_zero_point)

        def saturated(value: tirx.PrimExpr) -> tirx.PrimExpr:
            """``value`` clamped to the state type's range: one call of the bundle's saturation helper (one SSAT on
            Arm, where gcc compiled the two comparisons of int16 bounds as two compares and conditional moves)."""
            return saturate_int16(value) if dtype == "int16" else tirx.call_intrin("int32", SATURATE_INT8_OP, value)

        def feature_tile(first: tirx.PrimExpr, count: int) -> tirx.Stmt:
            """Filters first .. first + count - 1: accumulators from their offsets, products, newest column."""
            c_init, c_write = (tirx.Var(name, "int32") for name in ("c_init", "c_write"))
            init = tirx.For(c_init, 0, count, tirx.ForKind.SERIAL,
                            tirx.BufferStore(acc, offsets[first + c_init], [c_init]))
            mac = accumulate_products(acc, x, [b], weights, lambda c: [first + c], count, depth,
                                      "svdf_feature_product")
            write = tirx.For(c_write, 0, count, tirx.ForKind.SERIAL,
                             tirx.BufferStore(new, newest(c_write), [b, (first + c_write) * memory + memory - 1]))
            return tirx.SeqStmt([init, mac, write])

        def all_filters() -> list[tirx.Stmt]:
            """Every filter's product over interleaved weights or rows (from its offset), then every newest
            column."""
            c_write = tirx.Var("c_write", "int32")
            if interleaved:
                row = ZeroPaddedRow(x, [b], depth, "svdf_input_padded")
                mac = accumulate_interleaved(acc, offsets, [], *row.operand, weights, [], "svdf_feature_product")
                padded.extend([row] if row.buffer is not None else [])
            else:
                mac = accumulate_rows(acc, offsets, [], x, [b], weights, [], "svdf_feature_product")
            write = tirx.For(c_write, 0, filters, tirx.ForKind.SERIAL,
                             tirx.BufferStore(new, newest(c_write), [b, c_write * memory + memory - 1]))
            return [*(copy.fill() for copy in padded), mac, write]

        i = tirx.Var("i", "int32")
        padded: list[ZeroPaddedRow] = []
        steps = [tirx.For(i, 0, filters * memory - 1, tirx.ForKind.SERIAL,
                          tirx.BufferStore(new, old[b, i + 1], [b, i]), annotations={STATE_SHIFT_ANNOTATION: 1}),
                 *(all_filters() if interleaved or rows else over_tiles(filters, FEATURE_TILE, feature_tile, "t"))]
        return tirx.SeqStmt([tirx.AllocBuffer(acc), *(tirx.AllocBuffer(copy.buffer) for copy in padded),
                             *(copy.zero_tail() for copy in padded),
                             tirx.For(b, 0, batch, tirx.ForKind.SERIAL, tirx.SeqStmt(steps))])

    return te.extern((batch, filters * memory), [data, state, weight_feature, feature_offsets], build,
                     name="svdf_state_update", dtype=dtype)


def svdf_time_offsets(bias: np.ndarray, weight_time: np.ndarray, rank: int,
                      state_zero_point: int) -> Optional[np.ndarray]:
    """The state zero point folded into the int32 bias[F/rank]: ``bias[u] - state_zero_point * (sum of the time
    weights of unit u's rank filters)``, so that ``svdf_output`` with ``state_zero_point`` 0 computes the same
    values; None where an entry does not fit int32 (the kernel then subtracts the zero point itself)."""
    per_unit = weight_time.reshape(weight_time.shape[0] // rank, -1)
    return fold_zero_point_into_bias(bias.astype(np.int32), per_unit, state_zero_point, channel_axis=0)


def svdf_output(state: te.Tensor, weight_time: te.Tensor, bias: Optional[te.Tensor], *, rank: int,
                state_zero_point: int, multiplier: int, shift: int, output_zero_point: int,
                rounding: Rounding, right_shift_only: bool = False, small_accumulator: bool = False) -> te.Tensor:
    """state (B, F*M), weight_time (F, M) of the state's dtype, bias int32[F/rank] or None -> int8 (B, F/rank).
    ``right_shift_only`` and ``small_accumulator``: what the caller proved of the constants
    (``OutputStage``).

    With ``state_zero_point`` 0 (a bias that ``svdf_time_offsets`` folded it into) the time product
    multiplies raw values: on DSP cores, the row dot product's form (``backends.cortex_m.schedules.row_dot``)."""
    batch = int(state.shape[0])
    filters, memory = (int(d) for d in weight_time.shape)
    m = te.reduce_axis((0, memory), "m")

    def centred(value: tirx.PrimExpr) -> tirx.PrimExpr:
        return value - state_zero_point if state_zero_point else value

    time = te.compute(
        (batch, filters),
        lambda b, f: te.sum(weight_time[f, m].astype("int32") * centred(state[b, f * memory + m].astype("int32")),
                            axis=m),
        name="svdf_time",
    )
    units = filters // rank
    if rank == 1:  # each unit's sum is its one filter's time product: no stage of its own
        acc = time
    else:
        r = te.reduce_axis((0, rank), "r")
        acc = te.compute((batch, units), lambda b, u: te.sum(time[b, u * rank + r], axis=r), name="svdf_sum")
    stage = OutputStage(multiplier, shift, output_zero_point, ActivationRange(), rounding, right_shift_only,
                        small_accumulator)
    return te.compute((batch, units), lambda b, u: requantize(acc[b, u], u, stage, bias), name="svdf_output")


def svdf_unit_rows(weight_time: np.ndarray, rank: int) -> np.ndarray:
    """The time weights (F, M) as (F / rank, rank * M): each unit's rank filters' weights in one row, in the order
    the state holds those filters' memories (``svdf_output_rows``)."""
    filters, memory = weight_time.shape
    return np.ascontiguousarray(weight_time.reshape(filters // rank, rank * memory))


def svdf_output_rows(state: te.Tensor, weight_rows: te.Tensor, bias: Optional[te.Tensor], *,
                     state_zero_point: int, multiplier: int, shift: int, output_zero_point: int,
                     rounding: Rounding, right_shift_only: bool = False,
                     small_accumulator: bool = False, lanes: bool = False) -> te.Tensor:
    """``svdf_output``'s values as one TE extern stage (a backend's choice,
    ``backends.backend.KernelSchedules.svdf_unit_rows``): weight_rows (U, rank * M) (``svdf_unit_rows``), state
    (B, F * M), bias int32[U] or None -> int8 (B, U). ``lanes``: int8 state, weight_rows int16 in
    ``tvm_ext.kernels.extern_mac.lane_order`` (rank * M a multiple of its groups; the int8 lowering's choice where
    the backend widens gate weights and the flash holds them), read in that order: the same sums.

    A unit's rank filters hold their memories one after another in the state, so its sum over them is one dot
    product of its row of the state (rank * M values from u * rank * M) with its row of time weights: per batch and
    unit, one accumulator from 0, that row's reduction block (``tvm_ext.kernels.extern_mac.accumulate_row``: one
    helper call on DSP cores), then the requantization of the accumulator, straight to the output (no tile of
    accumulators in memory: on a DSP core the sum stays in a register)."""
    batch = int(state.shape[0])
    units, length = (int(d) for d in weight_rows.shape)
    stage = OutputStage(multiplier, shift, output_zero_point, ActivationRange(), rounding, right_shift_only,
                        small_accumulator)

    def build(ins, outs):
        rows, weights = ins[0], ins[1]
        biases = ins[2] if bias is not None else None
        out = outs[0]
        acc = tirx.decl_buffer((1,), "int32", name="svdf_time_acc")
        b, u = tirx.Var("b", "int32"), tirx.Var("u", "int32")
        zero = tirx.const(0, "int32")
        unit = tirx.SeqStmt([
            tirx.BufferStore(acc, zero, [zero]),
            accumulate_row(acc, rows, [b], u * length, weights, [u], length, "svdf_time_product",
                           data_zero_point=state_zero_point, lanes=lanes),
            tirx.BufferStore(out, requantize(tirx.BufferLoad(acc, [zero]), u, stage,
                                                None if biases is None else lambda c: biases[c]),
                             [b, u]),
        ])
        loops = tirx.For(b, 0, batch, tirx.ForKind.SERIAL, tirx.For(u, 0, units, tirx.ForKind.SERIAL, unit))
        return tirx.SeqStmt([tirx.AllocBuffer(acc), loops])

    return te.extern((batch, units), [state, weight_rows, *([bias] if bias is not None else [])], build,
                     name="svdf_output", dtype="int8")
