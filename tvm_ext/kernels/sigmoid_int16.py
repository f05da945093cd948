"""TE definition of TFLite Micro's int16 LOGISTIC and TANH (reference_integer_ops::Logistic and Tanh, 16x8).

Each element: the input rescaled into the sigmoid table's fixed point (``quant_params.Int16SigmoidScaling``: 3 * 2^12
per unit), its magnitude's high bits index SIGMOID_TABLE and its low ``fraction_bits`` bits interpolate to the
next entry, index 255 and beyond saturating to a fixed value, then a negative input's result reflected and the
whole shifted down to Q0.15 (output scale 2^-15, zero point 0). TANH is 2 * sigmoid(2x) - 1: the same table
read with one fraction bit fewer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tvm import te, tirx

from .quant_params import Int16SigmoidScaling

# TFLite's sigmoid_table_uint16: sigmoid(i / 24) in 0.16 fixed point, as TFLite rounded it (the numbers are the
# arithmetic's definition: they differ by one from a plain rounding at 44 entries).
SIGMOID_TABLE = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
    43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
    51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
    61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
    63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
    65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
    65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535,
], np.uint16)


@dataclass(frozen=True)
class SigmoidForm:
    """What distinguishes LOGISTIC from TANH in TFLM's int16 arithmetic (all int32 values): the interpolation's
    fraction bits, its value from index 255 on, the offset added to a non-negative input's interpolation, the
    value a negative input's interpolation is subtracted from, and the final arithmetic right shift."""

    name: str
    fraction_bits: int
    saturated: int
    positive_offset: int
    negative_offset: int
    output_shift: int


LOGISTIC_INT16 = SigmoidForm("logistic_int16", 9, 0x7FFF << 10, 1 << 9, (1 << 25) + (1 << 9) - 1, 10)
TANH_INT16 = SigmoidForm("tanh_int16", 8, 0xFFFF << 8, -(1 << 23) + (1 << 7), (1 << 23) + (1 << 7) - 1, 8)


def scaling_operand(scaling: Int16SigmoidScaling) -> np.ndarray:
    """int32[3]: ``scaling``'s multiplier, right shift and rounding term (2^(shift - 1), 0 for no shift), the
    operand `sigmoid_int16` reads them from."""
    shift = scaling.right_shift
    return np.array([scaling.multiplier, shift, 1 << (shift - 1) if shift else 0], np.int32)


def sigmoid_int16(data: te.Tensor, table: te.Tensor, scaling: te.Tensor, *, form: SigmoidForm) -> te.Tensor:
    """int16 ``data`` -> int16 Q0.15, per element as TFLM's int16 ``form`` (LOGISTIC_INT16 or TANH_INT16), its
    input rescaled by ``scaling`` (`scaling_operand`'s int32[3], read at run time: the calls of one form and shape
    are one function whatever their input scale, where immediates made one function a call, 144 B each on
    cortex-m4f); ``table`` is SIGMOID_TABLE (uint16, 256 entries). |x * multiplier| < 2^30 and the interpolation
    below 2^25: every value fits int32."""
    if [int(d) for d in table.shape] != [len(SIGMOID_TABLE)] or str(table.dtype) != "uint16":
        raise ValueError(f"the sigmoid table is uint16[{len(SIGMOID_TABLE)}], not {table.dtype}{list(table.shape)}")
    last = len(SIGMOID_TABLE) - 1
    bits = form.fraction_bits

    def value(*index):
        scaled = (data(*index).astype("int32") * scaling[0] + scaling[2]) >> scaling[1]
        magnitude = tirx.Select(scaled < 0, -scaled, scaled)
        high = magnitude >> bits
        entry = tirx.min(high, last - 1)  # the interpolation's reads stay in the table where it saturates
        below = table[entry].astype("int32")
        interpolated = (below << bits) + (magnitude & ((1 << bits) - 1)) * (table[entry + 1].astype("int32") - below)
        result = tirx.Select(high >= last, tirx.const(form.saturated, "int32"), interpolated)
        reflected = tirx.Select(scaled >= 0, result + form.positive_offset, form.negative_offset - result)
        return (reflected >> form.output_shift).astype("int16")

    return te.compute(data.shape, value, name=form.name)
