"""Every profile as a TVM target tag, and the way back from a TVM target to its profile.

The only module of `target` that imports tvm (`import target` stays TVM-free; `target.register_with_tvm`
and friends import this module on first use).

A profile registers as tag `profile.tvm_tag` ("lowpower" for the generic profile, "lowpower-<name>" for the
others) on TVM's existing `c` kind; TVM 0.27 has no Python API for a new target kind. The built target keeps
no tag (`Target("lowpower-cortex-m4f").tag == ""`), so ours are recognised by the "lowpower" key and mapped
back to the registered Profile object through the `model` attribute, which holds the profile's name.
`target.resolve_profile` turns whatever a user names as target (a Target too) into that Profile.
"""

from __future__ import annotations

import tvm

from target.loading import load_profile, profile_names
from target.profile import Profile, ProfileError, tvm_tag_of
from target.resolve import registered_profile, remember_registered

LOWPOWER_KEY = "lowpower"


def tag_config(profile: Profile) -> dict[str, object]:
    """The TVM target config registered for `profile`.

    keys: "lowpower" first so our passes find their targets; Arm cores also get TVM's "arm_cpu" before "cpu".
    mcpu: `profile.cpu` (TVM adds feature.has_dsp / has_mve from it for Cortex-M).
    model: the profile's name (the way back to the profile).
    workspace-/constants-byte-alignment: `profile.alignment_bytes`.
    """
    keys = [LOWPOWER_KEY, "arm_cpu", "cpu"] if profile.arch.startswith("armv") else [LOWPOWER_KEY, "cpu"]
    return {
        "kind": "c",
        "keys": keys,
        "mcpu": profile.cpu,
        "model": profile.name,
        "workspace-byte-alignment": profile.alignment_bytes,
        "constants-byte-alignment": profile.alignment_bytes,
    }


def register_profile_with_tvm(profile: Profile) -> tvm.target.Target:
    """Register `profile` as the tag `profile.tvm_tag` (replacing an earlier registration) and return its Target.

    Use it for a user profile: `register_profile_with_tvm(load_profile("my_board.toml"))` makes
    `Target("lowpower-my_board")` work.
    """
    tvm.target.register_tag(profile.tvm_tag, tag_config(profile), override=True)
    remember_registered(profile)
    return tvm.target.Target(profile.tvm_tag)


def register_with_tvm() -> tuple[str, ...]:
    """Register every built-in profile as a TVM tag; calling it again changes nothing. Returns the tags."""
    profiles = [load_profile(name) for name in profile_names()]
    for profile in profiles:
        register_profile_with_tvm(profile)
    return tuple(profile.tvm_tag for profile in profiles)


def is_lowpower_target(target: tvm.target.Target | str | dict) -> bool:
    """True when `target` (a Target, a tag name or a config dict) carries the "lowpower" key."""
    return LOWPOWER_KEY in tvm.target.Target(target).keys


def profile_for_target(target: tvm.target.Target | str | dict) -> Profile:
    """The Profile object a lowpower target was registered from (or the built-in profile its `model` names).

    Raises ProfileError for any other target.
    """
    target = tvm.target.Target(target)
    if LOWPOWER_KEY not in target.keys:
        raise ProfileError(f"target {target.kind.name} with keys {list(target.keys)} is not a lowpower target")
    name = str(target.attrs.get("model"))
    registered = registered_profile(tvm_tag_of(name))
    if registered is not None:
        return registered
    if name in profile_names():
        return load_profile(name)
    raise ProfileError(
        f"lowpower target has model {name!r}, which names no built-in or registered profile; "
        "build it from a tag such as Target('lowpower-cortex-m4f')"
    )
