"""DIV: ``q([act](divide(dq(a), dq(b))))`` of two int8 operands -> TFLite's integer DIV kernel, the divisor's reciprocal
read from a table of its 257 values (``kernels.int8_tables.reciprocal_tables``, two constant operands). TFLite's
double rounding only, and a rescale below 2^21 (``quant_params.DIV_LARGEST_SHIFT``): beyond either, TFLite's C is
undefined."""

from __future__ import annotations

import dataclasses
import functools
from typing import Union

from tvm import relax

from ...kernels import Rounding
from ...kernels.elementwise import div_int8
from ...kernels.int8_tables import reciprocal_tables
from ...kernels.quant_params import DIV_LARGEST_SHIFT, div_multiplier
from .binary import binary_lowering
from .lowering import ClampedCall, LoweringContext, Mismatch


@functools.cache
def reciprocal_constants() -> tuple[relax.Constant, relax.Constant]:
    """The reciprocal multipliers and shifts as Relax constants, the same objects for every DIV (one copy in
    flash however many layers read them)."""
    return tuple(relax.const(table) for table in reciprocal_tables())


_BINARY = binary_lowering("DIV", "relax.divide", div_int8, div_multiplier, tables=reciprocal_constants)


def match(quantize: relax.Call, ctx: LoweringContext) -> Union[ClampedCall, Mismatch]:
    if ctx.rounding is not Rounding.DOUBLE:
        return Mismatch("DIV under single rounding")
    result = _BINARY.match(quantize, ctx)
    if isinstance(result, ClampedCall) and result.call.kwargs["params"][1] > DIV_LARGEST_SHIFT:
        return Mismatch(f"DIV with a rescale of 2^{DIV_LARGEST_SHIFT} or more")
    return result


LOWERING = dataclasses.replace(_BINARY, match=match)
