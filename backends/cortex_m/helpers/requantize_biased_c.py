"""The library of `<prefix>_requantize_biased` and `_s8` (`templates/requantize_biased.h.in`; unit test
`tests/c/test_requantize_biased.c`): the calls `backends.cortex_m.schedules.biased_requantize` makes of an element
loop's requantizations, on the DSP and Helium cores and, through its portable path, on RISC-V. Here without TVM,
so a family's helper registry (`backends.riscv.helpers`) can name it as a library its own helpers need without
loading the schedules (`import tvm_ext` loads no TVM)."""

from __future__ import annotations

from backends.backend import HelperLibrary
from packager.template_files import helper_template_c

REQUANTIZE_BIASED_TEMPLATE = "requantize_biased.h.in"
"""The helper's hand-written C (`backends/cortex_m/helpers/templates/`)."""


def requantize_biased_helper_c(prefix: str) -> str:
    """The helper's C definition for the bundle `prefix` (it needs <stdint.h> only)."""
    return helper_template_c(__package__, REQUANTIZE_BIASED_TEMPLATE, prefix)


REQUANTIZE_BIASED_HELPERS = HelperLibrary("cortex_m_requantize_biased", requantize_biased_helper_c, family=None)
"""Its library of its own: only a bundle whose kernels call `<prefix>_requantize_biased` defines it, so the other
bundles keep their bytes. Portable (`family` None): RISC-V bundles define it too."""
