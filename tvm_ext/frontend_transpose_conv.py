"""TFLite TRANSPOSE_CONV -> Relax with its fused activation (TVM 0.27's converter drops it; TFLite Micro clamps).

The activation goes where TVM's converter puts it for CONV_2D in float: on the float result, before the
output's quantize (``q(act(add(conv2d_transpose(dq(x), dq(W)), dq(b))))``), so the int8 lowering reads it
as the kernel's clamp with TFLite's rounding of the bounds.
"""

from __future__ import annotations

from typing import Callable

from tvm import relax


def convert_transpose_conv(converter, op, tvm_convert: Callable[[object], relax.Expr]) -> relax.Expr:
    """``tvm_convert(op)`` (TVM's TRANSPOSE_CONV) with the operator's fused activation applied."""
    from tflite.ActivationFunctionType import ActivationFunctionType
    from tflite.TransposeConvOptions import TransposeConvOptions

    converted = tvm_convert(op)
    table = op.BuiltinOptions()
    if table is None:
        return converted
    options = TransposeConvOptions()
    options.Init(table.Bytes, table.Pos)
    activation = options.FusedActivationFunction()
    if activation == ActivationFunctionType.NONE:
        return converted
    output = converter.get_output_tensors(op)[0]
    if not output.qnn_params:
        return converter.convert_fused_activation_function(converted, activation)
    # TVM's quantized result is ``quantize(float result)``: the activation goes between the two.
    float_result = converter.convert_fused_activation_function(converted.args[0], activation)
    return converter.quantize(float_result, output)
