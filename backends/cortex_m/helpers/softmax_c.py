"""The int8 SOFTMAX helper `<prefix>_softmax_s8` (cores with the DSP extension, MVE's too): TFLite's int8 softmax
over rows in 32-bit C, one 32x32->64 multiply per fixed-point product, called by the kernel
`backends.cortex_m.schedules.softmax_rows` writes.

Its own library (`SOFTMAX_HELPERS`): only a bundle whose kernels call it defines it, so the bundles of models
without an int8 softmax keep their bytes. The C is hand-written: `templates/softmax_s8.h.in` (its contract in its
leading comment), unit-tested on the host and under QEMU by `tests/c/test_softmax_s8.c`
(`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
"""

from __future__ import annotations

from backends.backend import HelperLibrary
from packager.template_files import helper_template_c

SOFTMAX_S8_TEMPLATE = "softmax_s8.h.in"


def softmax_s8_helper_name(prefix: str) -> str:
    """The C name of the helper in the bundle `prefix`."""
    return f"{prefix}_softmax_s8"


def softmax_s8_helper_c(prefix: str) -> str:
    """The C definition of the helper for the bundle `prefix` (it needs <stdint.h> only)."""
    return helper_template_c(__package__, SOFTMAX_S8_TEMPLATE, prefix)


SOFTMAX_HELPERS = HelperLibrary("cortex_m_softmax", softmax_s8_helper_c, family=None)
"""The int8 softmax's library: defined by a bundle whose kernels call `<prefix>_softmax_s8`, of any
family (portable: `family` None; RISC-V bundles define it too)."""
