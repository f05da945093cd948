"""The int8 SOFTMAX kernel of cores with the DSP extension (Helium's too): TFLite's int8 softmax over the last axis
as one call of `<prefix>_softmax_s8` (`backends.cortex_m.helpers.templates.softmax_s8.h.in`) per row, the kernel the
int8 lowering writes for SOFTMAX where the backend gives one (`backends.backend.KernelSchedules.int8_softmax`).

The generic kernel (`tvm_ext.kernels.softmax_int8`) computes the same integers through TVM's C, whose fixed-point
arithmetic is 64-bit throughout (every rounding, every product's saturation) and whose row values go through
memory: 92-128 instructions per output byte on cortex-m4f (a 10-class head, rows of 3). The helper keeps a row's
maximum, sum and reciprocal in registers and rounds the non-negative values with an unsigned add and a shift;
its C unit test checks it against TFLite's arithmetic in 64-bit C. Chosen by shape: any int8 softmax of an int8
output (the int16 output of TFLM's int8-in, int16-out softmax keeps the generic kernel: `softmax_s8_rows` gives
None).
"""

from __future__ import annotations

import math
from typing import Optional

from tvm import te, tirx

from backends.cortex_m.helpers.softmax_c import SOFTMAX_HELPERS, softmax_s8_helper_name
from tvm_ext.tir.extern_stage import element_address, extern_from_zero
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.helper_calls import register_helper_call

SOFTMAX_S8_OP = "tvm_ext.softmax_s8"
# The call (out, in, rows, depth, exp_table): out[r * depth + i] and in[r * depth + i] for r < rows, i < depth;
# exp_table[k] for k < EXP_TABLE_TERMS.
EXP_TABLE_TERMS = 256
SOFTMAX_S8_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(Arg(2), Arg(3)), Axis(Arg(3), 1))),
    PointerAccess(1, (Axis(Arg(2), Arg(3)), Axis(Arg(3), 1))),
    PointerAccess(4, (Axis(EXP_TABLE_TERMS, 1),)),
))
register_helper_call(SOFTMAX_S8_OP, SOFTMAX_HELPERS, softmax_s8_helper_name, SOFTMAX_S8_ACCESS)


def softmax_s8_rows(data: te.Tensor, exp_table: te.Tensor, *, out_dtype: str = "int8") -> Optional[te.Tensor]:
    """TFLite's int8 softmax of `data` over its last axis (arguments as `tvm_ext.kernels.softmax_int8`'s:
    `exp_table` int32[256] of `tvm_ext.kernels.int8_tables.softmax_exp_table`) as a TE extern stage of one helper
    call per row, or None where the helper does not fit: an output or input not int8, or a table of
    another length."""
    shape = [int(d) for d in data.shape]
    if out_dtype != "int8" or str(data.dtype) != "int8" or [int(d) for d in exp_table.shape] != [EXP_TABLE_TERMS] \
            or str(exp_table.dtype) != "int32" or not shape:
        return None
    depth = shape[-1]
    rows = math.prod(shape[:-1])

    def build(ins, outs):
        index = str(outs[0].shape[0].ty.dtype)


        # one call per row: the planner then sees each output row written after its input row was read, so the
        # output may take the input's place row by row (one call over every row kept both whole: a transformer's
        # 3x64x64 attention scores +12 KB of arena on cortex-m4f)
        row = tirx.Var("row", index)
        offset = row * tirx.const(depth, index)
        table = element_address(ins[1], tirx.const(0, str(ins[1].shape[0].ty.dtype)))
        call = tirx.Evaluate(tirx.call_intrin("int32", SOFTMAX_S8_OP, element_address(outs[0], offset),
                                              element_address(ins[0], offset), tirx.const(1, "int32"),
                                              tirx.const(depth, "int32"), table))
        return tirx.For(row, tirx.const(0, index), tirx.const(rows, index), tirx.ForKind.SERIAL, call)

    return extern_from_zero(shape, [data, exp_table], build, "softmax_int8")
