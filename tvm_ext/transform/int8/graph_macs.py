"""The multiply-accumulates of a model's one inference, read off its Relax main before the int8 lowering (whether the
backend's MAC helpers pay in it: `backends.backend.KernelSchedules.helper_min_macs`)."""

from __future__ import annotations

import math
from typing import Optional

from tvm import ir, relax

_CONV2D = ir.Op.get("relax.nn.conv2d")
_MATMUL = ir.Op.get("relax.matmul")
UNCOUNTED = frozenset({"relax.call_tir", "relax.call_dps_packed", "relax.call_packed", "relax.nn.conv1d",
                       "relax.nn.conv3d", "relax.nn.conv1d_transpose", "relax.nn.conv2d_transpose",
                       "relax.nn.attention", "relax.einsum", "relax.linear"})
"""Main's operators whose MACs `graph_macs` does not count: the frontend's own kernels (a recurrent cell's or an
SVDF's packed call, ONNX's QLinear markers, its TIR kernels), the other convolutions and products."""


def graph_macs(main: relax.Function) -> Optional[int]:
    """The MACs of one inference of ``main`` as the frontend leaves it: each `relax.nn.conv2d`'s output elements times
    its products per output (a depthwise one's window alone), each `relax.matmul`'s output elements times its inputs'
    common length; None where ``main`` calls a function or one of the UNCOUNTED operators (kws_lstm_40x16_int8's
    cells: 1,152 of its 1,721,472 MACs counted)."""
    macs = 0
    for block in main.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if not isinstance(value, relax.Call):
                continue
            if not isinstance(value.op, ir.Op) or value.op.name in UNCOUNTED:
                return None  # a call of a function (whose MACs are not read here) or of an uncounted operator
            if not isinstance(binding.var.ty, relax.TensorType):
                continue
            out = math.prod(int(d) for d in binding.var.ty.shape.values)
            if value.op.same_as(_CONV2D):
                weight = [int(d) for d in value.args[1].ty.shape.values]
                macs += out * math.prod(weight) // weight[str(value.attrs.kernel_layout).index("O")]
            elif value.op.same_as(_MATMUL):
                macs += out * int(value.args[0].ty.shape.values[-1])
    return macs
