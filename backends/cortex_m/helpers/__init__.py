"""The Cortex-M backend's C helpers, `static inline` in `<model>_internal.h` when a kernel calls one (no TVM).
Each is hand-written C in `templates/` (a `.h.in` whose `${prefix}` is the bundle's prefix; its contracts in its
leading comment, which bundles do not copy) with a C unit test under `tests/c/`, run on the host and under QEMU;
these modules name the helpers and list the templates a bundle defines:

- `dual_mac_c`: the dual 16-bit MAC (SMLAD) on int8 and int16 inputs, one or two pixels per call
  (`dual_mac.h.in`), and the stacked-rows MAC of a FULLY_CONNECTED's stacked weights (`stacked_mac.h.in`, DSP
  bundles only) and the widened-rows MAC of its int16 weights (`wide_mac.h.in`, after it), after the word operations every MAC helper shares (`dsp_words.h.in`), with
  `dual_mac_q15_c` (a pixel pair's inputs widened once), `depthwise_mac_c` (the depthwise helper) and
  `row_dot_c` (the SVDF time product);
- `requantize_small_c`: a MAC kernel's int8 requantization epilogue of a channel tile (DSP cores), and after it
  the fused depthwise channel tiles (`depthwise_mac_c`'s `depthwise_tiles.h.in`), the fused convolution
  channel tiles (`dual_mac_c`'s `conv_tiles_s8x4.h.in`) and the fused channel tiles of an unpadded
  convolution's pixel pair (`pair_tiles_c`);
- `tiles_16x8_c`: the fused channel tiles of a 16x8 CONV_2D or FULLY_CONNECTED, one out-of-line copy per bundle
  (`tiles_16x8.h.in`, Helium cores), a library of its own (`TILES_16X8_HELPERS`) that only its kernels' calls
  record, with the 16x8 requantization it calls (RV32 bundles: `backends.riscv.helpers.RISCV_TILES_16X8_HELPERS`);
- `window1_conv_c`: an int8 convolution whose window reads one input channel, every pixel and channel in one call
  (`window1_conv.h.in`, DSP cores), a library of its own (`WINDOW1_HELPERS`) that only its kernels' calls record;
- `pointwise_few_c`: an int8 1x1 convolution of one to four input channels, every pixel and channel in one call
  (`pointwise_few.h.in`, DSP cores), a library of its own (`POINTWISE_FEW_HELPERS`, needing CORTEX_M_HELPERS);
- `batch_matmul_c`: an int8 batch matmul of two activations, one matrix product per call (`batch_matmul_s8.h.in`,
  DSP cores), a library of its own (`BATCH_MATMUL_HELPERS`, needing CORTEX_M_HELPERS' requantization steps) that only
  its kernels' calls record;
- `add_s8_values.h.in`, the output stage of int8 ADD, SUB and SQUARED_DIFFERENCE from the operands' values tabled at
  compile time (DSP cores): a library of its own that only its kernels' calls record, named with its kernel
  (`backends.cortex_m.schedules.dsp_add`); `requantize_biased.h.in`, an element loop's scalar requantization with
  the zero point in its bias (DSP cores), likewise (`backends.cortex_m.schedules.biased_requantize`);
- `copy_c`: the ascending copy (the SVDF state update's shift in place) and the int8 maximum of two runs
  (MAX_POOL_2D's window taps as runs, DSP cores);
- `helium_c`: the Helium (MVE) bodies of the dual MAC, the depthwise MAC and the row dot product, which a
  Helium core's bundle defines in their place (`HELIUM_HELPERS`, chosen by `helpers_of`), and the Helium
  requantization epilogue; and `HELIUM_FLOAT_HELPERS`, the float multiply-accumulates of MVE's float lanes
  (`helium_float.h.in`), a library of their own that only float kernels' calls record, and
  `HELIUM_QLINEAR_HELPERS`, the pointwise QLinearConv of onnxruntime's models (`helium_qlinear.h.in`), likewise;
  `fpu_float_c`: the float helpers' twins on a scalar FPU core without MVE (`FPU_FLOAT_HELPERS`: VLDM loads, the
  scalar kernel's VMUL and VADD).

The kernels' helper calls record CORTEX_M_HELPERS (the helpers' names and contracts); a bundle defines the
library `helpers_of` gives for its profile.
"""

from __future__ import annotations

from backends.backend import HelperLibrary
from backends.cortex_m.family import CORTEX_M_FAMILY
from backends.cortex_m.cores import has_mve
from backends.cortex_m.helpers.batch_matmul_c import batch_matmul_helper_c, helium_batch_matmul_helper_c
from backends.cortex_m.helpers.copy_c import copy_helper_c, helium_max_s8_helper_c, max_s8_helper_c
from backends.cortex_m.helpers.depthwise_mac_c import (DEPTHWISE_PAIR_TEMPLATE, DEPTHWISE_PIXEL_TEMPLATE,
                                                      DEPTHWISE_ROWS_ANY_TEMPLATE, DEPTHWISE_ROWS_TEMPLATE,
                                                      DEPTHWISE_TILES_TEMPLATE)
from backends.cortex_m.helpers.depthwise_spread_c import DEPTHWISE_SPREAD_TEMPLATE
from backends.cortex_m.helpers.dual_mac_c import (CONV_TILES_PART_TEMPLATE, CONV_TILES_TEMPLATE, DUAL_MAC_W16_TEMPLATE,
                                                  FC_TILES_TEMPLATE, STACKED_MAC_TEMPLATE, WIDE_MAC_TEMPLATE,
                                                  dsp_template_c, mac_helpers_c)
from backends.cortex_m.helpers.fpu_float_c import fpu_float_c
from backends.cortex_m.helpers.helium_c import (helium_float_c, helium_left_shifts_c, helium_mac_helpers_c,
                                               helium_mac_rows_c, helium_qlinear_c, helium_requantize_c)
from backends.cortex_m.helpers.pointwise_few_c import pointwise_few_helper_c
from backends.cortex_m.helpers.pair_tiles_c import PAIR_DIRECT_TEMPLATE, PAIR_PART_TEMPLATE, PAIR_TILES_TEMPLATE
from backends.cortex_m.helpers.quad_tiles_c import QUAD_TILES_TEMPLATE
from backends.cortex_m.helpers.requantize_small_c import requantize_small_c
from backends.cortex_m.helpers.tiles_16x8_c import tiles_16x8_c
from packager.fixed_point_c import REQUANTIZE_16X8
from target.profile import Profile


def cortex_m_helpers_c(prefix: str) -> str:
    """Every Cortex-M helper's C definition for the bundle `prefix`: the MAC helpers, the stacked-rows and widened-rows
    MACs, the
    requantization epilogue's, the fused depthwise, convolution, fully connected and pixel-pair tiles (all of those), the copy,
    then the running maximum."""
    return "\n".join([mac_helpers_c(prefix), dsp_template_c(STACKED_MAC_TEMPLATE, prefix),
                      dsp_template_c(WIDE_MAC_TEMPLATE, prefix), requantize_small_c(prefix),
                      dsp_template_c(DEPTHWISE_TILES_TEMPLATE, prefix), dsp_template_c(CONV_TILES_TEMPLATE, prefix),
                      dsp_template_c(FC_TILES_TEMPLATE, prefix),
                      dsp_template_c(PAIR_TILES_TEMPLATE, prefix),
                      copy_helper_c(prefix), max_s8_helper_c(prefix)])


def helium_helpers_c(prefix: str) -> str:
    """Every Cortex-M helper's C definition for the bundle `prefix` on a Helium core: the MAC helpers with the
    Helium bodies of `helium_c`, the requantization epilogue's, then the copy."""
    return "\n".join([helium_mac_helpers_c(prefix), helium_requantize_c(prefix), copy_helper_c(prefix)])


CORTEX_M_HELPERS = HelperLibrary("cortex_m", cortex_m_helpers_c, family=CORTEX_M_FAMILY)
HELIUM_HELPERS = HelperLibrary("cortex_m_helium", helium_helpers_c, family=CORTEX_M_FAMILY)


def pair_direct_helpers_c(prefix: str) -> str:
    """The scratch-free pair tiles' C definition for the bundle `prefix` (`pair_tiles_c`)."""
    return dsp_template_c(PAIR_DIRECT_TEMPLATE, prefix)


PAIR_DIRECT_HELPERS = HelperLibrary("cortex_m_pair_direct", pair_direct_helpers_c, (CORTEX_M_HELPERS,),
                                    family=CORTEX_M_FAMILY)
"""The scratch-free pair tiles of DSP cores (`pair_tiles_c`): a library of its own, which only the bundles whose
kernels call it define, after CORTEX_M_HELPERS, whose pair tiles it uses (its calls record both: a kernel may
call no other helper)."""


def dual_mac_w16_helpers_c(prefix: str) -> str:
    """The dual MAC over int16 weights' C definition for the bundle `prefix` (`dual_mac_c.DUAL_MAC_W16_TEMPLATE`)."""
    return dsp_template_c(DUAL_MAC_W16_TEMPLATE, prefix)


DUAL_MAC_W16_HELPERS = HelperLibrary("cortex_m_dual_mac_w16", dual_mac_w16_helpers_c, (CORTEX_M_HELPERS,),
                                     family=CORTEX_M_FAMILY)
"""The 16x8 dual MAC over widened weights of DSP cores (`dual_mac_c.DUAL_MAC_W16_TEMPLATE`): a library of its own,
which only the bundles whose kernels call it define, after CORTEX_M_HELPERS, whose word operations it uses."""


TILES_16X8_HELPERS = HelperLibrary("cortex_m_tiles_16x8", tiles_16x8_c, (CORTEX_M_HELPERS,), (REQUANTIZE_16X8,),
                                   family=CORTEX_M_FAMILY)
"""The fused 16x8 channel tiles (`tiles_16x8_c`): a library of its own, which only the bundles whose kernels call it
define, after CORTEX_M_HELPERS (in a Helium bundle HELIUM_HELPERS), whose dual MAC or Helium lanes it uses, and the
16x8 requantization (`packager.fixed_point_c`). RV32 bundles define the same template as
`backends.riscv.helpers.RISCV_TILES_16X8_HELPERS`, which needs no library."""


def pair_part_helpers_c(prefix: str) -> str:
    """The partial pair tiles' C definition for the bundle `prefix` (`pair_tiles_c.PAIR_PART_TEMPLATE`)."""
    return dsp_template_c(PAIR_PART_TEMPLATE, prefix)


PAIR_PART_HELPERS = HelperLibrary("cortex_m_pair_part", pair_part_helpers_c, (CORTEX_M_HELPERS,),
                                  family=CORTEX_M_FAMILY)
"""The pair tiles of a channel count that is not a multiple of four on DSP cores (`pair_tiles_c`): a library of its
own, which only the bundles whose kernels call it define, after CORTEX_M_HELPERS, whose pair tiles it uses."""
BATCH_MATMUL_HELPERS = HelperLibrary("cortex_m_batch_matmul", batch_matmul_helper_c, (CORTEX_M_HELPERS,),
                                     family=CORTEX_M_FAMILY)
POINTWISE_FEW_HELPERS = HelperLibrary("cortex_m_pointwise_few", pointwise_few_helper_c, (CORTEX_M_HELPERS,),
                                      family=CORTEX_M_FAMILY)
"""The 1x1 convolution of few input channels of DSP cores (`pointwise_few_c`): a library of its own, which only the
bundles whose kernels call it define, after CORTEX_M_HELPERS, whose word operations and requantization steps it
uses."""
"""The int8 batch matmul of DSP cores (`batch_matmul_c`): a library of its own, which only the bundles whose kernels
call it define, after CORTEX_M_HELPERS, whose requantization steps (`requantize_small.h.in`) it uses."""
HELIUM_MAX_HELPERS = HelperLibrary("cortex_m_helium_max", helium_max_s8_helper_c, (CORTEX_M_HELPERS,),
                                   family=CORTEX_M_FAMILY)
"""The int8 maximum of runs on Helium cores (`copy_c.HELIUM_MAX_S8_TEMPLATE`: MAX_POOL_2D's taps 16 lanes a VMAX): a
library of its own, which only the bundles whose kernels call it define, after CORTEX_M_HELPERS (in a Helium bundle
HELIUM_HELPERS, whose lanes it uses)."""
HELIUM_MAC_ROWS_HELPERS = HelperLibrary("cortex_m_helium_mac_rows", helium_mac_rows_c, (CORTEX_M_HELPERS,),
                                        family=CORTEX_M_FAMILY)
"""The rows MAC of Helium cores (`helium_c.HELIUM_MAC_ROWS_TEMPLATE`: a recurrent cell's product, every tile of
four rows in one call): a library of its own, which only the bundles whose kernels call it define, after
CORTEX_M_HELPERS (in a Helium bundle HELIUM_HELPERS: its pointer-keeping macro, and the one-pixel dual MAC that its
portable C runs on each tile)."""
HELIUM_BATCH_MATMUL_HELPERS = HelperLibrary("cortex_m_helium_batch_matmul", helium_batch_matmul_helper_c,
                                            (CORTEX_M_HELPERS,), family=CORTEX_M_FAMILY)
"""Its Helium twin (`batch_matmul_c.HELIUM_BATCH_MATMUL_TEMPLATE`): a library of its own likewise, after
CORTEX_M_HELPERS, which a Helium bundle defines as HELIUM_HELPERS (its dual MAC and vector requantization)."""


def conv_tiles_part_helpers_c(prefix: str) -> str:
    """The partial channel tiles' C definition for the bundle `prefix` (`dual_mac_c.CONV_TILES_PART_TEMPLATE`)."""
    return dsp_template_c(CONV_TILES_PART_TEMPLATE, prefix)


CONV_TILES_PART_HELPERS = HelperLibrary("cortex_m_conv_tiles_part", conv_tiles_part_helpers_c, (CORTEX_M_HELPERS,),
                                        family=CORTEX_M_FAMILY)
"""The fused channel tiles of a channel count that is not a multiple of four, on DSP cores: a library of its own,
which only the bundles whose kernels call it define, after CORTEX_M_HELPERS, whose fused tiles it uses."""


def quad_tiles_helpers_c(prefix: str) -> str:
    """The fused tiles of two pixel pairs' C definition for the bundle `prefix` (`quad_tiles_c`)."""
    return dsp_template_c(QUAD_TILES_TEMPLATE, prefix)


QUAD_TILES_HELPERS = HelperLibrary("cortex_m_quad_tiles", quad_tiles_helpers_c, (CORTEX_M_HELPERS,),
                                   family=CORTEX_M_FAMILY)
"""The fused tiles of two pixel pairs of DSP cores (`quad_tiles_c`): a library of its own, which only the bundles
whose kernels call it define, after CORTEX_M_HELPERS, whose word helpers and rounding it uses."""


def depthwise_spread_helpers_c(prefix: str) -> str:
    """The depthwise MAC of a depth multiplier above 1's C definition for the bundle `prefix`
    (`depthwise_spread_c`)."""
    return dsp_template_c(DEPTHWISE_SPREAD_TEMPLATE, prefix)


DEPTHWISE_SPREAD_HELPERS = HelperLibrary("cortex_m_depthwise_spread", depthwise_spread_helpers_c, (CORTEX_M_HELPERS,),
                                         family=CORTEX_M_FAMILY)
"""The depthwise MAC of a depth multiplier above 1 on DSP cores (`depthwise_spread_c`): a library of its own, which
only the bundles whose kernels call it define, after CORTEX_M_HELPERS, whose word operations it uses."""


def depthwise_pair_helpers_c(prefix: str) -> str:
    """The two-pixel depthwise channel tiles' C definition for the bundle `prefix` (`depthwise_mac_c`'s
    DEPTHWISE_PAIR_TEMPLATE)."""
    return dsp_template_c(DEPTHWISE_PAIR_TEMPLATE, prefix)


DEPTHWISE_PAIR_HELPERS = HelperLibrary("cortex_m_depthwise_pair", depthwise_pair_helpers_c, (CORTEX_M_HELPERS,),
                                       family=CORTEX_M_FAMILY)
"""The two-pixel depthwise channel tiles of DSP cores (`backends.cortex_m.schedules.depthwise_pairs`): a library of
its own, which only the bundles whose kernels call it define, after CORTEX_M_HELPERS, whose one-pixel tiles and
requantization lanes it uses."""


def depthwise_pixel_helpers_c(prefix: str) -> str:
    """One pixel's depthwise tiles of any channel count's C definition for the bundle `prefix` (`depthwise_mac_c`'s
    DEPTHWISE_PIXEL_TEMPLATE)."""
    return dsp_template_c(DEPTHWISE_PIXEL_TEMPLATE, prefix)


DEPTHWISE_PIXEL_HELPERS = HelperLibrary("cortex_m_depthwise_pixel", depthwise_pixel_helpers_c, (CORTEX_M_HELPERS,),
                                        family=CORTEX_M_FAMILY)
"""One pixel's depthwise tiles of any channel count from four on DSP cores (`backends.cortex_m.schedules.
depthwise_runs`' pixel tiles): a library of its own, which only the bundles whose kernels call it define, after
CORTEX_M_HELPERS, whose fused tile it calls."""
def depthwise_rows_helpers_c(prefix: str) -> str:
    """A 3x3 depthwise layer's channel rows' C definition for the bundle `prefix` (`depthwise_mac_c`'s
    DEPTHWISE_ROWS_TEMPLATE)."""
    return dsp_template_c(DEPTHWISE_ROWS_TEMPLATE, prefix)


DEPTHWISE_ROWS_HELPERS = HelperLibrary("cortex_m_depthwise_rows", depthwise_rows_helpers_c, (CORTEX_M_HELPERS,),
                                       family=CORTEX_M_FAMILY)
"""A 3x3 depthwise layer as channel rows on DSP cores (`backends.cortex_m.schedules.depthwise_rows`): a library of
its own, which only the bundles whose kernels call it define, after CORTEX_M_HELPERS, whose requantization it
calls."""


def depthwise_rows_any_helpers_c(prefix: str) -> str:
    """The channel rows of any other window's C definition for the bundle `prefix` (`depthwise_mac_c`'s
    DEPTHWISE_ROWS_ANY_TEMPLATE)."""
    return dsp_template_c(DEPTHWISE_ROWS_ANY_TEMPLATE, prefix)


DEPTHWISE_ROWS_ANY_HELPERS = HelperLibrary("cortex_m_depthwise_rows_any", depthwise_rows_any_helpers_c,
                                           (DEPTHWISE_ROWS_HELPERS,), family=CORTEX_M_FAMILY)
"""A depthwise layer of any window but 3x3 as channel rows on DSP cores (`backends.cortex_m.schedules.
depthwise_rows`): a library of its own, which only the bundles whose kernels call it define, after
DEPTHWISE_ROWS_HELPERS, whose ring, widening and requantization it calls."""


HELIUM_FLOAT_HELPERS = HelperLibrary("cortex_m_helium_float", helium_float_c, family=CORTEX_M_FAMILY)
"""The float multiply-accumulates of Helium cores: their calls record this library, which a bundle defines as it
is (`backends.backend.Backend.bundle_helper_libraries` swaps only CORTEX_M_HELPERS), so a float bundle defines
these alone and the int8 bundles' helpers are unchanged."""
FPU_FLOAT_HELPERS = HelperLibrary("cortex_m_fpu_float", fpu_float_c, family=CORTEX_M_FAMILY)
"""The same float helpers on a scalar FPU core without MVE (`fpu_float_c`: a group's weights one VLDM), a library of
their own as HELIUM_FLOAT_HELPERS is: a float bundle for such a core defines these alone."""
HELIUM_LEFT_SHIFTS_HELPERS = HelperLibrary("cortex_helium_left_shifts", helium_left_shifts_c, family=CORTEX_M_FAMILY)
"""<PREFIX>_LEFT_SHIFTS of Helium bundles (`helium_c.HELIUM_LEFT_SHIFTS_TEMPLATE`): a library of its own, which a
bundle defines where a kernel's requantization may shift left; its name sorts before every other Cortex-M library's
(the libraries come in their names' order), so it precedes the vector requantization that tests it."""
HELIUM_QLINEAR_HELPERS = HelperLibrary("cortex_m_helium_qlinear", helium_qlinear_c, family=CORTEX_M_FAMILY)
"""The QLinearConv helpers of Helium cores (a pointwise one's channel, any other's output row; onnxruntime's float32
requantization): a library of its own, which a bundle defines as it is, so that only the bundles whose kernels call
them define it."""


def helpers_of(profile: Profile) -> HelperLibrary:
    """The helper library a bundle for `profile` defines: Helium's bodies on a core with MVE (`simd = "mve"`),
    the DSP ones (which fall back to portable C without the DSP extension) on every other Cortex-M core."""
    return HELIUM_HELPERS if has_mve(profile) else CORTEX_M_HELPERS
