"""The bundle's fused multiply-add helper (packager/templates/fused_multiply_add.h.in) rounds x * y + z once, as
C99's fmaf: equal to the host C library's fmaf (glibc's, exact) on random and on hard cases, where a soft-float
library's double-then-float rounding (newlib's fmaf, linked on cores without an FPU) is wrong; strict warnings and
sanitizers clean."""

from __future__ import annotations

import struct
import subprocess

import numpy as np

from c_checks import SANITIZE, STRICT_WARNINGS
from packager.fixed_point_c import FUSED_MULTIPLY_ADD, requantize_helpers_c


def _bits(value: np.float32) -> int:
    return struct.unpack("<I", struct.pack("<f", float(value)))[0]


def _hard_cases() -> list[tuple[np.float32, np.float32, np.float32]]:
    """Products on a float tie moved off it by a tiny addend (double rounding lands on the tie), cancellations,
    zeros and signs."""
    one_plus = np.float32(1 + 2.0**-12)
    tiny = np.float32(2.0**-60)
    return [(one_plus, one_plus, tiny), (one_plus, one_plus, -tiny), (-one_plus, one_plus, tiny),
            (np.float32(3.0), np.float32(1 / 3), np.float32(-1.0)), (np.float32(0.0), np.float32(5.0), np.float32(-0.0)),
            (np.float32(255.0), np.float32(0.3999), np.float32(-101.97)), (np.float32(-128.0), np.float32(0.5), np.float32(64.0))]


def test_the_helper_rounds_once_like_fmaf(tmp_path):
    rng = np.random.default_rng(11)
    count = 20000
    x = rng.integers(-255, 256, count).astype(np.float32)  # the kernels' operands: 8-bit integers as floats
    y = (rng.uniform(0.5, 1.0, count) * 2.0 ** rng.integers(-12, 8, count)).astype(np.float32)
    z = (rng.standard_normal(count) * 2.0 ** rng.integers(-30, 8, count)).astype(np.float32)
    cases = list(zip(x, y, z)) + _hard_cases()
    naive = [np.float32(np.float64(a) * np.float64(b) + np.float64(c)) for a, b, c in _hard_cases()]
    source = tmp_path / "fma.c"
    source.write_text("#include <stdint.h>\n#include <stdio.h>\n" + requantize_helpers_c("t", [FUSED_MULTIPLY_ADD]) + """
static float from_bits(uint32_t bits) { float value; memcpy(&value, &bits, sizeof value); return value; }
static uint32_t to_bits(float value) { uint32_t bits; memcpy(&bits, &value, sizeof bits); return bits; }
int main(void)
{
    unsigned long a, b, c;
    while (scanf("%lx %lx %lx", &a, &b, &c) == 3) {
        const float x = from_bits((uint32_t)a), y = from_bits((uint32_t)b), z = from_bits((uint32_t)c);
        printf("%lx %lx\\n", (unsigned long)to_bits(t_fma(x, y, z)), (unsigned long)to_bits(fmaf(x, y, z)));
    }
    return 0;
}
""")
    program = tmp_path / "fma"
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), *SANITIZE.split(),
                    "-o", str(program), str(source), "-lm"], check=True, capture_output=True, text=True)
    stdin = "".join(f"{_bits(a):x} {_bits(b):x} {_bits(c):x}\n" for a, b, c in cases)
    run = subprocess.run([str(program)], input=stdin, check=True, capture_output=True, text=True)
    results = [tuple(int(v, 16) for v in line.split()) for line in run.stdout.splitlines()]
    assert len(results) == len(cases)
    assert [i for i, (ours, libc) in enumerate(results) if ours != libc] == []
    hard = results[-len(_hard_cases()):]
    assert any(_bits(n) != ours for n, (ours, _) in zip(naive, hard)), "no hard case defeats double rounding"
