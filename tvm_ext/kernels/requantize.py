"""The shared epilogue of the integer MAC kernels: bias, fixed-point rescale, output offset, clamp."""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Optional, Union

from tvm import te, tirx
from tvm.ir.expr import Expr as PrimExpr

from .fixed_point import (INT16_MAX, INT16_MIN, Rounding, clamp_to_type, multiply_by_quantized_multiplier,
                          multiply_by_quantized_multiplier_int64, multiply_by_reduced_multiplier, requantize_16x8)
from .quant_params import ActivationRange

ChannelParam = Union[int, te.Tensor]


class Multipliers16x8(enum.Enum):
    """What a 16x8 stage's ``multiplier``/``shift`` hold (TFLite's int64 MultiplyByQuantizedMultiplier)."""

    TFLITE = "tflite"
    """TFLite's multiplier and shift: the multiplier is reduced to 15 bits and the shift totalled at run time."""
    REDUCED = "reduced"
    """The reduced multiplier and the total shift 15 - shift (`fixed_point.reduce_16x8_multipliers`)."""
    HIGH_MUL = "high_mul"
    """The "16x8" helper's multiplier (`fixed_point.high_mul_16x8_multipliers`), no shift; the int32 sums
    plus the bias (stored int32) are bounded within int32 at compile time, so the bias is added in int32."""


@dataclass(frozen=True)
class OutputStage:
    """How an accumulator becomes an integer output (TFLite's per-channel or per-tensor rule): an int32
    accumulator of int8 data an int8 output, an int64 one of int16 data (16x8 operators) an int16 output.

    ``multiplier``/``shift`` are Python ints (per-tensor, baked into the kernel) or 1-D int32/int8
    tensors indexed by output channel (per-channel, passed to the kernel as constants).
    ``right_shift_only``: every channel's shift is < 0 and no multiplier is INT32_MIN (known from the
    constants at compile time), so the requantization may use its cheaper right-shift-only helper.
    ``small_accumulator``: every int32 accumulator plus its bias lies in [-2^30, 2^30) (bounded at compile
    time from the weights, bias and input range: `fixed_point.fits_small_input`), so the bias is added in
    int32 (it cannot wrap) and the right-shift-only helper may use its cheaper small-input variant.
    ``int32_sums_16x8``: a 16x8 operator whose sums of products (before the bias) are bounded within int32 at
    compile time: it accumulates them in int32 (exact in any order, as TFLite Micro's int64 sums are, and
    what the dual MAC helpers compute) and widens the sum to int64 for the bias and TFLite's int64
    requantization (unless ``multipliers_16x8`` is HIGH_MUL).
    ``multipliers_16x8``: what a 16x8 stage's ``multiplier``/``shift`` hold (`Multipliers16x8`).
    """

    multiplier: ChannelParam
    shift: ChannelParam
    zero_point: int
    activation: ActivationRange
    rounding: Rounding
    right_shift_only: bool = False
    small_accumulator: bool = False
    int32_sums_16x8: bool = False
    multipliers_16x8: Multipliers16x8 = Multipliers16x8.TFLITE

    def per_channel(self, multiplier: Optional[te.Tensor], shift: Optional[te.Tensor]) -> "OutputStage":
        """This stage with per-channel multiplier/shift tensors, when given."""
        return self if multiplier is None else dataclasses.replace(self, multiplier=multiplier, shift=shift)


def accumulator_dtype(data: te.Tensor, stage: OutputStage) -> str:
    """The MAC accumulator of ``data`` requantized by ``stage``: int64 for int16 data (16x8 operators) unless
    their sums are bounded within int32 (``int32_sums_16x8``), else int32."""
    return "int64" if data.dtype == "int16" and not stage.int32_sums_16x8 else "int32"


def _at(param: ChannelParam, channel: PrimExpr) -> Union[int, PrimExpr]:
    if isinstance(param, int):
        return param
    value = param(channel)
    return value if param.dtype == "int32" else tirx.Cast("int32", value)


def _dtype(value) -> str:
    """The type of ``value``: a TE tensor's element (``.dtype``) or a TIR load or expression (``.ty.dtype``: a TE
    extern stage's accumulator)."""
    return str(value.dtype) if hasattr(value, "dtype") else str(value.ty.dtype)


def requantize(
    acc: PrimExpr, channel: PrimExpr, stage: OutputStage, bias: Optional[te.Tensor] = None
) -> PrimExpr:
    """output = clamp(MBQM(acc + bias[channel], M[channel], shift[channel]) + zero_point).

    An int32 ``acc`` gives int8 (TFLite's int32 MBQM); an int64 ``acc`` gives int16 with TFLite's int64
    MBQM, as TFLite Micro's 16x8 CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED with int64 bias; so does an
    int32 ``acc`` under ``int32_sums_16x8``, widened first.
    """
    multiplier = _at(stage.multiplier, channel)
    if stage.multipliers_16x8 is Multipliers16x8.HIGH_MUL:
        # acc + bias within int32 (no shift tensor); the helper saturates to int16: only a narrower clamp is left
        if stage.zero_point != 0:
            raise ValueError("a HIGH_MUL 16x8 stage has output zero point 0")
        if bias is not None:
            acc = acc + bias(channel)
        saturated = requantize_16x8(acc, multiplier)
        low, high = stage.activation.low, stage.activation.high
        saturated = saturated if high >= INT16_MAX else tirx.min(saturated, high)
        return tirx.Cast("int16", saturated if low <= INT16_MIN else tirx.max(saturated, low))
    if stage.int32_sums_16x8 or _dtype(acc) == "int64":
        shift = _at(stage.shift, channel)
        acc = tirx.Cast("int64", acc) if stage.int32_sums_16x8 else acc
        if bias is not None:
            acc = acc + tirx.Cast("int64", bias(channel))
        if stage.multipliers_16x8 is Multipliers16x8.REDUCED:
            scaled = multiply_by_reduced_multiplier(acc, multiplier, shift)
        else:
            scaled = multiply_by_quantized_multiplier_int64(acc, multiplier, shift)
        dtype = "int16"
    else:
        if bias is not None and stage.small_accumulator:
            acc = acc + bias(channel)  # the sum is within int32 (and so are its operands): no wrap-around
        elif bias is not None:
            # int32 wrap-around as the C reference's int32 addition behaves, without signed-overflow UB.
            acc = tirx.Cast("int32", tirx.Cast("int64", acc) + tirx.Cast("int64", bias(channel)))
        shift = _at(stage.shift, channel)
        scaled = multiply_by_quantized_multiplier(acc, multiplier, shift, stage.rounding, stage.right_shift_only,
                                                  stage.small_accumulator)
        dtype = "int8"
    return clamp_to_type(scaled + stage.zero_point, stage.activation.low, stage.activation.high, dtype)
