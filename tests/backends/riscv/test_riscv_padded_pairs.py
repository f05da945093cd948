"""An RV32 CONV_2D whose output channels eight does not divide (a ResNet of width 9) pads them to whole tiles of
eight and takes paired weights (`tvm_ext.transform.int8.conv._padded_pairs`, priced by
`backends.riscv.schedules.padded_pairs_price`): its tiles call the paired MAC, two products per multiply, where
the tiles of four called the four-channel MAC, one; bit-exact against TFLite Micro on QEMU virt."""

from __future__ import annotations

import pytest

from backends.riscv.schedules.padded_pairs_price import MIN_MACS, padded_pairs_pay


@pytest.mark.parametrize("channels, taps, window, macs, pays", [
    (9, 9, 81, MIN_MACS, True), (12, 4, 32, MIN_MACS, True), (18, 9, 162, 10 * MIN_MACS, True),
    (36, 9, 324, MIN_MACS, True),
    (9, 9, 81, MIN_MACS - 1, False),  # too few MACs to pay the kernel's larger code
    (12, 9, 27, MIN_MACS, False),  # a 3x3 window over 3 channels: too short
    (12, 1, 72, MIN_MACS, False),  # a 1x1 window: the tiles of four read one row
    (8, 9, 81, MIN_MACS, False), (72, 9, 81, MIN_MACS, False),  # whole tiles of eight: paired already
    (13, 9, 81, MIN_MACS, False), (30, 9, 81, MIN_MACS, False),  # padded to tiles of eight by four: tiled or int8
    (3, 9, 81, MIN_MACS, False), (4, 9, 81, MIN_MACS, False),  # a tile of four would be padded to twice its channels
])
def test_padded_pairs_are_priced_from_the_channels_the_window_and_the_macs(channels: int, taps: int, window: int,
                                                                           macs: int, pays: bool) -> None:
    assert padded_pairs_pay(channels, taps, window, macs) is pays


def width9_model(folder):
    """`tflite_models.residual_model` over 24x24 with 9 channels: 3x3 convolutions of 9 and 18 output channels,
    each well above MIN_MACS, the first over the 3-channel image, and a 1x1 stride-2 one of 18 below MIN_MACS."""
    from tflite_models import residual_model

    path = folder / "residual_w9.tflite"
    path.write_bytes(residual_model((24, 24), channels=9, seed=11))
    return path


def test_riscv_convolutions_of_nine_channels_take_padded_paired_weights_bit_exact(compiled) -> None:
    pytest.importorskip("tflite")
    pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
    from virt_kernels import virt_kernels

    model, kernels = virt_kernels(compiled, width9_model)
    convs = {text.split("(")[0]: text for text in kernels.split("\nvoid ")[1:] if "_conv_2d_" in text.split("(")[0]}
    windows = {name: text for name, text in convs.items() if "_3x3_" in name}
    assert len(windows) == 4, sorted(convs)
    # the first, over the 3-channel image, a window of 27 inputs (below MIN_WINDOW): its tiles of four stay
    first = windows.pop(f"{model}_conv_2d_3x3_s1_24x24x9")
    assert "const int8_t* weights" in first and f"{model}_mac_s8x4(" in first, first
    for name, text in windows.items():  # paired words, the paired MAC's calls, no tile of four
        assert "const int32_t* weights" in text and f"{model}_mac_s8x8_pairs" in text, text
        assert f"{model}_mac_s8x4(" not in text, text
    # the 1x1 stride-2 shortcut, 144 pixels x 9 inputs x 18 channels, is below MIN_MACS: its tiles of four stay
    shortcut = convs[f"{model}_conv_2d_1x1_s2_12x12x18"]
    assert "const int8_t* weights" in shortcut and f"{model}_mac_s8x4(" in shortcut, shortcut
