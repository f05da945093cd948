"""The scalar FPU's float schedule on DSP cores without MVE (backends/cortex_m/schedules/helium_float.py with
FPU_FLOAT_OPS, float_tiles.py; the helpers backends/cortex_m/helpers/templates/fpu_float.h.in): on cortex-m4f a
float CONV_2D or FULLY_CONNECTED reduction tiled to eight output channels is one call of `<prefix>_fmac_f32x2` (a
pixel pair; a padded one's interior tiles too, its border one call per pixel and tap inside the image) with one
call of the float epilogue per pixel, and a pixel's loop over its one-pixel tiles (a fully connected layer) one
call of the fused `<prefix>_fmac_tiles_f32`; a tile of four channels and a depthwise reduction keep the scalar
loops. The results are the scalar kernels' bit for bit: the self-test's output checksums equal cortex-m55's (whose
Helium calls equal the scalar kernels', tests/backends/cortex_m/test_helium_float.py), and the bundle's portable C
passes its self-test on the host."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("tflite")
from test_helium_float import _bundle, _checksums, _weights  # noqa: E402
from test_requantize_epilogue import host_selftest_passes, needs_cross_tools  # noqa: E402
from tflite_builder import Model, Operator, Options, Tensor, build  # noqa: E402

RELU, RELU6 = 1, 3  # tflite.ActivationFunctionType
SAME, VALID = 0, 1  # tflite.Padding


def _fpu_model() -> bytes:
    """x [1, 6, 8, 5] -> a 1x1 CONV_2D to 16 channels with a ReLU (48 pixels: pairs; tiles of 8) -> y; y -> a 3x3
    SAME CONV_2D to 16 channels with a ReLU6 (padded: pairs inside and on the border) -> p, an output; x flattened
    -> a FULLY_CONNECTED to 24 with a ReLU (one pixel: three tiles, one fused call) -> f, an output; y -> a 1x1
    CONV_2D to 12 channels (tiles of 4: scalar) -> q, an output."""
    tensors = [Tensor("x", (1, 6, 8, 5), "float32"),
               Tensor("w1", (16, 1, 1, 5), "float32", data=_weights(16, 1, 1, 5)),
               Tensor("b1", (16,), "float32", data=_weights(16)),
               Tensor("y", (1, 6, 8, 16), "float32"),
               Tensor("wp", (16, 3, 3, 16), "float32", data=_weights(16, 3, 3, 16) * 0.5),
               Tensor("bp", (16,), "float32", data=_weights(16) + 2.0),
               Tensor("p", (1, 6, 8, 16), "float32"),
               Tensor("wf", (24, 240), "float32", data=_weights(24, 240)),
               Tensor("bf", (24,), "float32", data=_weights(24) * 0.25),
               Tensor("f", (1, 24), "float32"),
               Tensor("wq", (12, 1, 1, 16), "float32", data=_weights(12, 1, 1, 16)),
               Tensor("bq", (12,), "float32", data=_weights(12)),
               Tensor("q", (1, 6, 8, 12), "float32")]
    conv = {"StrideW": 1, "StrideH": 1, "FusedActivationFunction": 0}
    operators = [Operator("CONV_2D", (0, 1, 2), (3,), Options("Conv2DOptions", {**conv, "Padding": VALID,
                                                                                "FusedActivationFunction": RELU})),
                 Operator("CONV_2D", (3, 4, 5), (6,), Options("Conv2DOptions", {**conv, "Padding": SAME,
                                                                                "FusedActivationFunction": RELU6})),
                 Operator("FULLY_CONNECTED", (0, 7, 8), (9,), Options("FullyConnectedOptions",
                                                                     {"FusedActivationFunction": RELU})),
                 Operator("CONV_2D", (3, 10, 11), (12,), Options("Conv2DOptions", {**conv, "Padding": VALID}))]
    return build(Model(tensors, operators, (0,), (6, 9, 12)))


@needs_cross_tools
def test_fpu_float_reductions_are_helper_calls_with_the_scalar_results(tmp_path):
    bundle, kernels = _bundle(tmp_path, "cortex-m4f", _fpu_model(), "fpu")
    helium, _kernels = _bundle(tmp_path, "cortex-m55", _fpu_model(), "fpu")
    assert _checksums(bundle) == _checksums(helium)  # bit for bit with the scalar kernels
    pairs = re.findall(r"_fmac_f32x2\((.*)\);", kernels)
    singles = re.findall(r"_fmac_f32\((.*)\);", kernels)
    tiles = re.findall(r"_fmac_tiles_f32\((.*)\);", kernels)
    # the 1x1 layer: a pair per call, one row of 5 taps, tiles of 8 channels, the pair's inputs 5 apart; the SAME
    # 3x3 one: its interior pair (3 rows of 48 taps) and a border tap's call (the tap's 16 input channels)
    assert any(call.endswith(", 1, 5, 8, 5") for call in pairs), pairs
    assert any(call.endswith(", 3, 48, 8, 16") for call in pairs), pairs
    assert any(call.endswith(", 16, 0, 16, 1, 16, 8") for call in singles), singles
    # the fully connected layer: its three tiles one fused call (240 taps, 24 channels, ReLU: clamp 1)
    assert len(tiles) == 1 and tiles[0].endswith(", 1, 240, 24, 0.000000e+00f, 0.000000e+00f, 1"), tiles
    assert "void fpu_conv2d_add_1x1" in kernels  # the 12-channel 1x1 layer keeps its scalar loops
    # the 1x1 layer's ReLU one epilogue call per pixel (clamp 1); the ReLU6 arrives as TIR's clip, min then max,
    # which the epilogue (max then min: another result for a NaN) does not take: its loop stays
    epilogues = re.findall(r"_bias_act_f32\((.*)\);", kernels)
    assert [call[-1] for call in epilogues] == ["1"], epilogues
    assert "fmac_f32" not in kernels[kernels.index("void fpu_conv2d_add_1x1"):].split("\n}\n")[0]
    internal = (bundle.out_dir / "fpu_internal.h").read_text()
    assert "vldmia" in internal and "vmulq_n_f32(" not in internal  # the scalar FPU's helpers, not Helium's
    host_selftest_passes(bundle.out_dir)  # the same C on the host: the helpers' portable loops
