"""QLinearConv over its input permuted to channels-last (NHWC), where the backend has no kernel of its own for it.

An ONNX model's QLinearConv reads an NCHW image: its generic kernel (``tvm_ext.kernels.onnx_qlinear.qlinear_conv2d``)
sums over input channels that lie a whole image plane apart, so the core's MAC helpers load one input byte at a
time (a DSP core's dual MAC: one multiply-accumulate an instruction at best, about 3.5 instructions per MAC with its
loads; a TFLite model's NHWC convolution takes a word of four channels a load, about 2). Over the same input permuted
to NHWC (one copy kernel, ``permute_dims``, which the int8 pass lowers as TRANSPOSE) and OHWI weights (permuted at
compile time), each window row is one run of kW * C contiguous inputs and weights, as in the TFLite model's kernel.
The output stays NCHW: the model's other operators see no change.

Taken where the copy pays: the convolution does at least ``MIN_MACS_PER_INPUT`` MACs per input element (the copy
costs a few instructions per element, the run saves more than one per MAC) and enough MACs to pay the code it adds
(``CODE_BYTES``), its input has one image and several
channels (``WORD_CHANNELS``), one group (a depthwise one's sums read one channel), int8 data and constant int8
weights of zero point 0 (the form whose sums the MAC helpers take: uint8 data, or weights with a zero point, keep
scalar sums in either layout), on a backend
whose MAC helpers take a word of channels (``KernelSchedules.qlinear_channels_last``: the DSP cores without MVE;
Helium's own QLinearConv kernel reads NCHW rows as vectors, a scalar core's loads gain little for more code).
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax
from tvm.ir.expr import Constant

from backends.backend import KernelSchedules
from backends.code_price import INSTRUCTIONS_PER_BYTE
from tvm_ext.frontend.onnx_ops.qlinear_ops import QLINEAR_CONV, QLINEAR_CONV_CHANNELS_LAST

MIN_MACS_PER_INPUT = 4
"""The fewest MACs per input element at which a QLinearConv takes the channels-last copy of its input: the copy
costs about 3 instructions per element on cortex-m4f (a TRANSPOSE kernel's), the contiguous runs save about 1.5
per MAC (tv_squeezenet11_40x52: 3.6 -> 2.1 instructions per MAC)."""

SAVED_PER_MAC = 1.5
"""Instructions per MAC the contiguous runs save (cortex-m4f, as above)."""

CODE_BYTES = 220
"""The code one convolution's channels-last form adds: its kernel's word-at-a-time runs (100 to 290 B more than
the NCHW kernel's, pt_densenet_g5_26x34 on cortex-m4f, nm sizes) and its copy (about 70 B when not fused into the
kernel before it). Paid at the backends' price of code (``backends.code_price.INSTRUCTIONS_PER_BYTE``): a
convolution of fewer MACs (a squeeze-and-excitation block's 1x1 convolutions of one pixel) keeps NCHW."""

WORD_CHANNELS = 4
"""A convolution of fewer input channels takes the channels-last form only where its output channels fill the
backend's accumulator tiles (``KernelSchedules.output_channel_tile``): untiled, one tap's few channels are a loop
of their own (pt_vit_20x28's 4x4 patches of 3 channels into 22: 8.0 -> 9.7 instructions per MAC on cortex-m4f)."""

_TO_NHWC = (0, 2, 3, 1)


def static_shape_or_none(ty: relax.Type) -> list[int] | None:
    """A tensor type's shape, every dimension known; else None."""
    shape = getattr(ty, "shape", None)
    if not isinstance(shape, relax.ShapeExpr) or not all(isinstance(d, tvm.tirx.IntImm) for d in shape.values):
        return None
    return [int(d) for d in shape.values]


def is_qlinear_conv(expr: relax.Expr) -> bool:
    """Whether ``expr`` calls the QLinearConv marker."""
    return isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op) \
        and expr.op.same_as(tvm.ir.Op.get("relax.call_dps_packed")) \
        and getattr(expr.args[0], "global_symbol", None) == QLINEAR_CONV


def _reads_qlinear_conv(func: tvm.ir.BaseFunc) -> bool:
    """Whether ``func`` (a Relax function) calls the QLinearConv marker."""
    found = []
    if isinstance(func, relax.Function):
        relax.analysis.post_order_visit(func, lambda e: found.append(e) if is_qlinear_conv(e) else None)
    return bool(found)


def bound_constant(mutator: relax.PyExprMutator, value: relax.Expr) -> Constant | None:
    """The constant ``value`` is (through the variables ``mutator`` has seen bound), else None."""
    while isinstance(value, relax.Var):
        bound = mutator.lookup_binding(value)
        if bound is None:
            return None
        value = bound
    return value if isinstance(value, Constant) else None


@relax.expr_functor.mutator
class _ChannelsLast(relax.PyExprMutator):
    """The rewrite of each QLinearConv marker that takes the channels-last form (``_takes``); ``channel_tile``: the
    backend's accumulator tile of int8 output channels."""

    def __init__(self, mod: tvm.IRModule, channel_tile: int) -> None:
        super().__init__(mod)
        self.channel_tile = channel_tile
        self.copies: dict[relax.Expr, relax.Var] = {}  # an input -> its one NHWC copy (convs reading it share it)

    def visit_dataflow_block_(self, block: relax.DataflowBlock) -> relax.BindingBlock:
        self.copies = {}  # a copy is a dataflow var of its own block
        return super().visit_dataflow_block_(block)

    def _takes(self, fields: list[relax.Expr], out_shape: list[int] | None) -> bool:
        x_shape, weight = static_shape_or_none(fields[0].ty), bound_constant(self, fields[3])
        group = fields[-1]
        if x_shape is None or out_shape is None or weight is None or len(x_shape) != 4 or x_shape[0] != 1 \
                or x_shape[1] < 2 or int(getattr(group, "value", 0)) != 1:
            return False
        weights, weight_zero_point = weight.value.numpy(), bound_constant(self, fields[5])
        if weights.ndim != 4 or weights.dtype != np.int8 or str(fields[0].ty.dtype) != "int8" \
                or weight_zero_point is None or np.any(weight_zero_point.value.numpy() != 0) \
                or (x_shape[1] < WORD_CHANNELS and weights.shape[0] % self.channel_tile):
            return False
        macs = weights.size * out_shape[2] * out_shape[3]
        return macs >= MIN_MACS_PER_INPUT * x_shape[1] * x_shape[2] * x_shape[3] \
            and macs * SAVED_PER_MAC >= CODE_BYTES * INSTRUCTIONS_PER_BYTE

    def visit_call_(self, call: relax.Call) -> relax.Expr:
        call = super().visit_call_(call)
        if not is_qlinear_conv(call):
            return call
        fields = list(call.args[1].fields)
        out_type = call.ty_args[0]
        if not self._takes(fields, static_shape_or_none(out_type)):
            return call
        if fields[0] not in self.copies:
            self.copies[fields[0]] = self.builder_.emit(relax.op.permute_dims(fields[0], list(_TO_NHWC)))
        x = self.copies[fields[0]]
        return relax.call_dps_packed(QLINEAR_CONV_CHANNELS_LAST, relax.Tuple([x, *fields[1:]]), out_type)


@tvm.transform.module_pass(opt_level=0, name="QLinearConvChannelsLast")
class QLinearConvChannelsLast:
    """Each QLinearConv marker of main that pays its input's channels-last copy as the channels-last marker over that
    copy (see the module docstring); unchanged where ``schedules`` does not ask for it."""

    def __init__(self, schedules: KernelSchedules) -> None:
        self.schedules = schedules

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        if not self.schedules.qlinear_channels_last or not any(_reads_qlinear_conv(f) for f in mod.functions.values()):
            return mod
        mutator = _ChannelsLast(mod, self.schedules.output_channel_tile)
        for gvar, func in mod.functions.items():
            if isinstance(func, relax.Function):
                mutator.builder_.update_func(gvar, mutator.visit_expr(func))
        return mutator.builder_.get()
