"""TFLite GELU with its approximate option -> Relax: TVM 0.27's converter drops the option (it computes the exact
GELU, x (1 + erf(x / sqrt 2)) / 2, whatever the option), so a model with approximate GELU (its tanh form, as
BERT-style transformers and Keras' gelu(approximate=True) write it) got another function, 1e-5 away from
TFLite's (a float GELU model failed its self-test against LiteRT). Ours writes TFLite's tanh form for it:

    x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2

(tensorflow/lite/kernels/internal/reference/gelu.h), whose tanh the bundle computes with its own tanhf. An exact
GELU, and a quantized one (which TVM refuses), stay TVM's converter's."""

from __future__ import annotations

import math

import numpy as np
from tvm import relax

SQRT_2_OVER_PI = np.float32(math.sqrt(2.0 / math.pi))
CUBIC = np.float32(0.044715)


def convert_gelu(converter, op, tvm_convert) -> relax.Expr:
    """The Relax expression of GELU ``op``: the tanh form when it is approximate and float, else
    ``tvm_convert(op)``'s."""
    from tflite.GeluOptions import GeluOptions

    table = op.BuiltinOptions()
    (data,) = converter.get_input_tensors(op)
    if table is None or data.qnn_params:
        return tvm_convert(op)
    options = GeluOptions()
    options.Init(table.Bytes, table.Pos)
    if not options.Approximate():
        return tvm_convert(op)
    x = converter.get_tensor_expr(data)

    def const(value: float) -> relax.Expr:
        return relax.const(np.float32(value), "float32")

    cube = relax.op.multiply(relax.op.multiply(x, x), x)
    inner = relax.op.multiply(const(SQRT_2_OVER_PI), relax.op.add(x, relax.op.multiply(const(CUBIC), cube)))
    return relax.op.multiply(relax.op.multiply(const(0.5), x), relax.op.add(const(1.0), relax.op.tanh(inner)))
