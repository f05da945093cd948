"""TFLite UNPACK -> Relax: TVM 0.27's converter calls a Relay-era ``_op.squeeze`` and imports no model with
UNPACK of more than one output; this one writes each output ``i`` as ``relax.op.take(value, i, axis)`` (a
scalar index drops the axis; a negative axis counts from the end of the input, as TFLite reads it).
TFLite Micro's kernel copies the stored values whatever their quantization, and so does taking from the
int8 tensor itself."""

from __future__ import annotations

from tvm import relax

from .refusal import OperatorRefused


def convert_unpack(converter, op) -> relax.Expr:
    """The Relax expression of UNPACK ``op``: the slices of its input along its axis, a tuple of them when
    there are several outputs (the converter binds each output to a var of its own), else the one slice.
    Raises OperatorRefused unless its ``num`` and its output count are the size of its axis (TFLite Micro's
    kernel writes that many slices)."""
    from tflite.UnpackOptions import UnpackOptions

    options = UnpackOptions()
    table = op.BuiltinOptions()
    options.Init(table.Bytes, table.Pos)
    (data,) = converter.get_input_tensors(op)
    shape = [int(size) for size in converter.get_tensor_shape(data)]
    axis = options.Axis() + len(shape) if options.Axis() < 0 else options.Axis()
    outputs = len(converter.get_output_tensors(op))
    if not 0 <= axis < len(shape) or not options.Num() == outputs == shape[axis]:
        raise OperatorRefused(f"UNPACK of num {options.Num()} into {outputs} outputs along axis {options.Axis()} of an "
                              f"input of shape {shape}: num and the outputs must be as many as the axis is long")
    value = converter.get_tensor_expr(data)
    pieces = [relax.op.take(value, relax.const(index, "int32"), axis) for index in range(shape[axis])]
    return pieces[0] if len(pieces) == 1 else relax.Tuple(pieces)
