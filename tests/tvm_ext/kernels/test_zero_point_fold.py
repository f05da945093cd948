"""The input zero point folded into the bias (kernels/zero_point_fold.py): the int8 MAC kernels with
``zero_point_in_bias`` against the numpy reference of TFLite's rules, padding included."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm")

import tflite_int8_reference as ref  # noqa: E402
from test_int8_kernels import CONV_CASES, _channel_requant, _int8, _rng, run_te  # noqa: E402
from tvm_ext.kernels import OutputStage, Rounding, conv2d_int8, depthwise_conv2d_int8, fully_connected_int8  # noqa: E402
from tvm_ext.kernels.quant_params import ActivationRange, quantize_multiplier  # noqa: E402
from tvm_ext.kernels.zero_point_fold import fold_zero_point_into_bias  # noqa: E402


def test_fold_subtracts_zero_point_times_channel_weight_sums():
    weight = np.array([[1, 2], [3, -4], [5, 6]], np.int8)  # (K, O), channel axis 1
    folded = fold_zero_point_into_bias(np.array([10, 20], np.int32), weight, -128, channel_axis=1)
    np.testing.assert_array_equal(folded, [10 + 128 * 9, 20 + 128 * 4])
    assert folded.dtype == np.int32


def test_fold_that_does_not_fit_the_bias_storage_is_refused():
    weight = np.full((1, 4), 127, np.int8)
    np.testing.assert_array_equal(fold_zero_point_into_bias(np.array([5], np.int16), weight, 3, 0), [5 - 3 * 508])
    assert fold_zero_point_into_bias(np.array([32767 - 10], np.int16), weight, -128, channel_axis=0) is None
    assert fold_zero_point_into_bias(np.array([2**31 - 10], np.int32), weight, -128, channel_axis=0) is None


# (kernel, reference, weight shape after the kernel's (KH, KW), output channels), input channels are 4
CONVOLUTIONS = [(conv2d_int8, ref.conv2d, (4, 5), 5), (depthwise_conv2d_int8, ref.depthwise_conv2d, (8,), 8)]


@pytest.mark.parametrize("kernel, reference, weight_tail, channels", CONVOLUTIONS, ids=["conv", "depthwise"])
@pytest.mark.parametrize("case", CONV_CASES)
def test_convolution_with_folded_zero_point_matches_reference(kernel, reference, weight_tail, channels, case):
    hw, khw, strides, padding, in_zp, out_zp, act = case
    rng = _rng(11)
    x, w = _int8(rng, (1, *hw, 4)), _int8(rng, (*khw, *weight_tail))
    bias = rng.integers(-20000, 20000, channels).astype(np.int32)
    multipliers, shifts = _channel_requant(rng, channels, Rounding.DOUBLE)
    stage = OutputStage(0, 0, out_zp, ActivationRange(*act), Rounding.DOUBLE)
    folded = fold_zero_point_into_bias(bias, w, in_zp, channel_axis=-1)
    got = run_te(
        lambda a, b, c, m, s: kernel(a, b, c, input_zero_point=in_zp, output=stage, strides=strides, padding=padding,
                                     dilation=(1, 1), multiplier=m, shift=s, zero_point_in_bias=True),
        [x, w, folded, multipliers, shifts],
    )
    want = reference(x, w, bias, in_zp, out_zp, multipliers, shifts.astype(np.int64), strides, padding, (1, 1), act,
                     False)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("in_zp", [-128, 127, 0])
def test_fully_connected_with_folded_zero_point_matches_reference(in_zp):
    rng = _rng(13)
    x, w = _int8(rng, (2, 33)), _int8(rng, (7, 33))
    bias = rng.integers(-30000, 30000, 7).astype(np.int32)
    multiplier, shift = quantize_multiplier(0.0123, Rounding.DOUBLE)
    stage = OutputStage(multiplier, shift, 3, ActivationRange(), Rounding.DOUBLE)
    folded = fold_zero_point_into_bias(bias, w, in_zp, channel_axis=0)
    got = run_te(lambda a, b, c: fully_connected_int8(a, b, c, input_zero_point=in_zp, output=stage,
                                                      zero_point_in_bias=True), [x, w, folded])
    want = ref.fully_connected(x, w, bias, in_zp, 3, multiplier, shift)
    np.testing.assert_array_equal(got, want)
