"""An RV32 1x3 CONV_2D dilated along its columns (a TCN's Conv1D: its reduction loops' first, the kernel's one row, of
one iteration) takes the paired rows MAC over its taps a dilation apart (backends/riscv/schedules/mac.py
`paired_mac_replacement`: rows stepped by the first loop of more than one iteration; a pixel pair's in the shared
pair tiles), not TVM's unrolled sums over the decoded paired words in the kernel; bit-exact against TFLite Micro on QEMU virt."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from tflite_models import tcn_model  # noqa: E402
from virt_kernels import virt_kernels  # noqa: E402


def dilated_model(folder):
    """A TCN of 8 channels over 23 steps, dilations 1, 2 and 3 (tests/tflite_models.py `tcn_model`)."""
    path = folder / "tcn_dilated.tflite"
    path.write_bytes(tcn_model(steps=23, features=8, channels=8, dilations=(1, 2, 3)))
    return path


def test_riscv_dilated_conv1d_pairs_take_the_paired_rows_mac(compiled) -> None:
    model, kernels = virt_kernels(compiled, dilated_model)
    dilated = re.findall(r"\nvoid \w+_conv_2d_1x3_s1_d1x[23]\w*\(.*?\n}\n", kernels, flags=re.S)
    assert len(dilated) == 2, kernels
    for body in dilated:
        # the paired MAC over rows (one or two pixels, or in the pair tiles), no paired word decoded in the kernel
        assert re.search(rf"{model}_(mac_s8x8_pairs_rows|mac_s8x2x8_pairs_rows|pair_tiles_s8x8)", body), body
        assert "(int16_t)weights[" not in body, body
