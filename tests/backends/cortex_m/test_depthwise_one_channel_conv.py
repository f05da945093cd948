"""A DEPTHWISE_CONV_2D of one input channel and depth multiplier M (a TFLite model's stem: person_detect's first
layer, micro_speech's only convolution) computes what a CONV_2D of one input channel and M output channels
computes, and runs as one on a DSP core: TVM imports it as a plain convolution (groups 1, HWIO weights
(KH, KW, 1, M)), the int8 lowering reads those weights as the conv's OHWI rows (tvm_ext/transform/int8/conv.py)
and the DSP schedule gives each pixel's window (rows of KW bytes: short) one copy and every channel tile one
dual-MAC call over it (or a pixel's tiles one fused call) (backends/cortex_m/schedules/border_window.py), or, for a
window of `window1_conv.MIN_TAPS` taps or more (these 3x3 ones), every pixel and channel in one call of the one-channel
window helper (backends/cortex_m/schedules/window1_conv.py), never the per-channel depthwise helpers.
Bit for bit with TFLite Micro under QEMU, on the host and warning-free, strided and padded or not, a multiplier of
exactly one four-channel tile too (`DualMacSchedules.whole_channel_tile`), and a multiplier that four does not divide
(its output channels padded with zero weight rows to whole tiles: tvm_ext/transform/int8/conv.py, _padded_channels)."""

from __future__ import annotations

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_border_split import kernels_bit_exact_everywhere  # noqa: E402
from test_requantize_epilogue import needs_cross_tools  # noqa: E402
from tflite_models import SAME, VALID, DepthwiseCase, depthwise_model  # noqa: E402


def _stem_kernels(tmp_path, multiplier: int) -> dict[str, str]:
    """The kernels (name: C body) of a model of two one-channel depthwise layers of depth `multiplier` on a 12x12
    image (3x3 stride 2 SAME: person_detect's stem form; 3x3 stride 1 VALID), after checking the cortex-m4f
    bundle against TFLite Micro under QEMU and on the host, warning-free."""
    cases = [DepthwiseCase(2, SAME), DepthwiseCase(1, VALID)]
    model = depthwise_model(1, multiplier, cases, image=12, seed=multiplier)
    kernels = kernels_bit_exact_everywhere(tmp_path, f"stem{multiplier}", model)
    assert len(kernels) == len(cases), list(kernels)
    return {name: "\n".join(body) for name, body in kernels.items()}


def _runs_as_convolution(body: str) -> bool:
    """Whether a kernel multiplies through the convolution's helpers (the dual MAC over a copied window, four
    channels per call, the fused call over a pixel's channel tiles, or the one-channel window helper) and none of the
    depthwise helpers."""
    return any(helper in body for helper in ("_dual_mac_s8x4(", "_conv_tiles_s8", "_window1_conv_s8(")) \
        and "_depthwise_" not in body


@needs_cross_tools
@pytest.mark.parametrize("multiplier", [8, 12, 4, 6])  # person_detect's and micro_speech's; three tiles; one; 1.5
def test_a_one_channel_depthwise_stem_runs_as_a_convolution_bit_exactly(multiplier, tmp_path):
    kernels = _stem_kernels(tmp_path, multiplier)
    assert all(_runs_as_convolution(body) for body in kernels.values()), kernels
