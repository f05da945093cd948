"""The input zero point of an int8 MAC kernel folded into its bias at compile time.

sum_k (x_k - zp) * w_k + b = sum_k x_k * w_k + (b - zp * sum_k w_k): the second term is a constant per
output channel, so the kernel's inner loop multiplies raw int8 values (as CMSIS-NN's ``kernel_sum``). A padded
tap holds the zero point itself, so it still contributes (zp - zp) * w = 0. A folded bias is kept only
where it fits the bias's own storage (int16 or int32): the fold then costs no flash.
"""

from __future__ import annotations

from typing import Optional

import numpy as np



def fold_zero_point_into_bias(
    bias: np.ndarray, weight: np.ndarray, input_zero_point: int, channel_axis: int,
) -> Optional[np.ndarray]:
    """``bias - input_zero_point * (sum of each output channel's weights)`` in ``bias``'s dtype, one entry per
    index of ``weight``'s ``channel_axis``; None when an entry does not fit that dtype (folding would then cost
    flash: the kernel subtracts the zero point in its reduction instead)."""
    axes = tuple(axis for axis in range(weight.ndim) if axis != channel_axis % weight.ndim)
    sums = weight.astype(np.int64).sum(axis=axes)
    folded = bias.astype(np.int64).reshape(sums.shape) - np.int64(input_zero_point) * sums
    limits = np.iinfo(bias.dtype)
    if folded.min(initial=0) < limits.min or folded.max(initial=0) > limits.max:
        return None
    return folded.astype(bias.dtype)
