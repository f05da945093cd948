"""The int8 SOFTMAX of cores with the DSP extension (backends/cortex_m/schedules/softmax_rows.py, the helper
backends/cortex_m/helpers/templates/softmax_s8.h.in): on cortex-m4f and on cortex-m55 (Helium) an int8 SOFTMAX is
one call of `<prefix>_softmax_s8` per row (rows of 3, of 37 on a coarse input scale whose exp table ends in zeros,
and with beta 0.5), bit for bit with TFLite Micro under QEMU (mps2-an386, mps3-an547) and on the host (the
helper's portable C); a bundle without a softmax defines no softmax helper."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_requantize_epilogue import bit_exact_bundle, host_selftest_passes, needs_cross_tools  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402

SOFTMAX_OUTPUT = Quantization((1 / 256,), (-128,))
"""TFLite's int8 softmax output quantization."""


def _softmax_model() -> bytes:
    """Inputs a [1, 5, 3] (scale 0.05, zero point -3) and b [1, 2, 37] (scale 0.3: its exp table ends in zeros),
    and three SOFTMAXes, each a model output: of a, of b, and of a with beta 0.5."""
    tensors = [Tensor("a", (1, 5, 3), "int8", Quantization((0.05,), (-3,))),
               Tensor("b", (1, 2, 37), "int8", Quantization((0.3,), (7,))),
               Tensor("soft_a", (1, 5, 3), "int8", SOFTMAX_OUTPUT),
               Tensor("soft_b", (1, 2, 37), "int8", SOFTMAX_OUTPUT),
               Tensor("soft_half_a", (1, 5, 3), "int8", SOFTMAX_OUTPUT)]
    operators = [Operator("SOFTMAX", (0,), (2,), Options("SoftmaxOptions", {"Beta": 1.0})),
                 Operator("SOFTMAX", (1,), (3,), Options("SoftmaxOptions", {"Beta": 1.0})),
                 Operator("SOFTMAX", (0,), (4,), Options("SoftmaxOptions", {"Beta": 0.5}))]
    return build(Model(tensors, operators, (0, 1), (2, 3, 4)))


@needs_cross_tools
@pytest.mark.parametrize("target, board", [("cortex-m4f", "mps2-an386"), ("cortex-m55", "mps3-an547")])
def test_int8_softmax_is_one_helper_call_per_row_and_stays_bit_exact(tmp_path, target, board):
    bundle, kernels = bit_exact_bundle(tmp_path, "soft", _softmax_model(), target, board)
    calls = re.findall(r"_softmax_s8\((.*)\);", kernels)
    # (out, in, rows, depth, table), one call per row (so that the output may take the input's place row by row):
    # one kernel over 5 rows of 3 (both softmaxes of a: the table is an argument) and one over 2 rows of 37
    assert sorted(call.split(", ")[2:4] for call in calls) == [["1", "3"], ["1", "37"]], calls
    assert re.search(r"for \(int32_t row = 0; row < 5; \+\+row\)", kernels), kernels
    assert re.search(r"for \(int32_t row = 0; row < 2; \+\+row\)", kernels), kernels
    assert "fixed_point_temps" not in kernels  # no generic softmax left
    assert "_softmax_s8(int8_t" in (bundle.out_dir / "soft_internal.h").read_text()
    host_selftest_passes(bundle.out_dir)  # the same C on the host: the helper's portable loops


@needs_cross_tools
def test_bundles_without_a_softmax_define_no_softmax_helper(tmp_path):
    tensors = [Tensor("a", (1, 4), "int8", Quantization((0.05,), (-3,))),
               Tensor("b", (1, 4), "int8", Quantization((0.05,), (-3,)))]
    model = build(Model(tensors, [Operator("RELU", (0,), (1,))], (0,), (1,)))
    bundle, _kernels = bit_exact_bundle(tmp_path, "relu", model, "cortex-m4f", "mps2-an386")
    assert "_softmax_s8" not in (bundle.out_dir / "relu_internal.h").read_text()
