"""A quantized float model takes the integer pipeline's fast paths (issues 16 and 18): a MAC layer with a
dead channel (tiny weights, a bias that alone decides its output: trained models hold such channels, vww_96
has dozens) gets TFLite's wider weight scale for that channel (tvm_ext/quantize/bias_range.py), not a bias
clipped to the int32 limits. Clipped, the channel's output was wrong and the input zero point could no longer
be folded into the bias, so the whole layer lost its fast kernel (the zero point added on every MAC, no dual
16-bit MAC on a DSP core)."""

from __future__ import annotations

import re

from pathlib import Path

import numpy as np
import pytest

from tflite_builder import Model, Operator, Options, Tensor, build

pytest.importorskip("tvm")

INPUT_SHAPE = (1, 4, 4, 8)
CHANNELS = 8
DEAD = 3  # the dead output channel
DEAD_BIAS = 2.0  # its output, whatever the input: RELU6(~0 + 2.0)
INT32_MAX = 2**31 - 1


def _write_conv_relu6(folder: Path) -> Path:
    """CONV_2D 1x1 (RELU6) on a 1x4x4x8 float input, 8 channels, channel DEAD with weights of 1e-7."""
    rng = np.random.default_rng(7)
    weight = rng.normal(0.0, 0.5, (CHANNELS, 1, 1, INPUT_SHAPE[3])).astype(np.float32)
    weight[DEAD] = 1e-7
    bias = rng.normal(0.0, 0.5, CHANNELS).astype(np.float32)
    bias[DEAD] = DEAD_BIAS
    tensors = [
        Tensor("input", INPUT_SHAPE, "float32"),
        Tensor("conv_w", weight.shape, "float32", data=weight),
        Tensor("conv_b", (CHANNELS,), "float32", data=bias),
        Tensor("conv", INPUT_SHAPE[:3] + (CHANNELS,), "float32"),
    ]
    options = Options("Conv2DOptions", {"Padding": 1, "StrideW": 1, "StrideH": 1, "FusedActivationFunction": 3})
    path = folder / "dead_channel_conv.tflite"
    path.write_bytes(build(Model(tensors, [Operator("CONV_2D", (0, 1, 2), (3,), options)], inputs=(0,),
                                 outputs=(3,))))
    return path


def _quantized(path: Path):
    import target
    from tvm_ext.compile.pipeline import check, import_
    from tvm_ext.quantize import RANDOM, load_calibration, quantize_model

    model = import_(path, check(path), None).model
    return model, quantize_model(model, load_calibration(RANDOM, model.inputs), target.load_profile("cortex-m4f"))


def test_least_weight_scale_keeps_the_bias_in_half_the_int32_range():
    from tvm_ext.quantize.bias_range import least_weight_scales

    scales = least_weight_scales(np.array([2.0, -2.0, 0.0]), input_scale=0.01)
    np.testing.assert_allclose(scales, [400.0 / INT32_MAX, 400.0 / INT32_MAX, 0.0])
    assert round(2.0 / (0.01 * scales[0])) == (INT32_MAX + 1) // 2


def test_dead_channel_bias_is_kept_not_clipped(tmp_path):
    """The integer module's int32 constants (biases, zero point folded) stay near half the int32 range, and the
    dead channel's output is DEAD_BIAS to one output step; with the bias clipped at 2^31 - 1 it came out near 0."""
    from tvm_ext.quantize import ActivationQuant
    from tvm_ext.quantize.ranges import run_on_samples

    _, quantized = _quantized(_write_conv_relu6(tmp_path))
    bias = _conv_bias(quantized.mod["main"]).astype(np.int64)
    assert abs(bias[DEAD] - (INT32_MAX + 1) // 2) < 2**16 and np.abs(bias).max() < INT32_MAX * 0.6, bias
    input_quant, output_quant = (ActivationQuant(np.float32(quantized.facts[side][0]["scale"]),
                                                 quantized.facts[side][0]["zero_point"])
                                 for side in ("inputs", "outputs"))
    x = np.random.default_rng(1).uniform(-1.0, 1.0, INPUT_SHAPE).astype(np.float32)
    got = run_on_samples(quantized.mod, [[input_quant.quantize(x)]])[0][0]
    dead = output_quant.dequantize(got)[..., DEAD]
    assert np.all(np.abs(dead - DEAD_BIAS) <= output_quant.scale), dead.reshape(-1)[:4]


def _conv_bias(main) -> np.ndarray:
    """The bias (int32, the input zero point folded in) of the one kernel call of `main`: its third argument."""
    from tvm import relax

    calls = [b.value for block in main.body.blocks for b in block.bindings
             if isinstance(b.value, relax.Call) and b.value.op.name == "relax.call_tir"]
    assert len(calls) == 1
    return calls[0].args[1].fields[2].value.numpy()


@pytest.mark.slow  # compiles a bundle and runs its self-test under QEMU
def test_dead_channel_conv_takes_the_dual_mac_on_cortex_m4f(tmp_path):
    """Compiled for cortex-m4f, the quantized convolution multiplies raw int8 values with the dual 16-bit MAC
    (its input zero point folded into the bias), and the bundle is bit-exact with the integer reference;
    with the clipped bias it added the zero point to every input in its own reduction loop instead."""
    import tvm_ext

    calibration = tmp_path / "pixels.npz"  # inputs in [0, 1): input zero point -128, as after a RELU
    np.savez(calibration, np.random.default_rng(2).uniform(0.0, 1.0, (20, *INPUT_SHAPE[1:])).astype(np.float32))
    bundle = tvm_ext.compile(_write_conv_relu6(tmp_path), target="cortex-m4f", out=tmp_path / "out",
                             quantize="int8", calibration=calibration, jobs=1)
    assert bundle.selftest.passed
    kernels = (tmp_path / "out" / "dead_channel_conv_kernels.c").read_text()
    conv = kernels[kernels.index("void dead_channel_conv_conv_2d"):]
    conv = conv[:conv.index("\n}\n")]
    # one of the dual MAC's callers: the MAC itself, or the fused pair or channel tiles that run it
    assert re.search(r"dead_channel_conv_(dual_mac_|pair_tiles_|conv_tiles_)\w*\(", conv), conv
