"""RESIZE_BILINEAR: ``q(image.resize2d(dq(x), linear, NHWC))`` -> TFLite's integer bilinear resize.

TFLite Micro interpolates the int8 values themselves (no requantization), so the lowering takes only an
operator whose input and output quantizations are equal: any other has no exact integer form here.
"""

from __future__ import annotations

from typing import Union

from tvm import relax
from tvm.relax.dpl import wildcard

from ...kernels.resize import resize_bilinear_int8
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import QuantizedUnary, ends_float_operator

_PATTERN = QuantizedUnary("relax.image.resize2d", wildcard())  # the output size
# The frontend's coordinate transformation of TFLite's (align_corners, half_pixel_centers).
_COORDINATES = {"asymmetric": (False, False), "align_corners": (True, False), "half_pixel": (False, True)}


def _match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    unary = _PATTERN.match(quantize, ctx)
    if isinstance(unary, Mismatch):
        return unary
    core = unary.matched[_PATTERN.core]
    attrs = core.attrs
    mode = str(attrs.coordinate_transformation_mode)
    if str(attrs.method) != "linear" or str(attrs.layout) != "NHWC" or mode not in _COORDINATES:
        return Mismatch(f"relax.image.resize2d ({attrs.method}, {attrs.layout}, {mode})")
    if unary.data.quant != unary.out:
        return Mismatch("RESIZE_BILINEAR with different input and output quantization")
    align_corners, half_pixel_centers = _COORDINATES[mode]
    _, out_height, out_width, _ = (int(d) for d in core.ty.shape)
    return FixedCall(KernelCall("RESIZE_BILINEAR", core, resize_bilinear_int8, (unary.data.tensor,),
                                {"out_height": out_height, "out_width": out_width, "align_corners": align_corners,
                                 "half_pixel_centers": half_pixel_centers, "rounding": ctx.rounding}))


LOWERING = Lowering(frozenset({"RESIZE_BILINEAR"}), ends_float_operator, _match)
