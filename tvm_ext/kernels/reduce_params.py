"""Compile-time parameters of TFLite Micro's int8 MEAN and SUM (``reference_ops::QuantizedMeanOrSum``).

Pure Python (no TVM). Both rescale the int32 sum of the reduced int8 values by input_scale/output_scale;
MEAN folds the division by the reduced element count into that multiplier, as the reference does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .fixed_point import Rounding
from .quant_params import rescale_multiplier


@dataclass(frozen=True)
class ReduceParams:
    """How a sum of ``count`` int8 values becomes the int8 output: MBQM(sum - zp_in*count, multiplier, shift)."""

    multiplier: int
    shift: int


def sum_params(input_scale: np.float32, output_scale: np.float32, rounding: Rounding) -> ReduceParams:
    """SUM: the rescale input_scale/output_scale (TFLite's QuantizeMultiplier of the double ratio)."""
    return ReduceParams(*rescale_multiplier(input_scale, output_scale, rounding))


def mean_params(input_scale: np.float32, output_scale: np.float32, count: int, rounding: Rounding) -> ReduceParams:
    """MEAN over ``count`` (> 0) elements: SUM's multiplier times 2^s / count (truncated), shift lowered by s,
    with s = floor(log2(count)) clamped to 32 and to 31 + shift (so that the final shift stays >= -31)."""
    multiplier, shift = rescale_multiplier(input_scale, output_scale, rounding)
    scale_up = min(count.bit_length() - 1, 32, 31 + shift)
    return ReduceParams((multiplier << scale_up) // count, shift - scale_up)
