"""The Cortex-M backend's hand-written C helpers (backends/cortex_m/helpers/templates/*.h.in) pass their C unit
tests (tests/c/test_<helper>.c: each helper against the plain loop of its contract, on edge values and odd
counts): on the host (the portable C; strict warnings, sanitizers), and built for their core and run under
QEMU in the bundles' sandbox: cortex-m4f for the DSP path (SXTB16, SMLAD, PKHBT/PKHTB, LDRD, the word copies),
cortex-m55 for the Helium bodies (VLDRB, VMLADAVA, VCTP), which pass their DSP twins' unit tests. Each unit test
builds for its core under the strict warnings, and so does the whole library a bundle defines."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

from backends.cortex_m.helpers import (cortex_m_helpers_c, depthwise_pair_helpers_c, depthwise_pixel_helpers_c,
                                      depthwise_rows_any_helpers_c, depthwise_rows_helpers_c,
                                      depthwise_spread_helpers_c, helium_float_c, helium_helpers_c, helium_mac_rows_c,
                                      pair_direct_helpers_c)
from backends.cortex_m.helpers.fpu_float_c import FPU_FLOAT_TEMPLATE, fpu_float_c
from backends.cortex_m.helpers.batch_matmul_c import (BATCH_MATMUL_TEMPLATE, HELIUM_BATCH_MATMUL_TEMPLATE,
                                                      batch_matmul_helper_c, helium_batch_matmul_helper_c)
from backends.cortex_m.helpers.copy_c import (COPY_TEMPLATE, HELIUM_MAX_S8_TEMPLATE, MAX_S8_TEMPLATE,
                                             STATE_SHIFT_TEMPLATE, TRANSPOSE_TEMPLATE, helium_max_s8_helper_c)
from backends.cortex_m.helpers.depthwise_mac_c import (DEPTHWISE_MAC_TEMPLATE, DEPTHWISE_PAIR_TEMPLATE,
                                                      DEPTHWISE_PIXEL_TEMPLATE, DEPTHWISE_ROWS_ANY_TEMPLATE,
                                                      DEPTHWISE_ROWS_TEMPLATE, DEPTHWISE_TILES_TEMPLATE)
from backends.cortex_m.helpers.depthwise_spread_c import DEPTHWISE_SPREAD_TEMPLATE
from backends.cortex_m.helpers.dual_mac_c import (CONV_TILES_PART_TEMPLATE, CONV_TILES_TEMPLATE, DSP_WORDS_TEMPLATE,
                                                  DUAL_MAC_TEMPLATE, DUAL_MAC_W16_TEMPLATE, FC_TILES_TEMPLATE,
                                                  STACKED_MAC_TEMPLATE, WIDE_MAC_TEMPLATE, dsp_template_c)
from backends.cortex_m.helpers.dual_mac_interleaved_c import (DUAL_MAC_INTERLEAVED16_TEMPLATE,
                                                             DUAL_MAC_INTERLEAVED_TEMPLATE)
from backends.cortex_m.helpers.dual_mac_q15_c import DUAL_MAC_Q15_TEMPLATE
from backends.cortex_m.helpers.helium_c import (HELIUM_ADD_TEMPLATE, HELIUM_CONV_TILES_TEMPLATE,
                                               HELIUM_DEPTHWISE16_TEMPLATE, HELIUM_FC_ROWS_TEMPLATE,
                                               HELIUM_FLOAT_TEMPLATE, HELIUM_LANES_TEMPLATE, HELIUM_MAC_ROWS_TEMPLATE,
                                               HELIUM_QLINEAR_TEMPLATE, HELIUM_LEFT_SHIFTS_TEMPLATE,
                                               HELIUM_REQUANTIZE_TEMPLATE, helium_template_c)
from backends.cortex_m.helpers.pair_tiles_c import PAIR_DIRECT_TEMPLATE, PAIR_PART_TEMPLATE, PAIR_TILES_TEMPLATE
from backends.cortex_m.helpers.pointwise_few_c import POINTWISE_FEW_TEMPLATE, pointwise_few_helper_c
from backends.cortex_m.helpers.pool_sums_c import (POOL_AVERAGE_TEMPLATE, POOL_COLUMNS_TEMPLATE, POOL_SCALE_TEMPLATE,
                                                   POOL_SUMS_TEMPLATE, pool_average_helper_c, pool_columns_helper_c,
                                                   pool_scale_helper_c, pool_sums_helper_c)
from backends.cortex_m.helpers.quad_tiles_c import QUAD_TILES_TEMPLATE
from backends.cortex_m.helpers.requantize_small_c import REQUANTIZE_SMALL_TEMPLATE
from backends.cortex_m.helpers.row_dot_c import ROW_DOT1_TEMPLATE, ROW_DOT_TEMPLATE
from backends.cortex_m.helpers.softmax_c import SOFTMAX_S8_TEMPLATE
from backends.cortex_m.helpers.tiles_16x8_c import TILES_16X8_TEMPLATE
from backends.cortex_m.helpers.window1_conv_c import WINDOW1_TEMPLATE
from backends.cortex_m.helpers.requantize_biased_c import REQUANTIZE_BIASED_TEMPLATE
from backends.cortex_m.schedules.dsp_add import ADD_VALUES_TEMPLATE
from backends.cortex_m.schedules.helium_add_values import HELIUM_ADD_VALUES_TEMPLATE
from c_checks import build_for_cortex_m, run_c_program_under_qemu, run_c_unit_tests
from emulator.tools import missing_tools
from packager.c_text import macro_prefix
from packager.fixed_point_c import REQUANTIZE_16X8, SATURATE_INT8, SMALL_RIGHT_SHIFT, requantize_helpers_c
from packager.template_files import helper_template_c

UNIT_TESTS = Path(__file__).resolve().parents[2] / "c"
TEST_VALUES = "cortex_m_test_values.h"
"""The unit tests' shared inputs (a header beside them)."""
GUARDED_BUFFERS = "guarded_buffers.h"
"""The unit tests' exact-size buffers against no-access memory (host: ASan; QEMU: MPU or PMP guards)."""
PREFIX = "lp"
HELIUM_MACRO = f"{macro_prefix(PREFIX)}_HELIUM"
"""What helium_lanes.h.in defines where the compiler has MVE: the Helium bodies are compiled only then."""
HELIUM_FLOAT_MACRO = f"{macro_prefix(PREFIX)}_HELIUM_FLOAT"
"""What helium_float.h.in defines where the compiler has MVE's float lanes: its vector bodies are compiled only then."""
FPU_FLOAT_MACRO = f"{macro_prefix(PREFIX)}_FPU_FLOAT"
"""What fpu_float.h.in defines where the compiler has a scalar single-precision FPU and no MVE: its VLDMs then."""
HELIUM_QLINEAR_MACRO = f"{macro_prefix(PREFIX)}_HELIUM_QLINEAR"
"""What helium_qlinear.h.in defines where the compiler has MVE's integer and float lanes."""


def core_path_required(macro: Optional[str]) -> str:
    """C that stops the compile unless `macro` is defined (nothing when `macro` is None)."""
    if macro is None:
        return ""
    return f'\n#if !defined({macro})\n#error "{macro} is not defined: the core\'s path is not compiled"\n#endif\n'


@dataclass(frozen=True)
class HelperUnitTest:
    """A helper's C unit test: tests/c/test_<name>.c, which includes `<name>.h`: the helper's templates (in
    a bundle's order) for the prefix `lp`, each as `template_c(template, prefix)` gives it (a Helium bundle's:
    `helium_template_c`); each of `host_defines` is one host build's -D flags; `profile` is the Cortex-M core it
    runs on under QEMU; `core_macro` (if any) the macro the helpers define only where the core's own path is
    compiled, which its build for `profile` must define (else it would test the portable C again);
    `core_path_optimizing_only`: the helpers compile that path only when optimizing (gcc's __OPTIMIZE__: an
    assembly loop that needs more registers than a debug build leaves), so a -O0 build need not define it."""

    name: str
    templates: tuple[str, ...]
    host_defines: tuple[tuple[str, ...], ...] = ((),)
    profile: str = "cortex-m4f"
    template_c: Callable[[str, str], str] = functools.partial(helper_template_c, "backends.cortex_m.helpers")
    core_macro: Optional[str] = None
    core_path_optimizing_only: bool = False
    variant: str = ""
    """A name telling apart two tests of one helper on one core (their templates differ), in the test's id."""

    def core_source_text(self, optimizing: bool = True) -> str:
        """The unit test's C for the build for `profile` (`optimizing`: at a level that defines __OPTIMIZE__):
        the source, refused by the compiler unless the core's path is the one compiled (`core_macro` defined)
        wherever the helpers compile it."""
        required = None if self.core_path_optimizing_only and not optimizing else self.core_macro
        return self.source.read_text() + core_path_required(required)

    @property
    def id(self) -> str:
        """The test's name: the helper's, with the core when it is not cortex-m4f."""
        name = f"{self.name}-{self.variant}" if self.variant else self.name
        return name if self.profile == "cortex-m4f" else f"{name}-{self.profile}"

    @property
    def source(self) -> Path:
        return UNIT_TESTS / f"test_{self.name}.c"

    def header_text(self) -> str:
        """`<name>.h`: the helpers as a bundle of prefix `lp` defines them (after <stdint.h>, as there)."""
        return "#include <stdint.h>\n" + "".join(self.template_c(template, PREFIX) for template in self.templates)

    def write_files(self, folder: Path) -> None:
        """`<name>.h`, the shared inputs' header and the guarded buffers' header into `folder`."""
        (folder / f"{self.name}.h").write_text(self.header_text())
        shutil.copyfile(UNIT_TESTS / TEST_VALUES, folder / TEST_VALUES)
        shutil.copyfile(UNIT_TESTS / GUARDED_BUFFERS, folder / GUARDED_BUFFERS)


SCALAR_REQUANTIZE = ("double", SATURATE_INT8)
"""The bundle's scalar helpers (packager.fixed_point_c) the Helium requantization is checked against."""
SCALAR_REQUANTIZE_SMALL = (SMALL_RIGHT_SHIFT, SATURATE_INT8)
"""Those the DSP requantization is checked against."""
SCALAR_HELPERS = (*SCALAR_REQUANTIZE, SMALL_RIGHT_SHIFT)


def requantize_template_c(template: str, prefix: str, helper_c: Callable[[str, str], str] = helium_template_c) -> str:
    """A template of a requantization's unit test: a scalar helper (SCALAR_HELPERS), else the helper's template
    as `helper_c` gives it (by default a Helium bundle's)."""
    if template in SCALAR_HELPERS:
        return requantize_helpers_c(prefix, (template,))
    return helper_c(template, prefix)


def tiles_16x8_template_c(template: str, prefix: str, helper_c: Callable[[str, str], str]) -> str:
    """A template of the fused 16x8 tiles' unit test: the bundle's 16x8 requantization (packager.fixed_point_c), else
    the helper's template as `helper_c` gives it."""
    return requantize_helpers_c(prefix, (template,)) if template == REQUANTIZE_16X8 else helper_c(template, prefix)


TILES_16X8_TEMPLATES = (REQUANTIZE_16X8, DSP_WORDS_TEMPLATE, DUAL_MAC_TEMPLATE, TILES_16X8_TEMPLATE)
"""The fused 16x8 tiles after the 16x8 requantization and the dual MAC (a Helium bundle's after its lanes)."""
DUAL_MAC = HelperUnitTest("dual_mac", (DSP_WORDS_TEMPLATE, DUAL_MAC_TEMPLATE))
DEPTHWISE_MAC = HelperUnitTest("depthwise_mac", (DSP_WORDS_TEMPLATE, DEPTHWISE_MAC_TEMPLATE),
                               template_c=dsp_template_c)  # as a DSP bundle fills its options
ROW_DOT = HelperUnitTest("row_dot", (DSP_WORDS_TEMPLATE, ROW_DOT_TEMPLATE))
UNIT_TESTS_BY_HELPER = [
    DUAL_MAC,
    HelperUnitTest("dual_mac_q15", (DSP_WORDS_TEMPLATE, DUAL_MAC_Q15_TEMPLATE)),
    # the 16x8 dual MAC over int16 weights (widened at compile time): a word of inputs and one of weights per SMLAD
    HelperUnitTest("dual_mac_w16", (DSP_WORDS_TEMPLATE, DUAL_MAC_W16_TEMPLATE)),
    HelperUnitTest("stacked_mac", (DSP_WORDS_TEMPLATE, STACKED_MAC_TEMPLATE)),
    # the widened-rows MAC (int16 weight pairs, twelve registers) against the plain sums
    HelperUnitTest("wide_mac", (DSP_WORDS_TEMPLATE, STACKED_MAC_TEMPLATE, WIDE_MAC_TEMPLATE)),
    DEPTHWISE_MAC,
    # the depthwise MAC of a depth multiplier above 1 (one or two inputs a tap) against the plain sums
    HelperUnitTest("depthwise_spread", (DSP_WORDS_TEMPLATE, DEPTHWISE_SPREAD_TEMPLATE)),
    ROW_DOT,
    # one row's dot product into one accumulator (an SVDF unit's time product): int8 by SXTB16, int16 by LDRD or LDR
    HelperUnitTest("row_dot1", (ROW_DOT1_TEMPLATE,), core_macro=f"{macro_prefix(PREFIX)}_ROW_DOT1_DSP"),
    # ... and on cortex-m55, whose SVDF time products of an int16 state call it too (its DSP extension's SMLAD)
    HelperUnitTest("row_dot1", (ROW_DOT1_TEMPLATE,), profile="cortex-m55",
                   core_macro=f"{macro_prefix(PREFIX)}_ROW_DOT1_DSP"),
    # the LSTM gates' and the SVDF feature product's dual MAC over interleaved weights: LDRD, SXTB16, SMLAD under QEMU
    # (needs no other template; its group's assembly macro is defined only on that path)
    HelperUnitTest("dual_mac_interleaved", (DUAL_MAC_INTERLEAVED_TEMPLATE,),
                   core_macro=f"{macro_prefix(PREFIX)}_INTERLEAVED_GROUP_ASM"),
    # ... over int16 weights widened at compile time: LDRD, LDM, SMLAD, the inputs' pairs by SXTB16 and PKHBT/PKHTB
    HelperUnitTest("dual_mac_interleaved16", (DUAL_MAC_INTERLEAVED16_TEMPLATE,),
                   core_macro=f"{macro_prefix(PREFIX)}_INTERLEAVED16_GROUP_ASM"),
    # the word copies of cores that load unaligned words, on the host too
    HelperUnitTest("copy_ascending", (COPY_TEMPLATE,), ((), ("-D__ARM_FEATURE_UNALIGNED=1",))),
    # the SVDF state shift (the copy's test on it): unaligned word loads and STMs under QEMU
    HelperUnitTest("state_shift", (STATE_SHIFT_TEMPLATE,), core_macro=f"{macro_prefix(PREFIX)}_STATE_SHIFT_WORDS"),
    # the int8 block transpose: the word blocks on the host too, and under QEMU
    HelperUnitTest("transpose_s8", (TRANSPOSE_TEMPLATE,), ((), ("-D__ARM_FEATURE_UNALIGNED=1",)),
                   core_macro=f"{macro_prefix(PREFIX)}_TRANSPOSE_DSP"),
    # the running int8 maximum: the byte loop on the host, SSUB8 + SEL under QEMU
    HelperUnitTest("max_s8", (MAX_S8_TEMPLATE,)),
    # ... and its Helium twin (VMAX.S8 on 16 lanes, VCTP tails)
    HelperUnitTest("max_s8", (HELIUM_LANES_TEMPLATE, HELIUM_MAX_S8_TEMPLATE), profile="cortex-m55",
                   core_macro=HELIUM_MACRO),
    # the int8 softmax against TFLite's arithmetic in 64-bit C (the same C on the host and under QEMU)
    HelperUnitTest("softmax_s8", (SOFTMAX_S8_TEMPLATE,)),
    # ... and on cortex-m55, whose int8 SOFTMAX kernels call it too (SSUB8/SEL are the DSP extension's, MVE has them)
    HelperUnitTest("softmax_s8", (SOFTMAX_S8_TEMPLATE,), profile="cortex-m55"),
    # the one-input-channel convolution (windows gathered and widened, four pixels per weight word) against the
    # plain sums and the scalar helpers
    HelperUnitTest("window1_conv", (*SCALAR_REQUANTIZE_SMALL, WINDOW1_TEMPLATE),
                   template_c=functools.partial(requantize_template_c,
                                                helper_c=functools.partial(helper_template_c,
                                                                           "backends.cortex_m.helpers"))),
    # the 1x1 convolution of few input channels (a word of inputs widened once per pixel, two SMLAD an output)
    # against the plain sums and the scalar helpers
    HelperUnitTest("pointwise_few", (*SCALAR_REQUANTIZE_SMALL, DSP_WORDS_TEMPLATE, REQUANTIZE_SMALL_TEMPLATE,
                                     POINTWISE_FEW_TEMPLATE),
                   template_c=functools.partial(requantize_template_c,
                                                helper_c=functools.partial(helper_template_c,
                                                                           "backends.cortex_m.helpers"))),
    # the int8 batch matmul (both operands widened once, 2x2 tiles of dual MACs: the assembly loop under QEMU)
    # against the plain sums and the scalar helpers
    HelperUnitTest("batch_matmul_s8", (*SCALAR_REQUANTIZE_SMALL, REQUANTIZE_SMALL_TEMPLATE, BATCH_MATMUL_TEMPLATE),
                   template_c=functools.partial(requantize_template_c,
                                                helper_c=functools.partial(helper_template_c,
                                                                           "backends.cortex_m.helpers")),
                   core_macro=f"{macro_prefix(PREFIX)}_BATCH_MATMUL_ASM", core_path_optimizing_only=True),
    # its Helium twin (VMLADAVA on the operands as they are, the zero points by row and column sums) on the same test
    HelperUnitTest("batch_matmul_s8", (HELIUM_LANES_TEMPLATE, DSP_WORDS_TEMPLATE, DUAL_MAC_TEMPLATE,
                                       *SCALAR_REQUANTIZE_SMALL, HELIUM_REQUANTIZE_TEMPLATE, HELIUM_FC_ROWS_TEMPLATE,
                                       HELIUM_BATCH_MATMUL_TEMPLATE),
                   profile="cortex-m55", template_c=requantize_template_c, core_macro=HELIUM_MACRO),
    # the DSP cores' ADD and SUB output stage from tabled values against TFLite's reference with the scalar helpers
    HelperUnitTest("add_s8_values", (*SCALAR_REQUANTIZE, ADD_VALUES_TEMPLATE),
                   template_c=functools.partial(requantize_template_c,
                                                helper_c=functools.partial(helper_template_c,
                                                                           "backends.cortex_m.helpers"))),
    # ... and Helium's four lanes a call on the same test (ADD and SUB: every pair through both), on the host too
    HelperUnitTest("add_s8_values", (*SCALAR_REQUANTIZE, ADD_VALUES_TEMPLATE, HELIUM_ADD_VALUES_TEMPLATE),
                   profile="cortex-m55", template_c=functools.partial(requantize_template_c,
                                                                      helper_c=functools.partial(
                                                                          helper_template_c,
                                                                          "backends.cortex_m.helpers")),
                   core_macro=f"{macro_prefix(PREFIX)}_ADD_VALUES_MVE"),
    # the Helium bodies, on their DSP twins' tests
    *(HelperUnitTest(unit.name, (HELIUM_LANES_TEMPLATE, *unit.templates), profile="cortex-m55",
                     template_c=helium_template_c, core_macro=HELIUM_MACRO)
      for unit in (DUAL_MAC, DEPTHWISE_MAC, ROW_DOT)),
    # the rows MAC of Helium's recurrent cells (every tile of four rows, the Helium dual MAC's) against the plain sums
    HelperUnitTest("mac_rows", (HELIUM_LANES_TEMPLATE, *DUAL_MAC.templates, HELIUM_MAC_ROWS_TEMPLATE),
                   profile="cortex-m55", template_c=helium_template_c, core_macro=HELIUM_MACRO),
    # the Helium requantization epilogue against the scalar helpers it replaces
    HelperUnitTest("requantize_s8", (HELIUM_LEFT_SHIFTS_TEMPLATE, HELIUM_LANES_TEMPLATE, *SCALAR_REQUANTIZE,
                                     HELIUM_REQUANTIZE_TEMPLATE),
                   profile="cortex-m55", template_c=requantize_template_c, core_macro=HELIUM_MACRO),
    # ... and in a bundle of right shifts only (no VSHL by positive shifts), on shifts -31..0
    HelperUnitTest("requantize_s8", (HELIUM_LANES_TEMPLATE, *SCALAR_REQUANTIZE, HELIUM_REQUANTIZE_TEMPLATE),
                   profile="cortex-m55", template_c=requantize_template_c, core_macro=HELIUM_MACRO,
                   variant="right-shifts"),
    # the DSP requantization epilogue against the scalar helpers it replaces
    HelperUnitTest("requantize_small", (*SCALAR_REQUANTIZE_SMALL, REQUANTIZE_SMALL_TEMPLATE),
                   template_c=functools.partial(requantize_template_c,
                                                helper_c=functools.partial(helper_template_c,
                                                                           "backends.cortex_m.helpers"))),
    # the DSP cores' biased requantization of an element loop against the scalar helper and zero point it replaces
    HelperUnitTest("requantize_biased", (*SCALAR_REQUANTIZE_SMALL, REQUANTIZE_BIASED_TEMPLATE),
                   template_c=functools.partial(requantize_template_c,
                                                helper_c=functools.partial(helper_template_c,
                                                                           "backends.cortex_m.helpers"))),
    # the int8 window sums' word operations (SXTAB16 halves) against the byte sums of their contract
    HelperUnitTest("pool_sums", (POOL_SUMS_TEMPLATE, POOL_COLUMNS_TEMPLATE)),
    # the average pool's packed averages against TFLite's rounding of every sum: SSUB16, SADD16 under QEMU
    HelperUnitTest("pool_average", (POOL_AVERAGE_TEMPLATE,), core_macro=f"{macro_prefix(PREFIX)}_POOL_AVERAGE_DSP"),
    # the MEAN's rescaling of a half where it lies against the 64-bit product: SMLAWB, SMLAWT under QEMU
    HelperUnitTest("pool_scale", (POOL_SCALE_TEMPLATE,), core_macro=f"{macro_prefix(PREFIX)}_POOL_SCALE_DSP"),
    # the DSP fused depthwise channel tiles (window sums from the biases and epilogue) against the plain sums and
    # the scalar helpers
    HelperUnitTest("depthwise_tiles_s8x4", (*SCALAR_REQUANTIZE_SMALL, DSP_WORDS_TEMPLATE, DEPTHWISE_MAC_TEMPLATE,
                                            REQUANTIZE_SMALL_TEMPLATE, DEPTHWISE_TILES_TEMPLATE),
                   template_c=functools.partial(requantize_template_c, helper_c=dsp_template_c)),
    # the DSP depthwise tiles of one pixel of any channel count (the last tile overlapping) against the plain sums
    # and the scalar helpers
    HelperUnitTest("depthwise_pixel", (*SCALAR_REQUANTIZE_SMALL, DSP_WORDS_TEMPLATE, DEPTHWISE_MAC_TEMPLATE,
                                       REQUANTIZE_SMALL_TEMPLATE, DEPTHWISE_TILES_TEMPLATE, DEPTHWISE_PIXEL_TEMPLATE),
                   template_c=functools.partial(requantize_template_c, helper_c=dsp_template_c)),
    # the DSP depthwise channel rows (3x3, and any window) against the plain sums of the padded windows and the scalar
    # helpers
    HelperUnitTest("depthwise_rows", (*SCALAR_REQUANTIZE_SMALL, DSP_WORDS_TEMPLATE, DEPTHWISE_MAC_TEMPLATE,
                                      REQUANTIZE_SMALL_TEMPLATE, DEPTHWISE_ROWS_TEMPLATE, DEPTHWISE_ROWS_ANY_TEMPLATE),
                   template_c=functools.partial(requantize_template_c, helper_c=dsp_template_c),
                   core_macro=f"{macro_prefix(PREFIX)}_DEPTHWISE_ROWS_ASM", core_path_optimizing_only=True),
    # the DSP two-pixel depthwise channel tiles (an assembly block of constant sizes) against the plain sums and the
    # scalar helpers
    HelperUnitTest("depthwise_pair", (*SCALAR_REQUANTIZE_SMALL, DSP_WORDS_TEMPLATE, DEPTHWISE_MAC_TEMPLATE,
                                      REQUANTIZE_SMALL_TEMPLATE, DEPTHWISE_TILES_TEMPLATE, DEPTHWISE_PAIR_TEMPLATE),
                   template_c=functools.partial(requantize_template_c, helper_c=dsp_template_c),
                   core_macro=f"{macro_prefix(PREFIX)}_DEPTHWISE_PAIR_ASM", core_path_optimizing_only=True),
    # the DSP fused pixel-pair channel tiles (widened inputs, sums from the biases, epilogue of either rounding), and
    # their scratch-free form, against the plain sums and the scalar helpers
    HelperUnitTest("pair_tiles", ("double", *SCALAR_REQUANTIZE_SMALL, DSP_WORDS_TEMPLATE, DUAL_MAC_Q15_TEMPLATE,
                                  REQUANTIZE_SMALL_TEMPLATE, PAIR_TILES_TEMPLATE, PAIR_DIRECT_TEMPLATE,
                                  PAIR_PART_TEMPLATE),
                   template_c=functools.partial(requantize_template_c, helper_c=dsp_template_c)),
    # the DSP fused channel tiles of two pixel pairs (four windows widened once, doubled; sums from twice the bias)
    # against the plain sums and the scalar helpers
    HelperUnitTest("quad_tiles", (*SCALAR_REQUANTIZE_SMALL, DSP_WORDS_TEMPLATE, DUAL_MAC_Q15_TEMPLATE,
                                  REQUANTIZE_SMALL_TEMPLATE, PAIR_TILES_TEMPLATE, QUAD_TILES_TEMPLATE),
                   template_c=functools.partial(requantize_template_c, helper_c=dsp_template_c)),
    # the DSP fused convolution channel tiles (dual MAC sums from the biases and epilogue) against the plain sums
    # and the scalar helpers
    HelperUnitTest("conv_tiles_s8x4", (*SCALAR_REQUANTIZE_SMALL, DSP_WORDS_TEMPLATE, DUAL_MAC_TEMPLATE,
                                       REQUANTIZE_SMALL_TEMPLATE, CONV_TILES_TEMPLATE, CONV_TILES_PART_TEMPLATE),
                   template_c=functools.partial(requantize_template_c, helper_c=dsp_template_c)),
    # the fused 16x8 tiles (the int16 dual MAC's sums, the 16x8 requantization and clamp) against the plain sums and
    # the 64-bit arithmetic: the portable C on the host, SMLAD on cortex-m4f, the Helium loop on cortex-m55
    HelperUnitTest("tiles_16x8", TILES_16X8_TEMPLATES,
                   template_c=functools.partial(tiles_16x8_template_c, helper_c=dsp_template_c)),
    HelperUnitTest("tiles_16x8", (HELIUM_LANES_TEMPLATE, *TILES_16X8_TEMPLATES), profile="cortex-m55",
                   template_c=functools.partial(tiles_16x8_template_c, helper_c=helium_template_c),
                   core_macro=HELIUM_MACRO),
    # the DSP fused fully connected tiles (stacked MAC sums from the biases and epilogue) against the plain sums and
    # the scalar helpers
    HelperUnitTest("fc_tiles_s8x4", (*SCALAR_REQUANTIZE_SMALL, DSP_WORDS_TEMPLATE, STACKED_MAC_TEMPLATE,
                                     WIDE_MAC_TEMPLATE, REQUANTIZE_SMALL_TEMPLATE, FC_TILES_TEMPLATE),
                   template_c=functools.partial(requantize_template_c, helper_c=dsp_template_c)),
    # the Helium fused channel tiles (dual MAC and epilogue) against the plain loops and the scalar helpers
    HelperUnitTest("conv_tiles", (HELIUM_LEFT_SHIFTS_TEMPLATE, HELIUM_LANES_TEMPLATE, DSP_WORDS_TEMPLATE,
                                  DUAL_MAC_TEMPLATE, *SCALAR_REQUANTIZE,
                                  HELIUM_REQUANTIZE_TEMPLATE, HELIUM_CONV_TILES_TEMPLATE),
                   profile="cortex-m55", template_c=requantize_template_c, core_macro=HELIUM_MACRO),
    # the Helium per-tensor fully connected rows (dual MAC from zero, biases and epilogue as vectors) against the
    # plain loops and the scalar helpers
    HelperUnitTest("fc_rows", (HELIUM_LANES_TEMPLATE, DSP_WORDS_TEMPLATE, DUAL_MAC_TEMPLATE, *SCALAR_REQUANTIZE,
                               HELIUM_REQUANTIZE_TEMPLATE, HELIUM_FC_ROWS_TEMPLATE),
                   profile="cortex-m55", template_c=requantize_template_c, core_macro=HELIUM_MACRO),
    # the Helium 16-channel depthwise helpers against the plain loops of their contracts
    HelperUnitTest("depthwise_mac16", (HELIUM_LEFT_SHIFTS_TEMPLATE, HELIUM_LANES_TEMPLATE, *SCALAR_REQUANTIZE,
                                       HELIUM_REQUANTIZE_TEMPLATE,
                                       HELIUM_DEPTHWISE16_TEMPLATE), profile="cortex-m55",
                   template_c=requantize_template_c, core_macro=HELIUM_MACRO),
    # the Helium fused depthwise channel tiles (window sums and epilogue) against the plain loops and the scalar
    # helpers
    HelperUnitTest("depthwise_tiles", (HELIUM_LEFT_SHIFTS_TEMPLATE, HELIUM_LANES_TEMPLATE, *SCALAR_REQUANTIZE,
                                       HELIUM_REQUANTIZE_TEMPLATE,
                                       HELIUM_DEPTHWISE16_TEMPLATE), profile="cortex-m55",
                   template_c=requantize_template_c, core_macro=HELIUM_MACRO),
    # the Helium int8 ADD against TFLite's reference with the scalar double rounding
    HelperUnitTest("add_s8", (HELIUM_LANES_TEMPLATE, *SCALAR_REQUANTIZE, HELIUM_REQUANTIZE_TEMPLATE,
                              HELIUM_ADD_TEMPLATE), profile="cortex-m55", template_c=requantize_template_c,
                   core_macro=HELIUM_MACRO),
    # the Helium float multiply-accumulates against the plain loops of their contract, bit for bit
    HelperUnitTest("fmac_f32", (HELIUM_FLOAT_TEMPLATE,), profile="cortex-m55", core_macro=HELIUM_FLOAT_MACRO),
    # the scalar FPU's float multiply-accumulates, epilogues and fused tiles against the plain loops, bit for bit
    HelperUnitTest("fpu_fmac_f32", (FPU_FLOAT_TEMPLATE,), core_macro=FPU_FLOAT_MACRO),
    # the Helium NCHW QLinearConv rows (integer sums, onnxruntime's float32 requantization) against the plain loops
    HelperUnitTest("qlinear_nchw", (HELIUM_QLINEAR_TEMPLATE,), profile="cortex-m55",
                   core_macro=HELIUM_QLINEAR_MACRO),
]
HOST_BUILDS = [(unit, defines) for unit in UNIT_TESTS_BY_HELPER for defines in unit.host_defines]
needs_cross_tools = pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")


def host_program(unit: HelperUnitTest, defines: tuple[str, ...], folder: Path) -> str:
    """The unit test's translation unit as the host's gcc compiles it (preprocessed, no line markers), its files
    written into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    unit.write_files(folder)
    return subprocess.run(["gcc", "-std=c99", "-E", "-P", *defines, f"-I{folder}", str(unit.source)],
                          capture_output=True, text=True, check=True).stdout


def host_twin(unit: HelperUnitTest, defines: tuple[str, ...]) -> Optional[HelperUnitTest]:
    """The first unit test before `unit` in HOST_BUILDS of the same C source and -D flags (e.g. a Helium body's
    test on its DSP twin's: the host compiles neither core's path, so their programs may be one)."""
    return next((other for other, other_defines in HOST_BUILDS[:HOST_BUILDS.index((unit, defines))]
                 if other.source == unit.source and other_defines == defines), None)


@pytest.mark.parametrize(("unit", "defines"), HOST_BUILDS,
                         ids=[unit.id + "".join(defines) for unit, defines in HOST_BUILDS])
def test_the_helper_passes_its_unit_test_on_the_host(tmp_path: Path, unit: HelperUnitTest,
                                                    defines: tuple[str, ...]) -> None:
    """Built with the sanitizers and run; but where the host's preprocessed program is exactly its twin's
    (host_twin: the same source and flags), that twin's host test builds and runs it (gcc's
    sanitized builds of the depthwise MAC's test took 11 CPU-s each)."""
    twin = host_twin(unit, defines)
    if twin is not None and host_program(unit, defines, tmp_path) == host_program(twin, defines, tmp_path / "twin"):
        return
    unit.write_files(tmp_path)
    run = run_c_unit_tests(unit.source, tmp_path, tmp_path, defines)
    assert run.returncode == 0 and run.stdout.startswith("ok "), run.stdout + run.stderr


@needs_cross_tools
@pytest.mark.parametrize("unit", UNIT_TESTS_BY_HELPER, ids=[unit.id for unit in UNIT_TESTS_BY_HELPER])
def test_the_helper_passes_its_unit_test_under_qemu_on_its_core(tmp_path: Path, unit: HelperUnitTest) -> None:
    """The unit test builds for its core under the strict warnings (-Werror: one compile, the one that runs) and
    passes under QEMU."""
    unit.write_files(tmp_path)
    result = run_c_program_under_qemu(tmp_path, unit.profile, {"selftest.c": unit.core_source_text()}, strict=True)
    assert result.exit_status == 0 and "ok " in result.stdout, result.ending() + "\n" + result.stdout + result.stderr


RESERVED_REGISTERS_FLAGS = ("-O2", "-fno-omit-frame-pointer", "-ffixed-r9")
"""A build that reserves r7 (Thumb's frame pointer: profiling, debugging) and r9 (an RTOS's platform register):
a helper's assembly block may ask for at most the twelve registers left."""
ASM_UNIT_TESTS = [unit for unit in UNIT_TESTS_BY_HELPER
                  if any("__asm__" in unit.template_c(template, PREFIX) for template in unit.templates)]


@needs_cross_tools
@pytest.mark.parametrize("unit", ASM_UNIT_TESTS, ids=[unit.id for unit in ASM_UNIT_TESTS])
def test_the_unit_test_builds_with_r7_and_r9_reserved(tmp_path: Path, unit: HelperUnitTest) -> None:
    """Compile only (no QEMU run): gcc refuses an asm that needs more registers than are left ("impossible
    constraints"); it accepts one that names a reserved register (a clobber, an STM's list), so no string of the
    helpers' C may name r7 or r9."""
    strings = re.findall(r'"((?:[^"\\]|\\.)*)"', unit.header_text())
    assert not [text for text in strings if re.search(r"\br[79]\b", text)], "an asm names r7 or r9"
    unit.write_files(tmp_path)
    build_for_cortex_m(unit.core_source_text(), tmp_path, tmp_path, unit.profile, RESERVED_REGISTERS_FLAGS)


@needs_cross_tools
@pytest.mark.parametrize(("profile", "library_c", "core_macro"),
                         [("cortex-m4f", cortex_m_helpers_c, None), ("cortex-m55", helium_helpers_c, HELIUM_MACRO),
                          ("cortex-m55", lambda prefix: helium_helpers_c(prefix) + helium_float_c(prefix),
                           HELIUM_FLOAT_MACRO),
                          ("cortex-m4f", lambda prefix: cortex_m_helpers_c(prefix) + fpu_float_c(prefix),
                           FPU_FLOAT_MACRO),
                          ("cortex-m4f", lambda prefix: cortex_m_helpers_c(prefix) + pair_direct_helpers_c(prefix),
                           None),
                          ("cortex-m4f", lambda prefix: cortex_m_helpers_c(prefix) + batch_matmul_helper_c(prefix),
                           None),
                          ("cortex-m55", lambda prefix: helium_helpers_c(prefix) + helium_batch_matmul_helper_c(prefix),
                           HELIUM_MACRO),
                          ("cortex-m55", lambda prefix: helium_helpers_c(prefix) + helium_max_s8_helper_c(prefix),
                           HELIUM_MACRO),
                          ("cortex-m55", lambda prefix: helium_helpers_c(prefix) + helium_mac_rows_c(prefix),
                           HELIUM_MACRO),
                          ("cortex-m4f", lambda prefix: cortex_m_helpers_c(prefix) + pool_sums_helper_c(prefix)
                           + pool_columns_helper_c(prefix) + pool_average_helper_c(prefix)
                           + pool_scale_helper_c(prefix), None),
                          ("cortex-m4f", lambda prefix: cortex_m_helpers_c(prefix) + pointwise_few_helper_c(prefix),
                           None),
                          ("cortex-m4f", lambda prefix: cortex_m_helpers_c(prefix) + depthwise_spread_helpers_c(prefix),
                           None),
                          ("cortex-m4f", lambda prefix: cortex_m_helpers_c(prefix) + depthwise_pair_helpers_c(prefix),
                           None),
                          ("cortex-m4f", lambda prefix: cortex_m_helpers_c(prefix) + depthwise_pixel_helpers_c(prefix),
                           None),
                          ("cortex-m4f", lambda prefix: cortex_m_helpers_c(prefix) + depthwise_rows_helpers_c(prefix)
                           + depthwise_rows_any_helpers_c(prefix), None)],
                         ids=["cortex-m4f", "cortex-m55-helium", "cortex-m55-helium-float", "cortex-m4f-fpu-float",
                              "cortex-m4f-pair-direct", "cortex-m4f-batch-matmul", "cortex-m55-helium-batch-matmul",
                              "cortex-m55-helium-max", "cortex-m55-helium-mac-rows",
                              "cortex-m4f-pool-sums",
                              "cortex-m4f-pointwise-few",
                              "cortex-m4f-depthwise-spread", "cortex-m4f-depthwise-pair",
                              "cortex-m4f-depthwise-pixel", "cortex-m4f-depthwise-rows"])
def test_the_helper_library_builds_for_its_core_without_warnings(tmp_path: Path, profile: str, library_c,
                                                                 core_macro: Optional[str]) -> None:
    build_for_cortex_m("#include <stdint.h>\n" + library_c(PREFIX) + "\nint32_t row(int32_t *acc, "
                       "const int8_t *x, const int8_t *w, int32_t n) { return lp_row_dot_s8x4(acc, x, w, n, n, n); }\n"
                       + core_path_required(core_macro), tmp_path, tmp_path, profile)
