"""The 16x8 MAC operators' requantization (TFLite's MultiplyByQuantizedMultiplier(int64 x, multiplier, shift)) with
its constants prepared at compile time: the reduced multiplier and total shift
(`fixed_point.reduce_16x8_multipliers`), and where acc + bias is bounded within int32 and the total shift allows it,
the "16x8" helper's multiplier (`fixed_point.high_mul_16x8_multipliers`: one SMMULR and one SSAT on cortex-m4f).
Checked against TFLite's definition written here independently, at the edges (multipliers around 0x7FFF0000, every
shift of the helper's domain, acc at the int32 bounds), on the host (portable C, strict warnings, sanitizers) and
under QEMU (the DSP path and the portable one), and against TFLite Micro on a layer whose acc + bias reaches
INT32_MAX."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import tvm
from tvm import relax, te

from c_checks import SANITIZE, STRICT_WARNINGS
from emulator.tools import missing_tools
from packager.fixed_point_c import REQUANTIZE_16X8, requantize_helper_name, requantize_helpers_c
from test_requantize_small_helper import run_cases_under_qemu
from tvm_ext.kernels import Rounding
from tvm_ext.kernels.fixed_point import (high_mul_16x8_multipliers, multiply_by_reduced_multiplier,
                                         reduce_16x8_multipliers, requantize_16x8)
from tvm_ext.kernels.quant_params import ActivationRange
from tvm_ext.kernels.requantize import Multipliers16x8
from tvm_ext.transform.int8.mac import MacKernel

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def tflite_16x8(x: int, multiplier: int, shift: int) -> int:
    """TFLite's MultiplyByQuantizedMultiplier(int64_t x, int32_t quantized_multiplier, int shift)
    (tensorflow/lite/kernels/internal/common.cc), in Python integers, then TFLite's int32 cast."""
    reduced = (multiplier + (1 << 15)) >> 16 if multiplier < 0x7FFF0000 else 0x7FFF
    total_shift = 15 - shift
    result = (x * reduced + (1 << (total_shift - 1))) >> total_shift
    return (result + 2**31) % 2**32 - 2**31


EDGE_MULTIPLIERS = [0, 1, 2**15 - 1, 2**15, 2**30, 2**30 + 2**15 - 1, 2**30 + 2**15, 3 * 2**29,
                    0x7FFE7FFF, 0x7FFE8000, 0x7FFEFFFF, 0x7FFF0000, 0x7FFF0001, 0x7FFF7FFF, 0x7FFF8000, INT32_MAX]
EDGE_ACCS = [INT32_MIN, INT32_MIN + 1, -(2**30), -65537, -65536, -32769, -32768, -2, -1, 0, 1, 2, 32767, 32768,
             65535, 65536, 2**30, INT32_MAX - 1, INT32_MAX]


def _helper_cases(random: int) -> np.ndarray:
    """[n, 4] int64 rows (acc, the helper's multiplier, TFLite's multiplier, shift) for every edge acc, edge
    multiplier and TFLite shift (-31..7) the helper's domain admits, plus ``random`` random rows of it."""
    rows = []
    for multiplier in EDGE_MULTIPLIERS:
        for shift in range(-31, 8):
            high = high_mul_16x8_multipliers(*reduce_16x8_multipliers([multiplier], [shift]))
            if high is not None:
                rows += [(acc, int(high[0]), multiplier, shift) for acc in EDGE_ACCS]
    rng = np.random.default_rng(168)
    while random > 0:
        multiplier, shift = int(rng.integers(2**30, 2**31)), int(rng.integers(-17, 1))
        high = high_mul_16x8_multipliers(*reduce_16x8_multipliers([multiplier], [shift]))
        if high is not None:
            rows.append((int(rng.integers(INT32_MIN, INT32_MAX, endpoint=True)), int(high[0]), multiplier, shift))
            random -= 1
    return np.array(rows, np.int64)


def _expected(cases: np.ndarray) -> np.ndarray:
    return np.array([np.clip(tflite_16x8(int(a), int(m), int(s)), -32768, 32767)
                     for a, _, m, s in cases.tolist()], np.int32)


def test_the_helper_domain_covers_both_shift_ends_and_the_multiplier_clamp():
    """Normalised multipliers (2^30 ..) take the helper for every TFLite shift from -17 (total 32) to -1; the
    reduced multiplier saturates at 0x7FFF from 0x7FFF0000 on; a total shift above 32 or a helper multiplier of
    2^31 or more (a small total shift with a large reduced multiplier) keeps the reduced form."""
    reduced, total = reduce_16x8_multipliers([0x7FFEFFFF, 0x7FFF0000, INT32_MAX, 2**30], [-17, -17, 0, 0])
    assert reduced.tolist() == [0x7FFF, 0x7FFF, 0x7FFF, 2**14] and total.tolist() == [32, 32, 15, 15]
    for shift in range(-17, 0):
        assert high_mul_16x8_multipliers(*reduce_16x8_multipliers([2**30, INT32_MAX], [shift, shift])) is not None
    assert high_mul_16x8_multipliers(*reduce_16x8_multipliers([2**30], [-18])) is None  # total shift 33
    assert high_mul_16x8_multipliers(*reduce_16x8_multipliers([2**30], [0])) is None  # 2^14 << 17
    assert high_mul_16x8_multipliers(*reduce_16x8_multipliers([2**22], [7])) is not None  # 64 << 24


def test_the_arithmetic_outside_a_bundle_matches_tflite():
    """Outside a bundle's C (here LLVM) the helper's call expands to its arithmetic, and the reduced form's
    multiply and total shift are plain int64 TIR: both TFLite's, at the same edges."""
    cases = _helper_cases(5000)
    count = len(cases)
    acc, high, reduced, total = (te.placeholder((count,), "int32", name=n) for n in ("acc", "high", "reduced", "total"))
    helper = te.compute((count,), lambda i: requantize_16x8(acc[i], high[i]), name="helper")
    plain = te.compute((count,), lambda i: multiply_by_reduced_multiplier(acc[i].astype("int64"), reduced[i], total[i]),
                       name="plain")
    built = tvm.tirx.build(te.create_prim_func([acc, high, reduced, total, helper, plain]), target="llvm")
    reduced_values, total_values = reduce_16x8_multipliers(cases[:, 2], cases[:, 3])
    arrays = [tvm.runtime.tensor(np.asarray(a, np.int32)) for a in
              (cases[:, 0], cases[:, 1], reduced_values, total_values, np.zeros(count), np.zeros(count))]
    built(*arrays)
    tflite = np.array([tflite_16x8(int(a), int(m), int(s)) for a, _, m, s in cases.tolist()])
    np.testing.assert_array_equal(arrays[4].numpy(), _expected(cases))
    np.testing.assert_array_equal(arrays[5].numpy(), tflite)


_PROGRAM = """#include <stdint.h>
#include <stdio.h>
{helpers}
int main(void)
{{
    int32_t pair[2];
    while (fread(pair, sizeof pair, 1, stdin) == 1) {{
        const int32_t result = {helper}(pair[0], pair[1]);
        fwrite(&result, sizeof result, 1, stdout);
    }}
    return 0;
}}
"""


def test_helper_matches_tflite_on_the_host(tmp_path):
    cases = _helper_cases(200_000)
    source, program = tmp_path / "helper.c", tmp_path / "helper"
    source.write_text(_PROGRAM.format(helpers=requantize_helpers_c("m", [REQUANTIZE_16X8]),
                                      helper=requantize_helper_name("m", REQUANTIZE_16X8)))
    subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), *SANITIZE.split(),
                    str(source), "-o", str(program)], check=True)
    run = subprocess.run([str(program)], input=cases[:, :2].astype(np.int32).tobytes(), capture_output=True,
                         check=True)
    assert run.stderr == b"", run.stderr.decode()[:2000]
    got, expected = np.frombuffer(run.stdout, np.int32), _expected(cases)
    mismatches = np.flatnonzero(got != expected)
    assert not mismatches.size, [tuple(cases[i]) + (got[i], expected[i]) for i in mismatches[:5]]


_ARM_SELFTEST = """#include <stdint.h>
#include <stdio.h>
#include "rq.h"
{helpers}
static const int32_t cases[][3] = {{RQ_CASES}};
int main(void)
{{
    unsigned wrong = 0;
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; ++i) {{
        const int32_t requantized = {helper}(cases[i][0], cases[i][1]);
        if (requantized != cases[i][2] && wrong++ < 5u) {{
            printf("case %u: %ld %ld -> %ld\\n", i, (long)cases[i][0], (long)cases[i][1], (long)requantized);
        }}
    }}
    printf("wrong %u\\n", wrong);
    return wrong != 0u;
}}
"""


@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
@pytest.mark.parametrize("profile", ["cortex-m4f", "cortex-m0plus"])
def test_helper_matches_tflite_under_qemu(tmp_path: Path, profile: str):
    """cortex-m4f runs SMMULR and SSAT, cortex-m0plus (no DSP) the portable C."""
    cases = _helper_cases(500)
    rows = ", ".join("{%d, %d, %d}" % (a, m, r) for (a, m, _, _), r in zip(cases.tolist(), _expected(cases).tolist()))
    run_cases_under_qemu(tmp_path, profile, rows,
                         _ARM_SELFTEST.format(helpers=requantize_helpers_c("rq", [REQUANTIZE_16X8]),
                                              helper=requantize_helper_name("rq", REQUANTIZE_16X8)))


DEPTH = 16
REACH = 32768 * 127 * DEPTH  # |acc| of a unit of DEPTH weights of -127 or 127 (int16 input, zero point 0)


def _form(bias: np.ndarray, shift: int = -16) -> Multipliers16x8:
    """The form a 16x8 FULLY_CONNECTED of two units of DEPTH weights +-127 and this int64 bias takes."""
    weight = np.full((2, DEPTH), -127, np.int8)
    weight[1] = 127
    data = relax.Var("data", relax.TensorType((1, DEPTH), "int16"))
    kernel = MacKernel("FULLY_CONNECTED", None, None, data, 0, weight, relax.const(bias), np.full(2, 2**30 + 12345),
                       np.full(2, shift), 0, ActivationRange(-32768, 32767), Rounding.DOUBLE, channel_axis=0)
    return kernel.kernel_call(ActivationRange(-32768, 32767)).kwargs["output"].multipliers_16x8


def test_the_helper_is_taken_exactly_while_acc_plus_bias_stays_within_int32():
    slack = INT32_MAX - REACH
    assert _form(np.array([slack, -slack], np.int64)) is Multipliers16x8.HIGH_MUL
    assert _form(np.array([slack + 1, 0], np.int64)) is Multipliers16x8.REDUCED
    assert _form(np.array([0, -slack - 1], np.int64)) is Multipliers16x8.REDUCED
    assert _form(np.array([0, 0], np.int64), shift=-18) is Multipliers16x8.REDUCED  # total shift 33


def test_acc_plus_bias_at_int32_max_is_bit_exact_with_tflite_micro(tmp_path):
    """A FULLY_CONNECTED whose acc + bias reaches INT32_MAX (unit 0) and -INT32_MAX (unit 1) on an input of
    -32768 everywhere, its output scale putting those near the int16 bounds."""
    pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
    from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro
    from tflite_builder import Model, Operator, Options, Quantization, Tensor

    slack = INT32_MAX - REACH
    weight = np.full((2, DEPTH), -127, np.int8)
    weight[1] = 127
    in_scale, weight_scale = 0.0004, 0.001
    out_scale = in_scale * weight_scale * 2**31 / 32000  # INT32_MAX requantizes to about 32000
    tensors = [Tensor("in", (1, DEPTH), "int16", Quantization((in_scale,), (0,))),
               Tensor("w", weight.shape, "int8", Quantization((weight_scale,) * 2, (0, 0), 0), weight),
               Tensor("b", (2,), "int64", Quantization((in_scale * weight_scale,) * 2, (0, 0), 0),
                      np.array([slack, -slack], np.int64)),
               Tensor("out", (1, 2), "int16", Quantization((out_scale,), (0,)))]
    model = Model(tensors, [Operator("FULLY_CONNECTED", (0, 1, 2), (3,), Options("FullyConnectedOptions", {}), 3)],
                  (0,), (3,))
    value = np.full((1, DEPTH), -32768, np.int16)
    assert_bit_exact_with_tflite_micro(model, tmp_path, inputs=[value])
    kernels = next((tmp_path / "out").glob("*_kernels.c")).read_text()
    assert "_requantize_16x8(" in kernels and "int64_t" not in kernels  # the helper, on int32 acc + bias
