"""TE definition of TFLite's int8 PRELU (``reference_ops::BroadcastPrelu4DSlow``), alpha broadcast numpy's way."""

from __future__ import annotations

from dataclasses import dataclass

from tvm import te, tirx

from ..tir.broadcast import broadcast_read, broadcast_shape
from .fixed_point import Rounding, clamp_to_int8, multiply_by_quantized_multiplier


@dataclass(frozen=True)
class PreluParams:
    """TFLM's PreluParams: zero points and the two output rescales (multiplier, shift): ``identity`` of
    input_scale/output_scale for x >= zp, ``alpha`` of input_scale*alpha_scale/output_scale below it."""

    input_zero_point: int
    alpha_zero_point: int
    output_zero_point: int
    identity: tuple[int, int]
    alpha: tuple[int, int]


def prelu_int8(data: te.Tensor, alpha: te.Tensor, *, params: PreluParams, rounding: Rounding) -> te.Tensor:
    """out = clamp(MBQM(x', identity) + zp_out) where x' = x - zp_in >= 0, else clamp(MBQM(x' * a', alpha) + zp_out)
    with a' = alpha - zp_alpha, read at the broadcast index."""
    shape = broadcast_shape(data, alpha)

    def value(*index):
        centred = broadcast_read(data, index).astype("int32") - params.input_zero_point
        slope = broadcast_read(alpha, index).astype("int32") - params.alpha_zero_point
        scaled = tirx.Select(centred >= 0, multiply_by_quantized_multiplier(centred, *params.identity, rounding),
                             multiply_by_quantized_multiplier(centred * slope, *params.alpha, rounding))
        return clamp_to_int8(scaled + params.output_zero_point, -128, 127)

    return te.compute(shape, value, name="prelu_int8")
