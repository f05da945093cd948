"""The bundle's ascending copy helper: `<prefix>_copy_ascending`, `static inline` C in `<model>_internal.h`,
called where a kernel copies a run of elements in ascending order (`backends.cortex_m.schedules.extern_helpers`:
the SVDF state update moving its memory one step left, in place; the runs of int8 RESIZE_NEAREST_NEIGHBOR and
CONCATENATION, `tvm_ext.kernels.copy_runs`).

The C is hand-written: `templates/copy_ascending.h.in` (its contract in its leading comment), unit-tested on
the host with and without the word copies and under QEMU by `tests/c/test_copy_ascending.c`
(`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
"""

from __future__ import annotations

from packager.template_files import helper_template_c

COPY_TEMPLATE = "copy_ascending.h.in"


def copy_helper_name(prefix: str) -> str:
    """The C name of the helper in the bundle `prefix`."""
    return f"{prefix}_copy_ascending"


def copy_helper_c(prefix: str) -> str:
    """The C definition of the helper for the bundle `prefix` (it includes <string.h> for memcpy)."""
    return helper_template_c(__package__, COPY_TEMPLATE, prefix)
