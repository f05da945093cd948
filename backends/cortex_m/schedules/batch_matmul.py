"""The DSP cores' kernel of an int8 BATCH_MATMUL (both operands activations: a transformer's attention scores
Q x K^T and its attention times V) as one call of `<prefix>_batch_matmul_s8`
(`backends.cortex_m.helpers.templates.batch_matmul_s8.h.in`) per matrix of the batch: the kernel the int8 lowering
writes for BATCH_MATMUL where the backend gives one (`backends.backend.KernelSchedules.int8_batch_matmul`).

Why its own kernel: the generic kernel's reduction reads both operands as int8 one element at a time, the
operand whose depth steps are not contiguous (K of Q x K^T, V of attention x V) a row's stride apart, and
subtracts both zero points per MAC: 5.6 and 3.6 instructions per MAC on cortex-m4f (vit_tiny_16_int8's 64x16 by
16x64 and 64x64 by 64x16 products). The helper widens each operand once per call (the columns of the right one,
transposed or not, into an arena scratch; each pair of rows of the left one as it reaches them) with its zero
point subtracted, so no per-row or per-column offset sums are needed, and computes tiles of two rows by two
columns, each widened word feeding two dual MACs (SMLAD), then requantizes the four sums; whatever the shape: odd
row and column counts, any depth (the last group of four padded), each operand transposed or not (adj_x, adj_y:
its strides are the call's arguments), batch dimensions broadcast (each matrix's operands addressed per call).

Chosen by shape and quantization: int8 operands and output, TFLite's double rounding on small sums
("double_small": a per-tensor right shift, and depth x the operands' largest magnitudes below 2^30, which any
depth up to 16,512 meets), no activation narrower than int8 (TFLite's BATCH_MATMUL has none); any other
(`int8_batch_matmul` gives None) keeps the generic kernel. The scratch (`batch_matmul_scratch_words`: ((cols + 1) /
2 + 1) x 2 x the depth's pairs int32 words, 2,112 B for 64 columns of depth 16) is an internal buffer of the kernel,
which the planner places in the arena (one of 64 B or less is a local array). The extern stage is opaque to
operator fusion: an elementwise operator TVM fused into the generic kernel (a MUL by the attention's scale after
the scores) becomes a kernel of its own.

Measured on cortex-m4f (instructions of the call, generic kernel -> helper): vit_tiny_16_int8's scores, 64x16 by
16x64 in 3 heads, 1,105,594 -> 394,982 (5.6 -> 2.0 per MAC), its attention by values, 64x64 by 64x16,
712,292 -> 295,478 (3.6 -> 1.5); a 4-head block of 49 tokens and head depth 24, 1,827,191 (the scores with
their scale's MUL fused) -> 418,076 + 58,833 (the MUL's own kernel), and 854,060 -> 386,569. The cost: the
helper's code (about 600 B once per bundle, beside each product's call of about 84 B: vit_tiny_16_int8's code
6,936 -> 7,148 B) and the scratch at the arena's peak (its arena 22,560 -> 24,640 B).

On Helium cores (`helium_int8_batch_matmul`) the same kernel calls the helper's twin (`helium_batch_matmul_s8.h.in`,
the same call): the int8 operands multiplied as they are by VMLADAVA (16 lanes, no widening), the zero points by row
and column sums, each row and column gathered into the scratch padded to whole vectors; one row by four columns a
tile, one vector requantization. Measured on cortex-m55 (the generic kernel -> the twin): vit3h_28's scores, 49x20
by 20x49 in 3 heads, 1,067,725 -> 154,534 instructions, its attention by values 863,556 -> 92,092.
"""

from __future__ import annotations

import enum
import functools
import math
from typing import Protocol, Sequence

import numpy as np
from tvm import te, tirx

from backends.cortex_m.helpers import BATCH_MATMUL_HELPERS, HELIUM_BATCH_MATMUL_HELPERS
from backends.cortex_m.helpers.batch_matmul_c import (batch_matmul_helper_name, batch_matmul_scratch_words,
                                                      helium_batch_matmul_scratch_words)
from packager.fixed_point_c import SMALL_ACCUMULATOR_LIMIT
from tvm_ext.tir.extern_stage import element_address, extern_from_zero
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.helper_calls import register_helper_call

BATCH_MATMUL_OP = "tvm_ext.batch_matmul_s8"
# The call (out, a, b, q, rows, cols, depth, a_row, a_k, b_k, b_col, quantization, multiplier): out[i * cols + j],
# a[i * a_row + k * a_k], b[k * b_k + j * b_col] for i < rows, j < cols, k < depth; quantization the zero points
# and the right shift in its bytes (`_quantization`). q is the kernel's own scratch, never an operand.
BATCH_MATMUL_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(Arg(4), Arg(5)), Axis(Arg(5), 1))),
    PointerAccess(1, (Axis(Arg(4), Arg(7)), Axis(Arg(6), Arg(8)))),
    PointerAccess(2, (Axis(Arg(6), Arg(9)), Axis(Arg(5), Arg(10)))),
))
register_helper_call(BATCH_MATMUL_OP, BATCH_MATMUL_HELPERS, batch_matmul_helper_name, BATCH_MATMUL_ACCESS)
HELIUM_BATCH_MATMUL_OP = "tvm_ext.helium_batch_matmul_s8"
# Helium's twin: the same call and accesses, its own library (`helium_batch_matmul_s8.h.in`) and scratch
register_helper_call(HELIUM_BATCH_MATMUL_OP, HELIUM_BATCH_MATMUL_HELPERS, batch_matmul_helper_name,
                     BATCH_MATMUL_ACCESS)


def _largest_centered(zero_point: int) -> int:
    """The largest |x - zero_point| of an int8 x (tvm_ext.kernels.fixed_point.largest_centered's, which the backends
    do not import: tvm_ext.kernels imports them)."""
    return max(abs(-128 - zero_point), abs(127 - zero_point))


class _Activation(Protocol):
    low: int
    high: int


def _fits(lhs: te.Tensor, rhs: te.Tensor, depth: int, lhs_zero_point: int, rhs_zero_point: int, multiplier: int,
          shift: int, activation: _Activation, rounding: enum.Enum) -> bool:
    """Whether the helper computes this product's outputs (module docstring): int8 operands, TFLite's double
    rounding with a right shift of 1..31 and a multiplier above INT32_MIN, every sum small, no activation narrower
    than int8 (TFLite's BATCH_MATMUL has none; a fused clip keeps the generic kernel)."""
    largest = depth * _largest_centered(lhs_zero_point) * _largest_centered(rhs_zero_point)
    return (str(lhs.dtype) == "int8" and str(rhs.dtype) == "int8" and rounding.value == "double"
            and -31 <= shift <= -1 and multiplier != -2**31 and largest < SMALL_ACCUMULATOR_LIMIT
            and activation.low <= -128 and activation.high >= 127)


def _quantization(lhs_zero_point: int, rhs_zero_point: int, output_zero_point: int, shift: int) -> int:
    """The call's quantization word (an int32): the zero points of lhs, rhs and the output in bytes 0, 1 and 2 (int8
    each), the right shift less one (-1 - shift: 0..30) in byte 3."""
    word = (lhs_zero_point & 0xFF) | (rhs_zero_point & 0xFF) << 8 | (output_zero_point & 0xFF) << 16 | (-1 - shift) << 24
    return word - 2**32 if word >= 2**31 else word


def _batch_offset(shape: Sequence[int], batch_shape: Sequence[int], matrix: int, batch: tirx.Var,
                  index: str) -> tirx.PrimExpr:
    """The first element of an operand's matrix (batch dimensions `shape`, each matrix `matrix` elements) for the
    output's flat batch index `batch` (of type `index`; batch dimensions `batch_shape`, numpy's broadcast: `shape`
    aligned right)."""
    full = [1] * (len(batch_shape) - len(shape)) + list(shape)
    if full == list(batch_shape):
        return batch * tirx.const(matrix, index)
    offset = tirx.const(0, index)
    for axis, extent in enumerate(full):
        if extent == 1:
            continue
        inner = math.prod(batch_shape[axis + 1:])
        stride = math.prod(full[axis + 1:]) * matrix
        position = tirx.floormod(tirx.floordiv(batch, tirx.const(inner, index)), tirx.const(extent, index))
        offset = offset + position * tirx.const(stride, index)
    return offset


def int8_batch_matmul(lhs: te.Tensor, rhs: te.Tensor, *, lhs_zero_point: int, rhs_zero_point: int, adj_x: bool,
                      adj_y: bool, multiplier: int, shift: int, output_zero_point: int, activation: _Activation,
                      rounding: enum.Enum, op: str = BATCH_MATMUL_OP,
                      scratch_words=batch_matmul_scratch_words) -> te.Tensor | None:
    """An int8 BATCH_MATMUL (operands and keywords as `tvm_ext.kernels.batch_matmul_int8`'s: lhs [..., M, K], with
    adj_x [..., K, M]; rhs [..., K, N], with adj_y [..., N, K]) as a TE extern stage of one helper call per matrix of
    the batch, or None where the helper does not fit it (module docstring); `op` the helper's call (the DSP cores',
    or HELIUM_BATCH_MATMUL_OP), `scratch_words(cols, depth)` its scratch in int32 words."""
    lhs_shape, rhs_shape = [int(d) for d in lhs.shape], [int(d) for d in rhs.shape]
    rows = lhs_shape[-1] if adj_x else lhs_shape[-2]
    depth = lhs_shape[-2] if adj_x else lhs_shape[-1]
    cols = rhs_shape[-2] if adj_y else rhs_shape[-1]
    if not _fits(lhs, rhs, depth, lhs_zero_point, rhs_zero_point, int(multiplier), int(shift), activation, rounding):
        return None
    batch_shape = [int(d) for d in np.broadcast_shapes(tuple(lhs_shape[:-2]), tuple(rhs_shape[:-2]))]
    a_row, a_k = (1, rows) if adj_x else (depth, 1)
    b_k, b_col = (1, depth) if adj_y else (cols, 1)
    sizes = [rows, cols, depth, a_row, a_k, b_k, b_col,
             _quantization(lhs_zero_point, rhs_zero_point, output_zero_point, int(shift)), int(multiplier)]

    def build(ins, outs):
        index = str(outs[0].shape[0].ty.dtype)
        scratch = tirx.decl_buffer((scratch_words(cols, depth),), "int32", name="batch_matmul_pairs")
        batch = tirx.Var("batch", index)
        call = tirx.Evaluate(tirx.call_intrin(
            "int32", op, element_address(outs[0], batch * tirx.const(rows * cols, index)),
            element_address(ins[0], _batch_offset(lhs_shape[:-2], batch_shape, rows * depth, batch, index)),
            element_address(ins[1], _batch_offset(rhs_shape[:-2], batch_shape, depth * cols, batch, index)),
            scratch.access_ptr("w"), *(tirx.const(int(size), "int32") for size in sizes)))
        loop = tirx.For(batch, tirx.const(0, index), tirx.const(math.prod(batch_shape), index), tirx.ForKind.SERIAL,
                        call)
        return tirx.SeqStmt([tirx.AllocBuffer(scratch), loop])

    return extern_from_zero(batch_shape + [rows, cols], [lhs, rhs], build, "batch_matmul_int8")



helium_int8_batch_matmul = functools.partial(int8_batch_matmul, op=HELIUM_BATCH_MATMUL_OP,
                                             scratch_words=helium_batch_matmul_scratch_words)
"""`int8_batch_matmul` as Helium's twin computes it (`helium_batch_matmul_s8.h.in`: VMLADAVA on the operands as they
are, the zero points by row and column sums, tiles of one row by four columns), on the same domain."""
