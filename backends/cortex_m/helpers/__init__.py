"""The Cortex-M backend's C helpers, `static inline` in `<model>_internal.h` when a kernel calls one (no TVM).
Each is hand-written C in `templates/` (a `.h.in` whose `${prefix}` is the bundle's prefix; its contracts in its
leading comment, which bundles do not copy) with a C unit test under `tests/c/`, run on the host and under QEMU;
these modules name the helpers and list the templates a bundle defines:

- `dual_mac_c`: the dual 16-bit MAC (SMLAD) on int8 and int16 inputs, one or two pixels per call
  (`dual_mac.h.in`), after the word operations every MAC helper shares (`dsp_words.h.in`), with
  `dual_mac_q15_c` (a pixel pair's inputs widened once), `depthwise_mac_c` (the depthwise helper) and
  `row_dot_c` (the SVDF time product);
- `copy_c`: the ascending copy (the SVDF state update's shift in place).
"""

from __future__ import annotations

from backends.backend import HelperLibrary
from backends.cortex_m.helpers.copy_c import copy_helper_c
from backends.cortex_m.helpers.dual_mac_c import mac_helpers_c


def cortex_m_helpers_c(prefix: str) -> str:
    """Every Cortex-M helper's C definition for the bundle `prefix`: the MAC helpers, then the copy."""
    return "\n".join([mac_helpers_c(prefix), copy_helper_c(prefix)])


CORTEX_M_HELPERS = HelperLibrary("cortex_m", cortex_m_helpers_c)
