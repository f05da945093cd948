"""An int8 MAX_POOL_2D whose window has at most UNROLLED_TAPS taps is one expression of its taps per output
element (tvm_ext/kernels/pool.py), bit-exactly with TFLite Micro: no running maximum stored and reloaded at each
tap, no clamp stage after it when the activation leaves the type's top (the low bound is where the maximum
starts), so each output byte is written once (the zoo's YOLO-tiny on cortex-m4f: its 4 pools 1,063,824 -> 582,883
instructions)."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from c_checks import kernel_bodies  # noqa: E402
from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro  # noqa: E402
from tflite_builder import ModelBuilder, Options, Quantization, Tensor  # noqa: E402

SAME, VALID = 0, 1
RELU, RELU6 = 1, 3


def _pools_model() -> ModelBuilder:
    """x (1, 7, 9, 6) -> MAX_POOL 2x2 stride 2 VALID; MAX_POOL 3x3 stride 2 SAME with RELU (low bound, padded
    taps at the borders); MAX_POOL 2x3 stride 1 SAME with RELU6 (both bounds: the clamp stage stays)."""
    built = ModelBuilder()
    quant = Quantization((0.05,), (-7,))
    data = built.add(Tensor("x", (1, 7, 9, 6), "int8", quant))
    built.inputs.append(data)
    for name, (fh, fw), stride, padding, activation, out_hw in (
            ("pool_2x2", (2, 2), 2, VALID, 0, (3, 4)), ("pool_3x3_relu", (3, 3), 2, SAME, RELU, (4, 5)),
            ("pool_2x3_relu6", (2, 3), 1, SAME, RELU6, (7, 9))):
        options = Options("Pool2DOptions", {"Padding": padding, "StrideH": stride, "StrideW": stride,
                                            "FilterHeight": fh, "FilterWidth": fw,
                                            "FusedActivationFunction": activation})
        built.outputs.append(built.op("MAX_POOL_2D", (data,), Tensor(name, (1, *out_hw, 6), "int8", quant), options))
    return built


def test_small_max_pool_windows_write_each_output_once_bit_exactly(tmp_path):
    assert_bit_exact_with_tflite_micro(_pools_model().model(), tmp_path)
    kernels_c = next((tmp_path / "out").glob("*_kernels.c")).read_text()
    pools = {name: body for name, body in kernel_bodies(kernels_c).items() if "max_pool" in name}
    assert len(pools) == 3, list(kernel_bodies(kernels_c))
    for name, body in pools.items():
        # One store per output element: no accumulator buffer, no init of the output before the taps.
        assert "_ptr[" not in body and len(re.findall(r"output0\[[^\]]*\] =", body)) == 1, body
