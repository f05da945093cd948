"""On a Helium core a convolution's pixel pair whose window has several rows under two vectors each (a dilated
Conv1D's three taps of 24 channels: rows of 24 bytes, 4 x 24 apart) takes the windowed pair tiles
(`<prefix>_pair_tiles_windowed_s8`, backends/cortex_m/schedules/pair_tiles.py: HELIUM_PAIR_TILES' short_rows): both
pixels' windows copied into one run each, then one row per channel pair; a window of one long row (the same layer
undilated: 72 contiguous bytes) keeps the shared pair tiles. Both bit for bit with TFLite Micro under QEMU mps3-an547
and on the host (the helpers' portable C)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from c_checks import kernel_bodies  # noqa: E402
from test_requantize_epilogue import bit_exact_bundle, host_selftest_passes, needs_cross_tools  # noqa: E402
from tflite_builder import ModelBuilder, Options, Quantization, Tensor, build  # noqa: E402

VALID = 1  # tflite.Padding
STEPS, CHANNELS = 20, 24


def _conv1d_model(dilations: tuple[int, ...]) -> bytes:
    """An int8 input [1, 1, STEPS, CHANNELS] (zero point -5) and, on it, one VALID 1x3 CONV_2D of CHANNELS outputs per
    dilation along the steps, each a model output (per-channel weights, int16 biases where they fit)."""
    rng = np.random.default_rng(41)
    b = ModelBuilder()
    image = b.add(Tensor("image", (1, 1, STEPS, CHANNELS), "int8", Quantization((0.05,), (-5,))))
    b.inputs.append(image)
    for dilation in dilations:
        scales = tuple(0.003 + 0.001 * (c % 4) for c in range(CHANNELS))
        weights = b.add(Tensor(f"d{dilation}/w", (CHANNELS, 1, 3, CHANNELS), "int8",
                               Quantization(scales, (0,) * CHANNELS, 0),
                               rng.integers(-127, 128, (CHANNELS, 1, 3, CHANNELS)).astype(np.int8)))
        bias = b.add(Tensor(f"d{dilation}/b", (CHANNELS,), "int32",
                            Quantization(tuple(0.05 * s for s in scales), (0,) * CHANNELS),
                            rng.integers(-3000, 3000, CHANNELS).astype(np.int32)))
        steps = STEPS - 2 * dilation
        options = Options("Conv2DOptions", {"Padding": VALID, "StrideW": 1, "StrideH": 1, "DilationWFactor": dilation,
                                            "DilationHFactor": 1})
        b.outputs.append(b.op("CONV_2D", (image, weights, bias), Tensor(f"d{dilation}", (1, 1, steps, CHANNELS),
                                                                        "int8", Quantization((0.2,), (3,))),
                              options, version=3))
    return build(b.model())


@needs_cross_tools
def test_a_dilated_window_of_short_rows_takes_the_windowed_pair_tiles_bit_exactly(tmp_path):
    bundle, kernels = bit_exact_bundle(tmp_path, "windows", _conv1d_model((4, 1)), "cortex-m55", "mps3-an547")
    bodies = kernel_bodies(kernels)
    dilated = [body for name, body in bodies.items() if "_d1x4_" in name]
    undilated = [body for name, body in bodies.items() if "_d1x" not in name]
    assert len(dilated) == len(undilated) == 1, list(bodies)
    assert "_pair_tiles_windowed_s8" in dilated[0] and "_pair_tiles_shared_s8" not in dilated[0], dilated
    assert "_pair_tiles_shared_s8" in undilated[0] and "_windowed" not in undilated[0], undilated
    host_selftest_passes(bundle.out_dir)
