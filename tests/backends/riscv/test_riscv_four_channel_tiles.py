"""RV32 integer MAC kernels whose output channels four divides but eight does not (12, 20, 4: DenseNet's growth of
12, ResNet-18 at width 0.25's first stage, detector heads) accumulate four channels at a time
(`RiscvMacSchedules.channel_tiles`: eight first, then four where the kernel's MACs pay the code), not one, each
pixel's tiles one call of the fused four-channel tiles (`<prefix>_conv_tiles_s8x4` on the window MAC
`<prefix>_mac_s8x4`): without the four-channel tile such a convolution ran untiled at ~8 instructions per MAC on
rv32imc, against ~4.4 with it. A layer of 15 channels (two tiles of eight, the last padded) shares one tile loop
between its interior and border pixels. Bit-exact against TFLite Micro on QEMU virt."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from emulator.tools import RISCV_TOOLS  # noqa: E402
from required_tools import require_tools  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402

SAME, VALID = 0, 1  # tflite.Padding


def _conv_chain(folder, name: str, image: tuple[int, int, int], layers: tuple[tuple[int, ...], ...], seed: int):
    """CONV_2D stride 1 layers (output channels, kernel side[, padding: SAME where not given]) on an `image` (rows,
    columns, channels), per-channel int8 weights: the model file `folder/name.tflite`."""
    rng = np.random.default_rng(seed)
    rows, cols, cin = image
    tensors = [Tensor("input", (1, rows, cols, cin), "int8", Quantization((0.05,), (-3,)))]
    operators = []
    for index, (cout, side, *padding) in enumerate(layers):
        padding = padding[0] if padding else SAME
        rows, cols = (rows, cols) if padding == SAME else (rows - side + 1, cols - side + 1)
        scales = tuple(0.004 + 0.001 * (o % 5) for o in range(cout))
        first = len(tensors)
        tensors += [
            Tensor(f"conv{index}/weights", (cout, side, side, cin), "int8", Quantization(scales, (0,) * cout, 0),
                   rng.integers(-127, 128, (cout, side, side, cin)).astype(np.int8)),
            Tensor(f"conv{index}/bias", (cout,), "int32", Quantization(tuple(0.05 * s for s in scales), (0,) * cout,
                                                                       0),
                   rng.integers(-3000, 3000, cout).astype(np.int32)),
            Tensor(f"conv{index}/output", (1, rows, cols, cout), "int8", Quantization((0.3,), (5,)))]
        options = Options("Conv2DOptions", {"Padding": padding, "StrideW": 1, "StrideH": 1, "DilationWFactor": 1,
                                            "DilationHFactor": 1})
        operators.append(Operator("CONV_2D", (first - 1 if index else 0, first, first + 1), (first + 2,), options, 3))
        cin = cout
    path = folder / f"{name}.tflite"
    path.write_bytes(build(Model(tensors, operators, inputs=(0,), outputs=(len(tensors) - 1,))))
    return path


def twelve_channel_model(folder):
    """CONV_2D 3x3 SAME (5 -> 12 channels, per-channel weights) on an 8x8 image, then CONV_2D 1x1 (12 -> 20):
    34,560 and 15,360 MACs, both at least `FOUR_TILE_MIN_MACS`; then CONV_2D 3x3 SAME (20 -> 15: padded to two
    tiles of eight, int8 weights)."""
    return _conv_chain(folder, "conv12", (8, 8, 5), ((12, 3), (20, 1), (15, 3)), seed=12)


def padded_pointwise_model(folder):
    """CONV_2D 1x1 (24 -> 33 channels: padded to five tiles of eight, the last one's epilogue a counted call) on a
    7x5 image: 35 pixels, the last one's tiles unpaired."""
    return _conv_chain(folder, "conv33", (7, 5, 24), ((33, 1),), seed=33)


def test_riscv_a_padded_pointwise_convolution_compiles_bit_exact(compiled) -> None:
    # The single pixel's channel tiles read the last tile's count as a constant: RV32's counted epilogue call (a
    # choice of counts) was an internal error (unseen ds_cnn_w33, resnet8_w13, vit3h_d27 on rv32imc).
    require_tools(RISCV_TOOLS)
    bundle = compiled(padded_pointwise_model, "rv32imc")
    assert bundle.selftest.passed and bundle.selftest.where == "virt", bundle.selftest.output


def test_riscv_twelve_and_twenty_channel_convolutions_accumulate_four_channels_at_a_time(compiled) -> None:
    require_tools(RISCV_TOOLS)
    bundle = compiled(twelve_channel_model, "rv32imc")
    assert bundle.selftest.passed and bundle.selftest.where == "virt", bundle.selftest.output
    kernels_c = (bundle.out_dir / f"{bundle.plan.model}_kernels.c").read_text()
    bodies = {match.group(1): match.group(2) for match in
              re.finditer(r"^void (\w+)\(.*?\) \{\n(.*?)^\}", kernels_c, flags=re.MULTILINE | re.DOTALL)}
    convolutions = {name: body for name, body in bodies.items() if "_conv_2d_" in name}
    assert len(convolutions) == 3, sorted(bodies)
    padded = convolutions.pop(next(name for name in convolutions if name.endswith("x15")))
    # 15 channels, two tiles of eight: the interior's and the border's pixels run one tile loop (common_tails
    # through loops: one inlined window MAC, its input chosen), the last tile's 7 channels one epilogue call
    model = bundle.plan.model
    assert padded.count(f"{model}_mac_s8x8(") == 1 and f"{model.upper()}_CHOOSE(" in padded, padded[:3000]
    assert f"{model}_requantize_small_s8" in padded and "requantize_double_small(" not in padded, padded[:3000]
    for name, body in convolutions.items():
        # every pixel's four-channel tiles one call of the fused tiles (on the four-channel window MAC), no scalar
        # accumulation left
        assert f"{bundle.plan.model}_conv_tiles_s8x4" in body and " * ((int32_t)" not in body, (name, body[:2000])


def tiled_window_model(folder):
    """CONV_2D 3x3 SAME then VALID (17 -> 30 -> 45 channels: padded to four and six tiles of eight) on a 6x6 image:
    two kernels whose window MACs pay the one out-of-line tiled copy (`tiled_conv_price.tiled_convs_pay`), the
    second's pixels paired (unpadded)."""
    return _conv_chain(folder, "conv30_45", (6, 6, 17), ((30, 3), (45, 3, VALID)), seed=30)


def test_riscv_convolutions_padded_to_tiles_of_eight_share_the_tiled_window_mac(compiled) -> None:
    # Each such kernel inlined the int8 window MAC with its channel stride in immediates (~1,000 B a kernel:
    # yolo_tiny_80x48_w11's 3x3 kernels of 30, 45 and 70 channels on rv32imc); over tiled OHWI weights every kernel,
    # its interior and its border pixels (or its pixel pairs), calls the bundle's one out-of-line copy.
    require_tools(RISCV_TOOLS)
    bundle = compiled(tiled_window_model, "rv32imc")
    assert bundle.selftest.passed and bundle.selftest.where == "virt", bundle.selftest.output
    kernels_c = (bundle.out_dir / f"{bundle.plan.model}_kernels.c").read_text()
    model = bundle.plan.model
    bodies = {match.group(1): match.group(2) for match in
              re.finditer(r"^void (\w+)\(.*?\) \{\n(.*?)^\}", kernels_c, flags=re.MULTILINE | re.DOTALL)}
    convolutions = [body for name, body in bodies.items() if "_conv_2d_" in name]
    assert len(convolutions) == 2, sorted(bodies)
    same, valid = sorted(convolutions, key=lambda body: "_mac_s8x2x8_tiled_rows(" in body)
    assert same.count(f"{model}_mac_s8x8_tiled_rows(") == 1 and f"{model}_mac_s8x8(" not in same, same[:3000]
    assert f"{model}_mac_s8x2x8_tiled_rows(" in valid and f"{model}_mac_s8x2x8(" not in valid, valid[:3000]
