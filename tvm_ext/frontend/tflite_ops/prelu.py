"""TFLite PRELU of a quantized tensor -> Relax in the frontend's QDQ form.

TVM 0.27's converter applies ``nn.prelu`` to the raw int8 values (no dequantize), which is neither the
float model nor TFLite's integer kernel. Ours writes the float operator between dequantize and quantize,
with alpha broadcast over any axes as TFLite does:

    x = dequantize(input);  quantize(where(x >= 0, x, x * dequantize(alpha)), output)

which ``tvm_ext.transform.int8.prelu`` lowers; a float PRELU goes to TVM's own converter.
"""

from __future__ import annotations

from tvm import relax


def convert_prelu(converter, op, tvm_convert) -> relax.Expr:
    """The Relax expression of PRELU ``op``: ours when its input is quantized, else ``tvm_convert(op)``'s."""
    data, alpha = converter.get_input_tensors(op)[:2]
    output = converter.get_output_tensors(op)[0]
    if not data.qnn_params:
        return tvm_convert(op)
    values = converter.bb.emit(converter.dequantize(converter.get_tensor_expr(data), data))
    slopes = converter.dequantize(converter.get_tensor_expr(alpha), alpha)
    zero = relax.const(0.0, "float32")
    rectified = relax.op.where(relax.op.greater_equal(values, zero), values, relax.op.multiply(values, slopes))
    return converter.quantize(rectified, output)
