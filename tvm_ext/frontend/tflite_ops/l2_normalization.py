"""TFLite L2_NORMALIZATION of a quantized tensor -> Relax (TVM 0.27 refuses it: its converter has no QDQ form).

Integer only, as one opaque float step between dequantize and quantize, which
``tvm_ext.transform.int8.l2_normalization`` lowers (as SVDF's steps, nothing legalizes it: a model whose
L2_NORMALIZATION the int8 pass cannot lower is refused there):

    quantize(call_dps_packed(L2_NORMALIZATION, [dequantize(input)]), output)

TFLite Micro writes the result in 1/128 units with zero point 0 whatever the output tensor says: another
output quantization is refused here (the float model and TFLite Micro would disagree). A float
L2_NORMALIZATION goes to TVM's own converter.
"""

from __future__ import annotations

from tvm import relax

L2_NORMALIZATION = "tvm_ext.l2_normalization"
OUTPUT_QUANTIZATION = ((1.0 / 128,), (0,))  # (scales, zero points) of TFLite Micro's int8 result


class L2NormalizationConversionError(ValueError):
    """The L2_NORMALIZATION operator is one our converter does not take (the message says why)."""


def convert_l2_normalization(converter, op, tvm_convert) -> relax.Expr:
    """The Relax expression of L2_NORMALIZATION ``op``: ours when its input is quantized."""
    data = converter.get_input_tensors(op)[0]
    output = converter.get_output_tensors(op)[0]
    if not data.qnn_params:
        return tvm_convert(op)
    quantization = output.tensor.Quantization()
    if (tuple(quantization.ScaleAsNumpy().tolist()), tuple(quantization.ZeroPointAsNumpy().tolist())) \
            != OUTPUT_QUANTIZATION:
        raise L2NormalizationConversionError("int8 L2_NORMALIZATION output quantization must be scale 1/128, "
                                             "zero point 0 (TFLite Micro writes that whatever the tensor says)")
    shape = [int(d) for d in output.tensor.ShapeAsNumpy()]
    values = converter.dequantize(converter.get_tensor_expr(data), data)
    return converter.quantize(
        relax.call_dps_packed(L2_NORMALIZATION, [values], relax.TensorType(shape, "float32")), output)
