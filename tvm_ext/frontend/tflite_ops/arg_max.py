"""TFLite ARG_MAX and ARG_MIN of a quantized tensor -> Relax (TVM 0.27 refuses them: its converter has no QDQ form).

The index of the largest (smallest) value does not depend on the quantization (dequantizing is increasing), so
the converter writes ``astype(argmax|argmin(x, axis), output dtype)`` on the int8 tensor itself, which
``tvm_ext.transform.int8.arg_max`` lowers; of a float tensor they go to TVM's own converter.
"""

from __future__ import annotations

from tvm import relax

from .refusal import OperatorRefused


class ArgMaxConversionError(ValueError):
    """The ARG_MAX or ARG_MIN operator is one our converter does not take (the message says why)."""


def convert_arg_max(converter, op, tvm_convert, largest: bool = True) -> relax.Expr:
    """The Relax expression of ARG_MAX ``op`` (ARG_MIN without ``largest``): ours when its input is quantized, else
    ``tvm_convert(op)``'s."""
    name = "ARG_MAX" if largest else "ARG_MIN"
    data, axis = converter.get_input_tensors(op)[:2]
    if not data.qnn_params:
        return tvm_convert(op)
    axis_value = converter.get_tensor_value(axis).reshape(-1)
    if axis_value.size != 1:
        raise ArgMaxConversionError(f"{name} axis tensor holds {axis_value.size} values, not one")
    output_dtype = converter.get_tensor_type_str(converter.get_output_tensors(op)[0].tensor.Type())
    if output_dtype != "int32":
        raise OperatorRefused(f"{name} with an {output_dtype} output (TFLite Micro runs int32 only)")
    reduce = relax.op.argmax if largest else relax.op.argmin
    return relax.op.astype(reduce(converter.get_tensor_expr(data), axis=int(axis_value[0]), keepdims=False),
                           output_dtype)
