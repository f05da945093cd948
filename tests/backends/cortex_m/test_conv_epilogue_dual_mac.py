"""A MAC layer followed by an int8 elementwise epilogue keeps the fast MAC schedule, bit-exactly with TFLite Micro on
cortex-m4f: the convolution, the depthwise convolution and the fully connected layer each call their MAC helper.

- An epilogue that reads the requantized value more than once (LEAKY_RELU computed: its test, then one of two
  requantizations; the int16 one still is) is computed beside the tiled accumulators (tvm_ext/schedule/kernel_schedule.py
  `_compute_at_consumers`). Before, the reduction was computed inside the epilogue's loop, one output at a
  time: no channel tile, no helper (yolo_tiny_80_int8's convolutions ran at 5-11 instructions per MAC).
- An int8 LEAKY_RELU is a 256-entry table (kernels/int8_tables.py), and a table lookup (LEAKY_RELU, LOGISTIC,
  HARD_SWISH, ...) is fused after the layer computing its input (transform/fuse_keeping_layers.py): the
  epilogue is one load, no second requantization; on the DSP core the requantization and that load are one
  call of `<prefix>_requantize_small_lut_s8(_b16)` per channel tile (backends/cortex_m/schedules/
  requantize_epilogue.py), or inside a convolution's fused pixel-pair tiles with the table,
  `<prefix>_pair_tiles_lut_s8(_b16)` (backends/cortex_m/schedules/pair_tiles.py), on the host (its portable C,
  strict warnings and sanitizers) bit-exact too.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from c_checks import kernel_bodies, strict_sanitized_selftest  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402
from tvm_ext.compile import compile  # noqa: E402

SAME, VALID = 0, 1  # tflite.Padding
IMAGE = (1, 7, 6, 8)  # an odd height: the pixel pairs' odd row too
ROWS = (3, 8)  # a FULLY_CONNECTED's rows: 2-D, so no reshape parts it from its LEAKY_RELU
INPUT_QUANTIZATION = Quantization((0.05,), (-3,))


def _per_channel(channels: int, axis: int = 0) -> Quantization:
    return Quantization(tuple(0.004 + 0.001 * (c % 5) for c in range(channels)), (0,) * channels, axis)


LEAKY_RELU = (Operator("LEAKY_RELU", (), (), Options("LeakyReluOptions", {"Alpha": 0.1}), 2),
              Quantization((0.2,), (-100,)))
LOGISTIC = (Operator("LOGISTIC", (), ()), Quantization((1 / 256,), (-128,)))  # the output TFLite requires


def _epilogue_after_each_layer_model(seed: int = 7) -> bytes:
    """Two int8 inputs, IMAGE and ROWS; on the first a 3x3 SAME CONV_2D (12 channels), a 1x1 CONV_2D (8) and a
    3x3 VALID DEPTHWISE_CONV_2D (multiplier 1: the depthwise helper's case), each followed by its own LEAKY_RELU
    (alpha 0.1, another scale and zero point), on the second a FULLY_CONNECTED (12 units) followed by a
    LOGISTIC; each epilogue's result a model output."""
    rng = np.random.default_rng(seed)
    model = Model([Tensor("image", IMAGE, "int8", INPUT_QUANTIZATION),
                   Tensor("rows", ROWS, "int8", INPUT_QUANTIZATION)], [], (0, 1), ())
    height, width, channels = IMAGE[1:]
    conv_options = {"StrideW": 1, "StrideH": 1, "DilationWFactor": 1, "DilationHFactor": 1}
    layers = [  # (operator, input, weight shape, output shape, options, quantized dimension of the weights, epilogue)
        ("CONV_2D", 0, (12, 3, 3, channels), (1, height, width, 12),
         Options("Conv2DOptions", {"Padding": SAME, **conv_options}), 0, LEAKY_RELU),
        ("CONV_2D", 0, (8, 1, 1, channels), (1, height, width, 8),
         Options("Conv2DOptions", {"Padding": VALID, **conv_options}), 0, LEAKY_RELU),
        ("DEPTHWISE_CONV_2D", 0, (1, 3, 3, channels), (1, height - 2, width - 2, channels),
         Options("DepthwiseConv2DOptions", {"Padding": VALID, "DepthMultiplier": 1, **conv_options}), 3, LEAKY_RELU),
        ("FULLY_CONNECTED", 1, (12, channels), (ROWS[0], 12),
         Options("FullyConnectedOptions", {"KeepNumDims": False}), 0, LOGISTIC),
    ]
    for index, (operator, data, weight_shape, output_shape, options, axis, after) in enumerate(layers):
        epilogue, quantization = after
        outputs = weight_shape[axis]
        weight_quantization = _per_channel(outputs, axis) if operator != "FULLY_CONNECTED" else _per_channel(1)
        weights = rng.integers(-127, 128, weight_shape).astype(np.int8)
        bias = rng.integers(-3000, 3000, outputs).astype(np.int32)
        bias_scales = tuple(0.05 * s for s in weight_quantization.scales)
        first = len(model.tensors)
        model.tensors += [
            Tensor(f"layer{index}/weights", weight_shape, "int8", weight_quantization, weights),
            Tensor(f"layer{index}/bias", (outputs,), "int32",
                   Quantization(bias_scales, (0,) * len(bias_scales), axis), bias),
            Tensor(f"layer{index}/output", output_shape, "int8", Quantization((0.3,), (5,))),
            Tensor(f"layer{index}/epilogue", output_shape, "int8", quantization)]
        model.operators += [
            Operator(operator, (data, first, first + 1), (first + 2,), options, 3),
            replace(epilogue, inputs=(first + 2,), outputs=(first + 3,))]
        model.outputs += (first + 3,)
    return build(model)


def _bit_exact_epilogue_bundle(tmp_path, profile: str, board: str):
    """The model of four layers each followed by an epilogue, compiled for `profile` and self-tested bit-exactly on
    the emulated `board` (its QEMU machine's name prefix): (bundle, its kernels' bodies by name)."""
    model = tmp_path / "epilogues.tflite"
    model.write_bytes(_epilogue_after_each_layer_model())
    bundle = compile(model, profile, tmp_path / profile)
    assert bundle.selftest.passed and bundle.selftest.where.startswith(board), bundle.selftest.output
    assert set(bundle.selftest.max_errors) == {0}
    return bundle, kernel_bodies((bundle.out_dir / f"{bundle.plan.model}_kernels.c").read_text())


def test_layers_with_an_epilogue_call_their_mac_helpers_bit_exactly_on_cortex_m4f(tmp_path):
    bundle, bodies = _bit_exact_epilogue_bundle(tmp_path, "cortex-m4f", "mps2-")
    assert len(bodies) == 4, sorted(bodies)  # each layer fused with its epilogue into one kernel
    for name, body in bodies.items():
        assert re.search(rf"{bundle.plan.model}_(\w*mac\w*|pair_tiles_lut_s8\w*)\(", body), \
            f"{name} calls no MAC helper:\n{body}"
        # The epilogue a table load: one requantization (the layer's), not LEAKY_RELU's second.
        assert "requantize_double(" not in body, f"{name} requantizes twice:\n{body}"
        if "leaky_relu" in name:  # the requantization and the lookup: the DSP epilogue's call per channel tile, or
            # the fused pair tiles' with the table
            assert re.search(rf"{bundle.plan.model}_(requantize_small_lut_s8|pair_tiles_lut_s8)(_b16)?\(", body), body
            assert "_requantize_double_small(" not in body, f"{name} requantizes outside the helper:\n{body}"
    proc = strict_sanitized_selftest(bundle.out_dir, tmp_path / "host", make_arguments=(
        "selftest", "CFLAGS=-std=c99 -O2", "AR=ar"))
    assert proc.returncode == 0 and "selftest: PASS" in proc.stdout, proc.stdout + proc.stderr


def test_layers_with_a_table_epilogue_call_the_helium_table_epilogue_bit_exactly_on_cortex_m55(tmp_path):
    """On cortex-m55 each LEAKY_RELU layer's requantization and table lookup are Helium's vector epilogue with a
    table (the table read by a byte gather): a call of `<prefix>_requantize_s8_lut(_b16)` per channel tile, or inside
    the fused channel tiles' or pair tiles' table forms (`<prefix>_conv_tiles_lut_s8`, `_pair_tiles_shared_lut_s8`),
    where they had been the scalar requantization and load written out in each branch of the kernel; bit-exact
    under QEMU."""
    bundle, bodies = _bit_exact_epilogue_bundle(tmp_path, "cortex-m55", "mps3-")
    leaky = [name for name in bodies if "leaky_relu" in name]
    assert len(leaky) == 3, sorted(bodies)
    for name in leaky:
        assert re.search(rf"{bundle.plan.model}_(requantize_s8_lut|(conv|pair)_tiles(_shared)?_lut_s8)(_b16)?\(",
                         bodies[name]), bodies[name]
        assert "_requantize_double_small(" not in bodies[name], f"{name} requantizes outside the helper"
