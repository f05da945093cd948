"""Each backend's kernel schedules for a profile (imports TVM: the compiler's side of `backends`)."""

from __future__ import annotations

from collections.abc import Callable

from backends import backend_of
from backends.backend import KernelSchedules
from backends.cortex_m import CORTEX_M
from backends.cortex_m.schedules import kernel_schedules as cortex_m_schedules
from backends.generic_c import GENERIC_C, GENERIC_C_SCHEDULES
from backends.riscv import RISCV
from backends.riscv.schedules import kernel_schedules as riscv_schedules
from target.profile import Profile

_SCHEDULES: dict[str, Callable[[Profile], KernelSchedules]] = {
    GENERIC_C.name: lambda profile: GENERIC_C_SCHEDULES,
    CORTEX_M.name: cortex_m_schedules,
    RISCV.name: riscv_schedules,
}


def kernel_schedules_of(profile: Profile) -> KernelSchedules:
    """The schedules `profile`'s backend gives its core's kernels."""
    return _SCHEDULES[backend_of(profile).name](profile)
