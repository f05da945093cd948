"""L2_NORMALIZATION: ``q(call_dps_packed(L2_NORMALIZATION, [dq(x)]))`` (tvm_ext/frontend/tflite_ops/l2_normalization.py)
-> TFLite Micro's integer L2 normalization over the last axis.

TFLite Micro writes the result in 1/128 units with zero point 0 whatever the output tensor says, so the
lowering takes only that output quantization (the one converters write): any other has no exact form here.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
from tvm import relax

from ...frontend.tflite_ops.l2_normalization import L2_NORMALIZATION
from ...kernels.l2_normalization import OUTPUT_FRACTION_BITS, l2_normalization_int8
from .graph import Quant, is_call_to
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch

_OUTPUT = Quant(np.float32(1.0 / (1 << OUTPUT_FRACTION_BITS)), 0)


def _normalization(value: relax.Expr, ctx: LoweringContext) -> Optional[relax.Call]:
    """The frontend's L2_NORMALIZATION step that ``value`` quantizes, else None."""
    step = ctx.graph.value_of(value.args[0]) if is_call_to(value, "relax.quantize") else None
    packed = is_call_to(step, "relax.call_dps_packed")
    return step if packed and getattr(step.args[0], "global_symbol", None) == L2_NORMALIZATION else None


def _match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    step = _normalization(quantize, ctx)
    dequantize = ctx.graph.value_of(step.args[1].fields[0])
    source = dequantize.args[0] if is_call_to(dequantize, "relax.dequantize") else None
    quant = ctx.graph.quant(dequantize.args[1], dequantize.args[2]) if source is not None else None
    if source not in ctx.lowered or quant is None or ctx.graph.quant(quantize.args[1], quantize.args[2]) != _OUTPUT:
        return Mismatch("L2_NORMALIZATION (its output quantization must be 1/128 with zero point 0)")
    return FixedCall(KernelCall("L2_NORMALIZATION", step, l2_normalization_int8, (ctx.lowered[source],),
                                {"input_zero_point": quant.zero_point, "rounding": ctx.rounding}))


LOWERING = Lowering(frozenset({"L2_NORMALIZATION"}), lambda value, ctx: _normalization(value, ctx) is not None,
                    _match)
