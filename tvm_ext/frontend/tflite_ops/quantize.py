"""TFLite QUANTIZE to int32 -> Relax (``relax.quantize`` has no int32 output, so TVM 0.27 cannot import it).

TFLM requantizes int8/int16 to int32 (its keyword_scrambled models end so). The converter writes
``call_dps_packed(REQUANTIZE_TO_INT32, [dq(input), output_scale, output_zero_point])``, which
``tvm_ext.transform.int8.requantize`` lowers; every other QUANTIZE goes to TVM's own converter.
"""

from __future__ import annotations

from tvm import relax

REQUANTIZE_TO_INT32 = "tvm_ext.requantize_to_int32"


def convert_quantize(converter, op, tvm_convert) -> relax.Expr:
    """The Relax expression of QUANTIZE ``op``: ours when it writes int32, else ``tvm_convert(op)``'s."""
    data = converter.get_input_tensors(op)[0]
    output = converter.get_output_tensors(op)[0]
    if converter.get_tensor_type_str(output.tensor.Type()) != "int32" or not data.qnn_params:
        return tvm_convert(op)
    shape = [int(d) for d in output.tensor.ShapeAsNumpy()]
    return relax.call_dps_packed(
        REQUANTIZE_TO_INT32,
        [converter.dequantize(converter.get_tensor_expr(data), data), output.qnn_params["scale"],
         output.qnn_params["zero_point"]],
        relax.TensorType(shape, "int32"),
    )
