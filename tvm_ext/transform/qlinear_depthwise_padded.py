"""A padded depthwise QLinearConv over a padded copy of its input, where the backend has no kernel of its own for it.

An ONNX model's depthwise QLinearConv (one input channel per group) runs as the generic NCHW kernel
(``tvm_ext.kernels.onnx_qlinear.qlinear_conv2d``), whose schedule splits each row of outputs into interior tiles
without tests and border tiles that test every tap for lying inside the input: on the small images of the models'
later layers most tiles are border ones (a 12x16 image of 3x3 windows: 28 of its 48 four-pixel tiles). Over a copy
of its input padded with the input's zero point (the value a padded tap stands for: ``qlinear_conv2d`` counts a tap
in the padding as the zero point, so the sums are the same) the convolution has no padding and every tile is an
interior one; the copy is one PAD kernel (``nn.pad``, which the ONNX lowering lowers as TFLite's PAD: rows copied
whole where the backend asks for copy runs). Measured on cortex-m4f, tv_mnv2_w020_48x64 dy_pt: its 3x3 depthwise
layers (3x3 s1 8x24x32 and 48x12x16) 9.6 and 10.9 -> 7.0 instructions per MAC, the copies 2.1-2.9 instructions per
byte written, the model 10,642,742 -> 10,126,405 instructions, code 22,892 -> 21,480 B (the kernels lose their
border tiles' code), arena 42,464 -> 43,424 B (a padded copy lives beside its input).

Taken for every depthwise QLinearConv with padding over one image of static shape and integer data with a constant
zero point, on backends without a QLinearConv kernel of their own (``KernelSchedules.qlinear_conv``: Helium's reads
the padding itself).
"""

from __future__ import annotations

import tvm
from tvm import relax

from backends.backend import KernelSchedules
from tvm_ext.frontend.onnx_ops.qlinear_ops import QLINEAR_CONV
from tvm_ext.transform.qlinear_channels_last import bound_constant, is_qlinear_conv, static_shape_or_none

_PADS, _GROUP = -3, -1
"""The QLinearConv marker's pads (ONNX's top, left, bottom, right) and group fields, from the end: the geometry
fields follow the operands, of which the bias may be absent."""


@relax.expr_functor.mutator
class _Padded(relax.PyExprMutator):
    """The rewrite of each padded depthwise QLinearConv marker over its input's padded copy (``_zero_point``)."""

    def _zero_point(self, fields: list[relax.Expr]) -> int | None:
        """The input's zero point where the marker is a padded depthwise QLinearConv this pass takes, else None."""
        pads, group = [int(v) for v in fields[_PADS].values], int(getattr(fields[_GROUP], "value", 0))
        x_shape, zero_point = static_shape_or_none(fields[0].ty), bound_constant(self, fields[2])
        if not any(pads) or x_shape is None or len(x_shape) != 4 or x_shape[0] != 1 or group != x_shape[1] \
                or str(fields[0].ty.dtype) not in ("int8", "uint8") or zero_point is None \
                or zero_point.value.numpy().size != 1:
            return None
        return int(zero_point.value.numpy().reshape(-1)[0])

    def visit_call_(self, call: relax.Call) -> relax.Expr:
        call = super().visit_call_(call)
        if not is_qlinear_conv(call):
            return call
        fields = list(call.args[1].fields)
        zero_point = self._zero_point(fields)
        if zero_point is None:
            return call
        top, left, bottom, right = (int(v) for v in fields[_PADS].values)
        fields[0] = self.builder_.emit(relax.op.nn.pad(fields[0], [0, 0, 0, 0, top, bottom, left, right], "constant",
                                                       float(zero_point)))
        fields[_PADS] = relax.ShapeExpr([0, 0, 0, 0])
        return relax.call_dps_packed(QLINEAR_CONV, relax.Tuple(fields), call.ty_args[0])


@tvm.transform.module_pass(opt_level=0, name="QLinearDepthwisePadded")
class QLinearDepthwisePadded:
    """Each padded depthwise QLinearConv marker of main over a padded copy of its input (see the module docstring);
    unchanged where ``schedules`` has a QLinearConv kernel of its own."""

    def __init__(self, schedules: KernelSchedules) -> None:
        self.schedules = schedules

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        if self.schedules.qlinear_conv is not None:
            return mod
        mutator = _Padded(mod)
        for gvar, func in mod.functions.items():
            if isinstance(func, relax.Function):
                mutator.builder_.update_func(gvar, mutator.visit_expr(func))
        return mutator.builder_.get()
