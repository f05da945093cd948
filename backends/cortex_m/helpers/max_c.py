"""The bundle's running int8 maximum helper: `<prefix>_max_s8`, `static inline` C in `<model>_internal.h`,
called where a kernel takes the maximum of a run into another (the window taps of int8 MAX_POOL_2D written as
runs, `tvm_ext.kernels.copy_runs.max_pool2d_runs`; matched by `backends.cortex_m.schedules.extern_helpers`).

The C is hand-written: `templates/max_s8.h.in` (its contract in its leading comment), unit-tested on the host
(the byte loop) and under QEMU on cortex-m4f (SSUB8 + SEL, four lanes a step) by `tests/c/test_max_s8.c`
(`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
"""

from __future__ import annotations

from packager.template_files import helper_template_c

MAX_S8_TEMPLATE = "max_s8.h.in"


def max_s8_helper_name(prefix: str) -> str:
    """The C name of the helper in the bundle `prefix`."""
    return f"{prefix}_max_s8"


def max_s8_helper_c(prefix: str) -> str:
    """The C definition of the helper for the bundle `prefix` (it includes <string.h> for memcpy)."""
    return helper_template_c(__package__, MAX_S8_TEMPLATE, prefix)
