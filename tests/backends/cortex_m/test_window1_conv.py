"""The DSP cores' kernel of an int8 convolution whose window reads few input channels
(backends/cortex_m/schedules/window1_conv.py, the helper backends/cortex_m/helpers/templates/window1_conv.h.in): on
cortex-m4f a CONV_2D on one input channel and a DEPTHWISE_CONV_2D of one input channel (its multiplier the output
channels) of a window of 9 taps or more (MIN_TAPS) are one call of `<prefix>_window1_conv_s8` each, whatever the
window, stride, dilation, padding and output channel count (kws_ref_model's 10x4 stride-2 SAME stem; a 4x8 window of
strides 1 and 3, VALID; a 5x5 depthwise of multiplier 6 and dilation 2, SAME, its 25 taps not a multiple of four;
a 3x3 stride-2 window, 9 taps; a fused RELU of output zero point -128), bit for bit with TFLite Micro under QEMU
mps2-an386 and in the host build (the helper's portable C), warning-free; a 2x4 window (8 taps, under MIN_TAPS) and a
RELU6 (an activation narrower than int8) keep the generic kernel; a bundle without such a layer defines no helper,
and a Helium core keeps the generic kernel. On two to four input channels (MAX_CHANNELS) the same: an RGB stem's 3x3
stride-2 SAME window of three channels (27 taps summed as 28 over the weights' zero padding), a 2x2 stride-2 VALID
window of three (a ViT's patches: 12 taps), a 3x3 of two channels (18 taps), a 3x3 of dilation 2 on four channels
(rows of whole words), a 5x3 stride 1x2 VALID of three; a window of five channels keeps the generic kernel."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_border_split import kernels_bit_exact_everywhere  # noqa: E402
from test_requantize_epilogue import bit_exact_bundle, needs_cross_tools  # noqa: E402
from tflite_builder import ModelBuilder, Options, Quantization, Tensor, build  # noqa: E402

SAME, VALID = 0, 1
RELU, RELU6 = 1, 3
IMAGE = (15, 12)


def _one_channel_model(layers: list[dict], in_c: int = 1, per_tensor: bool = False) -> bytes:
    """One int8 input [1, 15, 12, in_c] (scale 0.05, zero point -3) and one layer per entry of `layers` on it, each a
    model output: kind "CONV_2D" (weights [O, KH, KW, in_c]) or "DEPTHWISE_CONV_2D" (in_c 1: weights [1, KH, KW, O]), window
    "kernel" (KH, KW), "stride" (H, W), "dilation" (H, W), "padding", "channels", "activation" and the output's
    zero point "zero_point"; per-channel weight scales (``per_tensor``: one scale for all); with "leaky" a LEAKY_RELU (alpha 0.1) after the layer, the
    model output in its place ("only") or beside it ("also")."""
    rng = np.random.default_rng(29)
    b = ModelBuilder()
    x = b.add(Tensor("input", (1, *IMAGE, in_c), "int8", Quantization((0.05,), (-3,))))
    b.inputs.append(x)
    for index, layer in enumerate(layers):
        (kh, kw), (sh, sw), (dh, dw), cout = layer["kernel"], layer["stride"], layer["dilation"], layer["channels"]
        depthwise = layer["kind"] == "DEPTHWISE_CONV_2D"
        scales = (0.005,) if per_tensor else tuple(0.004 + 0.002 * (c % 4) for c in range(cout))
        shape = (1, kh, kw, cout) if depthwise else (cout, kh, kw, in_c)
        w = b.add(Tensor(f"l{index}/w", shape, "int8", Quantization(scales, (0,) * len(scales), 3 if depthwise else 0),
                         rng.integers(-127, 128, shape).astype(np.int8)))
        bias = b.add(Tensor(f"l{index}/b", (cout,), "int32",
                            Quantization(tuple(0.05 * s for s in scales), (0,) * len(scales)),
                            rng.integers(-3000, 3000, cout).astype(np.int32)))
        if layer["padding"] == SAME:
            out_hw = tuple(-(-n // s) for n, s in zip(IMAGE, (sh, sw)))
        else:
            out_hw = tuple((n - (k - 1) * d - 1) // s + 1 for n, k, d, s in zip(IMAGE, (kh, kw), (dh, dw), (sh, sw)))
        options = {"Padding": layer["padding"], "StrideW": sw, "StrideH": sh, "DilationWFactor": dw,
                   "DilationHFactor": dh, "FusedActivationFunction": layer["activation"]}
        if depthwise:
            options["DepthMultiplier"] = cout
        table = "DepthwiseConv2DOptions" if depthwise else "Conv2DOptions"
        out_q = Quantization((0.3,), (layer["zero_point"],))
        out = b.op(layer["kind"], (x, w, bias), Tensor(f"l{index}", (1, *out_hw, cout), "int8", out_q),
                   Options(table, options), version=3)
        if layer.get("leaky") != "only":
            b.outputs.append(out)
        if layer.get("leaky") is not None:
            b.outputs.append(b.op("LEAKY_RELU", (out,), Tensor(f"l{index}/leaky", (1, *out_hw, cout), "int8",
                                                                Quantization((0.2,), (-20,))),
                                  Options("LeakyReluOptions", {"Alpha": 0.1})))
    return build(b.model())


def _layer(kind: str, kernel, stride, dilation, padding: int, channels: int, activation: int = 0,
           zero_point: int = 4) -> dict:
    return {"kind": kind, "kernel": kernel, "stride": stride, "dilation": dilation, "padding": padding,
            "channels": channels, "activation": activation, "zero_point": zero_point}


@needs_cross_tools
def test_one_channel_windows_are_one_helper_call_and_stay_bit_exact(tmp_path):
    layers = [_layer("CONV_2D", (10, 4), (2, 2), (1, 1), SAME, 12, RELU, -128),  # kws's stem
              _layer("CONV_2D", (4, 8), (1, 3), (1, 1), VALID, 5),
              _layer("DEPTHWISE_CONV_2D", (5, 5), (1, 1), (2, 2), SAME, 6),
              _layer("CONV_2D", (3, 3), (2, 2), (1, 1), SAME, 8),  # 9 taps: MIN_TAPS
              _layer("CONV_2D", (2, 4), (1, 1), (1, 1), SAME, 8),  # 8 taps: the generic kernel
              _layer("CONV_2D", (4, 4), (1, 1), (1, 1), SAME, 4, RELU6)]  # RELU6: the generic kernel
    kernels = kernels_bit_exact_everywhere(tmp_path, "window1", _one_channel_model(layers))
    helper = {name for name, body in kernels.items() if any("_window1_conv_s8(" in line for line in body)}
    expected = sorted(name for name in kernels if re.search(r"10x4_s2|4x8_s1x3|5x5_s1_d2|3x3_s2", name))
    assert len(expected) == 4, list(kernels)  # the first four layers: else an empty match would pass
    assert sorted(helper) == expected, kernels
    assert len(kernels) == len(layers), list(kernels)


@needs_cross_tools
@pytest.mark.parametrize("in_c, layers, expected", [
    (3, [_layer("CONV_2D", (3, 3), (2, 2), (1, 1), SAME, 16, RELU, -128),  # an RGB stem
         _layer("CONV_2D", (5, 3), (1, 2), (1, 1), VALID, 5),
         _layer("CONV_2D", (2, 2), (2, 2), (1, 1), VALID, 12)], r"3x3_s2|5x3_s1x2|2x2_s2"),  # vit's patches: 12 taps
    (2, [_layer("CONV_2D", (3, 3), (1, 1), (1, 1), SAME, 7)], r"3x3_s1"),
    (4, [_layer("CONV_2D", (3, 3), (1, 1), (2, 2), SAME, 6)], r"3x3_s1_d2"),
    (5, [_layer("CONV_2D", (3, 3), (2, 2), (1, 1), SAME, 8)], r"^$"),  # five channels: the generic kernel
])
def test_few_channel_windows_are_one_helper_call_and_stay_bit_exact(tmp_path, in_c, layers, expected):
    kernels = kernels_bit_exact_everywhere(tmp_path, f"window{in_c}", _one_channel_model(layers, in_c))
    helper = {name for name, body in kernels.items() if any("_window1_conv_s8(" in line for line in body)}
    assert sorted(helper) == sorted(name for name in kernels if re.search(expected, name)), kernels
    assert len(kernels) == len(layers), list(kernels)


@needs_cross_tools
def test_per_tensor_weights_take_the_helper_of_their_per_channel_twin(tmp_path):
    """A layer of one weight scale (per-tensor, as TFLite's converter writes with per-channel quantization off)
    requantizes from per-channel constants too (`KernelSchedules.channel_requantization`), so it takes the same helper:
    its multiplier and shift repeated per output channel, bit-exact."""
    layers = [_layer("CONV_2D", (3, 3), (2, 2), (1, 1), SAME, 6, RELU, -128),  # an RGB stem of six channels
              _layer("CONV_2D", (5, 3), (1, 2), (1, 1), VALID, 5)]
    kernels = kernels_bit_exact_everywhere(tmp_path, "per_tensor", _one_channel_model(layers, 3, per_tensor=True))
    helper = {name for name, body in kernels.items() if any("_window1_conv_s8(" in line for line in body)}
    assert sorted(helper) == sorted(kernels) and len(kernels) == len(layers), kernels


@needs_cross_tools
def test_a_helium_core_and_bundles_without_such_a_layer_keep_the_generic_kernel(tmp_path):
    model = _one_channel_model([_layer("CONV_2D", (10, 4), (2, 2), (1, 1), SAME, 4)])
    _bundle, kernels = bit_exact_bundle(tmp_path, "m55", model, "cortex-m55", "mps3-an547")
    assert "_window1_conv_s8" not in kernels
    small = _one_channel_model([_layer("CONV_2D", (2, 4), (1, 1), (1, 1), SAME, 4)])
    bundle, _kernels = bit_exact_bundle(tmp_path, "small", small, "cortex-m4f", "mps2-an386")
    assert "_window1_conv_s8" not in (bundle.out_dir / "small_internal.h").read_text()


@needs_cross_tools
def test_a_leaky_relu_after_a_few_channel_window_is_looked_up_by_its_helper(tmp_path):
    """A LEAKY_RELU whose input is such a layer's output alone is stored by the helper's lookup form (one kernel, one
    call of `<prefix>_window1_conv_lut_s8`; tvm_ext.transform.fold_lookups); where the layer's output is also a model
    output, the helper writes it and the LEAKY_RELU stays a kernel of its own. Bit-exact both ways."""
    layers = [{**_layer("CONV_2D", (3, 3), (1, 1), (1, 1), SAME, 8), "leaky": "only"},  # an RGB stem's
              {**_layer("CONV_2D", (3, 3), (2, 2), (1, 1), SAME, 4), "leaky": "also"}]
    kernels = kernels_bit_exact_everywhere(tmp_path, "window_lut", _one_channel_model(layers, 3))
    looked_up = {name for name, body in kernels.items() if any("_window1_conv_lut_s8(" in line for line in body)}
    plain = {name for name, body in kernels.items() if any("_window1_conv_s8(" in line for line in body)}
    assert [re.search(r"conv_2d_leaky_relu_3x3_s1_", name) is not None for name in looked_up] == [True], kernels
    assert [re.search(r"conv_2d_3x3_s2", name) is not None for name in plain] == [True], kernels
    assert len(kernels) == 3, list(kernels)  # the folded stem, the second layer and its LEAKY_RELU
