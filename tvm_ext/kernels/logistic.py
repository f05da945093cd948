"""TE definition of TFLite Micro's int8 LOGISTIC (reference_integer_ops::Logistic).

The centered input, inside the input radius, is rescaled into Q4.27; gemmlowp's fixed-point logistic of it
(1 / (1 + exp(-|a|)) with the softmax kernel's exp and Newton-Raphson reciprocal, mirrored for a < 0) is a
Q0.31 value, rounded to the output quantization (scale 1/256, zero point -128). Inputs beyond the radius
saturate to -128 or 127.
"""

from __future__ import annotations

from tvm import te, tirx
from tvm.ir.expr import Expr as PrimExpr

from .fixed_point import INT32_MAX, Rounding, clamp_to_int8, multiply_by_quantized_multiplier, rounding_divide_by_pot
from .quant_params import LOGISTIC_INPUT_INTEGER_BITS, LogisticParams
from .softmax import Lets, exp_on_negative_values, one_over_one_plus_x, rowwise

OUTPUT_ZERO_POINT = -128
OUTPUT_INTEGER_BITS = 8  # the Q0.31 result is divided by 2^(31 - 8): 256 output levels over [0, 1)


def logistic_int8(data: te.Tensor, *, params: LogisticParams, rounding: Rounding) -> te.Tensor:
    """int8 logistic of ``data``; the output is quantized with scale 1/256 and zero point -128."""
    shape = [int(d) for d in data.shape]

    def q0_31(lets: Lets, ins, index) -> PrimExpr:
        centered = ins[0][index].astype("int32") - params.input_zero_point
        a = lets.bind("input_q4_27", multiply_by_quantized_multiplier(
            centered, params.input_multiplier, params.input_left_shift, rounding))
        minus_abs = lets.bind("minus_abs", tirx.Select(a > 0, -a, a))
        on_positive = lets.bind("logistic_of_abs", one_over_one_plus_x(
            lets, exp_on_negative_values(lets, minus_abs, LOGISTIC_INPUT_INTEGER_BITS)))
        return tirx.Select(a == 0, tirx.const(1 << 30, "int32"),
                           tirx.Select(a > 0, on_positive, INT32_MAX - on_positive))

    logistic = rowwise("logistic_q0_31", shape, [data], q0_31)

    def output(*index):
        centered = data(*index).astype("int32") - params.input_zero_point
        value = rounding_divide_by_pot(logistic(*index), 31 - OUTPUT_INTEGER_BITS) + OUTPUT_ZERO_POINT
        return tirx.Select(centered <= -params.input_range_radius, tirx.const(-128, "int8"),
                           tirx.Select(centered >= params.input_range_radius, tirx.const(127, "int8"),
                                       clamp_to_int8(value, -128, 127)))

    return te.compute(shape, output, name="logistic_int8")
