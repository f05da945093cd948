"""TFLite PACK -> Relax: TVM 0.27's converter calls a Relay-era ``_op.expand_dims`` and imports no model with
PACK (float or quantized); this one writes ``relax.op.stack(values, axis)`` (a negative axis counts from the end
of the output, ``axis + rank + 1``, as TFLite and Relax both read it). TFLite Micro's kernel copies the stored
values whatever their quantization, and so does the stack of the int8 tensors themselves."""

from __future__ import annotations

from tvm import relax


def convert_pack(converter, op) -> relax.Expr:
    """The Relax expression of PACK ``op``: its inputs stacked along a new axis."""
    from tflite.PackOptions import PackOptions

    options = PackOptions()
    table = op.BuiltinOptions()
    options.Init(table.Bytes, table.Pos)
    values = [converter.get_tensor_expr(tensor) for tensor in converter.get_input_tensors(op)]
    return relax.op.stack(values, options.Axis())
