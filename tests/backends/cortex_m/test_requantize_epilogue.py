"""The requantization epilogue helpers (backends/cortex_m/schedules/requantize_epilogue.py): the int8 MAC kernels
requantize each channel tile with one call of the core's helper, bit for bit with TFLite Micro under QEMU and on the
host (the helper's portable C). On cortex-m55, Helium's `<prefix>_requantize_s8` (int32 biases) or `_s8_b16` (int16
ones; helium_requantize.h.in) on MVE, a one-pixel loop over a convolution's channel tiles fused into one call of
`<prefix>_conv_tiles_s8` or `_s8_b16` (helium_conv_tiles.h.in); on cortex-m4f, the DSP core's `<prefix>_requantize_small_s8` or
`_small_s8_b16` (requantize_small.h.in) for the layers of the "double_small" rounding, a one-pixel loop fused into
one call of `<prefix>_conv_tiles_s8x4` or `_s8x4_b16` (conv_tiles_s8x4.h.in). A per-tensor layer's epilogue takes the
same helpers, its one multiplier and shift repeated per channel (`KernelSchedules.channel_requantization`)."""
from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from emulator.tools import missing_tools  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402
from tvm_ext.compile import compile  # noqa: E402

SAME, VALID = 0, 1  # tflite.Padding
IMAGE = (1, 7, 6, 8)
CONV = {"StrideW": 1, "StrideH": 1, "DilationWFactor": 1, "DilationHFactor": 1}


def _per_channel(channels: int, axis: int) -> Quantization:
    return Quantization(tuple(0.004 + 0.001 * (c % 5) for c in range(channels)), (0,) * channels, axis)


def _epilogue_model(seed: int = 11) -> bytes:
    """One int8 input IMAGE and, each a model output: a 1x1 CONV_2D of 12 channels with small biases (int16 in
    the bundle), a SAME 3x3 CONV_2D of 8 channels with biases up to 200,000 (int32; many outputs saturate), a
    VALID 3x3 DEPTHWISE_CONV_2D (multiplier 1) and a 1x1 CONV_2D with per-tensor weights (6 channels)."""
    rng = np.random.default_rng(seed)
    model = Model([Tensor("image", IMAGE, "int8", Quantization((0.05,), (-3,)))], [], (0,), ())
    _, height, width, channels = IMAGE
    layers = [  # (operator, weight shape, bias bound, output shape, options, weight quantization)
        ("CONV_2D", (12, 1, 1, channels), 3000, (1, height, width, 12),
         Options("Conv2DOptions", {"Padding": VALID, **CONV}), _per_channel(12, 0)),
        ("CONV_2D", (8, 3, 3, channels), 200_000, (1, height, width, 8),
         Options("Conv2DOptions", {"Padding": SAME, **CONV}), _per_channel(8, 0)),
        ("DEPTHWISE_CONV_2D", (1, 3, 3, channels), 3000, (1, height - 2, width - 2, channels),
         Options("DepthwiseConv2DOptions", {"Padding": VALID, "DepthMultiplier": 1, **CONV}),
         _per_channel(channels, 3)),
        ("CONV_2D", (6, 1, 1, channels), 3000, (1, height, width, 6),
         Options("Conv2DOptions", {"Padding": VALID, **CONV}), Quantization((0.006,), (0,))),
    ]
    for index, (operator, weight_shape, bias_bound, output_shape, options, quantization) in enumerate(layers):
        outputs = output_shape[-1]
        scales = quantization.scales if len(quantization.scales) > 1 else quantization.scales * outputs
        first = len(model.tensors)
        model.tensors += [
            Tensor(f"layer{index}/weights", weight_shape, "int8", quantization,
                   rng.integers(-127, 128, weight_shape).astype(np.int8)),
            Tensor(f"layer{index}/bias", (outputs,), "int32",
                   Quantization(tuple(0.05 * s for s in scales), (0,) * outputs, quantization.axis),
                   rng.integers(-bias_bound, bias_bound, outputs).astype(np.int32)),
            Tensor(f"layer{index}/output", output_shape, "int8", Quantization((0.3,), (5,)))]
        model.operators.append(Operator(operator, (0, first, first + 1), (first + 2,), options, 3))
        model.outputs += (first + 2,)
    return build(model)


def host_selftest_passes(out_dir) -> None:
    """Rebuild the bundle in ``out_dir`` with the host's gcc (the helpers' portable C) and check its self-test."""
    subprocess.run(["make", "-s", "clean"], cwd=out_dir, check=True, capture_output=True)
    subprocess.run(["make", "-s", "selftest", "CC=gcc", "CFLAGS=-std=c99 -O2", "LDFLAGS=", "AR=ar"],
                   cwd=out_dir, check=True, capture_output=True, text=True)
    host = subprocess.run(["./selftest"], cwd=out_dir, capture_output=True, text=True)
    assert host.returncode == 0 and "PASS" in host.stdout, host.stdout


def _per_tensor_layer_takes_channel_constants(kernels: str) -> bool:
    """Whether the 6-channel per-tensor 1x1 layer's kernel takes per-channel multipliers and shifts (the helpers'
    operands) and requantizes with no scalar epilogue."""
    per_tensor = re.search(r"void \w+_conv_2d_1x1_s1_7x6x6\(([^)]*)\) \{(.*?)\n\}", kernels, re.S)
    return (per_tensor is not None and "const int32_t* multiplier" in per_tensor.group(1)
            and "_requantize_double_small(" not in per_tensor.group(2))


needs_cross_tools = pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")


def bit_exact_bundle(tmp_path, name: str, model_bytes: bytes, target: str, board: str):
    """(the model's bundle for `target`, its kernels' C) after checking that its self-test matched TFLite Micro
    bit for bit on `board`."""
    model = tmp_path / f"{name}.tflite"
    model.write_bytes(model_bytes)
    bundle = compile(model, target, tmp_path / target)
    assert bundle.selftest.passed and bundle.selftest.where == board, bundle.selftest.output
    assert set(bundle.selftest.max_errors) == {0}
    return bundle, (bundle.out_dir / f"{bundle.plan.model}_kernels.c").read_text()


@needs_cross_tools
def test_helium_kernels_requantize_a_channel_tile_per_call_bit_exactly(tmp_path):
    bundle, kernels = bit_exact_bundle(tmp_path, "epilogues", _epilogue_model(), "cortex-m55", "mps3-an547")
    # the depthwise layer (int16 biases, one tile of 8) requantizes inside its fused call, the bundle's one 3x3
    # depthwise kernel's interior inlined (no copy to share: backends/cortex_m/schedules/depthwise_tiles.py,
    # shared_tiles)
    assert re.search(r"_depthwise_tiles_s8_b16\(", kernels), kernels
    # one pixel's channel tiles in one call of the fused helper, the tiles' accumulators never stored
    # (backends/cortex_m/schedules/conv_tiles.py): the 1x1 layers' pixels (int16 biases; the per-tensor one's among
    # them, the two in one shared copy) and the 3x3 layer's (int32 biases) on its copied window: its 24-byte rows,
    # under eight vectors (border_window.HELIUM_COPIED_ROW_BYTES), each one call of the ascending copy inside the image
    assert re.search(r"_conv_tiles_shared_s8_b16\(", kernels) and re.search(r"_conv_tiles_s8\(", kernels), kernels
    assert re.search(r"_copy_ascending\([^;]*, 24, 1\);", kernels), kernels
    assert _per_tensor_layer_takes_channel_constants(kernels)
    assert "vqrdmulhq_s32(" in (bundle.out_dir / f"{bundle.plan.model}_internal.h").read_text()
    host_selftest_passes(bundle.out_dir)  # the same C on the host: the helper's portable lanes


@needs_cross_tools
def test_dsp_kernels_requantize_a_channel_tile_per_call_bit_exactly(tmp_path):
    bundle, kernels = bit_exact_bundle(tmp_path, "epilogues", _epilogue_model(), "cortex-m4f", "mps2-an386")
    # pixel pairs: their channel tiles and epilogues in one call of the fused pair helper
    # (backends/cortex_m/schedules/pair_tiles.py): the 3x3 layer's (int32 biases) and the 1x1 layer's on its eight
    # inputs (int16 biases: the eight-input pair, both pixels' inputs in registers)
    assert re.search(r"_pair_tiles_s8\(", kernels) and re.search(r"_pair_tiles_s8_b16\(", kernels), kernels
    # one pixel's channel tiles in one call of the DSP fused helper, the sums started at the biases
    # (backends/cortex_m/schedules/conv_tiles.py, DSP_CONV_TILES): the 3x3 layer's unpaired ones (int32 biases)
    assert re.search(r"_conv_tiles_s8x4\(", kernels), kernels
    assert _per_tensor_layer_takes_channel_constants(kernels)
    host_selftest_passes(bundle.out_dir)
