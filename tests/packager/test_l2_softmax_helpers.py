"""L2_NORMALIZATION's and softmax's integer log2 and inverse square root are one `static inline` helper each in
the bundle's internal header (packager/fixed_point_c.py), not ~30-deep nested ternaries repeated per kernel
(issue 14: five tiny L2_NORMALIZATION kernels were 194 KB of C and ~10 s of code generation). The helpers are
checked on the host (strict warnings, UBSan, ASan) against Python references of TFLite's CountLeadingZeros and
GetInvSqrtQuantizedMultiplierExp (tensorflow/lite/kernels/internal/common.h), and a bundle's L2 kernels call
them; the bit-exact comparisons with TFLite Micro are in test_int8_misc_ops.py."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest
import tvm
from tvm import te

from c_checks import SANITIZE, STRICT_WARNINGS
from packager.fixed_point_c import (COUNT_LEADING_ZEROS, DOUBLING_HIGH_MUL, INV_SQRT_MULTIPLIER, requantize_helper_name,
                                    requantize_helpers_c)
from tflite_builder import Model, Operator, Quantization, Tensor, build
from tvm_ext.compile import compile
from tvm_ext.kernels.fixed_point import count_leading_zeros
from tvm_ext.kernels.fixed_point_numpy import inv_sqrt_quantized_multiplier

# An L2_NORMALIZATION kernel of a [2, 3, 64] tensor, with its calls: 38,931 bytes of C before the helpers.
MOST_L2_KERNEL_BYTES = 2_500

INT32_MAX = 2**31 - 1

_PROGRAM = """#include <stdint.h>
#include <stdio.h>
{helpers}
int main(void)
{{
    uint32_t value;
    while (fread(&value, sizeof value, 1, stdin) == 1) {{
        const int32_t result = {call};
        fwrite(&result, sizeof result, 1, stdout);
    }}
    return 0;
}}
"""


def _run_helper(tmp_path, helper: str, call: str, values: list[int]) -> list[int]:
    """`call` (C over the uint32 `value`) with `helper` defined, on every one of `values` (0 <= v < 2^32)."""
    source = tmp_path / "helper.c"
    source.write_text(_PROGRAM.format(helpers=requantize_helpers_c("m", [helper]), call=call))
    program = tmp_path / "helper"
    subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), *SANITIZE.split(),
                    str(source), "-o", str(program)], check=True)
    run = subprocess.run([str(program)], input=np.array(values, np.uint32).tobytes(), capture_output=True,
                         check=True)
    assert run.stderr == b"", run.stderr.decode()[:2000]
    return np.frombuffer(run.stdout, np.int32).tolist()


def _count_leading_zeros(value: int) -> int:
    """TFLite's CountLeadingZeros of a uint32 (32 for 0)."""
    return 32 - value.bit_length()


def _high_mul(a: int, b: int) -> int:
    """gemmlowp SaturatingRoundingDoublingHighMul of two int32 values."""
    if a == b == -(2**31):
        return INT32_MAX
    product = a * b
    nudge = 2**30 if product >= 0 else 1 - 2**30
    total = product + nudge
    return abs(total) // 2**31 * (1 if total >= 0 else -1)  # truncated toward zero


def _saturating_left_shift(x: int, exponent: int) -> int:
    threshold = 2 ** (31 - exponent) - 1
    return INT32_MAX if x > threshold else -(2**31) if x < -threshold else x * 2**exponent


def _wrap_int32(x: int) -> int:
    return (x + 2**31) % 2**32 - 2**31


def _inv_sqrt_multiplier(acc: int) -> int:
    """The multiplier of TFLite's GetInvSqrtQuantizedMultiplierExp(acc, kReverseShift) for 0 <= acc < 2^31."""
    if acc <= 1:
        return INT32_MAX
    shift = 11
    while acc >= 2**29:
        acc //= 4
        shift += 1
    pairs = (_count_leading_zeros(acc) - 1) // 2 - 1
    shift -= pairs
    acc <<= 2 * pairs
    raw_input = acc >> 1
    half_input = (raw_input + 1) >> 1  # RoundingDivideByPOT by 1 of a positive value
    x = 1 << 28
    for _ in range(5):
        x3 = _saturating_left_shift(_high_mul(_high_mul(x, x), x), 6)
        x = _saturating_left_shift(_wrap_int32(_high_mul(3 << 27, x) - _high_mul(half_input, x3)), 3)
    multiplier = _high_mul(x, 1518500250)
    return _wrap_int32(multiplier << -shift) if shift < 0 else multiplier


_EDGES = [0, 1, 2, 3, 4, 5, 7, 8, *(2**k for k in range(32)), *(2**k - 1 for k in range(2, 33)), 0x7FFFFFFF, 0xFFFFFFFF]


def test_count_leading_zeros_helper_matches_tflite(tmp_path):
    values = sorted(set(_EDGES + np.random.default_rng(14).integers(0, 2**32, 5000).tolist()))
    got = _run_helper(tmp_path, COUNT_LEADING_ZEROS, f"{requantize_helper_name('m', COUNT_LEADING_ZEROS)}(value)",
                      values)
    assert got == [_count_leading_zeros(v) for v in values]


@pytest.mark.parametrize("multiplier", [-(2**31), -(2**31) + 1, -1010580540, -1, 0, 1, 1 << 30, INT32_MAX])
def test_doubling_high_mul_helper_matches_gemmlowp(tmp_path, multiplier):
    values = sorted(set(_EDGES + np.random.default_rng(15).integers(0, 2**32, 3000).tolist()))
    spelled = "INT32_MIN" if multiplier == -(2**31) else str(multiplier)
    got = _run_helper(tmp_path, DOUBLING_HIGH_MUL,
                      f"{requantize_helper_name('m', DOUBLING_HIGH_MUL)}((int32_t)value, {spelled})", values)
    signed = np.array(values, np.uint32).view(np.int32).tolist()
    assert got == [_high_mul(v, multiplier) for v in signed]


def test_inv_sqrt_multiplier_helper_matches_tflite(tmp_path):
    rng = np.random.default_rng(14)
    values = sorted({v for v in _EDGES if v < 2**31} | set(rng.integers(0, 2**31, 5000).tolist())
                    | set(rng.integers(0, 70_000, 2000).tolist()))
    got = _run_helper(tmp_path, INV_SQRT_MULTIPLIER,
                      f"{requantize_helper_name('m', INV_SQRT_MULTIPLIER)}((int32_t)value)", values)
    expected = [_inv_sqrt_multiplier(v) for v in values]
    wrong = [(v, g, e) for v, g, e in zip(values, got, expected) if g != e]
    assert not wrong, wrong[:5]


def test_the_compile_time_inv_sqrt_matches_tflite():
    """RSQRT's table (kernels/int8_tables.py) takes its 1/sqrt from the numpy form of the same function."""
    rng = np.random.default_rng(28)
    values = sorted({v for v in _EDGES if v < 2**31} | set(rng.integers(0, 2**31, 5000).tolist()) | set(range(300)))
    multipliers, shifts = inv_sqrt_quantized_multiplier(np.array(values, np.int64))
    assert multipliers.tolist() == [_inv_sqrt_multiplier(v) for v in values]
    assert shifts.tolist() == [_inv_sqrt_shift(v) for v in values]


def _inv_sqrt_shift(acc: int) -> int:
    """The shift of TFLite's GetInvSqrtQuantizedMultiplierExp(acc, kReverseShift): -(its right shift), or 0."""
    if acc <= 1:
        return 0
    shift = 11
    while acc >= 2**29:
        acc //= 4
        shift += 1
    return -max(shift - ((_count_leading_zeros(acc) - 1) // 2 - 1), 0)


def _evaluated_on_llvm(expression, values: list[int]) -> list[int]:
    """`expression(x)` of an int32 x, as TVM builds it for the host (the helpers' arithmetic, no C helper)."""
    data = te.placeholder((len(values),), "int32", name="data")
    result = te.compute(data.shape, lambda i: expression(data[i]), name="result")
    built = tvm.tirx.build(te.create_prim_func([data, result]), target="llvm")
    out = tvm.runtime.tensor(np.zeros(len(values), np.int32))
    built(tvm.runtime.tensor(np.array(values, np.uint32).view(np.int32)), out)
    return out.numpy().tolist()


def test_the_count_other_targets_get_matches_tflite():
    unsigned = sorted(set(_EDGES))
    assert _evaluated_on_llvm(count_leading_zeros, unsigned) == [_count_leading_zeros(v) for v in unsigned]


def test_an_l2_normalization_kernel_is_small_and_calls_each_helper_once(tmp_path):
    tensors = [Tensor("in", (2, 3, 64), "int8", Quantization((0.05,), (-20,))),
               Tensor("out", (2, 3, 64), "int8", Quantization((1 / 128,), (0,)))]
    path = tmp_path / "l2.tflite"
    path.write_bytes(build(Model(tensors, [Operator("L2_NORMALIZATION", (0,), (1,))], (0,), (1,))))
    compile(path, "lowpower", tmp_path / "out")
    kernels = (tmp_path / "out" / "l2_kernels.c").read_text()
    assert len(kernels.encode()) <= MOST_L2_KERNEL_BYTES, kernels
    assert len(re.findall(r"\bl2_inv_sqrt_multiplier\(", kernels)) == 1, kernels
    assert len(re.findall(r"\bl2_count_leading_zeros\(", kernels)) == 1, kernels
