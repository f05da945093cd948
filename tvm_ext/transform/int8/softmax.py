"""SOFTMAX: ``q(softmax(dq(x)))`` over the last axis -> TFLite's integer softmax kernel (an int16 input: the
16x8 kernel of ``softmax_int16``; an int8 one writing int8 or int16 over rows of two: one lookup per element in a
table of the row's difference, ``softmax_pair_int8``; any other int8 one: the backend's own kernel where it gives one,
``backends.backend.KernelSchedules.int8_softmax``)."""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
from tvm import relax
from tvm.relax.dpl import is_const, is_op

from ...kernels import softmax_int8, softmax_pair_int8
from ...kernels.int8_tables import softmax_exp_table, softmax_pair_table
from ...kernels.quant_params import softmax_params
from .binary import first_fitting
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import DequantizedActivation, QuantizedResult, ends_float_operator, extract, float_operator_mismatch
from .softmax_int16 import match_int16
from .tables import table_constant

# TFLite requires an int8 softmax output quantized with scale 1/256 and zero point -128, so that the
# output's 256 levels cover [0, 1) (SoftmaxPrepare in tensorflow/lite/kernels/activations.cc and TFLite
# Micro's softmax_common.cc check both); the integer kernel writes exactly that quantization.
SOFTMAX_OUTPUT_SCALE = np.float32(1 / 256)
SOFTMAX_OUTPUT_ZERO_POINT = -128
# An int16 output (TFLM's int8-in, int16-out softmax): zero point -32768 and a scale within 0.1 % of 1/65536,
# TFLM's checks (its keyword_scrambled models store 1/65535).
INT16_OUTPUT_SCALE = 1 / 65536
INT16_OUTPUT_ZERO_POINT = -32768

_INPUT = DequantizedActivation()
# The frontend (tvm_ext.frontend.tflite_ops.softmax) multiplies the input by beta where beta is not 1.
_BETA = is_op("relax.multiply")(_INPUT.pattern, is_const())
_SOFTMAX = is_op("relax.nn.softmax")(_BETA | _INPUT.pattern)
_RESULT = QuantizedResult(_SOFTMAX)


def match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    matched = extract(_RESULT.pattern, quantize, ctx)
    if matched is None:
        return float_operator_mismatch(quantize, ctx)
    softmax = matched[_SOFTMAX]
    data, out = _INPUT.read(matched, ctx), _RESULT.read(matched, ctx)
    if data is None or out is None:
        return float_operator_mismatch(quantize, ctx)
    beta = _beta(matched, ctx)
    if beta is None:
        return float_operator_mismatch(quantize, ctx)
    last_axis = int(softmax.attrs.axis) in (-1, len(softmax.args[0].ty.shape) - 1)
    if last_axis and str(data.tensor.ty.dtype) == "int16":
        return match_int16(quantize, softmax, data, out, beta, ctx)
    out_dtype = str(quantize.ty.dtype)
    if not last_axis or not _standard_output(out_dtype, out.quant.scale, out.quant.zero_point):
        return float_operator_mismatch(quantize, ctx)
    params = softmax_params(beta, data.quant.scale, ctx.rounding)
    if int(softmax.args[0].ty.shape[-1]) == 2:
        # a row of two is a function of its difference: one lookup per element (a 2-class head: vww_96_int8's
        # 130 instructions per row on cortex-m4f with the softmax helper; keyword_scrambled's int16 output 227 in
        # the generic kernel), a 511-entry table (511 or 1,022 bytes) for the 1 KB exp table
        pair_table = table_constant(softmax_pair_table, params, ctx.rounding, out_dtype)
        return FixedCall(KernelCall("SOFTMAX", softmax, softmax_pair_int8, (data.tensor, pair_table)))
    exp_table = table_constant(softmax_exp_table, params, ctx.rounding)
    # the backend's own kernel where it gives one (not of a constant input: that would be folded on the host,
    # which cannot run a backend's helper calls), else the generic kernel
    own = ctx.int8_softmax if ctx.graph.constant(data.tensor) is None else None
    kernel = softmax_int8 if own is None else first_fitting(own, softmax_int8)
    return FixedCall(KernelCall("SOFTMAX", softmax, kernel, (data.tensor, exp_table), {"out_dtype": out_dtype}))


def _beta(matched: dict, ctx: LoweringContext) -> Optional[float]:
    """The softmax's beta: 1, or the frontend's multiplier of the input; None unless one positive value (with a
    positive beta the row maximum of the input is that of the scaled input, which the kernels rely on)."""
    if _BETA not in matched:
        return 1.0
    beta = ctx.graph.constant(matched[_BETA].args[1])
    return float(beta.reshape(())) if beta is not None and beta.size == 1 and beta.reshape(()) > 0 else None


def _standard_output(dtype: str, scale: np.float32, zero_point: int) -> bool:
    """Whether the output quantization is the one TFLM requires of an int8 softmax writing ``dtype``."""
    if dtype == "int8":
        return zero_point == SOFTMAX_OUTPUT_ZERO_POINT and scale == SOFTMAX_OUTPUT_SCALE
    return (dtype == "int16" and zero_point == INT16_OUTPUT_ZERO_POINT
            and abs(float(scale) - INT16_OUTPUT_SCALE) <= 0.001 * INT16_OUTPUT_SCALE)


LOWERING = Lowering(frozenset({"SOFTMAX"}), ends_float_operator, match)
