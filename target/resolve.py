"""What a user names as the target, resolved once into the `Profile` the compiler passes down.

A target is given as a built-in profile's name ("cortex-m4f"), its TVM tag ("lowpower-cortex-m4f"), the tag
of a profile registered in this process (`register_profile_with_tvm`), a `.toml` / `.json` profile file, a
`Profile`, or a lowpower `tvm.target.Target`. `resolve_profile` turns any of them into the Profile; past that
point the compiler passes the Profile object (and the TVM Target registered from it), never its name.

The registry of profiles registered with TVM lives here, free of TVM, so that a registered user profile's tag
resolves without importing TVM again; `target.tvm_tags` fills it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Union

from target.loading import load_profile
from target.profile import Profile, ProfileError

if TYPE_CHECKING:
    import tvm

TargetSpec = Union[str, Path, Profile, "tvm.target.Target"]
"""Anything `resolve_profile` accepts."""

# Profiles registered with TVM in this process, by TVM tag: the built-ins and any user profile.
_registered_by_tag: dict[str, Profile] = {}


def remember_registered(profile: Profile) -> None:
    """Record `profile` as the one its tag now stands for (called by `register_profile_with_tvm`)."""
    _registered_by_tag[profile.tvm_tag] = profile


def registered_profile(tag: str) -> Profile | None:
    """The profile last registered under TVM tag `tag` in this process, or None."""
    return _registered_by_tag.get(tag)


def resolve_profile(spec: TargetSpec) -> Profile:
    """The Profile `spec` stands for (see the module's docstring for what `spec` may be).

    Imports TVM only when `spec` is a TVM Target (which means TVM is loaded already). Raises ProfileError
    (one line) for an unknown name, a bad profile file, or a TVM target that is not a lowpower one.
    """
    if isinstance(spec, Profile):
        return spec
    if isinstance(spec, (str, Path)):
        try:
            return load_profile(spec)
        except ProfileError:
            registered = registered_profile(str(spec))
            if registered is None:
                raise
            return registered
    from target.tvm_tags import profile_for_target

    return profile_for_target(spec)
