"""The bundle's double-rounding requantization helper (packager/fixed_point_c.py), rewritten for fewer
instructions per output (one 64-bit product, its magnitude rounded, no 64-bit division), gives TFLite's
MultiplyByQuantizedMultiplier bit for bit: against the numpy reference on half a million random
(accumulator, multiplier, shift) triples plus every extreme, built strict and run under UBSan and ASan. The
right-shift-only variant likewise, on the triples of its domain (shift < 0, multiplier != INT32_MIN)."""

from __future__ import annotations

import subprocess

import numpy as np

import tflite_int8_reference as ref
from c_checks import SANITIZE, STRICT_WARNINGS
from packager.fixed_point_c import RIGHT_SHIFT_ONLY, requantize_helper_name, requantize_helpers_c

_PROGRAM = """#include <stdint.h>
#include <stdio.h>
{helpers}
int main(void)
{{
    int32_t triple[3];
    while (fread(triple, sizeof triple, 1, stdin) == 1) {{
        const int32_t result = {name}(triple[0], triple[1], triple[2]);
        fwrite(&result, sizeof result, 1, stdout);
    }}
    return 0;
}}
"""


def _cases(count: int) -> np.ndarray:
    """[count + extremes, 3] int32: accumulators over all of int32, multipliers as TFLite's QuantizeMultiplier
    writes them ([2^30, 2^31) or 0) and a few it does not (negative, INT32_MIN), shifts in [-31, 30]."""
    rng = np.random.default_rng(7)
    acc = np.concatenate([rng.integers(-2**31, 2**31, count // 2), rng.integers(-70_000, 70_000, count // 2)])
    multiplier = rng.integers(2**30, 2**31, count)
    shift = rng.integers(-31, 31, count)
    extremes_acc = [-2**31, -2**31 + 1, -2**30, -1, 0, 1, 2**30, 2**31 - 1]
    extremes_multiplier = [-2**31, -2**31 + 1, -1, 0, 1, 2**30, 2**31 - 1]
    grid = np.array([(a, m, s) for a in extremes_acc for m in extremes_multiplier for s in range(-31, 31)])
    return np.concatenate([np.stack([acc, multiplier, shift], axis=1), grid]).astype(np.int32)


def _check_helper(tmp_path, rounding: str, cases: np.ndarray) -> None:
    """Runs the helper for `rounding` on every (accumulator, multiplier, shift) row of `cases` and requires
    TFLite's double-rounding result on each."""
    source = tmp_path / "requantize.c"
    source.write_text(_PROGRAM.format(helpers=requantize_helpers_c("m", [rounding]),
                                      name=requantize_helper_name("m", rounding)))
    program = tmp_path / "requantize"
    subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), *SANITIZE.split(),
                    str(source), "-o", str(program)], check=True)
    run = subprocess.run([str(program)], input=cases.tobytes(), capture_output=True, check=True)
    got = np.frombuffer(run.stdout, np.int32)
    acc, multiplier, shift = (cases[:, i].astype(np.int64) for i in range(3))
    expected = ref.multiply_by_quantized_multiplier(acc, multiplier, shift).astype(np.int32)
    assert run.stderr == b"", run.stderr.decode()[:2000]
    mismatches = np.flatnonzero(got != expected)
    assert not mismatches.size, [tuple(cases[i]) + (got[i], expected[i]) for i in mismatches[:5]]


def test_double_rounding_helper_matches_tflite_on_random_and_extreme_values(tmp_path):
    _check_helper(tmp_path, "double", _cases(500_000))


def test_right_shift_only_helper_matches_tflite_on_its_domain(tmp_path):
    cases = _cases(500_000)
    in_domain = cases[(cases[:, 2] < 0) & (cases[:, 1] != -2**31)]
    assert len(in_domain) > 200_000
    _check_helper(tmp_path, RIGHT_SHIFT_ONLY, in_domain)
