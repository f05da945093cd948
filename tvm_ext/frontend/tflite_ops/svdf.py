"""TFLite SVDF -> Relax (TVM 0.27's TFLite frontend has no SVDF converter), in the frontend's QDQ form.

Integer SVDF only (int8 input, weights_feature and output; int16 or int8 weights_time and state; int32 bias),
as two opaque float steps between dequantize and quantize, which ``tvm_ext.transform.int8.svdf`` lowers:

    new_state = quantize(call_dps_packed(SVDF_STATE_UPDATE, [dq(input), dq(weights_feature), dq(state)]), state)
    output    = quantize(call_dps_packed(SVDF_OUTPUT, [dq(new_state), dq(weights_time), dq(bias)]), output)

The state operand is a constant holding the state's value after a reset (TFLM fills a variable tensor with
its zero point): the lowering hands it on as the initial value of the bundle's static state buffer. The
float steps have no meaning of their own (nothing legalizes them): a model whose SVDF the int8 pass cannot
lower is refused there. The rank is the weights' filters over the output's units.
"""

from __future__ import annotations

import numpy as np
from tvm import relax

from .refusal import OperatorRefused

SVDF_STATE_UPDATE = "tvm_ext.svdf_state_update"
SVDF_OUTPUT = "tvm_ext.svdf_output"

_STATE_DTYPES = ("int16", "int8")


class SvdfConversionError(OperatorRefused):
    """The SVDF operator is one our converter does not take (the message says why)."""


def convert_svdf(converter, op) -> relax.Expr:
    """The Relax expression of TFLite SVDF operator ``op``, for TVM's TFLite ``OperatorConverter`` ``converter``."""
    tensors = converter.get_input_tensors(op)
    output = converter.get_output_tensors(op)[0]
    if len(tensors) != 5 or tensors[3].tensor_idx < 0:
        raise SvdfConversionError("SVDF without a bias tensor (TFLite Micro cannot run it either)")
    data, feature, time, bias, state = tensors
    state_dtype = converter.get_tensor_type_str(state.tensor.Type())
    if not all(t.qnn_params for t in (data, feature, time, bias, state, output)) or state_dtype not in _STATE_DTYPES:
        raise SvdfConversionError("only the integer SVDF (int8 input, int16 or int8 state) is supported")
    time_dtype = converter.get_tensor_type_str(time.tensor.Type())
    if time_dtype != state_dtype:
        raise SvdfConversionError(f"SVDF time weights ({time_dtype}) and state ({state_dtype}) of different types: "
                                  "TFLite Micro reads the state as the time weights' type")

    def dequantized_constant(tensor) -> relax.Expr:
        return converter.dequantize(relax.const(converter.get_tensor_value(tensor)), tensor)

    state_shape = tuple(int(d) for d in state.tensor.ShapeAsNumpy())
    reset_value = int(state.tensor.Quantization().ZeroPoint(0))
    initial_state = relax.const(np.full(state_shape, reset_value, state_dtype))
    new_state = converter.quantize(
        relax.call_dps_packed(
            SVDF_STATE_UPDATE,
            [converter.dequantize(converter.get_tensor_expr(data), data), dequantized_constant(feature),
             converter.dequantize(initial_state, state)],
            relax.TensorType(list(state_shape), "float32"),
        ),
        state,
    )
    output_shape = tuple(int(d) for d in output.tensor.ShapeAsNumpy())
    return converter.quantize(
        relax.call_dps_packed(
            SVDF_OUTPUT,
            [converter.dequantize(new_state, state), dequantized_constant(time), dequantized_constant(bias)],
            relax.TensorType(list(output_shape), "float32"),
        ),
        output,
    )
