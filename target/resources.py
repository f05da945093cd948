"""The profile as a resource constraint: does a planned model fit the device's SRAM and flash?

`arena_bytes` is the planned arena (activations and scratch, in SRAM); `flash_bytes` is what the model puts in
flash: its weights plus the code of its kernels and entry function. Stack and other static data are not counted
here (the emulated run measures them), so a model that passes has at least that much SRAM left for them.
"""

from __future__ import annotations

from target.profile import Profile


class ResourceError(ValueError):
    """A model that does not fit its profile; the message is one line naming the model, limit, need and excess."""


def _overrun(what_needs: str, needed: int, memory: str, available: int, profile: Profile) -> str:
    return (
        f"{what_needs} {needed:,} B of {memory} but {profile.name} has {available:,} B ({needed - available:,} B over)"
    )


def check_fits(profile: Profile, model_name: str, arena_bytes: int, flash_bytes: int) -> None:
    """Raise ResourceError unless arena_bytes <= profile.sram_bytes and flash_bytes <= profile.flash_bytes.

    A model exactly at a limit fits. When both limits are exceeded, the one line names both, e.g.
    "vww_96_float: arena needs 321,808 B of SRAM but cortex-m0plus has 32,768 B (289,040 B over)".
    """
    overruns = []
    if arena_bytes > profile.sram_bytes:
        overruns.append(_overrun("arena needs", arena_bytes, "SRAM", profile.sram_bytes, profile))
    if flash_bytes > profile.flash_bytes:
        overruns.append(_overrun("weights + code need", flash_bytes, "flash", profile.flash_bytes, profile))
    if overruns:
        raise ResourceError(f"{model_name}: {'; '.join(overruns)}")


def check_io_fits(profile: Profile, model_name: str, input_bytes: int, output_bytes: int, state_bytes: int,
                  io_in_arena: bool) -> None:
    """Raise ResourceError when the model's inputs, outputs and state alone need more SRAM than the profile has,
    whatever the memory plan: checked before the compile starts (the bundle's RAM is the arena and these).

    The inputs and outputs are the caller's buffers, all held at once; with `io_in_arena` the arena holds them,
    an input's bytes may serve an output once read, but every input is live when a run starts and every output
    when it ends: the larger of the two sums. The state (TFLite variable tensors) stays from run to run. A model
    exactly at the limit passes, e.g. "big: inputs, outputs and state need 1,048,576 B of SRAM but lowpower has
    524,288 B (524,288 B over)".
    """
    io_bytes = max(input_bytes, output_bytes) if io_in_arena else input_bytes + output_bytes
    needed = io_bytes + state_bytes
    if needed > profile.sram_bytes:
        raise ResourceError(
            f"{model_name}: {_overrun('inputs, outputs and state need', needed, 'SRAM', profile.sram_bytes, profile)}"
        )


def headroom(profile: Profile, arena_bytes: int, flash_bytes: int) -> dict[str, object]:
    """What the manifest records about the fit: the profile, each limit, the use and what is left (bytes).

    Headroom is negative when a limit is exceeded (check_fits would have raised).
    """
    return {
        "profile": profile.name,
        "profile_source": profile.source,
        "memory_source": profile.memory_source,
        "sram_bytes": profile.sram_bytes,
        "arena_bytes": arena_bytes,
        "sram_headroom_bytes": profile.sram_bytes - arena_bytes,
        "flash_bytes": profile.flash_bytes,
        "flash_used_bytes": flash_bytes,
        "flash_headroom_bytes": profile.flash_bytes - flash_bytes,
    }
