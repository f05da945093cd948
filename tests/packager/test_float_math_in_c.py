"""The bundle's portable float math (packager/templates/float_math_*.h.in: expf, logf and erff within 1 ULP of
the correctly rounded result, tanhf within MAX_ULP[TANHF]) gives the same bits on every core:
tests/c/test_float_math.c's cases and sweep on the host (strict warnings, sanitizers; and every 251st float
against double precision), on the host again with contraction into the host's FMA allowed (-ffp-contract=fast
-mfma), and under QEMU on cortex-m4f (FPU), cortex-m0plus and rv32imc (no FPU: libgcc's soft float) and
rv32imafc; each run prints the same checksum of all its results. The generated kernels call them instead of the
C library's expf, logf, tanhf and erff."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import numpy as np
import pytest

from c_checks import (SANITIZE, STRICT_WARNINGS, run_c_program_under_qemu, run_c_program_under_riscv_qemu,
                      run_c_unit_tests)
from emulator.tools import REQUIRED_TOOLS as CORTEX_M_TOOLS, RISCV_TOOLS
from required_tools import require_tools
from packager.fixed_point_c import ERFF, EXPF, FLOAT_MATH_HELPERS, LOGF, TANHF, requantize_helpers_c

UNIT_TEST = Path(__file__).resolve().parents[1] / "c" / "test_float_math.c"
FUNCTIONS = {EXPF: 0, LOGF: 1, TANHF: 2, ERFF: 3}
"""Each helper's number in the unit test's case table (the unit test's FUNCTIONS)."""
MAX_ULP = {EXPF: 1.0, LOGF: 1.0, TANHF: 1.5, ERFF: 1.0}
"""Each helper's largest error against double precision, in ULPs of the correctly rounded result (the unit
test's MAX_ULP): at most one float step from the correctly rounded result."""


def _bits(values) -> np.ndarray:
    return np.asarray(values, np.float32).view(np.uint32)


def _floats(bits) -> np.ndarray:
    return np.asarray(bits, np.uint32).view(np.float32)


def _near(*centres: int, reach: int = 8) -> list[int]:
    """The float bit patterns within `reach` steps of each of `centres`."""
    return [c + d for c in centres for d in range(-reach, reach + 1)]


REFERENCES = {EXPF: np.exp, LOGF: np.log, TANHF: np.tanh, ERFF: np.vectorize(math.erf)}
"""Each helper's function in double precision."""


def _cases() -> list[tuple[int, int, int, int]]:
    """(function, x bits, correctly rounded result bits, float steps allowed) rows: the specials exactly (0
    steps), the thresholds' neighbourhoods, subnormal operands and results, and random operands within the
    step (exactly where the result is an overflow, underflow or saturation)."""
    rng = np.random.default_rng(30)
    nan, inf, neg_inf, one, minus_one = 0x7FC00000, 0x7F800000, 0xFF800000, 0x3F800000, 0xBF800000
    exp_points = (_near(0x42B17218, 0x42B17217, 0xC2CFF1B5, 0xC2AEAC50, 0xC2AEAC4F, 0xC2B00000, 0xC2C80000,
                        0x39000000, 0x3EB17218, 0x3F851592, 0xBEB17218, 0xBF851592, 0x33800000, 0xB3800000)
                  + list(_bits(rng.uniform(-104.0, 89.0, 4000)))
                  + list(_bits(rng.standard_normal(2000) * 2.0 ** rng.integers(-30, 4, 2000))))
    log_points = (_near(0x3F800000, 0x3F3504F3, 0x3FB504F3, 0x00800000, 0x7F7FFFFF, 0x00000010, reach=16)
                  + list(range(1, 64))
                  + list((rng.integers(1, 0x7F800000, 4000, dtype=np.uint64)).astype(np.uint32))
                  + list(_bits(rng.uniform(0.5, 2.0, 2000))))
    tanh_points = (_near(0x41200000, 0xC1200000, 0x41102CB4, 0x3F0C9F54, 0xBF0C9F54, 0x39800000, 0xB9800000,
                         0x3F666666, 0x3E800000, reach=16)
                   + list(range(1, 64)) + [0x80000000 + b for b in range(1, 64)]
                   + list(_bits(rng.uniform(-10.0, 10.0, 4000)))
                   + list(_bits(rng.standard_normal(2000) * 2.0 ** rng.integers(-30, 4, 2000))))
    erf_points = (_near(0x40800000, 0xC0800000, 0x3FA00000, 0xBFA00000, 0x3F400000, 0xBF400000, 0x38800000,
                        0xB8800000, 0x407AD000, reach=16)
                  + list(range(1, 64)) + [0x80000000 + b for b in range(1, 64)]
                  + list(_bits(rng.uniform(-5.0, 5.0, 4000)))
                  + list(_bits(rng.standard_normal(2000) * 2.0 ** rng.integers(-30, 4, 2000))))
    points = {EXPF: exp_points, LOGF: log_points, TANHF: tanh_points, ERFF: erf_points}
    rows = []
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        for function, xs in points.items():
            for x in xs:
                value = np.float64(_floats([x])[0])
                reference = int(_bits([REFERENCES[function](value)])[0])
                exactly = ((function == EXPF and abs(value) >= 110.0) or x == one and function == LOGF
                           or function == TANHF and abs(value) >= 9.5 or function == ERFF and abs(value) >= 4.0)
                rows.append((FUNCTIONS[function], int(x), reference, 0 if exactly else 1))
        specials = [(EXPF, nan, nan), (EXPF, 0xFFC00000, nan), (EXPF, inf, inf), (EXPF, neg_inf, 0), (EXPF, 0, one),
                    (EXPF, 0x80000000, one), (EXPF, 0x7F7FFFFF, inf), (EXPF, 0xFF7FFFFF, 0),
                    (LOGF, nan, nan), (LOGF, 0xFFC00000, nan), (LOGF, inf, inf), (LOGF, neg_inf, nan),
                    (LOGF, 0, neg_inf), (LOGF, 0x80000000, neg_inf), (LOGF, minus_one, nan), (LOGF, 0x80000001, nan),
                    (LOGF, one, 0),
                    (TANHF, nan, nan), (TANHF, 0xFFC00000, nan), (TANHF, inf, one), (TANHF, neg_inf, minus_one),
                    (TANHF, 0, 0), (TANHF, 0x80000000, 0x80000000), (TANHF, 0x7F7FFFFF, one),
                    (TANHF, 0xFF7FFFFF, minus_one),
                    (ERFF, nan, nan), (ERFF, 0xFFC00000, nan), (ERFF, inf, one), (ERFF, neg_inf, minus_one),
                    (ERFF, 0, 0), (ERFF, 0x80000000, 0x80000000), (ERFF, 0x7F7FFFFF, one),
                    (ERFF, 0xFF7FFFFF, minus_one)]
    rows += [(FUNCTIONS[f], x, r, 0) for f, x, r in specials]
    return rows


def _write_unit_files(folder: Path) -> dict[str, str]:
    """float_math.h (the helpers for the prefix lp) and float_math_cases.h into `folder`; both by name."""
    rows = ",\n".join("    {%du, 0x%08xu, 0x%08xu, %du}" % row for row in _cases())
    files = {"float_math.h": requantize_helpers_c("lp", FLOAT_MATH_HELPERS),
             "float_math_cases.h": f"static const uint32_t FLOAT_MATH_CASES[][4] = {{\n{rows}\n}};\n"}
    for name, text in files.items():
        (folder / name).write_text(text)
    return files


def _checksum(stdout: str) -> str:
    return next(line.split()[1] for line in stdout.splitlines() if line.startswith("sum "))


@pytest.fixture(scope="module")
def host_checksum(tmp_path_factory) -> str:
    """The checksum of the unit test's results built on the host (strict warnings, sanitizers), which passed."""
    folder = tmp_path_factory.mktemp("float_math_host")
    _write_unit_files(folder)
    run = run_c_unit_tests(UNIT_TEST, folder, folder)
    assert run.returncode == 0 and "\nok " in run.stdout, run.stdout + run.stderr
    return _checksum(run.stdout)


def test_the_helpers_are_within_their_bounds_on_a_dense_sweep(tmp_path):
    """Every 251st float of each domain (some 34 million operands) against double precision (every float, with
    -DFLOAT_MATH_SWEEP=1u -DFLOAT_MATH_ONLY=<function>, measured once: tanhf 1.4266 ULP at most, erff 0.8360)."""
    _write_unit_files(tmp_path)
    program = tmp_path / "dense"
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), "-DFLOAT_MATH_DENSE",
                    "-DFLOAT_MATH_SWEEP=251u", f"-I{tmp_path}", str(UNIT_TEST), "-lm", "-o", str(program)], check=True)
    run = subprocess.run([str(program)], capture_output=True, text=True)
    assert run.returncode == 0 and "\nok " in run.stdout, run.stdout
    worst = run.stdout.split("worst ")[1].splitlines()[0].split()
    errors = {name: float(error) for name, error in zip(worst[0::3], worst[1::3])}
    assert errors.keys() == FUNCTIONS.keys() and all(errors[f] <= MAX_ULP[f] for f in FUNCTIONS), run.stdout


def test_contraction_allowed_by_the_build_changes_no_bit(tmp_path, host_checksum):
    """Built as GNU C with every multiply-add allowed to fuse (-ffp-contract=fast) into the host's FMA: the
    helpers' own guard keeps their operations apart, so the same results (without it, logf's bits change)."""
    if "fma" not in Path("/proc/cpuinfo").read_text().split():
        pytest.skip("the host has no FMA instruction to contract into")
    _write_unit_files(tmp_path)
    program = tmp_path / "fused"
    subprocess.run(["gcc", "-std=gnu99", "-O2", "-ffp-contract=fast", "-mfma", "-Wall", "-Wextra",
                    *STRICT_WARNINGS.split(), *SANITIZE.split(), f"-I{tmp_path}", str(UNIT_TEST), "-lm", "-o",
                    str(program)], check=True)
    run = subprocess.run([str(program)], capture_output=True, text=True)
    assert run.returncode == 0 and _checksum(run.stdout) == host_checksum, run.stdout


@pytest.mark.parametrize("profile", ["cortex-m4f", "cortex-m0plus", "rv32imc", "rv32imafc"])
def test_the_same_bits_under_qemu(tmp_path, profile, host_checksum):
    """On a core with a single-precision FPU and on cores without one (libgcc's soft float): every case within
    1 ULP and the host's checksum."""
    board = tmp_path / "board"
    board.mkdir()
    files = _write_unit_files(board)
    if profile.startswith("cortex-m"):
        require_tools(CORTEX_M_TOOLS)
        result = run_c_program_under_qemu(board, profile, {**files, "selftest.c": UNIT_TEST.read_text()},
                                          timeout_s=600.0)
    else:
        require_tools(RISCV_TOOLS)
        result = run_c_program_under_riscv_qemu(board, profile, UNIT_TEST, timeout_s=600.0)
    assert result.exit_status == 0 and "ok " in result.stdout, result.ending() + "\n" + result.stdout
    assert _checksum(result.stdout) == host_checksum
