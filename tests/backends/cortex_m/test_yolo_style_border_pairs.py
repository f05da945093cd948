"""A YOLO-style int8 network on cortex-m4f is bit-exact with TFLite Micro, and a padded convolution's border
pixels go in pairs there (backends/cortex_m/schedules/border_window.py `paired_windows`,
tvm_ext/schedule/border_split.py `_border_pairs`): each pair copies both windows (the padding test once per tap)
into one buffer and makes one call of the fused pair tiles with LEAKY_RELU's table (pair_tiles.py,
`pair_tiles_lut_s8`) over them as one row, as the interior pairs make one over the image's rows (the helper reads
rows of whole groups of four as one run); the last pixel of an odd row stays alone.

The model (tests/tflite_builder.py; the environment has no Keras, so the layers are written as TFLite's converter
writes a Keras model's: a fused LEAKY_RELU after each convolution, a 2x UpSampling2D as RESIZE_NEAREST_NEIGHBOR):
a 3x3 SAME convolution on 3 input channels (short window rows: the copied-window path of image models' first
layers) and LEAKY_RELU alpha 0.3, a 3x3 SAME convolution on 8 channels and LEAKY_RELU alpha 0.15, a 2x2 max pool,
a 3x3 SAME convolution on a 4x5 image (an odd row: pairs and a lone pixel; every pixel on the border) and
LEAKY_RELU alpha 0.1, its 2x nearest-neighbour upsampling and the concatenation with the full-size branch.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from c_checks import kernel_bodies  # noqa: E402
from emulator.tools import missing_tools  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402
from tvm_ext.compile import compile  # noqa: E402

SAME, VALID = 0, 1  # tflite.Padding
HEIGHT, WIDTH = 8, 10
CONV = {"Padding": SAME, "StrideW": 1, "StrideH": 1, "DilationWFactor": 1, "DilationHFactor": 1}


def _per_channel(channels: int) -> Quantization:
    return Quantization(tuple(0.004 + 0.001 * (c % 5) for c in range(channels)), (0,) * channels, 0)


def _yolo_style_model(seed: int = 29) -> bytes:
    """The module docstring's network: input 1 x HEIGHT x WIDTH x 3, output 1 x HEIGHT x WIDTH x 20."""
    rng = np.random.default_rng(seed)
    tensors = [Tensor("image", (1, HEIGHT, WIDTH, 3), "int8", Quantization((0.05,), (-3,)))]
    operators = []

    def conv_leaky(source: int, shape: tuple[int, ...], channels: int, alpha: float, name: str) -> int:
        """A 3x3 SAME CONV_2D of ``channels`` on tensor ``source`` (of ``shape``), then LEAKY_RELU ``alpha``."""
        first = len(tensors)
        weight_quantization = _per_channel(channels)
        tensors.extend([
            Tensor(f"{name}/weights", (channels, 3, 3, shape[3]), "int8", weight_quantization,
                   rng.integers(-127, 128, (channels, 3, 3, shape[3])).astype(np.int8)),
            Tensor(f"{name}/bias", (channels,), "int32",
                   Quantization(tuple(0.05 * s for s in weight_quantization.scales), (0,) * channels),
                   rng.integers(-3000, 3000, channels).astype(np.int32)),
            Tensor(f"{name}/conv", (*shape[:3], channels), "int8", Quantization((0.3,), (5,))),
            Tensor(f"{name}/leaky", (*shape[:3], channels), "int8", Quantization((0.2,), (-100,)))])
        operators.extend([Operator("CONV_2D", (source, first, first + 1), (first + 2,), Options("Conv2DOptions", CONV),
                                   3),
                          Operator("LEAKY_RELU", (first + 2,), (first + 3,),
                                   Options("LeakyReluOptions", {"Alpha": alpha}), 2)])
        return first + 3

    full = (1, HEIGHT, WIDTH, 3)
    first = conv_leaky(0, full, 8, 0.3, "first")
    second = conv_leaky(first, (1, HEIGHT, WIDTH, 8), 12, 0.15, "second")
    pooled = len(tensors)
    tensors.append(Tensor("pooled", (1, HEIGHT // 2, WIDTH // 2, 12), "int8", Quantization((0.2,), (-100,))))
    operators.append(Operator("MAX_POOL_2D", (second,), (pooled,), Options("Pool2DOptions", {
        "Padding": VALID, "StrideW": 2, "StrideH": 2, "FilterWidth": 2, "FilterHeight": 2})))
    small = conv_leaky(pooled, (1, HEIGHT // 2, WIDTH // 2, 12), 8, 0.1, "small")
    size, upsampled = len(tensors), len(tensors) + 1
    tensors.extend([Tensor("size", (2,), "int32", data=np.array((HEIGHT, WIDTH), np.int32)),
                    Tensor("upsampled", (1, HEIGHT, WIDTH, 8), "int8", Quantization((0.2,), (-100,)))])
    operators.append(Operator("RESIZE_NEAREST_NEIGHBOR", (small, size), (upsampled,),
                              Options("ResizeNearestNeighborOptions", {"AlignCorners": False,
                                                                       "HalfPixelCenters": False})))
    joined = len(tensors)
    tensors.append(Tensor("joined", (1, HEIGHT, WIDTH, 20), "int8", Quantization((0.2,), (-100,))))
    operators.append(Operator("CONCATENATION", (upsampled, second), (joined,),
                              Options("ConcatenationOptions", {"Axis": 3})))
    return build(Model(tensors, operators, (0,), (joined,)))


@pytest.fixture(scope="module")
def yolo_style_bundle(tmp_path_factory):
    """The model compiled for cortex-m4f and self-tested under QEMU (once for this module's tests)."""
    if missing_tools():
        pytest.skip("needs arm-none-eabi-gcc and qemu-system-arm")
    folder = tmp_path_factory.mktemp("yolo_style")
    model = folder / "yolo_style.tflite"
    model.write_bytes(_yolo_style_model())
    return compile(model, "cortex-m4f", folder / "m4f")


def test_the_yolo_style_network_is_bit_exact_with_tflite_micro_on_cortex_m4f(yolo_style_bundle):
    bundle = yolo_style_bundle
    assert bundle.selftest.passed and bundle.selftest.where.startswith("mps2-"), bundle.selftest.output
    assert set(bundle.selftest.max_errors) == {0}


def test_the_border_pixels_of_a_padded_convolution_go_in_pairs(yolo_style_bundle):
    bodies = kernel_bodies((yolo_style_bundle.out_dir / f"{yolo_style_bundle.plan.model}_kernels.c").read_text())
    convolutions = {name: body for name, body in bodies.items() if "conv_2d" in name}
    assert len(convolutions) == 3, sorted(bodies)
    # A border pair: both windows (3 x 3 x Cin inputs each, one after the other) read as one row by one call of the
    # fused pair tiles with the table (x_row_stride, rows 1, row_len, x_pixel_stride, out_pixel_stride,
    # w_channel_stride, channels, table).
    table_call = r"pair_tiles_lut_s8\([^;]*, {}, \d+, {}, \d+, \(&\(input5\[0\]\)\)\);"
    window_pair = re.compile(table_call.format(r"(\d+), 1, \1, \1", r"\1"))
    paired = {name: window_pair.search(body) for name, body in convolutions.items()}
    # Both convolutions whose window rows are long enough (8 and 12 input channels); the 3-channel one copies each
    # interior pixel's short rows into a window of its own and keeps its pixels one by one.
    assert sorted(int(found.group(1)) for found in paired.values() if found) == [9 * 8, 9 * 12], sorted(convolutions)
    for name, found in paired.items():
        if found:
            # The interior pairs read the image's three rows of 3 x Cin inputs in place, one call each.
            window = int(found.group(1))
            interior = re.compile(table_call.format(rf"\d+, 3, {window // 3}, \d+", str(window)))
            assert interior.search(convolutions[name]), name
