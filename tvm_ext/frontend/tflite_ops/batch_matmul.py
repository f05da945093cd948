"""TFLite BATCH_MATMUL with int8 operands -> Relax in the frontend's QDQ form (TVM 0.27 refuses it quantized).

``quantize(matmul([permute](dq(lhs)), [permute](dq(rhs))))``: adj_x/adj_y swap an operand's last two axes,
``relax.matmul`` broadcasts the batch dimensions as TFLite does; ``tvm_ext.transform.int8.batch_matmul``
lowers it. A float BATCH_MATMUL goes to TVM's own converter.
"""

from __future__ import annotations

from typing import Callable

from tvm import relax


def _adjoint(expr: relax.Expr, rank: int) -> relax.Expr:
    """``expr`` with its last two axes swapped."""
    return relax.op.permute_dims(expr, list(range(rank - 2)) + [rank - 1, rank - 2])


def convert_batch_matmul(converter, op, tvm_convert: Callable[[object], relax.Expr]) -> relax.Expr:
    """The Relax expression of BATCH_MATMUL ``op``: ours when it is quantized, else ``tvm_convert(op)``'s."""
    from tflite.BatchMatMulOptions import BatchMatMulOptions

    lhs, rhs = converter.get_input_tensors(op)
    output = converter.get_output_tensors(op)[0]
    if not (lhs.qnn_params and rhs.qnn_params and output.qnn_params):
        return tvm_convert(op)
    options = BatchMatMulOptions()
    table = op.BuiltinOptions()
    adjoints = (False, False)
    if table is not None:
        options.Init(table.Bytes, table.Pos)
        adjoints = (bool(options.AdjX()), bool(options.AdjY()))
    operands = []
    for tensor, adjoint in zip((lhs, rhs), adjoints):
        operand = converter.dequantize(converter.get_tensor_expr(tensor), tensor)
        operands.append(_adjoint(operand, tensor.tensor.ShapeLength()) if adjoint else operand)
    return converter.quantize(relax.op.matmul(*operands), output)
