"""TE definition of TFLite's int8 BATCH_MATMUL (int32 accumulation, per-tensor requantization, broadcast batch) and
of its 16x8 form (int16 operands with zero points 0, int64 accumulation, TFLite's int64 requantization to int16:
TFLite Micro's ``reference_ops::BatchMatMul<int16_t, int64_t>``).

output[..., i, j] = requantize(sum_k (lhs[..., i, k] - lhs_zp) * (rhs[..., k, j] - rhs_zp)), with ``adj_x``
reading lhs as [..., k, i] and ``adj_y`` rhs as [..., j, k]; batch dimensions broadcast (numpy rules, the
lower-rank operand aligned right) as TFLite Micro's reference kernel does.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from tvm import te

from .fixed_point import Rounding, fits_small_input, largest_centered, shifts_right_only
from .quant_params import ActivationRange
from .requantize import OutputStage, accumulator_dtype, requantize


def _batch_index(shape: Sequence[int], batch: Sequence, out_batch_rank: int) -> list:
    """The index into an operand's batch dimensions ``shape`` for output batch index ``batch``."""
    offset = out_batch_rank - len(shape)
    return [0 if extent == 1 else batch[offset + axis] for axis, extent in enumerate(shape)]


def batch_matmul_int8(
    lhs: te.Tensor, rhs: te.Tensor, *, lhs_zero_point: int, rhs_zero_point: int, adj_x: bool, adj_y: bool,
    multiplier: int, shift: int, output_zero_point: int, activation: ActivationRange, rounding: Rounding,
) -> te.Tensor:
    """BATCH_MATMUL: int8 lhs [..., M, K] (adj_x: [..., K, M]) x int8 rhs [..., K, N] (adj_y: [..., N, K]) -> int8;
    int16 operands -> int16 (16x8)."""
    lhs_shape, rhs_shape = [int(d) for d in lhs.shape], [int(d) for d in rhs.shape]
    rows = lhs_shape[-1] if adj_x else lhs_shape[-2]
    depth = lhs_shape[-2] if adj_x else lhs_shape[-1]
    cols = rhs_shape[-2] if adj_y else rhs_shape[-1]
    batch_shape = tuple(int(d) for d in np.broadcast_shapes(tuple(lhs_shape[:-2]), tuple(rhs_shape[:-2])))
    # every sum's magnitude at most depth x both operands' largest centered values: where that is small and the
    # shift right only, TFLite's double rounding is the cheaper "double_small" helper (the same results)
    largest = depth * largest_centered(lhs.dtype, lhs_zero_point) * largest_centered(rhs.dtype, rhs_zero_point)
    stage = OutputStage(multiplier, shift, output_zero_point, activation, rounding,
                        right_shift_only=shifts_right_only(multiplier, shift),
                        small_accumulator=fits_small_input(-largest, largest))
    accumulator = accumulator_dtype(lhs, stage)
    k = te.reduce_axis((0, depth), "k")

    def acc_at(*index):
        batch, i, j = index[:-2], index[-2], index[-1]
        lhs_at = _batch_index(lhs_shape[:-2], batch, len(batch_shape)) + ([k, i] if adj_x else [i, k])
        rhs_at = _batch_index(rhs_shape[:-2], batch, len(batch_shape)) + ([j, k] if adj_y else [k, j])
        return te.sum((lhs[tuple(lhs_at)].astype(accumulator) - lhs_zero_point)
                      * (rhs[tuple(rhs_at)].astype(accumulator) - rhs_zero_point), axis=k)

    acc = te.compute(batch_shape + (rows, cols), acc_at, name="acc")
    return te.compute(acc.shape, lambda *index: requantize(acc[index], 0, stage), name="batch_matmul_int8")
