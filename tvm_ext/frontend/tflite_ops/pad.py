"""TFLite PAD and PADV2 of a quantized tensor -> Relax, as TFLite Micro runs them: the stored values copied as
they are, the padding the output's zero point (PAD) or PADV2's stored constant, whatever the input's
quantization (TFLite Micro's Prepare() requires only that PADV2's constant be quantized as the output).
TVM 0.27's converter refuses an input quantized unlike the output, and names PADV2 for either operator; a float
PAD or PADV2 stays with it."""

from __future__ import annotations

from typing import Callable

import numpy as np
from tvm import relax

from .refusal import OperatorRefused


class PadQuantizationError(OperatorRefused):
    """A PADV2 whose constant TFLite Micro refuses: not one value, or not quantized as the output."""


def convert_pad(converter, op, tvm_convert: Callable) -> relax.Expr:
    """The Relax expression of PAD/PADV2 ``op``; ``tvm_convert`` is TVM's converter, for a float one."""
    inputs = converter.get_input_tensors(op)
    data, paddings = inputs[:2]
    (output,) = converter.get_output_tensors(op)
    if not data.qnn_params:
        return tvm_convert(op=op)
    widths = [int(width) for width in np.asarray(converter.get_tensor_value(paddings)).reshape(-1)]
    if len(inputs) == 2:
        value = int(output.qnn_params["zero_point"].value.numpy())
    else:
        constant = np.asarray(converter.get_tensor_value(inputs[2])).reshape(-1)
        if constant.size != 1 or not converter.has_same_qnn_params(inputs[2], output):
            raise PadQuantizationError("PADV2's constant value must be one value quantized as its output "
                                       "(TFLite Micro requires it)")
        value = int(constant[0])
    return relax.op.nn.pad(converter.get_tensor_expr(data), pad_width=widths, pad_value=float(value))
