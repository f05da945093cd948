"""ONNX QLinearConv and QLinearMatMul: our frontend's markers (``tvm_ext.frontend.onnx_ops.qlinear_ops``) -> one kernel of
``tvm_ext.kernels.onnx_qlinear`` each (onnxruntime's float32 requantization, rounding half to even).

The marker's tensor operands are the node's inputs: constants stay Relax constants, the others must be
tensors the pass has lowered (a model input, or an integer result of another kernel)."""

from __future__ import annotations

from typing import Optional, Union

import numpy as np

from tvm import relax
from tvm.ir.expr import Constant

from ...kernels.onnx_qlinear import qlinear_conv2d, qlinear_matmul
from ...frontend.onnx_ops.qlinear_ops import MARKERS, QLINEAR_CONV, QLINEAR_MATMUL
from .graph import describe, is_call_to
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch


def marker_of(value: relax.Expr) -> str | None:
    """The marker symbol ``value`` calls (one of ``MARKERS``), else None."""
    if not is_call_to(value, "relax.call_dps_packed"):
        return None
    symbol = getattr(value.args[0], "global_symbol", None)
    return symbol if symbol in MARKERS else None


def tensor_operand(tensor: relax.Expr, ctx: LoweringContext) -> Union[relax.Expr, Mismatch]:
    """A kernel operand for ``tensor``: the constant it is, or its lowered tensor; a Mismatch naming what
    computes it otherwise (a float-path value)."""
    value = ctx.graph.value_of(tensor)
    if isinstance(value, Constant):
        return value
    if tensor in ctx.lowered:
        return ctx.lowered[tensor]
    return Mismatch(describe(value))


def _completes(value: relax.Expr, _ctx: LoweringContext) -> bool:
    return marker_of(value) is not None


_GEOMETRY = ("strides", "pads", "dilations", "group")  # QLinearConv's fields after its tensors
# The marker's tensor operands in ONNX order (the node's input names), per marker; QLinearConv's B is optional.
_OPERANDS = {
    QLINEAR_CONV: ("x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale", "y_zero_point", "bias"),
    QLINEAR_MATMUL: ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"),
}


def _match(call: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    marker = marker_of(call)
    fields = list(call.args[1].fields)
    if marker == QLINEAR_CONV:
        fields, geometry = fields[:-len(_GEOMETRY)], fields[-len(_GEOMETRY):]
    operands = dict(zip(_OPERANDS[marker], (tensor_operand(f, ctx) for f in fields)))
    mismatch = next((o for o in operands.values() if isinstance(o, Mismatch)), None)
    if mismatch is not None:
        return mismatch
    data_name, _, _, weight_name, *_ = _OPERANDS[marker]
    data, weight = operands.pop(data_name), operands.pop(weight_name)
    scale_names = [name for name in operands if name.endswith("_scale")]
    multiplier = _constant_multiplier(*(operands[name] for name in scale_names))
    if multiplier is not None:
        operands = {name: value for name, value in operands.items() if name not in scale_names}
        operands["multiplier"] = multiplier
    if marker == QLINEAR_MATMUL:
        return FixedCall(KernelCall("QLinearMatMul", call, qlinear_matmul, (data, weight), operands))
    strides, pads, dilations = ([int(v) for v in shape.values] for shape in geometry[:3])
    attrs = {"strides": strides, "pads": pads, "dilations": dilations, "group": int(geometry[3].value)}
    return FixedCall(KernelCall("QLinearConv", call, qlinear_conv2d, (data, weight), {**operands, **attrs}))


def _constant_multiplier(input_scale: relax.Expr, weight_scale: relax.Expr,
                         output_scale: relax.Expr) -> Optional[relax.Constant]:
    """(input_scale * weight_scale) / output_scale per channel when all three are constants, computed in
    numpy's float32 (IEEE single, each step rounded: what the kernel would compute in C), else None."""
    if not all(isinstance(s, Constant) for s in (input_scale, weight_scale, output_scale)):
        return None
    first, weights, last = (s.value.numpy().astype(np.float32).reshape(-1) for s in
                            (input_scale, weight_scale, output_scale))
    return relax.const((first * weights) / last)


# No TFLite operator: ``operators`` lists those the model check accepts in int8 TFLite models.
LOWERING = Lowering(frozenset(), _completes, _match)
