"""Helium's float MAC schedule (backends/cortex_m/schedules/helium_float.py, the helper
backends/cortex_m/helpers/templates/helium_float.h.in): on cortex-m55 a float CONV_2D (1x1 and 3x3) or
FULLY_CONNECTED reduction tiled to output channels is one call of `<prefix>_fmac_f32` (one pixel) or `_f32x2` (a
pixel pair) per tile, a padded one's border tiles one call per pixel and tap inside the image, and each tile's bias
and activation one call of the float epilogue; the bundle's float
results are those of cortex-m4f's scalar kernels bit for bit (the self-tests' output checksums under QEMU, and the
helper's portable C on the host), and other cores keep the scalar kernels."""

from __future__ import annotations

import json
import re
from typing import Optional

import numpy as np
import pytest

pytest.importorskip("tflite")
from test_requantize_epilogue import host_selftest_passes, needs_cross_tools  # noqa: E402
from tflite_builder import Model, Operator, Options, Tensor, build  # noqa: E402

from tvm_ext.compile import compile  # noqa: E402

RELU = 1  # tflite.ActivationFunctionType
SAME, VALID = 0, 1  # tflite.Padding


def _weights(*shape: int) -> np.ndarray:
    """Seeded float32 weights in [-1, 1)."""
    return np.random.default_rng(sum(shape)).uniform(-1, 1, shape).astype(np.float32)


def _float_model() -> bytes:
    """x [1, 6, 8, 5] -> a 1x1 CONV_2D to 12 channels with a ReLU (48 pixels: pairs; 12 channels: tiles of 4)
    -> y; y -> a 3x3 VALID CONV_2D to 8 channels (4x6 pixels, pairs: a window of 3 rows) -> z, an output; y -> a
    3x3 SAME CONV_2D to 8 channels (padded: 6x8 pixels, pairs inside and on the border) -> p, an output; x
    flattened -> a FULLY_CONNECTED to 8 -> f, an output; y -> a 3x3 SAME DEPTHWISE_CONV_2D with a ReLU (12
    channels: tiles of 4) -> d, an output."""
    tensors = [Tensor("x", (1, 6, 8, 5), "float32"),
               Tensor("w1", (12, 1, 1, 5), "float32", data=_weights(12, 1, 1, 5)),
               Tensor("b1", (12,), "float32", data=_weights(12)),
               Tensor("y", (1, 6, 8, 12), "float32"),
               Tensor("w3", (8, 3, 3, 12), "float32", data=_weights(8, 3, 3, 12)),
               Tensor("b3", (8,), "float32", data=_weights(8)),
               Tensor("z", (1, 4, 6, 8), "float32"),
               Tensor("wp", (8, 3, 3, 12), "float32", data=_weights(8, 3, 3, 12) * 0.5),
               Tensor("p", (1, 6, 8, 8), "float32"),
               Tensor("wf", (8, 240), "float32", data=_weights(8, 240)),
               Tensor("bf", (8,), "float32", data=_weights(8) * 0.25),
               Tensor("f", (1, 8), "float32"),
               Tensor("wd", (1, 3, 3, 12), "float32", data=_weights(1, 3, 3, 12)),
               Tensor("bd", (12,), "float32", data=_weights(12) * 0.5),
               Tensor("d", (1, 6, 8, 12), "float32")]
    conv = {"StrideW": 1, "StrideH": 1, "FusedActivationFunction": 0}
    operators = [Operator("CONV_2D", (0, 1, 2), (3,), Options("Conv2DOptions", {**conv, "Padding": VALID,
                                                                                "FusedActivationFunction": RELU})),
                 Operator("CONV_2D", (3, 4, 5), (6,), Options("Conv2DOptions", {**conv, "Padding": VALID})),
                 Operator("CONV_2D", (3, 7, 5), (8,), Options("Conv2DOptions", {**conv, "Padding": SAME})),
                 Operator("FULLY_CONNECTED", (0, 9, 10), (11,), Options("FullyConnectedOptions", {})),
                 Operator("DEPTHWISE_CONV_2D", (3, 12, 13), (14,),
                          Options("DepthwiseConv2DOptions", {**conv, "Padding": SAME, "DepthMultiplier": 1,
                                                             "FusedActivationFunction": RELU}))]
    return build(Model(tensors, operators, (0,), (6, 8, 11, 14)))


def _bundle(tmp_path, target: str, model_bytes: Optional[bytes] = None, name: str = "floats"):
    """(the float model's bundle for `target`, its kernels' C), its self-test passed: `_float_model`'s, or that of
    `model_bytes` (a .tflite) named `name`."""
    model = tmp_path / f"{name}.tflite"
    model.write_bytes(model_bytes or _float_model())
    bundle = compile(model, target, tmp_path / target)
    assert bundle.selftest.passed, bundle.selftest.output
    return bundle, (bundle.out_dir / f"{bundle.plan.model}_kernels.c").read_text()


def _checksums(bundle) -> list[str]:
    """The self-test's checksum of each case's each output (its manifest's)."""
    return [entry["checksum"] for entry in json.loads((bundle.out_dir / "manifest.json").read_text())["selftest"][
        "outputs"]]


@needs_cross_tools
def test_helium_float_reductions_are_vector_calls_with_the_scalar_results(tmp_path):
    bundle, kernels = _bundle(tmp_path, "cortex-m55")
    assert bundle.selftest.where == "mps3-an547"
    scalar, _kernels = _bundle(tmp_path, "cortex-m4f")
    assert _checksums(bundle) == _checksums(scalar)  # bit for bit with the scalar kernels
    pairs = re.findall(r"_fmac_f32x2\((.*)\);", kernels)
    singles = re.findall(r"_fmac_f32\((.*)\);", kernels)
    # the 1x1 layer (a pair per call: one row of 5 taps, tiles of 4 channels, the pair's inputs 5 apart) and the
    # 3x3 VALID one (3 rows of 36 taps, 8 channels in tiles of 4: a tile of all of them is left untiled)
    assert any(call.endswith(", 1, 5, 4, 5") for call in pairs), pairs
    assert any(call.endswith(", 3, 36, 4, 12") for call in pairs), pairs
    assert any(call.endswith(", 1, 240, 4") for call in singles), singles  # the fully connected layer
    # the SAME convolution: its tiles' test, then the pair's call (inside the image) or a border tap's (the tap's
    # 12 input channels)
    assert any(call.endswith(", 12, 0, 8, 1, 12, 4") for call in singles), singles
    assert len(pairs) == 3 and len(singles) == 2, kernels
    # the depthwise one: a pair's 3x3 window (rows 96 apart, taps 12) inside the image, a border tap's 4 channels
    depthwise_pairs = re.findall(r"_fmac_dw_f32x2\((.*)\);", kernels)
    depthwise_taps = re.findall(r"_fmac_dw_f32\((.*)\);", kernels)
    assert [call.endswith("96, 12, 36, 12, 3, 3, 4, 12") for call in depthwise_pairs] == [True], depthwise_pairs
    assert [call.endswith("0, 0, 0, 0, 1, 1, 4") for call in depthwise_taps] == [True], depthwise_taps
    # each tile's bias and activation one call of the float epilogue: the 1x1 and depthwise layers' ReLU (clamp 1),
    # the other convolutions' and the fully connected layer's bias alone (clamp 0)
    epilogues = re.findall(r"_bias_act_f32\((.*)\);", kernels)
    assert sorted(call[-1] for call in epilogues) == ["0", "0", "0", "1", "1"], epilogues
    internal = (bundle.out_dir / "floats_internal.h").read_text()
    assert "vmulq_n_f32(" in internal and "vmladavaq" not in internal  # only the float helpers are defined
    host_selftest_passes(bundle.out_dir)  # the same C on the host: the helper's portable loops


@needs_cross_tools
def test_other_cores_keep_the_scalar_float_kernels(tmp_path):
    _bundle_, kernels = _bundle(tmp_path, "cortex-m4f")  # its tiles are of 4 channels or none: no FPU group of 8
    assert "_fmac_f32" not in kernels and "_fmac_dw_f32" not in kernels
