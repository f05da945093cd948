"""A bundle builds at the optimization levels a user's build may choose, not only at the profile's -O2: every
Cortex-M helper's unit test compiles for its core at -O0 (a debug build: gcc keeps r7 as the frame pointer, and an
RTOS's build reserves r9 too, so an asm statement gets two registers fewer), -Og and -Os, and a DSP bundle built at -O0 computes the same bits under
QEMU. The Cortex-M helpers' assembly loops need many registers: one of them (the dual MAC's any-length loop, then 13
registers) did not compile at -O0 ("'asm' operand has impossible constraints") and gives way to its C loop there, as
the fused pair tiles' loop does. A user's build that reserves r7 and r9 (a frame pointer, an RTOS's platform
register) compiles the kernels of bundles that call the helpers' twelve-register loops."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from c_checks import build_for_cortex_m
from conftest import writable_copy
from test_cortex_m_helpers_c import (RESERVED_REGISTERS_FLAGS, UNIT_TESTS_BY_HELPER, HelperUnitTest,
                                     needs_cross_tools)

OTHER_LEVELS = {"-O0": ("-O0", "-ffixed-r9"), "-Og": ("-Og",), "-Os": ("-Os",)}
"""The optimization levels besides the profiles' -O2 that every helper must build at, each with its build's flags:
the debug build also reserves r9 (an RTOS's platform register) beside -O0's frame pointer r7, the fewest registers
a user's build leaves an asm statement (the stacked MAC's twelve-register loop once failed there)."""


@needs_cross_tools
@pytest.mark.parametrize("level", OTHER_LEVELS)
@pytest.mark.parametrize("unit", UNIT_TESTS_BY_HELPER, ids=[unit.id for unit in UNIT_TESTS_BY_HELPER])
def test_every_helper_builds_for_its_core_at_other_levels(tmp_path: Path, unit: HelperUnitTest, level: str) -> None:
    """Each helper's unit test (which calls every helper of its header) builds for its core at `level`, under
    the strict warnings, on the core's own path (`core_macro`) wherever the helpers compile it (a helper whose
    assembly loop needs more registers than a debug build leaves, the batch matmul's, gives way to its C loop
    at -O0, which defines no __OPTIMIZE__: `core_path_optimizing_only`)."""
    unit.write_files(tmp_path)
    build_for_cortex_m(unit.core_source_text(optimizing=level != "-O0"), tmp_path, tmp_path, unit.profile,
                       OTHER_LEVELS[level])


@needs_cross_tools
@pytest.mark.slow
def test_a_debug_build_of_kws_passes_its_self_test_under_qemu(compiled, tmp_path: Path) -> None:
    """kws_ref_model on cortex-m4f (its convolutions call the fused conv tiles and pair tiles, whose assembly loops
    -O0 cannot take) built at -O0 throughout, library and self-test, runs bit-exact under QEMU on their C loops."""
    bundle = writable_copy(compiled("mlperf_tiny/kws_ref_model.tflite", "cortex-m4f"), tmp_path)
    kernels = (bundle.out_dir / "kws_ref_model_kernels.c").read_text()
    assert "_conv_tiles_s8x4(" in kernels and "_pair_tiles_s8(" in kernels
    for makefile in (bundle.out_dir / "Makefile", bundle.out_dir / "cortex_m" / "qemu-test.mk"):
        text = makefile.read_text()
        assert " -O2 " in text
        makefile.write_text(text.replace(" -O2 ", " -O0 "))
    shutil.rmtree(bundle.out_dir / "build-cortex-m", ignore_errors=True)  # the objects built at -O2
    run = subprocess.run(["make", "-s", "qemu-test"], cwd=bundle.out_dir, capture_output=True, text=True)
    assert run.returncode == 0 and "selftest: PASS" in run.stdout, run.stdout + run.stderr


@needs_cross_tools
@pytest.mark.parametrize(("model", "helper_calls"),
                         [("mlperf_tiny/kws_ref_model.tflite", (("_conv_tiles_s8x4(",), ("_pair_tiles_s8(",))),
                          ("mlperf_tiny/ad01_int8.tflite", (("_fc_rows_s8x4(", "_fc_rows_w16x4("),))])
def test_a_bundles_kernels_build_with_r7_and_r9_reserved(compiled, tmp_path: Path, model: str,
                                                         helper_calls: tuple[tuple[str, ...], ...]) -> None:
    """The session's cortex-m4f bundle of `model` (its kernels call one helper of each of `helper_calls`' choices:
    the stacked or the widened FULLY_CONNECTED rows, whose assembly gcc inlines into them) compiles its kernels
    with r7 and r9 reserved: each asm statement in its callers' context, which the helpers' unit tests do not
    reproduce (gcc -O2 once refused a twelve-register loop in one caller and took it in another)."""
    bundle = compiled(model, "cortex-m4f")
    kernels = next(bundle.out_dir.glob("*_kernels.c"))
    text = kernels.read_text()
    assert all(any(call in text for call in choice) for choice in helper_calls)
    build_for_cortex_m(text, bundle.out_dir, tmp_path, "cortex-m4f", RESERVED_REGISTERS_FLAGS)
