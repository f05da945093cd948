"""16x8 SOFTMAX (the int16 input of ``softmax.match``'s pattern) -> TFLite Micro's int16 softmax kernel, with the
two lookup tables its Prepare() fills as int16 constants of the kernel."""

from __future__ import annotations

import functools
from typing import Union

import numpy as np
from tvm import relax

from ...kernels.softmax_int16 import softmax_int16, softmax_int16_luts, softmax_int16_multiplier
from .lowering import FixedCall, KernelCall, LoweringContext, Mismatch
from .patterns import Int8Input, QuantizedOutput, float_operator_mismatch

# TFLite Micro requires zero points 0 and an output scale within 0.1 % of 1/32768 (softmax_common.cc).
OUTPUT_SCALE = 1 / 32768


def match_int16(quantize: relax.Call, softmax: relax.Call, data: Int8Input, out: QuantizedOutput, beta: float,
                ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    """The kernel call of the softmax over the last axis of the int16 ``data`` that ``quantize`` ends, or the
    Mismatch of one TFLite Micro refuses (an int8 output, zero points other than 0, another output scale)."""
    if (str(quantize.ty.dtype) != "int16" or data.quant.zero_point != 0 or out.quant.zero_point != 0
            or abs(float(out.quant.scale) - OUTPUT_SCALE) > 0.001 * OUTPUT_SCALE):
        return float_operator_mismatch(quantize, ctx)
    multiplier, shift = softmax_int16_multiplier(beta, np.float32(data.quant.scale), ctx.rounding)
    return FixedCall(KernelCall("SOFTMAX", softmax, softmax_int16, (data.tensor, *lut_constants()),
                                {"multiplier": multiplier, "shift": shift, "rounding": ctx.rounding}))


@functools.cache
def lut_constants() -> tuple[relax.Constant, relax.Constant]:
    """The exp and 1/(1+x) tables as Relax constants, the same objects for every 16x8 SOFTMAX: the bundle
    stores each constant once (1026 bytes each), however many SOFTMAX layers read it."""
    luts = softmax_int16_luts()
    return relax.const(luts.exp), relax.const(luts.one_over_one_plus_x)
