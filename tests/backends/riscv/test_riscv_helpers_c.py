"""The RISC-V backend's hand-written C helpers (backends/riscv/helpers/templates/*.h.in) pass their C unit tests
(tests/c/test_riscv_mac.c, test_riscv_mac_pairs.c, test_riscv_depthwise_mac.c: each helper against the plain loop of its contract, on edge values and odd
counts; test_riscv_fc_rows.c: the fully connected rows and
test_riscv_pair_tiles.c: a pixel pair's or one pixel's channel tiles, and the MAC over tiled rows and its pixel pairs'
tiles, and test_riscv_depthwise_tiles.c: a depthwise pixel's
channel tiles, interior or border, against the plain sums requantized by the scalar helpers; test_requantize_small.c, the DSP epilogue's test, whose contract and names the RISC-V epilogue shares, and
test_requantize_s8.c, the Helium epilogue's, whose the RISC-V epilogue of any double rounding shares: against
the bundle's scalar requantization helpers; test_requantize_biased.c, the element loops' biased requantization with
its RISC-V out-of-line form): on the host (strict warnings, sanitizers), and built with each RISC-V profile's compiler and flags under
the strict warnings and run on QEMU virt in the bundles' sandbox, where the helper is compiled as a bundle
compiles it (always inlined, RV32IM's loads and multiplies)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from backends.cortex_m.helpers.softmax_c import softmax_s8_helper_c
from backends.cortex_m.schedules.dsp_add import add_values_helper_c
from backends.cortex_m.helpers.requantize_biased_c import requantize_biased_helper_c
from backends.riscv.helpers import interleaved_mac_c, requantize_biased_call_c, riscv_helpers_c, softmax_shared_c
from c_checks import run_c_program_under_riscv_qemu, run_c_unit_tests
from packager.fixed_point_c import SATURATE_INT8, SMALL_RIGHT_SHIFT, requantize_helpers_c
from conftest import profile_build_config
from emulator.tools import RISCV_BINUTILS_PREFIX, RISCV_TOOLS
from required_tools import require_tools

UNIT_TESTS = Path(__file__).resolve().parents[2] / "c"
TEST_VALUES = "cortex_m_test_values.h"
"""The window cases and plain sums the Cortex-M window MAC helpers' tests share (a header beside them)."""
GUARDED_BUFFERS = "guarded_buffers.h"
"""The unit tests' exact-size buffers against no-access memory (host: ASan; QEMU: MPU or PMP guards)."""
PREFIX = "lp"
PROFILES = ["rv32imc", "rv32imafc"]
LIBRARY_HEADER = "riscv_mac.h"
"""The header every unit test includes: the RISC-V helper library for the prefix lp."""
HELIUM_REQUANTIZE_HEADER = "requantize_s8.h"
"""The header test_requantize_s8.c (the Helium epilogue's test, whose contract and names the RISC-V epilogue of any
double rounding shares) includes: the same text."""
REQUANTIZE_HEADER = "requantize_small.h"
"""The header test_requantize_small.c (and the double rounding's and the pixel tiles' tests) includes: the bundle's
scalar double and "double_small" requantizations and int8 saturation (what the epilogues replace), then the
RISC-V helper library, for the prefix lp."""
UNITS = ["riscv_mac", "riscv_mac_pairs", "riscv_depthwise_mac", "requantize_small", "requantize_s8",
         "riscv_fc_rows", "riscv_pair_tiles", "riscv_depthwise_tiles", "conv_tiles_s8x4", "dual_mac_interleaved",
         "requantize_biased"]
"""The unit tests tests/c/test_<unit>.c: the window MACs, the MAC of paired weights, the depthwise MAC, the
requantization epilogues ("double_small"'s and any double rounding's), the per-tensor fully connected rows, a
convolution's pixel tiles (and the tiled rows' pairs), and a depthwise pixel's tiles, interior and border (against the
scalar helpers too), and
the four-channel tiles (the DSP cores' test of that contract, whole tiles only), the MAC over interleaved weights
(the DSP cores' test of its contract and name), and the biased requantization, inlined and out of line."""
CONV_TILES4_HEADER = "conv_tiles_s8x4.h"
"""The header test_conv_tiles_s8x4.c includes: the requantization header's text, its partial tiles' cases left out
(LP_WHOLE_TILES_ONLY: the RISC-V helpers have none)."""
INTERLEAVED_HEADER = "dual_mac_interleaved.h"
"""The header test_dual_mac_interleaved.c includes: the RISC-V interleaved MAC's library (its own), prefix lp."""
BIASED_HEADER = "requantize_biased.h"
"""The header test_requantize_biased.c includes: the scalar helpers it checks against, the biased requantization
and its RISC-V out-of-line form (their libraries as a bundle defines them), prefix lp."""


def write_unit_files(folder: Path, unit: str) -> Path:
    """`riscv_mac.h` (the helpers as a bundle of prefix `lp` defines them, after <stdint.h>), `requantize_small.h`,
    `requantize_s8.h` and `conv_tiles_s8x4.h` (the same after the scalar helpers the epilogues replace),
    `dual_mac_interleaved.h` (the interleaved MAC's library), `requantize_biased.h` (the scalar helpers, then the
    biased requantization, inlined and out of line) and the shared inputs' header
    into `folder`; the source of the unit test `unit`."""
    (folder / LIBRARY_HEADER).write_text("#include <stdint.h>\n" + riscv_helpers_c(PREFIX))
    scalar = requantize_helpers_c(PREFIX, ("double", SMALL_RIGHT_SHIFT, SATURATE_INT8))
    (folder / REQUANTIZE_HEADER).write_text("#include <stdint.h>\n" + scalar + riscv_helpers_c(PREFIX))
    # the Helium epilogue's test, its table forms left out (LP_NO_TABLES: the RISC-V epilogue has none)
    (folder / HELIUM_REQUANTIZE_HEADER).write_text("#include <stdint.h>\n#define LP_NO_TABLES 1\n" + scalar
                                                   + riscv_helpers_c(PREFIX))
    (folder / CONV_TILES4_HEADER).write_text("#include <stdint.h>\n#define LP_WHOLE_TILES_ONLY 1\n" + scalar
                                             + riscv_helpers_c(PREFIX))
    (folder / INTERLEAVED_HEADER).write_text("#include <stdint.h>\n" + interleaved_mac_c(PREFIX))
    (folder / BIASED_HEADER).write_text("#include <stdint.h>\n" + scalar + requantize_biased_helper_c(PREFIX)
                                        + requantize_biased_call_c(PREFIX))
    shutil.copyfile(UNIT_TESTS / TEST_VALUES, folder / TEST_VALUES)
    shutil.copyfile(UNIT_TESTS / GUARDED_BUFFERS, folder / GUARDED_BUFFERS)
    return UNIT_TESTS / f"test_{unit}.c"


@pytest.mark.parametrize("unit", UNITS)
def test_the_helper_passes_its_unit_test_on_the_host(tmp_path: Path, unit: str) -> None:
    run = run_c_unit_tests(write_unit_files(tmp_path, unit), tmp_path, tmp_path)
    assert run.returncode == 0 and run.stdout.startswith("ok "), run.stdout + run.stderr


@pytest.mark.parametrize("unit", UNITS)
@pytest.mark.parametrize("profile", PROFILES)
def test_the_helper_passes_its_unit_test_under_qemu_virt(tmp_path: Path, profile: str, unit: str) -> None:
    require_tools(RISCV_TOOLS)
    result = run_c_program_under_riscv_qemu(tmp_path, profile, write_unit_files(tmp_path, unit))
    assert result.exit_status == 0 and "ok " in result.stdout, result.ending() + "\n" + result.stdout + result.stderr


@pytest.mark.parametrize("profile", PROFILES)
def test_the_int8_softmax_passes_its_unit_test_under_qemu_virt(tmp_path: Path, profile: str) -> None:
    """The DSP cores' int8 softmax (backends/cortex_m/helpers/templates/softmax_s8.h.in), which the RISC-V
    schedules call too (`KernelSchedules.int8_softmax`), and its RISC-V out-of-line form (softmax_s8_shared.h.in,
    `backends.riscv.schedules.shared_softmax`) pass their unit test (tests/c/test_softmax_s8.c, against TFLite's
    arithmetic in 64-bit C) built for each RISC-V profile and run on QEMU virt: the portable C, no DSP."""
    require_tools(RISCV_TOOLS)
    (tmp_path / "softmax_s8.h").write_text("#include <stdint.h>\n" + softmax_s8_helper_c(PREFIX)
                                           + softmax_shared_c(PREFIX))
    shutil.copyfile(UNIT_TESTS / GUARDED_BUFFERS, tmp_path / GUARDED_BUFFERS)
    result = run_c_program_under_riscv_qemu(tmp_path, profile, UNIT_TESTS / "test_softmax_s8.c")
    assert result.exit_status == 0 and "ok " in result.stdout, result.ending() + "\n" + result.stdout + result.stderr


@pytest.mark.parametrize("profile", PROFILES)
def test_the_add_values_stage_passes_its_unit_test_under_qemu_virt(tmp_path: Path, profile: str) -> None:
    """The DSP cores' int8 ADD, SUB and SQUARED_DIFFERENCE output stage from tabled values
    (backends/cortex_m/helpers/templates/add_s8_values.h.in), which the RISC-V schedules write too
    (`KernelSchedules.int8_add_values`), passes its unit test (tests/c/test_add_s8_values.c: every operand pair
    against TFLite's reference with the bundle's scalar double rounding) built for each RISC-V profile and run on
    QEMU virt: its portable C (the product's high word plus its low word's top bit), no DSP."""
    require_tools(RISCV_TOOLS)
    scalar = requantize_helpers_c(PREFIX, ("double", SATURATE_INT8))
    (tmp_path / "add_s8_values.h").write_text("#include <stdint.h>\n" + scalar + add_values_helper_c(PREFIX))
    result = run_c_program_under_riscv_qemu(tmp_path, profile, UNIT_TESTS / "test_add_s8_values.c")
    assert result.exit_status == 0 and "ok " in result.stdout, result.ending() + "\n" + result.stdout + result.stderr


EPILOGUE_CALLERS = """#include <stdint.h>
#include "riscv_mac.h"
int32_t wide(int8_t *o, const int32_t *a, const int32_t *b, const int32_t *m, const int8_t *s)
{ return lp_requantize_small_s8(o, a, b, m, s, -128, 8); }
int32_t narrow(int8_t *o, const int32_t *a, const int16_t *b, const int32_t *m, const int8_t *s)
{ return lp_requantize_small_s8_b16(o, a, b, m, s, 3, 8); }
"""
"""Two kernels' epilogue calls, one of int32 biases, one of int16 ones."""


@pytest.mark.parametrize("profile", PROFILES)
def test_the_epilogue_is_one_function_for_both_bias_types(tmp_path: Path, profile: str) -> None:
    """`lp_requantize_small_s8` and `_s8_b16` share one out-of-line function (`lp_requantize_small_any`; a
    copy per bias type took ~350 more bytes in every bundle with both), and the callers multiply nothing."""
    require_tools(RISCV_TOOLS)
    functions = compiled_functions(tmp_path, profile, EPILOGUE_CALLERS)
    epilogues = [code for name, code in functions.items() if "_requantize_small" in name]
    assert len(epilogues) == 1 and "mulh" in epilogues[0], functions
    assert "mul" not in functions["wide"] + functions["narrow"], functions


DEPTHWISE_CALLERS = """#include <stdint.h>
#include "riscv_mac.h"
int32_t dw_64(int32_t *acc, const int8_t *x, const int8_t *w)
{
    lp_depthwise_pad_s8x8(acc, w, 192, 64, 1, 3, -128, 8);
    return lp_depthwise_mac_s8x8(acc, x, w, 320, 64, 192, 64, 2, 3);
}
int32_t dw_128(int32_t *acc, const int8_t *x, const int8_t *w)
{
    lp_depthwise_pad_s8x8(acc, w, 384, 128, 3, 1, 5, 8);
    return lp_depthwise_mac_s8x8(acc, x, w, 1536, 128, 384, 128, 3, 3);
}
"""
"""Two depthwise kernels' calls of the depthwise helpers with their own constant strides and windows (a padded
border's clipped one and its padding's taps, an interior's 3x3)."""
PAIRS_CALLERS = """#include <stdint.h>
#include "riscv_mac.h"
int32_t fc_128(int32_t *acc, const int8_t *x, const int32_t *w) { return lp_mac_s8x8_pairs(acc, x, w, 128); }
int32_t fc_640(int32_t *acc, const int8_t *x, const int32_t *w) { return lp_mac_s8x8_pairs(acc, x, w, 640); }
"""
"""Two kernels' calls of the paired MAC with their own constant row lengths, as two FULLY_CONNECTED kernels make."""

WINDOW_PAIRS_CALLERS = """#include <stdint.h>
#include "riscv_mac.h"
int32_t conv3x3_16(int32_t *a, int32_t *b, const int8_t *x, const int32_t *w)
{ return lp_mac_s8x2x8_pairs_rows(a, b, x, w, 512, 3, 48, 16); }
int32_t conv3x3_s2_32(int32_t *a, int32_t *b, const int8_t *x, const int32_t *w)
{ return lp_mac_s8x2x8_pairs_rows(a, b, x, w, 1024, 3, 96, 64); }
int32_t conv1x1_64(int32_t *a, int32_t *b, const int8_t *x, const int32_t *w)
{ return lp_mac_s8x2x8_pairs(a, b, x, w, 64, 64); }
int32_t lone3x3_16(int32_t *a, const int8_t *x, const int32_t *w)
{ return lp_mac_s8x8_pairs_rows(a, x, w, 512, 3, 48); }
int32_t lone3x3_32(int32_t *a, const int8_t *x, const int32_t *w)
{ return lp_mac_s8x8_pairs_rows(a, x, w, 1024, 3, 96); }
"""
"""Two KxK convolutions' two-pixel calls over their windows' rows, a 1x1 convolution's over its one row, and two
KxK convolutions' lone pixels' calls."""


def compiled_functions(folder: Path, profile: str, source: str) -> dict[str, list[str]]:
    """The instructions' mnemonics of each function of `source` (C that includes the helper library of prefix lp)
    compiled with `profile`'s compiler and flags as a bundle's sources are, by function name."""
    write_unit_files(folder, "riscv_mac")
    (folder / "callers.c").write_text(source)
    config = profile_build_config(profile)
    built = subprocess.run([config.cc, *config.compile_flags, "-std=c99", f"-I{folder}", "-c", "callers.c", "-o",
                            "callers.o"], cwd=folder, capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    listing = subprocess.run([f"{RISCV_BINUTILS_PREFIX}objdump", "-d", "--no-show-raw-insn", "callers.o"],
                             cwd=folder, capture_output=True, text=True, check=True).stdout
    functions: dict[str, list[str]] = {}
    for section in listing.split("Disassembly of section .text.")[1:]:  # -ffunction-sections: one per function
        name, _, body = section.partition(":")
        functions[name] = [fields[1] for fields in (line.split("\t") for line in body.splitlines())
                           if len(fields) > 1 and fields[0].strip().endswith(":")]
    return functions


@pytest.mark.parametrize("profile", PROFILES)
def test_the_depthwise_helpers_are_one_function_each_their_callers_share(tmp_path: Path, profile: str) -> None:
    """Two depthwise kernels' calls of `lp_depthwise_mac_s8x8` and `lp_depthwise_pad_s8x8` share one out-of-line
    function each, and the callers multiply nothing themselves (inlined, each kernel held a 3x3 window's
    straight-line taps, 72 multiplies, and a loop of eight channels per clipped side of its border): the MAC holds
    one tap's code (a row's taps one a step: five taps' code, its three-tap steps and the one or two left, took
    ~370 more bytes), the padding's eight multiplies."""
    require_tools(RISCV_TOOLS)
    functions = compiled_functions(tmp_path, profile, DEPTHWISE_CALLERS)
    mac = [code for name, code in functions.items() if "_depthwise_mac_s8x8" in name]
    pad = [code for name, code in functions.items() if "_depthwise_pad_s8x8" in name]
    assert len(mac) == 1 and len(pad) == 1, functions
    multiplies = sum(op == "mul" for op in mac[0])
    assert multiplies == 8, mac[0]
    assert sum(op == "mul" for op in pad[0]) == 8, pad[0]
    assert "mul" not in functions["dw_64"] + functions["dw_128"], functions


@pytest.mark.parametrize("profile", PROFILES)
def test_the_paired_mac_is_one_function_its_callers_share(tmp_path: Path, profile: str) -> None:
    """Two kernels' calls of `lp_mac_s8x8_pairs` share one out-of-line function: the callers multiply nothing
    themselves (inlined, each held a copy of its loops, ~260 bytes per FULLY_CONNECTED kernel on rv32imc)."""
    require_tools(RISCV_TOOLS)
    functions = compiled_functions(tmp_path, profile, PAIRS_CALLERS)
    pairs = [code for name, code in functions.items() if "_mac_s8x8_pairs" in name]
    assert len(pairs) == 1 and "mul" in pairs[0], functions
    assert "mul" not in functions["fc_128"] + functions["fc_640"], functions


@pytest.mark.parametrize("profile", PROFILES)
def test_the_two_pixel_window_mac_is_one_function_its_kxk_callers_share(tmp_path: Path, profile: str) -> None:
    """Two KxK convolutions' calls of `lp_mac_s8x2x8_pairs_rows` share one out-of-line function (inlined, each
    kernel held a copy of its sixteen sums' loops, ~500 bytes on rv32imc), and their lone pixels' calls of
    `lp_mac_s8x8_pairs_rows` another (its loop over the rows), while a 1x1 convolution's call of
    `lp_mac_s8x2x8_pairs` keeps the loops inlined (its short rows pay for the constant row length)."""
    require_tools(RISCV_TOOLS)
    functions = compiled_functions(tmp_path, profile, WINDOW_PAIRS_CALLERS)
    window = [code for name, code in functions.items() if "_mac_s8x2x8_pairs_rows" in name]
    assert len(window) == 1 and "mul" in window[0], functions
    assert len([name for name in functions if "_mac_s8x8_pairs_rows" in name]) == 1, functions
    callers = ("conv3x3_16", "conv3x3_s2_32", "lone3x3_16", "lone3x3_32")
    assert not any("mul" in functions[caller] for caller in callers), functions
    assert "mul" in functions["conv1x1_64"], functions


PIXEL_TILES_CALLERS = """#include <stdint.h>
#include "riscv_mac.h"
int32_t pair3x3_16(int8_t *o, const int8_t *x, const int32_t *w, const int32_t *b, const int32_t *m, const int8_t *s)
{ return lp_pair_tiles_s8x8(o, x, w, b, m, s, 4, 512, 3, 48, 16, 16, 576, 2); }
int32_t pair1x1_64(int8_t *o, const int8_t *x, const int32_t *w, const int16_t *b, const int32_t *m, const int8_t *s)
{ return lp_pair_tiles_s8x8_b16(o, x, w, b, m, s, -3, 0, 1, 64, 64, 32, 256, 4); }
int32_t lone3x3_16(int8_t *o, const int8_t *x, const int32_t *w, const int32_t *b, const int32_t *m, const int8_t *s)
{ return lp_conv_tiles_s8x8(o, x, w, b, m, s, 4, 512, 3, 48, 576, 2); }
int32_t border3x3_32(int8_t *o, const int8_t *x, const int32_t *w, const int16_t *b, const int32_t *m, const int8_t *s)
{ return lp_conv_tiles_s8x8_b16(o, x, w, b, m, s, -128, 0, 1, 288, 1152, 4); }
"""
"""Two convolutions' fused pixel pairs (a KxK window's, a 1x1 one's, int32 and int16 biases) and two one-pixel
calls (a lone pixel's window rows, a border pixel's copied window)."""


@pytest.mark.parametrize("profile", PROFILES)
def test_the_fused_pixel_tiles_are_one_function_each_their_callers_share(tmp_path: Path, profile: str) -> None:
    """The calls of `lp_pair_tiles_s8x8` (`_b16`) share one out-of-line function and those of `lp_conv_tiles_s8x8`
    (`_b16`) another, whatever the bias type: the callers multiply nothing themselves (each convolution's loops over
    its channel tiles held their calls and zeroed sums, 800-1,000 bytes per 3x3 kernel on rv32imc)."""
    require_tools(RISCV_TOOLS)
    functions = compiled_functions(tmp_path, profile, PIXEL_TILES_CALLERS)
    assert len([name for name in functions if "_pair_tiles_any" in name]) == 1, functions
    assert len([name for name in functions if "_conv_tiles_any" in name]) == 1, functions
    callers = ("pair3x3_16", "pair1x1_64", "lone3x3_16", "border3x3_32")
    assert not any("mul" in functions[caller] for caller in callers), functions
