"""The DSP cores' int8 ADD and SUB output stage from the operands' tabled values: `<prefix>_add_s8_value`, C in
`<model>_internal.h`, called per output by the kernel `backends.cortex_m.schedules.dsp_add` writes (the operands'
rescaled values doubled, int32[256] each, computed at compile time and stored in flash:
`tvm_ext.transform.int8.binary`).

SMMLAR (TFLite's doubling high product, the output's rounding and zero point), the sign term and SSAT with its
shift, inlined with constant arguments: about 11 instructions per output with the loads and the loop on cortex-m4f,
where the generic kernel's 64-bit fixed-point arithmetic takes 14-19. Its own library
(`ADD_VALUES_HELPERS`): only a bundle whose kernels call it defines it, so the other bundles keep their bytes;
self-contained. Without the DSP extension (a host build) the same steps in portable C.

The C is hand-written: `templates/add_s8_values.h.in` (its contract in its leading comment), unit-tested on the
host and under QEMU by `tests/c/test_add_s8_values.c` (`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
"""

from __future__ import annotations

from backends.backend import HelperLibrary
from packager.template_files import helper_template_c

ADD_VALUES_TEMPLATE = "add_s8_values.h.in"


def add_value_helper_name(prefix: str) -> str:
    """The C name of the helper in the bundle `prefix`."""
    return f"{prefix}_add_s8_value"


def add_values_helper_c(prefix: str) -> str:
    """The C definition of the helper for the bundle `prefix` (it needs <stdint.h> only)."""
    return helper_template_c(__package__, ADD_VALUES_TEMPLATE, prefix)


ADD_VALUES_HELPERS = HelperLibrary("cortex_m_add_values", add_values_helper_c)
"""The tabled int8 ADD's library: defined by a bundle whose kernels call `<prefix>_add_s8_value`."""
