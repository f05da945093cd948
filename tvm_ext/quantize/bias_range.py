"""The least per-channel weight scale that keeps a MAC's int32 bias in the middle half of the int32 range.

TFLite's post-training quantizer (AdjustWeightsForBiasScale) widens a channel's weight scale when its bias,
quantized with scale input_scale x weight_scale, would reach half the int32 range: the channel's scale becomes
2 |bias| / (input_scale x INT32_MAX), so its quantized bias is about 2^30. Trained models hold such channels
(dead or nearly dead ones: tiny weights, a bias that alone decides the output). Without the rule their bias
is clipped to the int32 limits, which changes the channel's outputs and leaves no room to fold the input zero
point into the bias (`tvm_ext.kernels.zero_point_fold`): the whole layer then loses the integer pipeline's
fast paths (the zero point added on every multiply-accumulate, no dual 16-bit MAC).
"""

from __future__ import annotations

import numpy as np

INT32_MAX = 2**31 - 1


def least_weight_scales(bias: np.ndarray, input_scale: float) -> np.ndarray:
    """Per output channel (one per entry of the float `bias`), the smallest weight scale TFLite's rule
    allows: 2 |bias| / (input_scale x INT32_MAX), float64 (0 for a zero bias)."""
    return 2.0 * np.abs(np.asarray(bias, np.float64).reshape(-1)) / (float(input_scale) * INT32_MAX)
