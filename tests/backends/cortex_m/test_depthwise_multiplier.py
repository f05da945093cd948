"""DEPTHWISE_CONV_2D with a depth multiplier, bit-exact with TFLite Micro.

TVM imports a depthwise convolution with one input channel as a plain convolution on the kernel reshaped
(1, KH, KW, M) -> (KH, KW, 1, M), and one with several input channels as a grouped convolution on
(KH, KW, C*M, 1). The int8 lowering once dropped that reshape and read (1, 3, 3, 8) as HWIO (a 1x3
kernel): person_detect's first layer. Each model here has one DEPTHWISE_CONV_2D per stride (1, 2) and
padding (SAME, VALID); the bundle's self-test compares every output with TFLite Micro's, 0 LSB allowed.
"""

from __future__ import annotations

import pytest

from tflite_models import SAME, VALID, DepthwiseCase, depthwise_model
from tvm_ext.compile import compile

CASES = [DepthwiseCase(stride, padding) for stride in (1, 2) for padding in (SAME, VALID)]


@pytest.mark.parametrize("multiplier", [1, 2, 8])
@pytest.mark.parametrize("input_channels", [1, 3])
def test_depthwise_with_multiplier_matches_tflite_micro(tmp_path, input_channels, multiplier):
    model = tmp_path / f"dw_c{input_channels}_m{multiplier}.tflite"
    model.write_bytes(depthwise_model(input_channels, multiplier, CASES))
    bundle = compile(model, "lowpower", tmp_path / "out")
    assert bundle.selftest.passed, bundle.selftest.output
    assert bundle.selftest.max_errors == (0,) * len(CASES)
    assert bundle.selftest.max_errors == (0,) * len(CASES)


def test_depthwise_with_per_tensor_weights_matches_tflite_micro(tmp_path):
    """Per-tensor weights: TVM reshapes the constant itself to (KH, KW, C*M, 1) (no reshape in the graph)."""
    model = tmp_path / "dw_per_tensor.tflite"
    model.write_bytes(depthwise_model(3, 2, CASES, per_channel=False))
    bundle = compile(model, "lowpower", tmp_path / "out")
    assert bundle.selftest.passed, bundle.selftest.output
    assert bundle.selftest.max_errors == (0,) * len(CASES)
