"""A MAC layer's bias, each channel whose output saturates for every accumulator given the smallest bias
that saturates it alike (compile time, numpy): the outputs do not change, and the accumulators plus bias
stay small enough for the cheap requantization (`fixed_point.fits_small_input`).

A channel's output is clamp(MBQM(v) + zero_point, low, high) for v = acc + bias, |acc| <= reach. MBQM(v)
lies within 1 of r(v) = v * multiplier * 2^(shift - 31) (each of its two roundings is within 1/2), and grows
with v (multiplier > 0). So r(bias - reach) - 1 + zero_point >= high makes every output `high`, and
r(bias + reach) + 1 + zero_point <= low every output `low`: any bias meeting the same inequality gives the same
outputs. Trained models hold such channels (a dead channel's bias near 2^30 in vww_96_int8).
"""

from __future__ import annotations

import numpy as np

from .fixed_point import fits_small_input
from .quant_params import ActivationRange


def _replacement(bias: int, reach: int, multiplier: int, shift: int, zero_point: int,
                 activation: ActivationRange) -> int:
    """The bias nearest zero giving channel outputs identical to ``bias``'s, or ``bias``."""
    if multiplier <= 0:
        return bias
    scale_numerator = multiplier * 2 ** max(shift, 0)  # r(v) = v * scale_numerator / scale_denominator
    scale_denominator = 2 ** (31 + max(-shift, 0))
    if (bias - reach) * scale_numerator >= (activation.high - zero_point + 1) * scale_denominator:  # always high
        return reach + -(-(activation.high - zero_point + 1) * scale_denominator // scale_numerator)
    if (bias + reach) * scale_numerator <= (activation.low - zero_point - 1) * scale_denominator:  # always low
        return -reach + (activation.low - zero_point - 1) * scale_denominator // scale_numerator
    return bias


def saturated_bias(bias: np.ndarray, reach: np.ndarray, multipliers: np.ndarray, shifts: np.ndarray,
                   zero_point: int, activation: ActivationRange) -> np.ndarray:
    """``bias`` (one entry per channel) with each channel whose |bias| + ``reach`` (the largest |accumulator|)
    is not small replaced as the module says where that makes it small; ``multipliers``/``shifts`` per
    channel or one entry for all. The same dtype as ``bias``."""
    result = bias.copy()
    channels = np.broadcast_arrays(bias.astype(np.int64), reach, multipliers.astype(np.int64), shifts.astype(np.int64))
    for index, (value, largest, multiplier, shift) in enumerate(zip(*(c.tolist() for c in channels))):
        if fits_small_input(-abs(value) - largest, abs(value) + largest):
            continue
        replacement = _replacement(value, largest, multiplier, shift, zero_point, activation)
        if fits_small_input(-abs(replacement) - largest, abs(replacement) + largest):
            result[index] = replacement
    return result
