"""The bundle's fused multiply-add helper (packager/templates/fused_multiply_add.h.in) rounds x * y + z once, as
C99's fmaf: equal to the host C library's fmaf (glibc's, exact) on random and on hard cases, where a soft-float
library's double-then-float rounding (newlib's fmaf, linked on cores without an FPU) is wrong; strict warnings and
sanitizers clean. Its integer body (cores without a floating-point unit for doubles) equals glibc's fmaf on
tests/c/test_fused_multiply_add.c's cases, on the host and under QEMU on rv32imc and cortex-m0plus."""

from __future__ import annotations

import ctypes
import ctypes.util
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from c_checks import (SANITIZE, STRICT_WARNINGS, run_c_program_under_qemu, run_c_program_under_riscv_qemu,
                      run_c_unit_tests)
from emulator.tools import REQUIRED_TOOLS as CORTEX_M_TOOLS, RISCV_TOOLS
from required_tools import require_tools
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


# --- The integer body (cores without a floating-point unit for doubles): tests/c/test_fused_multiply_add.c ---

UNIT_TEST = Path(__file__).resolve().parents[1] / "c" / "test_fused_multiply_add.c"


def _libm_fmaf(x: int, y: int, z: int) -> int:
    """glibc's fmaf (exact) of three float bit patterns, as bits."""
    fmaf = ctypes.CDLL(ctypes.util.find_library("m")).fmaf
    fmaf.restype, fmaf.argtypes = ctypes.c_float, [ctypes.c_float] * 3
    as_float = [struct.unpack("<f", struct.pack("<I", b))[0] for b in (x, y, z)]
    return struct.unpack("<I", struct.pack("<f", fmaf(*as_float)))[0]


def _unit_cases() -> list[tuple[int, int, int]]:
    """Bit patterns (x, y, z): the kernels' operands, the hard cases above, random bits of every exponent
    (subnormals, overflow), cancellations (z = -x * y rounded, and its neighbours), zeros, infinities, NaNs."""
    rng = np.random.default_rng(30)
    kernel_like = [(_bits(np.float32(a)), _bits(np.float32(b)), _bits(np.float32(c))) for a, b, c in zip(
        rng.integers(-255, 256, 1500).astype(np.float32) * np.float32(0.0237),
        (rng.standard_normal(1500) * 0.05).astype(np.float32),
        (rng.standard_normal(1500) * 2.0 ** rng.integers(-20, 6, 1500)).astype(np.float32))]
    hard = [tuple(_bits(v) for v in case) for case in _hard_cases()]
    random_bits = [tuple(int(b) for b in row) for row in rng.integers(0, 2**32, (3000, 3), dtype=np.uint64)]
    small_exponents = [tuple(int(b) for b in row) for row in
                       (rng.integers(0, 2**32, (1500, 3), dtype=np.uint64) & np.uint64(0x87ffffff))]
    cancelling = []
    for x, y in rng.integers(0, 2**32, (1500, 2), dtype=np.uint64) & np.uint64(0xbfffffff):
        product = np.float32(struct.unpack("<f", struct.pack("<I", int(x)))[0]) * np.float32(
            struct.unpack("<f", struct.pack("<I", int(y)))[0])
        if np.isfinite(product):
            z = _bits(-product) + int(rng.integers(-2, 3))
            cancelling.append((int(x), int(y), z & 0xffffffff))
    specials = [0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007fffff, 0x00800000, 0x7f7fffff, 0xff7fffff,
                0x7f800000, 0xff800000, 0x7fc00000, 0x3f800000, 0xbf800000, 0x34000000]
    every_special = [(a, b, c) for a in specials for b in specials for c in specials]
    return kernel_like + hard + random_bits + small_exponents + cancelling + every_special


def _write_unit_files(folder: Path, prefix: str = "lp") -> Path:
    """fma.h (the helper for `prefix`, after <stdint.h>) and fma_cases.h (the cases with glibc's results) into
    `folder`; the unit test's source."""
    (folder / "fma.h").write_text("#include <stdint.h>\n" + requantize_helpers_c(prefix, [FUSED_MULTIPLY_ADD]))
    rows = ",\n".join("    {0x%08xu, 0x%08xu, 0x%08xu, 0x%08xu}" % (x, y, z, _libm_fmaf(x, y, z))
                      for x, y, z in _unit_cases())
    (folder / "fma_cases.h").write_text(f"static const uint32_t FMA_CASES[][4] = {{\n{rows}\n}};\n")
    return UNIT_TEST


def test_the_integer_body_rounds_once_like_fmaf_on_the_host(tmp_path):
    run = run_c_unit_tests(_write_unit_files(tmp_path), tmp_path, tmp_path)
    assert run.returncode == 0 and run.stdout.startswith("ok "), run.stdout + run.stderr


@pytest.mark.parametrize("profile", ["rv32imc", "cortex-m0plus"])
def test_the_soft_float_cores_fma_rounds_once_like_fmaf_under_qemu(tmp_path, profile):
    """On rv32imc and cortex-m0plus (no floating-point unit) the helper's body is the integer one."""
    source = _write_unit_files(tmp_path)
    board = tmp_path / "board"
    board.mkdir()
    files = {name: (tmp_path / name).read_text() for name in ("fma.h", "fma_cases.h")}
    if profile.startswith("cortex-m"):
        require_tools(CORTEX_M_TOOLS)
        result = run_c_program_under_qemu(board, profile, {**files, "selftest.c": source.read_text()})
    else:
        require_tools(RISCV_TOOLS)
        for name, text in files.items():
            (board / name).write_text(text)
        result = run_c_program_under_riscv_qemu(board, profile, source)
    assert result.exit_status == 0 and "ok " in result.stdout, result.ending() + "\n" + result.stdout
