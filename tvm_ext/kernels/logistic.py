"""TE definitions of TFLite Micro's int8 LOGISTIC and TANH (reference_integer_ops::Logistic, ::Tanh).

The centered input, inside the input radius, is rescaled into Q4.27; gemmlowp's fixed-point logistic or
tanh of it (built from the softmax kernel's exp and Newton-Raphson division) is a Q0.31 value, rounded to the
fixed output quantization: scale 1/256 and zero point -128 for LOGISTIC, scale 1/128 and zero point 0 for
TANH. Inputs beyond the radius saturate to -128 or 127.
"""

from __future__ import annotations

from typing import Callable

from tvm import te, tirx
from tvm.ir.expr import Expr as PrimExpr

from .fixed_point import INT32_MAX, Rounding, clamp_to_int8, multiply_by_quantized_multiplier, rounding_divide_by_pot
from .quant_params import LOGISTIC_INPUT_INTEGER_BITS, LogisticParams
from .softmax import Lets, exp_on_negative_values, one_minus_x_over_one_plus_x, one_over_one_plus_x, rowwise

LOGISTIC_OUTPUT_ZERO_POINT = -128
LOGISTIC_OUTPUT_INTEGER_BITS = 8  # the Q0.31 result is divided by 2^(31 - 8): 256 levels over [0, 1)
TANH_OUTPUT_INTEGER_BITS = 7  # 2^(31 - 7): 128 levels over [0, 1), zero point 0


def _logistic_q0_31(lets: Lets, a: PrimExpr) -> PrimExpr:
    """gemmlowp logistic of a Q4.27 ``a``: 1/(1 + exp(-|a|)), mirrored as 1 - that for a < 0; 1/2 at 0."""
    minus_abs = lets.bind("minus_abs", tirx.Select(a > 0, -a, a))
    on_positive = lets.bind("logistic_of_abs", one_over_one_plus_x(
        lets, exp_on_negative_values(lets, minus_abs, LOGISTIC_INPUT_INTEGER_BITS)))
    return tirx.Select(a == 0, tirx.const(1 << 30, "int32"), tirx.Select(a > 0, on_positive, INT32_MAX - on_positive))


def _tanh_q0_31(lets: Lets, a: PrimExpr) -> PrimExpr:
    """gemmlowp tanh of a Q4.27 ``a``: t = (1 - e)/(1 + e), e = exp(-2|a|) (the same raw read as Q5.26),
    negated for a < 0; 0 at 0."""
    minus_abs = lets.bind("minus_abs", tirx.Select(a < 0, a, -a))
    t = lets.bind("tanh_of_abs", one_minus_x_over_one_plus_x(
        lets, exp_on_negative_values(lets, minus_abs, LOGISTIC_INPUT_INTEGER_BITS + 1)))
    return tirx.Select(a == 0, tirx.const(0, "int32"), tirx.Select(a < 0, -t, t))


def _saturating_function(
    data: te.Tensor, params: LogisticParams, rounding: Rounding, q0_31: Callable[[Lets, PrimExpr], PrimExpr],
    output_integer_bits: int, output_zero_point: int, name: str,
) -> te.Tensor:
    shape = [int(d) for d in data.shape]

    def fixed_point(lets: Lets, ins, index) -> PrimExpr:
        centered = ins[0][index].astype("int32") - params.input_zero_point
        return q0_31(lets, lets.bind("input_q4_27", multiply_by_quantized_multiplier(
            centered, params.input_multiplier, params.input_left_shift, rounding)))

    result_q0_31 = rowwise(f"{name}_q0_31", shape, [data], fixed_point)

    def output(*index):
        centered = data(*index).astype("int32") - params.input_zero_point
        value = rounding_divide_by_pot(result_q0_31(*index), 31 - output_integer_bits) + output_zero_point
        return tirx.Select(centered <= -params.input_range_radius, tirx.const(-128, "int8"),
                           tirx.Select(centered >= params.input_range_radius, tirx.const(127, "int8"),
                                       clamp_to_int8(value, -128, 127)))

    return te.compute(shape, output, name=f"{name}_int8")


def logistic_int8(data: te.Tensor, *, params: LogisticParams, rounding: Rounding) -> te.Tensor:
    """int8 logistic of ``data``; the output is quantized with scale 1/256 and zero point -128."""
    return _saturating_function(data, params, rounding, _logistic_q0_31, LOGISTIC_OUTPUT_INTEGER_BITS,
                                LOGISTIC_OUTPUT_ZERO_POINT, "logistic")


def tanh_int8(data: te.Tensor, *, params: LogisticParams, rounding: Rounding) -> te.Tensor:
    """int8 tanh of ``data``; the output is quantized with scale 1/128 and zero point 0."""
    return _saturating_function(data, params, rounding, _tanh_q0_31, TANH_OUTPUT_INTEGER_BITS, 0, "tanh")
