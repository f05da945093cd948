"""TE definition of TFLite Micro's int16 RSQRT (elementwise.cc, RsqrtEvalQuantized; zero points 0).

Per element x (int16, x > 0): TFLite's GetInvSqrtQuantizedMultiplierExp(x) at run time (the bundle's
`<prefix>_inv_sqrt_multiplier` helper and the shift `l2_normalization.inv_sqrt_left_shift`), 1/sqrt(x) made an
integer scaled by 2^20 (MBQM(1, multiplier, shift + 20)), rescaled by the output multiplier over 2^20
(``quant_params.rsqrt_multiplier``), saturated to int16. x = 0 gives 32767 (TFLM's largest output); TFLM refuses
to run on x < 0 ("Rsqrt is only defined for positive values"): the kernel gives 32767 there too. The int8 RSQRT is
a 256-entry table of the same arithmetic (``int8_tables.rsqrt_table``); int16's 32,768 valid inputs would take a
64 KB table.
"""

from __future__ import annotations

from tvm import te, tirx

from .fixed_point import Rounding, multiply_by_quantized_multiplier, saturate_to_type
from .int8_tables import RSQRT_SHIFT
from .l2_normalization import INV_SQRT_MULTIPLIER_OP, inv_sqrt_left_shift

INT16_MAX = 32767


def rsqrt_int16(data: te.Tensor, *, multiplier: tuple[int, int], rounding: Rounding) -> te.Tensor:
    """1/sqrt of int16 ``data`` (zero point 0) in the output's int16 units (zero point 0); ``multiplier``:
    (multiplier, shift) of ``quant_params.rsqrt_multiplier``."""
    output_multiplier, output_shift = multiplier

    def value(*index):
        x = data(*index).astype("int32")
        inv_sqrt = tirx.call_intrin("int32", INV_SQRT_MULTIPLIER_OP, x)
        scaled = multiply_by_quantized_multiplier(1, inv_sqrt, inv_sqrt_left_shift(x) + RSQRT_SHIFT, rounding)
        out = multiply_by_quantized_multiplier(scaled, output_multiplier, output_shift - RSQRT_SHIFT, rounding)
        return tirx.Select(x <= 0, tirx.const(INT16_MAX, "int16"), saturate_to_type(out, "int16"))

    return te.compute([int(d) for d in data.shape], value, name="rsqrt_int16")
