"""The Cortex-M backend: Arm M-profile cores (Armv6-M, Armv7E-M, Armv8-M, Armv8.1-M), built with
arm-none-eabi-gcc and self-tested on QEMU's MPS2/MPS3 boards.

- `schedules/` (TVM): the kernel schedules of cores with the DSP extension, whose MAC reductions become
  calls of the helpers (dual MAC, depthwise MAC, row dot product, pixel pairs, copied border windows);
- `helpers/` (no TVM): those helpers' C, with Helium (MVE) bodies that a Helium core's bundle defines in place
  of the DSP ones (`helpers.helpers_of`: the profile's `simd = "mve"`);
- `bundle_files/` (no TVM): OUT/cortex_m/, the startup code, linker script and qemu-test build files;
- the runner: `emulated_runner` (`runner.CortexMRunner`: writes, builds, runs and measures a profile's
  self-test on the board of `emulator.boards` that emulates its core);
- `kind_targets`: the kernel kinds' speed targets on cores with the DSP extension.
"""

from __future__ import annotations

from typing import Optional

from backends.backend import Backend
from backends.cortex_m.family import CORTEX_M_FAMILY
from backends.cortex_m.helpers import CORTEX_M_HELPERS, helpers_of
from backends.cortex_m.kind_targets import kind_targets
from backends.cortex_m.runner import CortexMRunner
from emulator.boards import BOARDS, CortexMTarget
from target.profile import Profile


def emulated_runner(profile: Profile) -> Optional[CortexMRunner]:
    """What runs the profile's self-test on the board that emulates its core, compiled with the profile's own
    flags; None when none of our QEMU boards emulates it (its self-test then runs on the host)."""
    if profile.qemu_board not in BOARDS:
        return None
    return CortexMRunner(CortexMTarget(profile.name, BOARDS[profile.qemu_board], profile.hardware_float))


CORTEX_M = Backend(CORTEX_M_FAMILY, CORTEX_M_HELPERS, emulated_runner, kind_targets, helpers_of)
