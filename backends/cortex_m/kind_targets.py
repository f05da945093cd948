"""The speed targets of kernel kinds on a Cortex-M core with the DSP extension (issue 29).

Instructions per unit of each kind (`packager.kernel_kinds`: MACs, or bytes) on an Armv7E-M / Armv8-M core with
the DSP extension (the dual 16-bit MAC SMLAD and SIMD32 on packed bytes), executed under QEMU -icount: about what
CMSIS-NN's best kernels reach on such a core (two MACs per SMLAD, a loaded word feeding four; a copy a word per
load and store). report.md marks a call more than `packager.kernel_kinds.OVER_TARGET` times above its kind's.
A Helium core has these targets too until Helium's own are measured (its MAC helpers run on MVE, so they are
loose there); a core without the extension has none.
"""

from __future__ import annotations

from typing import Mapping, Optional

from backends.cortex_m.cores import has_dsp_extension
from packager.kernel_kinds import (BATCH_MATMUL, CONVOLUTION, DATA_MOVEMENT, DEPTHWISE, ELEMENTWISE,
                                   FULLY_CONNECTED, OTHER_MACS, POOL, RECURRENT, REQUANTIZATION, RESIZE, SOFTMAX,
                                   TRANSPOSE_CONVOLUTION, KernelKind)
from target.profile import Profile

DSP_TARGETS: Mapping[KernelKind, float] = {
    CONVOLUTION: 1.5, DEPTHWISE: 2.0, TRANSPOSE_CONVOLUTION: 2.0, FULLY_CONNECTED: 1.5, BATCH_MATMUL: 2.0,
    RECURRENT: 2.0, OTHER_MACS: 2.0, POOL: 1.5, SOFTMAX: 20.0, RESIZE: 1.5, ELEMENTWISE: 8.0, REQUANTIZATION: 4.0,
    DATA_MOVEMENT: 1.0,
}
"""Instructions per unit of each kind on a core with the DSP extension (see the module docstring)."""


def kind_targets(profile: Profile) -> Optional[Mapping[KernelKind, float]]:
    """The targets of `profile`'s core: DSP_TARGETS where it has the DSP extension, else None."""
    return DSP_TARGETS if has_dsp_extension(profile) else None
