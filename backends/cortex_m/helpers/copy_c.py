"""The bundle's run helpers, `static inline` C in `<model>_internal.h`: the ascending copy `<prefix>_copy_ascending`,
called where a kernel copies a run of elements in ascending order (`backends.cortex_m.schedules.extern_helpers`:
the SVDF state update moving its memory one step left, in place; the runs of int8 RESIZE_NEAREST_NEIGHBOR,
CONCATENATION and PAD, `tvm_ext.kernels.copy_runs`).

the int8 maximum of two runs `<prefix>_max_s8` and of a window's runs `<prefix>_max_s8_window` (DSP cores), called
where a kernel takes the maximum of runs (the window taps of int8 MAX_POOL_2D written as runs,
`tvm_ext.kernels.copy_runs.max_pool2d_runs`).

The C is hand-written: `templates/copy_ascending.h.in` and `templates/max_s8.h.in` (their contracts in their
leading comments), unit-tested on the host (the copy with and without the word copies) and under QEMU by
`tests/c/test_copy_ascending.c` and `tests/c/test_max_s8.c` (`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
On Helium cores the maximum's twin `templates/helium_max_s8.h.in` (16 lanes a VMAX.S8), its own library
(`backends.cortex_m.helpers.HELIUM_MAX_HELPERS`: only a bundle whose kernels call it defines it), on the same test.

The SVDF state update's shift (its loop marked ``tvm_ext.tir.extern_stage.STATE_SHIFT_ANNOTATION``) calls
`<prefix>_state_shift` instead, the ascending copy's contract with 32 bytes a pass stored by STMs to the aligned
destination (`templates/state_shift.h.in`, its own library `STATE_SHIFT_HELPERS`: only a bundle that calls it
defines it; unit-tested by `tests/c/test_state_shift.c`).

A TRANSPOSE that moves the innermost axis (`tvm_ext.kernels.copy_runs.transpose_runs`' matrices) calls
`<prefix>_transpose_s8`, 4 x 4 blocks of int8 a word per row (`templates/transpose_s8.h.in`, its own library
`TRANSPOSE_HELPERS`; unit-tested by `tests/c/test_transpose_s8.c`).
"""

from __future__ import annotations

from backends.backend import HelperLibrary
from backends.cortex_m.family import CORTEX_M_FAMILY
from packager.template_files import helper_template_c

COPY_TEMPLATE = "copy_ascending.h.in"
MAX_S8_TEMPLATE = "max_s8.h.in"
HELIUM_MAX_S8_TEMPLATE = "helium_max_s8.h.in"
"""The maximum's Helium twin (the same names and contracts; VMAX.S8 on 16 lanes, VCTP tails)."""


def copy_helper_name(prefix: str) -> str:
    """The C name of the helper in the bundle `prefix`."""
    return f"{prefix}_copy_ascending"


def copy_helper_c(prefix: str) -> str:
    """The C definition of the helper for the bundle `prefix` (it includes <string.h> for memcpy)."""
    return helper_template_c(__package__, COPY_TEMPLATE, prefix)


def max_s8_helper_name(prefix: str) -> str:
    """The C name of the int8 maximum in the bundle `prefix`."""
    return f"{prefix}_max_s8"


def max_s8_helper_c(prefix: str) -> str:
    """The C definition of the int8 maximum for the bundle `prefix` (it includes <string.h> for memcpy)."""
    return helper_template_c(__package__, MAX_S8_TEMPLATE, prefix)


def helium_max_s8_helper_c(prefix: str) -> str:
    """The C definition of the int8 maximum's Helium twin for the bundle `prefix` (after the Helium helpers' lanes)."""
    return helper_template_c(__package__, HELIUM_MAX_S8_TEMPLATE, prefix)


def max_s8_window_helper_name(prefix: str) -> str:
    """The C name of the int8 window maximum in the bundle `prefix` (defined with the int8 maximum)."""
    return f"{prefix}_max_s8_window"


STATE_SHIFT_TEMPLATE = "state_shift.h.in"


def state_shift_helper_name(prefix: str) -> str:
    """The C name of the state shift in the bundle `prefix`."""
    return f"{prefix}_state_shift"


def state_shift_c(prefix: str) -> str:
    """The C definition of the state shift for the bundle `prefix`."""
    return helper_template_c(__package__, STATE_SHIFT_TEMPLATE, prefix)


STATE_SHIFT_HELPERS = HelperLibrary("cortex_m_state_shift", state_shift_c, family=CORTEX_M_FAMILY)


TRANSPOSE_TEMPLATE = "transpose_s8.h.in"


def transpose_helper_name(prefix: str) -> str:
    """The C name of the int8 block transpose in the bundle `prefix`."""
    return f"{prefix}_transpose_s8"


def transpose_c(prefix: str) -> str:
    """The C definition of the int8 block transpose for the bundle `prefix` (it includes <string.h> for memcpy)."""
    return helper_template_c(__package__, TRANSPOSE_TEMPLATE, prefix)


TRANSPOSE_HELPERS = HelperLibrary("cortex_m_transpose", transpose_c, family=CORTEX_M_FAMILY)
