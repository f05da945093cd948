"""The shared epilogue of the integer MAC kernels: bias, fixed-point rescale, output offset, clamp."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Union

from tvm import te, tirx
from tvm.ir.expr import Expr as PrimExpr

from .fixed_point import Rounding, clamp_to_int8, multiply_by_quantized_multiplier
from .quant_params import ActivationRange

ChannelParam = Union[int, te.Tensor]


@dataclass(frozen=True)
class OutputStage:
    """How an int32 accumulator becomes an int8 output (TFLite's per-channel or per-tensor rule).

    ``multiplier``/``shift`` are Python ints (per-tensor, baked into the kernel) or 1-D int32/int8
    tensors indexed by output channel (per-channel, passed to the kernel as constants).
    """

    multiplier: ChannelParam
    shift: ChannelParam
    zero_point: int
    activation: ActivationRange
    rounding: Rounding

    def per_channel(self, multiplier: Optional[te.Tensor], shift: Optional[te.Tensor]) -> "OutputStage":
        """This stage with per-channel multiplier/shift tensors, when given."""
        return self if multiplier is None else dataclasses.replace(self, multiplier=multiplier, shift=shift)


def _at(param: ChannelParam, channel: PrimExpr) -> Union[int, PrimExpr]:
    if isinstance(param, int):
        return param
    value = param(channel)
    return value if param.dtype == "int32" else tirx.Cast("int32", value)


def requantize(
    acc: PrimExpr, channel: PrimExpr, stage: OutputStage, bias: Optional[te.Tensor] = None
) -> PrimExpr:
    """int8 output = clamp(MBQM(acc + bias[channel], M[channel], shift[channel]) + zero_point)."""
    if bias is not None:
        # int32 wrap-around as the C reference's int32 addition behaves, without signed-overflow UB.
        acc = tirx.Cast("int32", tirx.Cast("int64", acc) + tirx.Cast("int64", bias(channel)))
    scaled = multiply_by_quantized_multiplier(
        acc, _at(stage.multiplier, channel), _at(stage.shift, channel), stage.rounding
    )
    return clamp_to_int8(scaled + stage.zero_point, stage.activation.low, stage.activation.high)
