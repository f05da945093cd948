"""TFLite STRIDED_SLICE of a quantized tensor: TVM's converter, but the masks TFLite Micro refuses are refused
by name (ellipsis_mask, new_axis_mask, offset: TFLite Micro does not implement them, so nothing could
check our bundle); a float STRIDED_SLICE goes to TVM's converter as it is."""

from __future__ import annotations

from tvm import relax

from .refusal import OperatorRefused


def convert_strided_slice(converter, op, tvm_convert) -> relax.Expr:
    """``tvm_convert(op)``, refusing a quantized STRIDED_SLICE with an option TFLite Micro cannot run."""
    from tflite.StridedSliceOptions import StridedSliceOptions

    if converter.get_input_tensors(op)[0].qnn_params:
        options = StridedSliceOptions()
        options.Init(op.BuiltinOptions().Bytes, op.BuiltinOptions().Pos)
        refused = [name for name, value in (("ellipsis_mask", options.EllipsisMask()),
                                            ("new_axis_mask", options.NewAxisMask()),
                                            ("offset", options.Offset())) if value]
        if refused:
            raise OperatorRefused(f"STRIDED_SLICE with {' and '.join(refused)} (TFLite Micro does not implement it)")
    return tvm_convert(op)
