"""The generic C backend: portable C99 for any C compiler (the host's, or a core no other backend knows),
self-tested on the host. No helper library and no kernel schedules of its own: its kernels are the reference
every other backend matches bit for bit.
"""

from __future__ import annotations

from backends.backend import Backend, KernelSchedules, no_kind_targets
from target.profile import Profile

GENERIC_C_SCHEDULES = KernelSchedules(output_channel_tile=4, float_channel_tiles=(), mac=None)
"""Four accumulators per integer or float MAC kernel (the two pointers and the loop counter stay in
registers on any 16-register core), no MAC helpers."""

def host_runner(profile: Profile) -> None:
    """No emulated board: the self-test runs on the host, whatever the profile."""
    return None

GENERIC_C = Backend("generic_c", None, host_runner, no_kind_targets)
