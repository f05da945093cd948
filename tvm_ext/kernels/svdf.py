"""TE definitions of TFLite Micro's integer SVDF (int8 input and output; int16 or int8 state and time weights).

One SVDF invocation is two kernels, because the activation state is read and rewritten in place:

- ``svdf_state_update(data, state, weight_feature)`` -> the new state, the same shape and dtype as ``state``:
  every filter's memory moves one step left and its newest (last) column becomes the feature product
  ``clamp_T(MBQM(sum_k (data[b, k] - input_zero_point) * weight_feature[f, k], M1, shift1)) + state_zero_point``,
  narrowed to T (a wrap-around in C's conversion, as TFLM's assignment does). The kernel may write over its
  input state (see ``svdf_state_update``).
- ``svdf_output(state, weight_time, bias)`` -> int8 (batch, units): per filter the time product
  ``sum_m weight_time[f, m] * (state[b, f*memory + m] - state_zero_point)``, summed over the ``rank`` filters
  of each unit, plus the bias, rescaled by (M2, shift2), plus the output zero point, clamped to int8.
  TFLM applies no fused activation in its integer SVDF: neither does this kernel.

State layout as TFLite stores it: (batch, filters * memory), filter-major. The multipliers are TFLM's
``QuantizeMultiplier`` of the effective scales (``svdf_feature_multiplier``, ``svdf_time_multiplier``).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
from tvm import te, tirx

from .fixed_point import Rounding, multiply_by_quantized_multiplier
from .quant_params import ActivationRange, quantize_multiplier
from .requantize import OutputStage, requantize

STATE_DTYPES: dict[str, tuple[int, int]] = {"int16": (-(2**15), 2**15 - 1), "int8": (-128, 127)}


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


def svdf_state_update(data: te.Tensor, state: te.Tensor, weight_feature: te.Tensor, *, memory: int,
                      input_zero_point: int, state_zero_point: int, multiplier: int, shift: int,
                      rounding: Rounding) -> te.Tensor:
    """data (B, I) int8, state (B, F*memory) int16/int8, weight_feature (F, I) int8 -> the new state.

    A TE extern stage of plain serial loops, per filter: the shift, then the feature product in a one-element
    int32 accumulator (a scratch buffer), then the newest column. Written so, the requantization reads the
    accumulator, not a reduction the schedule would move into the shift's loop, and the kernel is correct
    when its output is its state input (it writes element i after reading element i + 1).
    """
    batch, depth = (int(d) for d in data.shape)
    filters = int(weight_feature.shape[0])
    dtype = str(state.dtype)
    low, high = STATE_DTYPES[dtype]

    def build(ins, outs):
        x, old, weights = ins
        new = outs[0]
        acc = tirx.decl_buffer((1,), "int32", name="svdf_feature_acc")
        b, f, m, k = (tirx.Var(name, "int32") for name in ("b", "f", "m", "k"))
        shift_memory = tirx.For(m, 0, memory - 1, tirx.ForKind.SERIAL,
                                tirx.BufferStore(new, old[b, f * memory + m + 1], [b, f * memory + m]))
        product = (x[b, k].astype("int32") - input_zero_point) * weights[f, k].astype("int32")
        accumulate = tirx.SeqStmt([
            tirx.BufferStore(acc, tirx.const(0, "int32"), [0]),
            tirx.For(k, 0, depth, tirx.ForKind.SERIAL, tirx.BufferStore(acc, acc[0] + product, [0])),
        ])
        scaled = multiply_by_quantized_multiplier(acc[0], multiplier, shift, rounding)
        newest = tirx.Cast(dtype, tirx.max(tirx.min(scaled, high), low) + state_zero_point)
        per_filter = tirx.SeqStmt([shift_memory, accumulate,
                                   tirx.BufferStore(new, newest, [b, f * memory + memory - 1])])
        loops = tirx.For(b, 0, batch, tirx.ForKind.SERIAL, tirx.For(f, 0, filters, tirx.ForKind.SERIAL, per_filter))
        return tirx.SeqStmt([tirx.AllocBuffer(acc), loops])

    return te.extern((batch, filters * memory), [data, state, weight_feature], build, name="svdf_state_update",
                     dtype=dtype)


def svdf_output(state: te.Tensor, weight_time: te.Tensor, bias: Optional[te.Tensor], *, rank: int,
                state_zero_point: int, multiplier: int, shift: int, output_zero_point: int,
                rounding: Rounding) -> te.Tensor:
    """state (B, F*M), weight_time (F, M) of the state's dtype, bias int32[F/rank] or None -> int8 (B, F/rank)."""
    batch = int(state.shape[0])
    filters, memory = (int(d) for d in weight_time.shape)
    m = te.reduce_axis((0, memory), "m")
    time = te.compute(
        (batch, filters),
        lambda b, f: te.sum(weight_time[f, m].astype("int32") * (state[b, f * memory + m].astype("int32")
                                                                  - state_zero_point), axis=m),
        name="svdf_time",
    )
    r = te.reduce_axis((0, rank), "r")
    units = filters // rank
    acc = te.compute((batch, units), lambda b, u: te.sum(time[b, u * rank + r], axis=r), name="svdf_sum")
    stage = OutputStage(multiplier, shift, output_zero_point, ActivationRange(), rounding)
    return te.compute((batch, units), lambda b, u: requantize(acc[b, u], u, stage, bias), name="svdf_output")
