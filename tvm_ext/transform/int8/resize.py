"""RESIZE_BILINEAR: ``q(image.resize2d(dq(x), linear, NHWC))`` -> TFLite's integer bilinear resize;
RESIZE_NEAREST_NEIGHBOR: ``q(take(take(dq(x), rows, axis=1), columns, axis=2))`` (tvm_ext/frontend/tflite_ops/resize_nearest.py)
-> a gather of the int8 values, written as row and pixel copies (tvm_ext/kernels/copy_runs.py).

TFLite Micro resizes the int8 values themselves (no requantization), so the lowerings take only an
operator whose input and output quantizations are equal: any other has no exact integer form here.
"""

from __future__ import annotations

from typing import Union

from tvm import relax
from tvm.relax.dpl import is_const, is_op, wildcard

from ...kernels.copy_runs import resize_nearest_neighbor_int8
from ...kernels.resize import resize_bilinear_int8
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import DequantizedActivation, QuantizedUnary, ends_float_operator, float_operator_mismatch, match_unary

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


BILINEAR = Lowering(frozenset({"RESIZE_BILINEAR"}), ends_float_operator, _match)

_GATHERED = DequantizedActivation()
_ROWS = is_op("relax.take")(_GATHERED.pattern, is_const())
_COLUMNS = is_op("relax.take")(_ROWS, is_const())
_GATHER_RESULT = is_op("relax.quantize")(_COLUMNS, is_const(), is_const())


def _match_nearest(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    unary = match_unary(_GATHER_RESULT, _GATHERED, quantize, ctx)
    if unary is None:
        return float_operator_mismatch(quantize, ctx)
    rows, columns = unary.matched[_ROWS], unary.matched[_COLUMNS]
    if (len(rows.args[0].ty.shape) != 4 or int(rows.attrs.axis) != 1 or int(columns.attrs.axis) != 2
            or unary.data.quant != unary.out):
        return Mismatch("relax.take")
    return FixedCall(KernelCall("RESIZE_NEAREST_NEIGHBOR", columns, resize_nearest_neighbor_int8, (unary.data.tensor,),
                                {"rows": rows.args[1], "columns": columns.args[1]}))


NEAREST_NEIGHBOR = Lowering(frozenset({"RESIZE_NEAREST_NEIGHBOR"}), ends_float_operator, _match_nearest)
