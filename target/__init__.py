"""Device profiles (data files under target/profiles/) and their registration as TVM target tags.

`import target` does not import TVM: profiles load, a user's target resolves to its Profile
(`resolve_profile`) and the resource check runs without it. The TVM-facing
functions (`register_with_tvm`, `register_profile_with_tvm`, `is_lowpower_target`, `profile_for_target`,
`tag_config`) live in `target.tvm_tags` and import TVM on first use.
"""

from __future__ import annotations

from typing import Any

from target.loading import load_profile, profile_names
from target.profile import Profile, ProfileError
from target.resolve import TargetSpec, resolve_profile
from target.resources import (FlashSource, FlashUse, Headroom, Overrun, RamUse, ResourceError, StackBound,
                              StackSource, check_fits, check_flash_fits, check_io_fits)

__all__ = [
    "FlashSource",
    "FlashUse",
    "Headroom",
    "Overrun",
    "Profile",
    "ProfileError",
    "RamUse",
    "ResourceError",
    "StackBound",
    "StackSource",
    "TargetSpec",
    "check_fits",
    "check_flash_fits",
    "check_io_fits",
    "is_lowpower_target",
    "load_profile",
    "profile_for_target",
    "profile_names",
    "register_profile_with_tvm",
    "register_with_tvm",
    "resolve_profile",
    "tag_config",
]


def __getattr__(name: str) -> Any:
    """Import the TVM registration module only when one of its functions is asked for."""
    if name in __all__:  # exported but not bound yet: one of the TVM functions
        from target import tvm_tags

        return getattr(tvm_tags, name)
    raise AttributeError(f"module 'target' has no attribute {name!r}")
