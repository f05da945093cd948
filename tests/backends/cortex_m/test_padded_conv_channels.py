"""A CONV_2D whose output channels are not whole tiles of the DSP cores' dual MAC (four) takes the dual MAC anyway:
on cortex-m4f the int8 lowering pads its weights with zero output channels to whole tiles (`tvm_ext.transform.int8
.conv._padded_channels`, as a FULLY_CONNECTED's), the kernel computes the zero channels' sums and never stores them
(`tvm_ext.kernels.conv.conv2d_int8`'s `units`). Before, any such convolution (odd counts, 3, 5, 9 ...) ran the generic
scalar loop nest, whatever its window (the layer sweep of scripts/layer_sweep.py: 5.1-12.1 instructions per MAC).
Here a 1x1 layer of 7 channels, a 3x3 stride-2 one of 5, a 5x5 one of 9 channels, a 3x3 one of dilation 2 and
9 channels and a 7x7 stride-2 one of 3 channels (fewer than a tile) each call the dual MAC (or its fused tiles) and no scalar MAC, bit for bit
with TFLite Micro under QEMU mps2-an386 and in the host build, warning-free, and the report counts each layer's own
MACs (not the zero channels'). A convolution of one output pixel keeps the scalar loop (its code is smaller, the
loop runs once)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_border_split import _kernel_bodies, kernels_bit_exact_everywhere  # noqa: E402
from test_requantize_epilogue import bit_exact_bundle, needs_cross_tools  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402

_SPEC = importlib.util.spec_from_file_location(
    "layer_sweep", Path(__file__).resolve().parents[3] / "scripts" / "layer_sweep.py")
layer_sweep = importlib.util.module_from_spec(_SPEC)
sys.modules.setdefault("layer_sweep", layer_sweep)
_SPEC.loader.exec_module(layer_sweep)
Conv = layer_sweep.Conv

LAYERS = [Conv(1, out_channels=7), Conv(3, 2, out_channels=5), Conv(5, out_channels=9), Conv(3, dilation=2, out_channels=9),
          Conv(7, 2, out_channels=3)]
VALID = 1  # tflite.Padding
IMAGE = (1, 11, 9, 6)  # odd sizes: the stride-2 layers read a padded last row and column; every layer has interior pixels


def _model(shape: tuple[int, ...], layers: list) -> bytes:
    """One int8 input of ``shape``, each of ``layers`` (SAME padding) reading it and writing a model output."""
    sweep = layer_sweep._Sweep(shape, seed=29)
    for layer in layers:
        sweep.conv(layer)
    return layer_sweep.build(sweep.model())


SCALAR_MAC = re.compile(r"acc\w*\[\d+\] = \(acc\w*\[\d+\] \+ ")
"""A scalar MAC of the generic loop nest: ``acc_ptr[0] = (acc_ptr[0] + (((int32_t)input0[...]) * ...``."""
DUAL_MAC = re.compile(r"_(dual_mac_s8x4|conv_tiles_(part_)?s8x4(_b16)?|pair_tiles_s8(_b16)?)\(")
GUARDED_EPILOGUE = re.compile(r"if \(\(\(\w+ \* 4\) \+ \w+\) < \d+\)")
"""A padded channel tile's scalar requantization under its channel test: ``if (((o_0 * 4) + ax0) < 7) {``."""


@needs_cross_tools
def test_convolutions_of_partial_channel_tiles_take_the_dual_mac_bit_exactly(tmp_path):
    kernels = kernels_bit_exact_everywhere(tmp_path, "padded_channels", _model(IMAGE, LAYERS))
    convolutions = {name: "\n".join(body) for name, body in kernels.items() if "_conv_2d_" in name}
    assert len(convolutions) == len(LAYERS), sorted(kernels)
    for name, body in convolutions.items():
        assert DUAL_MAC.search(body) and not SCALAR_MAC.search(body), (name, body)
    manifest = json.loads((tmp_path / "m4f" / "manifest.json").read_text())
    macs = {call["kernel"]: call["macs"] for call in manifest["layer_report"]["calls"]}
    height, width, channels = IMAGE[1:]
    for layer in LAYERS:
        pixels = -(-height // layer.stride) * -(-width // layer.stride)
        expected = pixels * layer.out_channels * layer.kernel ** 2 * channels
        assert expected in [count for kernel, count in macs.items()
                            if kernel.endswith(f"x{layer.out_channels}")], (layer, macs)


@needs_cross_tools
def test_helium_convolutions_of_partial_channel_tiles_take_the_dual_mac_bit_exactly(tmp_path):
    """On cortex-m55 too (`kernel_schedules`' dense_unit_tile on every core with the DSP extension): a 1x1 layer of
    30 -> 30 channels (a DS-CNN of width 30: no tile of 16, 8 or 4 divides them) and a 3x3 stride-2 one of 5 channels
    call the dual MAC, whose Helium body runs a predicated last vector, and no scalar MAC, bit for bit with TFLite
    Micro under QEMU mps3-an547. Before, Helium kept the scalar loop nest for any such layer (ds_cnn_w30_49x10 on
    cortex-m55: 6.1 M instructions where cortex-m4f's padded tiles took 3.0 M). Each pixel's tiles are one call of
    the fused channel tiles of the layer's own channel count (`conv_tiles.HELIUM_CONV_TILES`' partial form: their
    last tile the last four channels), no scalar epilogue under a channel test left (before, the dual MAC's calls
    and that epilogue per tile: resnet8_w15_40x24_int8 on cortex-m55, 10,580 B of code where cortex-m4f's took
    7,728)."""
    _, kernels = bit_exact_bundle(tmp_path, "helium_padded", _model((1, 7, 5, 30), [Conv(1, out_channels=30),
                                                                                  Conv(3, 2, out_channels=5)]),
                                  "cortex-m55", "mps3-an547")
    convolutions = {name: "\n".join(body) for name, body in _kernel_bodies(kernels).items() if "_conv_2d_" in name}
    assert len(convolutions) == 2, kernels
    for name, body in convolutions.items():
        channels = name.rsplit("x", 1)[1]
        fused = re.compile(rf"_conv_tiles_(shared_)?s8(_b16)?\((.*), {channels}\);")
        assert fused.search(body) and not GUARDED_EPILOGUE.search(body) and not SCALAR_MAC.search(body), (name, body)


@needs_cross_tools
def test_a_convolution_of_one_output_pixel_keeps_its_scalar_loop(tmp_path):
    """400 MACs: the padded kernel's code would cost more than it saves (`conv_tiles.one_row_padding_pays`)."""
    kernels = kernels_bit_exact_everywhere(tmp_path, "one_pixel", _model((1, 1, 1, 40), [Conv(1, out_channels=10)]))
    (body,) = ("\n".join(body) for name, body in kernels.items() if "_conv_2d_" in name)
    assert SCALAR_MAC.search(body) and not DUAL_MAC.search(body), body


@needs_cross_tools
def test_a_large_convolution_of_one_output_pixel_pads_its_channels_bit_exactly(tmp_path):
    """A classifier head of 10 channels over 1024 inputs (10 k MACs) pays for its padded kernel at the one price of
    code (`conv_tiles.one_row_padding_pays`): the dual MAC, no scalar MAC; 2 channels over 256 inputs do not."""
    kernels = kernels_bit_exact_everywhere(tmp_path, "one_pixel_head", _model(
        (1, 1, 1, 1024), [Conv(1, out_channels=10), Conv(1, out_channels=2)]))
    convolutions = {name: "\n".join(body) for name, body in kernels.items() if "_conv_2d_" in name}
    (large,) = (body for name, body in convolutions.items() if name.endswith("_10"))
    (small,) = (body for name, body in convolutions.items() if name.endswith("_2"))
    assert DUAL_MAC.search(large) and not SCALAR_MAC.search(large), large
    assert SCALAR_MAC.search(small) and not DUAL_MAC.search(small), small

@needs_cross_tools
def test_a_dilated_convolution_copies_its_interior_windows_for_the_dual_mac_bit_exactly(tmp_path):
    """A window of several rows whose columns are not adjacent (dilation 2 and 3: whole channel tiles, so no padded
    channels) is no run the dual MAC reads in place: its interior pixels copy their windows as its border pixels do
    (`tvm_ext.schedule.border_split._helper_fits`), where they had run the scalar loop nest."""
    layers = [Conv(3, dilation=2, out_channels=8), Conv(3, dilation=3, out_channels=12)]
    kernels = kernels_bit_exact_everywhere(tmp_path, "dilated", _model(IMAGE, layers))
    convolutions = {name: "\n".join(body) for name, body in kernels.items() if "_conv_2d_" in name}
    assert len(convolutions) == len(layers), sorted(kernels)
    for name, body in convolutions.items():
        assert DUAL_MAC.search(body) and not SCALAR_MAC.search(body), (name, body)


@needs_cross_tools
def test_pixel_pairs_of_partial_channel_tiles_are_one_fused_call_bit_exactly(tmp_path):
    """1x1 convolutions over 16 input channels pair their pixels (`pair_tiles.pays_two_pixels`); to 7 and 6 output
    channels (padded to 8) each pair is one call of the partial pair tiles (an odd last channel, a last tile of two),
    no scalar epilogue under a channel test left."""
    kernels = kernels_bit_exact_everywhere(tmp_path, "paired_partial",
                                           _model((1, 5, 8, 16), [Conv(1, out_channels=7), Conv(1, out_channels=6)]))
    convolutions = {name: "\n".join(body) for name, body in kernels.items() if "_conv_2d_" in name}
    assert len(convolutions) == 2, sorted(kernels)
    for name, body in convolutions.items():
        assert "_pair_tiles_part_s8" in body and not GUARDED_EPILOGUE.search(body) and not SCALAR_MAC.search(body), \
            (name, body)


@needs_cross_tools
def test_a_layer_whose_calls_pay_takes_the_partial_tiles_and_a_small_one_keeps_its_loop_bit_exactly(tmp_path):
    """A 1x1 convolution of 5 -> 7 channels over 24x28 pixels (over 1-4 input channels the pointwise helper takes
    it: `pointwise_few`): each pixel's tiles one fused call, the last tile of
    fewer channels inside it (its 672 calls pay the inlined code: `conv_tiles.partial_tiles_pay`); at stride 2 (168
    pixels) they do not, and the layer keeps its tiles' loop and scalar epilogue under the channel test."""
    kernels = kernels_bit_exact_everywhere(tmp_path, "partial_price",
                                           _model((1, 24, 28, 5), [Conv(1, out_channels=7), Conv(1, 2, out_channels=7)]))
    convolutions = {name: "\n".join(body) for name, body in kernels.items() if "_conv_2d_" in name}
    (large,) = (body for name, body in convolutions.items() if "_24x28x7" in name)
    (small,) = (body for name, body in convolutions.items() if "_12x14x7" in name)
    assert "_conv_tiles_part_s8x4" in large and not GUARDED_EPILOGUE.search(large), large
    assert "_conv_tiles_part_s8x4" not in small and GUARDED_EPILOGUE.search(small), small


def _conv_then_leaky_relu_model(shape: tuple[int, ...], out_channels: int, seed: int = 3) -> bytes:
    """One int8 input of ``shape`` through a 1x1 VALID CONV_2D to ``out_channels`` (per-channel weights) and a
    LEAKY_RELU (alpha 0.1), its output the model's."""
    rng = np.random.default_rng(seed)
    model = Model([Tensor("image", shape, "int8", Quantization((0.05,), (-3,)))], [], (0,), ())
    _, height, width, channels = shape
    weight_scales = tuple(0.004 + 0.001 * (c % 5) for c in range(out_channels))
    model.tensors += [
        Tensor("conv/weights", (out_channels, 1, 1, channels), "int8",
               Quantization(weight_scales, (0,) * out_channels, 0),
               rng.integers(-127, 128, (out_channels, 1, 1, channels)).astype(np.int8)),
        Tensor("conv/bias", (out_channels,), "int32",
               Quantization(tuple(0.05 * s for s in weight_scales), (0,) * out_channels, 0),
               rng.integers(-3000, 3000, out_channels).astype(np.int32)),
        Tensor("conv/output", (1, height, width, out_channels), "int8", Quantization((0.3,), (5,))),
        Tensor("leaky_relu", (1, height, width, out_channels), "int8", Quantization((0.2,), (-100,)))]
    model.operators += [
        Operator("CONV_2D", (0, 1, 2), (3,),
                 Options("Conv2DOptions", {"Padding": VALID, "StrideW": 1, "StrideH": 1, "DilationWFactor": 1,
                                           "DilationHFactor": 1}), 3),
        Operator("LEAKY_RELU", (3,), (4,), Options("LeakyReluOptions", {"Alpha": 0.1}), 2)]
    model.outputs += (4,)
    return build(model)


@needs_cross_tools
@pytest.mark.parametrize("shape, helper", [((1, 24, 28, 5), "_requantize_small_lut_s8"),
                                           ((1, 5, 8, 16), "_pair_tiles_part_lut_s8")],
                         ids=["one_pixel_tiles", "pixel_pairs"])
def test_partial_channel_tiles_with_a_table_after_them_call_the_table_helpers_bit_exactly(tmp_path, shape, helper):
    """A LEAKY_RELU fused into a convolution of 7 output channels makes its padded tile's epilogue a requantization
    and a table lookup: its loop under the channel test becomes one call of the table epilogue, its count the
    channels below the bound (`requantize_epilogue_call` with `partial_tables`; the one-pixel partial tiles store
    requantized values only, `DSP_UNTABLED_EPILOGUE`), and where the pixels pair (5x8x16) the pair's tiles one call
    of the partial pair tiles with the table (`pair_tiles_part_lut_s8`): no scalar epilogue under the test is left."""
    kernels = kernels_bit_exact_everywhere(tmp_path, "partial_table", _conv_then_leaky_relu_model(shape, 7))
    (body,) = ("\n".join(body) for name, body in kernels.items() if "_conv_2d_" in name)
    assert helper in body and not GUARDED_EPILOGUE.search(body), body
