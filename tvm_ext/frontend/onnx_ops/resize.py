"""ONNX Resize in the form TVM 0.27's converter computes correctly, or refused in one line.

TVM's converter reads full-rank scales or sizes and samples each output pixel at output/input of its axis. It
ignores ``axes`` (opset 18: scales or sizes for some axes only), ``keep_aspect_ratio_policy`` and
``antialias``, and has no ``half_pixel_symmetric`` mode. This rewrite gives it full-rank constant sizes (``axes``
and the aspect-ratio policy computed as ONNX defines them) and refuses what it would compute otherwise than ONNX:
a scale whose output size is not a whole number of pixels (ONNX then samples at the fractional size), an
antialiased downsampling, and half_pixel_symmetric.

A float bilinear Resize of an NCHW tensor's height and width (the form of a QDQ model's upsampling, which
onnxruntime runs in float between a DequantizeLinear and a QuantizeLinear) is not left to TVM's converter:
`onnxruntime_bilinear` computes it as onnxruntime does (`tvm_ext.kernels.onnxruntime_resize`), whose float
rounding the QuantizeLinear after it would otherwise turn into one-step errors on ties.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from tvm import relax
from tvm.ir.expr import Constant

from ...kernels import onnxruntime_resize
from ...layers import OPAQUE_PATTERN
from ..tflite_ops.refusal import OperatorRefused


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _constant(value: relax.Expr | None) -> np.ndarray | None:
    """The values of a constant operand; an empty array for an omitted one; None for a computed one."""
    if value is None:
        return np.zeros(0)
    return value.value.numpy() if isinstance(value, Constant) else None


def _full_rank(values: np.ndarray, axes: list[int], rank: int, fill: float) -> np.ndarray:
    full = np.full(rank, fill, dtype=values.dtype)
    full[axes] = values
    return full


def resize_as_tvm_converts(inputs: Sequence[relax.Expr | None], attrs: dict[str, Any]
                           ) -> tuple[list[relax.Expr | None], dict[str, Any]]:
    """The inputs and attributes of an ONNX Resize for TVM's converter: constant full-rank sizes (no scales, no
    axes, stretched); raises OperatorRefused naming the form when TVM's converter would compute it otherwise."""
    inputs = list(inputs) + [None] * (4 - len(inputs))
    data, roi_input, scales_input, sizes_input = inputs[:4]
    shape = [int(d) for d in data.ty.shape.values]
    rank = len(shape)
    axes = [int(a) % rank for a in attrs.get("axes", range(rank))]
    mode = _text(attrs.get("mode", "nearest"))
    if _text(attrs.get("coordinate_transformation_mode", "half_pixel")) == "half_pixel_symmetric":
        raise OperatorRefused("Resize with coordinate_transformation_mode half_pixel_symmetric is not converted by TVM 0.27")
    roi, scales, sizes = (_constant(v) for v in (roi_input, scales_input, sizes_input))
    if roi is None or scales is None or sizes is None:
        return inputs, attrs  # computed operands: the model check refuses them
    if sizes.size:
        wanted = _full_rank(sizes.astype(np.int64), axes, rank, 0)
        ratios = [wanted[a] / shape[a] for a in axes]
        policy = _text(attrs.get("keep_aspect_ratio_policy", "stretch"))
        if policy != "stretch":
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            out = [math.floor(scale * shape[i] + 0.5) if i in axes else shape[i] for i in range(rank)]
            if any(out[a] != scale * shape[a] for a in axes):
                raise OperatorRefused(f"Resize keeping the aspect ratio at a fractional size ({scale} x {shape}): "
                                 "TVM 0.27 samples at the whole one")
        else:
            out = [int(wanted[i]) if i in axes else shape[i] for i in range(rank)]
    else:
        full = _full_rank(scales.astype(np.float32), axes, rank, 1.0)
        out = [int(full[i] * shape[i]) for i in range(rank)]
        fractional = [i for i in range(rank) if float(full[i]) * shape[i] != out[i]]
        if fractional:
            raise OperatorRefused(f"Resize whose scale {float(full[fractional[0]])} gives a fractional size of axis "
                             f"{fractional[0]} ({shape[fractional[0]]} pixels): ONNX samples at that fractional size, "
                             "TVM 0.27 at the whole one")
    if int(attrs.get("antialias", 0)) and mode in ("linear", "cubic") and any(out[a] < shape[a] for a in axes):
        raise OperatorRefused("an antialiased downsampling Resize is not converted by TVM 0.27")
    if roi.size:
        roi = np.concatenate([_full_rank(roi[:len(axes)], axes, rank, 0.0), _full_rank(roi[len(axes):], axes, rank, 1.0)]
                             ) if len(roi) == 2 * len(axes) else roi
    attrs = {key: value for key, value in attrs.items() if key not in ("axes", "keep_aspect_ratio_policy", "antialias")}
    roi_operand = relax.const(roi.astype(np.float32)) if roi.size else None
    return [data, roi_operand, None, relax.const(np.array(out, np.int64))], attrs


def onnxruntime_bilinear(bb: relax.BlockBuilder, inputs: Sequence[relax.Expr | None],
                         attrs: dict[str, Any]) -> relax.Expr | None:
    """The call of onnxruntime's float bilinear Resize kernel for an ONNX Resize (its operands and attributes as
    the model has them) that is linear, float32, 4-D, resizes only the last two axes to constant sizes, without
    antialiasing or roi, in a coordinate mode the kernel computes; None for any other (TVM's converter's).
    Raises OperatorRefused as `resize_as_tvm_converts` does."""
    mode = _text(attrs.get("coordinate_transformation_mode", "half_pixel"))
    if (_text(attrs.get("mode", "nearest")) != "linear" or int(attrs.get("antialias", 0))
            or mode not in onnxruntime_resize.COORDINATE_MODES):
        return None
    (data, roi, _, sizes), _ = resize_as_tvm_converts(inputs, attrs)
    shape = [int(d) for d in data.ty.shape.values]
    sizes_value = _constant(sizes)
    if (data.ty.dtype != "float32" or len(shape) != 4 or roi is not None or sizes_value is None
            or sizes_value.size != 4 or [int(d) for d in sizes_value[:2]] != shape[:2]):
        return None
    tables = []
    for in_size, out_size in zip(shape[2:], (int(d) for d in sizes_value[2:])):
        # onnxruntime's scale of an axis: float32 output size / input size (the model's scale, where it has one)
        taps = onnxruntime_resize.bilinear_taps(in_size, out_size, np.float32(out_size) / np.float32(in_size), mode)
        tables += [relax.const(taps.lower), relax.const(taps.upper), relax.const(taps.near_weight),
                   relax.const(taps.far_weight)]
    call = bb.call_te(onnxruntime_resize.bilinear_nchw, data, *tables, primfunc_name_hint="onnxruntime_bilinear")
    gvar = call.args[0]
    bb.update_func(gvar, bb.get()[gvar].with_attrs({"op_pattern": OPAQUE_PATTERN}))
    return call
