"""One backend per processor family (`backends.backend` says what a backend provides): `generic_c`, the
portable C99 path, `cortex_m` and `riscv`. A profile names its backend (`target.profile.Profile.backend`); adding a
family means adding a folder here and its entry in BACKENDS (and in `backends.schedules`). No TVM import.
"""

from __future__ import annotations

from backends.backend import Backend
from backends.cortex_m import CORTEX_M
from backends.generic_c import GENERIC_C
from backends.riscv import RISCV
from target.profile import Profile

BACKENDS: dict[str, Backend] = {backend.name: backend for backend in (GENERIC_C, CORTEX_M, RISCV)}


def backend_of(profile: Profile) -> Backend:
    """The backend that compiles for `profile`'s core."""
    return BACKENDS[profile.backend]
