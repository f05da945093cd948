"""TFLite SOFTMAX -> Relax with its beta: TVM 0.27's converter drops the operator's beta (it computes
``softmax(x)`` whatever the beta, so a model with beta != 1 got the wrong result). Ours writes
``softmax(x * beta)`` (over the last axis, between dequantize and quantize for a quantized one), which is
TFLite's ``exp(beta * (x - max))`` normalised; the int8 and 16x8 lowerings read beta from the multiply's
constant. A SOFTMAX of beta 1 stays TVM's own form (no multiply)."""

from __future__ import annotations

import numpy as np
from tvm import relax


def convert_softmax(converter, op, tvm_convert) -> relax.Expr:
    """The Relax expression of SOFTMAX ``op``; ``tvm_convert(op)``'s when its beta is 1."""
    from tflite.SoftmaxOptions import SoftmaxOptions

    options = SoftmaxOptions()
    table = op.BuiltinOptions()
    if table is None:
        return tvm_convert(op)
    options.Init(table.Bytes, table.Pos)
    beta = np.float32(options.Beta())
    if beta == np.float32(1.0):
        return tvm_convert(op)
    (data,) = converter.get_input_tensors(op)
    (output,) = converter.get_output_tensors(op)
    values = converter.get_tensor_expr(data)
    if data.qnn_params:
        values = converter.dequantize(values, data)
    result = relax.op.nn.softmax(relax.op.multiply(values, relax.const(beta, "float32")), axis=-1)
    return converter.quantize(result, output) if output.qnn_params else result
