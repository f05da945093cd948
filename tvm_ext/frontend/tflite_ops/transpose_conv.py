"""TFLite TRANSPOSE_CONV -> Relax as TFLite Micro computes it; TVM 0.27's converter gets three things wrong:

- it drops the fused activation (TFLite Micro clamps): ours goes where TVM's CONV_2D converter puts it in
  float, on the float result before the output's quantize (``q(act(add(conv2d_transpose(dq(x), dq(W)),
  dq(b))))``), so the int8 lowering reads it as the kernel's clamp with TFLite's rounding of the bounds;
- it sizes the output from the padding alone, one to stride-1 rows/columns short of TFLite's output_shape when
  the kernel is smaller than the stride (the rows no input pixel reaches, which hold the bias alone):
  ours sets ``output_padding`` to the difference;
- it reads the output_shape operand's values, and cannot import a model that feeds it as a graph input (TFLite
  Micro's own 16x8 integration tests do): TFLite Micro never reads it, the output tensor's shape is the output
  shape, and ours gives TVM that.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from tvm import relax

from .call_tree import find_call, with_call_replaced

_CONV2D_TRANSPOSE = "relax.nn.conv2d_transpose"


class TransposeConvConversionError(ValueError):
    """The TRANSPOSE_CONV is one our converter does not take (the message says why)."""


def _output_padding(conv: relax.Call, input_hw: list[int], kernel_hw: list[int], output_hw: list[int]) -> list[int]:
    """The rows and columns TFLite's output_shape adds beyond what ``conv`` (without output padding) yields."""
    strides, padding = [int(v) for v in conv.attrs.strides], [int(v) for v in conv.attrs.padding]
    extra = [output_hw[axis] - ((input_hw[axis] - 1) * strides[axis] + kernel_hw[axis] - padding[axis]
                                - padding[axis + 2]) for axis in (0, 1)]
    if not all(0 <= rows < stride for rows, stride in zip(extra, strides)):
        raise TransposeConvConversionError(
            f"TRANSPOSE_CONV output_shape {output_hw} (height, width) does not fit its input {input_hw}, kernel "
            f"{kernel_hw} and strides {strides}")
    return extra


def _with_output_padding(expr: relax.Expr, output_padding: list[int]) -> relax.Expr:
    """``expr`` (TVM's converted TRANSPOSE_CONV, a tree of calls) with its conv2d_transpose's output_padding."""

    def rebuild(call: relax.Call) -> relax.Expr:
        a = call.attrs
        return relax.op.nn.conv2d_transpose(
            call.args[0], call.args[1], strides=a.strides, padding=a.padding, output_padding=output_padding,
            dilation=a.dilation, groups=a.groups, data_layout=a.data_layout, kernel_layout=a.kernel_layout,
            out_layout=a.out_layout, out_dtype=a.out_dtype)

    return with_call_replaced(expr, _CONV2D_TRANSPOSE, rebuild)


def convert_transpose_conv(converter, op, tvm_convert: Callable[[object], relax.Expr]) -> relax.Expr:
    """``tvm_convert(op)`` (TVM's TRANSPOSE_CONV) with TFLite's output size and fused activation."""
    from tflite.ActivationFunctionType import ActivationFunctionType
    from tflite.TransposeConvOptions import TransposeConvOptions

    output_shape, weights, data = converter.get_input_tensors(op)[:3]
    output = converter.get_output_tensors(op)[0]
    shape_of = converter.get_tensor_shape
    if output_shape.buffer.DataLength() == 0:  # a graph input, not a constant
        converter.static_values[output_shape.tensor_idx] = np.array([int(d) for d in shape_of(output)], np.int32)
    converted = tvm_convert(op)
    output_padding = _output_padding(find_call(converted, _CONV2D_TRANSPOSE), [int(d) for d in shape_of(data)[1:3]],
                                     [int(d) for d in shape_of(weights)[1:3]],
                                     [int(d) for d in shape_of(output)[1:3]])
    if any(output_padding):
        converted = _with_output_padding(converted, output_padding)
    table = op.BuiltinOptions()
    options = TransposeConvOptions()
    if table is not None:
        options.Init(table.Bytes, table.Pos)
    activation = options.FusedActivationFunction() if table is not None else ActivationFunctionType.NONE
    if activation == ActivationFunctionType.NONE:
        return converted
    if not output.qnn_params:
        return converter.convert_fused_activation_function(converted, activation)
    # TVM's quantized result is ``quantize(float result)``: the activation goes between the two.
    float_result = converter.convert_fused_activation_function(converted.args[0], activation)
    return converter.quantize(float_result, output)
