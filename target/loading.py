"""Reading device profiles from TOML and JSON files into `Profile` objects.

Contract:
- `load_profile(name_or_path)` takes a built-in profile name ("cortex-m4f"), its TVM tag ("lowpower-cortex-m4f"),
  or a path to a user's `.toml` / `.json` file with the same fields as the built-in files.
- A file may say `extends = "<built-in name or path>"`: it starts from that profile's fields and overrides
  the ones it gives (a relative path is relative to the extending file), at most MAX_EXTENDS_DEPTH steps. A
  user file's `name` defaults to its file name without the extension and may not take a built-in profile's name.
- The file must be a small UTF-8 text file (`target.profile_file`); every field is held to its grammar
  (`target.field_grammar`). Any problem raises `ProfileError` with one line naming the file and the field.
"""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from target import field_grammar as grammar
from target.compute_unit import ComputeUnit, units_from_tables
from target.field_grammar import BadValue, shown
from target.memory_region import RamRegion, regions_from_tables
from target.profile import (
    DEFAULT_KERNEL_STACK_BYTES,
    DEFAULT_STACK_BOUND_BYTES,
    DEFAULT_SUBGRAPH_BYTES,
    FPU_VALUES,
    INT8_ROUNDING_VALUES,
    SIMD_VALUES,
    TAG_PREFIX,
    Profile,
    ProfileError,
)
from target.profile_file import PROFILE_SUFFIXES, read_table

BUILTIN_DIR = Path(__file__).resolve().parent / "profiles"
MAX_EXTENDS_DEPTH = 8
"""At most this many `extends` steps from the file given to the last profile it builds on."""


def _units(value: Any) -> tuple[ComputeUnit, ...]:
    """The compute units (`target.compute_unit`); None, the default, for none listed."""
    if value is None:
        return ()
    try:
        return units_from_tables(value)
    except ValueError as err:
        raise BadValue(str(err), names_the_value=True) from None


def _clock(value: Any) -> int | None:
    """`clock_hz`: a clock in hertz (target.field_grammar.clock_hz), or None (no estimated times)."""
    return None if value is None else grammar.clock_hz(value)


def _board(value: Any) -> str | None:
    """A QEMU board name; "none" (TOML has no null) or JSON null mean no emulated board."""
    if value is None or value == "none":
        return None
    return grammar.core_name(value)


def _regions(value: Any) -> tuple[RamRegion, ...]:
    """The RAM regions (`target.memory_region`); None, the default, for none listed."""
    return () if value is None else regions_from_tables(value)


# Every field a profile file may give, with its check. `source` is not a file field: the loader sets it.
# The grammar of each check is in target.field_grammar and target/README.md.
FIELD_CHECKS: dict[str, Callable[[Any], Any]] = {
    "name": grammar.name,
    "description": grammar.text_line,
    "cpu": grammar.core_name,
    "arch": grammar.core_name,
    "sram_bytes": grammar.byte_count,
    "flash_bytes": grammar.byte_count,
    "memory_source": grammar.text_line,
    "fpu": grammar.one_of(FPU_VALUES),
    "simd": grammar.one_of(SIMD_VALUES),
    "alignment_bytes": grammar.alignment,
    "int8_rounding": grammar.one_of(INT8_ROUNDING_VALUES),
    "c_compiler": grammar.compiler,
    "cflags": grammar.flags,
    "ldflags": grammar.flags,
    "binutils_prefix": grammar.tool_prefix,
    "qemu_board": _board,
    "subgraph_bytes": grammar.byte_count,
    "stack_bound_bytes": grammar.byte_count,
    "kernel_stack_bytes": grammar.byte_count,
    "clock_hz": _clock,
    "units": _units,
    "ram_regions": _regions,
}
_OPTIONAL_DEFAULTS: dict[str, Any] = {"qemu_board": None, "subgraph_bytes": DEFAULT_SUBGRAPH_BYTES,
                                      "stack_bound_bytes": DEFAULT_STACK_BOUND_BYTES,
                                      "kernel_stack_bytes": DEFAULT_KERNEL_STACK_BYTES, "clock_hz": None,
                                      "units": None, "ram_regions": None}
_EXTENDS = "extends"


def profile_names() -> tuple[str, ...]:
    """The built-in profiles' names, sorted."""
    return tuple(sorted(path.stem for path in BUILTIN_DIR.glob("*.toml")))


def load_profile(name_or_path: str | Path) -> Profile:
    """The profile named `name_or_path` (built-in name or "lowpower-<name>" tag) or read from that file.

    A built-in name or tag is the built-in profile even where a file of that name exists; anything else that
    ends in a profile suffix, holds a '/' or names an existing file system entry is read as a profile file
    (`target.profile_file.read_table` says what it refuses). Raises ProfileError (one line) for an unknown
    name, a file that is not a profile file, or a bad field.
    """
    text = str(name_or_path)
    if _builtin_name_or_none(text) is not None:
        return _builtin(_builtin_name_or_none(text))
    if "\0" in text:
        raise ProfileError(f"{shown(text)}: not a profile name or file")
    if text.endswith(PROFILE_SUFFIXES) or os.sep in text or os.path.lexists(text):
        return _load_file(Path(text))
    return _builtin(_builtin_name(text))


def _builtin_name_or_none(name_or_tag: str) -> str | None:
    """The built-in profile `name_or_tag` names (its name or its TVM tag), or None."""
    names = profile_names()
    if name_or_tag in names:
        return name_or_tag
    if name_or_tag.startswith(TAG_PREFIX) and name_or_tag[len(TAG_PREFIX) :] in names:
        return name_or_tag[len(TAG_PREFIX) :]
    return None


def _builtin_name(name_or_tag: str) -> str:
    name = _builtin_name_or_none(name_or_tag)
    if name is None:
        raise ProfileError(
            f"unknown profile {shown(name_or_tag)}: built-in profiles are {', '.join(profile_names())}; "
            "or give the path of a .toml or .json profile file"
        )
    return name


@functools.cache
def _builtin(name: str) -> Profile:
    return _load_file(BUILTIN_DIR / f"{name}.toml")


def _display(path: Path) -> str:
    """A built-in file as "target/profiles/x.toml", a user file as given."""
    resolved = path.resolve()
    if resolved.parent == BUILTIN_DIR:
        return f"target/profiles/{resolved.name}"
    return str(path)


def _load_file(path: Path) -> Profile:
    where = _display(path)
    given = _resolve_fields(path, chain=())
    given.setdefault("name", (path.stem, where))
    for field_name, default in _OPTIONAL_DEFAULTS.items():
        given.setdefault(field_name, (default, where))
    values = {}
    for field_name, check in FIELD_CHECKS.items():
        if field_name not in given:
            raise ProfileError(f"{where}: missing field {field_name!r}")
        value, origin = given[field_name]
        try:
            values[field_name] = check(value)
        except BadValue as bad:
            value_part = "" if bad.names_the_value else f" (got {shown(value)})"
            raise ProfileError(f"{origin}: field {field_name!r} {bad}{value_part}") from None
    profile = Profile(**values, source=where)
    _check_float_abi(profile, given["cflags"][1])
    _check_regions_add_up(profile, given["ram_regions"][1])
    _check_name_is_free(profile, path)
    return profile


def _resolve_fields(path: Path, chain: tuple[Path, ...]) -> dict[str, tuple[Any, str]]:
    """Each field's value and the file that gave it: the file's own fields over those of the profile it extends.
    `chain` holds the files that extend this one, the first given first."""
    where = _display(path)
    if path.resolve() in chain:
        raise ProfileError(f"{where}: field 'extends' makes a cycle back to this file")
    if len(chain) > MAX_EXTENDS_DEPTH:
        raise ProfileError(f"{_display(chain[0])}: field 'extends' makes a chain of more than {MAX_EXTENDS_DEPTH} "
                           "profile files")
    raw = read_table(path, where)
    for key in raw:
        if key not in FIELD_CHECKS and key != _EXTENDS:
            close = difflib.get_close_matches(key, [*FIELD_CHECKS, _EXTENDS], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ProfileError(f"{where}: unknown field {shown(key)}{hint}")
    base_ref = raw.pop(_EXTENDS, None)
    own = {key: (value, where) for key, value in raw.items()}
    if base_ref is None:
        return own
    if not isinstance(base_ref, str) or not base_ref or not base_ref.isprintable():
        raise ProfileError(f"{where}: field 'extends' must name a built-in profile or a profile file "
                           f"(got {shown(base_ref)})")
    if base_ref.endswith(PROFILE_SUFFIXES):
        base_path = path.parent / base_ref
    else:
        try:
            base_path = BUILTIN_DIR / f"{_builtin_name(base_ref)}.toml"
        except ProfileError as unknown:
            raise ProfileError(f"{where}: field 'extends': {unknown}") from None
    base = _resolve_fields(base_path, chain + (path.resolve(),))
    base.pop("name", None)  # a profile never inherits its base's identity
    return base | own


def _check_float_abi(profile: Profile, cflags_origin: str) -> None:
    """The float ABI in `cflags` must agree with `fpu`: FPU instructions (hard, softfp) need an FPU, and an FPU
    that `fpu` announces must not be switched off with -mfloat-abi=soft."""
    abi = next((flag.split("=", 1)[1] for flag in profile.cflags if flag.startswith("-mfloat-abi=")), None)
    if abi in ("hard", "softfp") and not profile.hardware_float:
        raise ProfileError(f"{cflags_origin}: field 'cflags' asks -mfloat-abi={abi} but 'fpu' is 'none'")
    if abi == "soft" and profile.hardware_float:
        raise ProfileError(
            f"{cflags_origin}: field 'cflags' asks -mfloat-abi=soft but 'fpu' is {profile.fpu!r} "
            '(set fpu = "none" for software float)'
        )


def _check_regions_add_up(profile: Profile, regions_origin: str) -> None:
    """The listed RAM regions are the SRAM split by speed: their bytes must add up to `sram_bytes`, so that the
    RAM check (target.resources) and the regions' arenas describe the same memory."""
    total = sum(region.bytes for region in profile.ram_regions)
    if profile.ram_regions and total != profile.sram_bytes:
        raise ProfileError(f"{regions_origin}: field 'ram_regions' adds up to {total:,} B but 'sram_bytes' is "
                           f"{profile.sram_bytes:,} B (the regions are the SRAM split by speed)")


def _check_name_is_free(profile: Profile, path: Path) -> None:
    """A user profile may not reuse a built-in's name: names identify profiles in tags and manifests."""
    if path.resolve().parent != BUILTIN_DIR and profile.name in profile_names():
        raise ProfileError(
            f"{profile.source}: field 'name' {profile.name!r} is a built-in profile's name; give yours its own"
        )
