"""Reading device profiles from TOML and JSON files into `Profile` objects.

Contract:
- `load_profile(name_or_path)` takes a built-in profile name ("cortex-m4f"), its TVM tag ("lowpower-cortex-m4f"),
  or a path to a user's `.toml` / `.json` file with the same fields as the built-in files.
- A file may say `extends = "<built-in name or path>"`: it starts from that profile's fields and overrides
  the ones it gives (a relative path is relative to the extending file). A user file's `name` defaults to its
  file name without the extension and may not take a built-in profile's name.
- Every field is checked; any problem raises `ProfileError` with one line naming the file and the field.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from target.compute_unit import ComputeUnit, units_from_tables
from target.profile import (
    DEFAULT_SUBGRAPH_BYTES,
    FPU_VALUES,
    INT8_ROUNDING_VALUES,
    SIMD_VALUES,
    TAG_PREFIX,
    Profile,
    ProfileError,
)

BUILTIN_DIR = Path(__file__).resolve().parent / "profiles"
PROFILE_SUFFIXES = (".toml", ".json")
_NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_.-]*")


class _BadValue(ValueError):
    """A field value that fails its check; the loader adds the file and the field to the message."""


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _BadValue(f"must be a non-empty string (got {value!r})")
    return value


def _prefix(value: Any) -> str:
    if not isinstance(value, str) or value != value.strip():
        raise _BadValue(f'must be a string without spaces around it, "" for the host (got {value!r})')
    return value


def _name(value: Any) -> str:
    if not isinstance(value, str) or not _NAME_PATTERN.fullmatch(value):
        raise _BadValue(f"must be lowercase letters, digits, '-', '_' or '.' (got {value!r})")
    return value


def _byte_count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise _BadValue(f"must be a positive whole number of bytes (got {value!r})")
    return value


def _power_of_two(value: Any) -> int:
    count = _byte_count(value)
    if count & (count - 1):
        raise _BadValue(f"must be a power of two (got {value!r})")
    return count


def _one_of(choices: tuple[str, ...]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in choices:
            raise _BadValue(f"must be one of {', '.join(repr(c) for c in choices)} (got {value!r})")
        return value

    return check


def _flags(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(flag, str) and flag.strip() for flag in value):
        raise _BadValue(f"must be a list of non-empty strings (got {value!r})")
    return tuple(value)


def _units(value: Any) -> tuple[ComputeUnit, ...]:
    """The compute units (`target.compute_unit`); None, the default, for none listed."""
    if value is None:
        return ()
    try:
        return units_from_tables(value)
    except ValueError as err:
        raise _BadValue(str(err)) from None


def _board(value: Any) -> str | None:
    """A QEMU board name; "none" (TOML has no null) or JSON null mean no emulated board."""
    if value is None or value == "none":
        return None
    return _text(value)


# Every field a profile file may give, with its check. `source` is not a file field: the loader sets it.
FIELD_CHECKS: dict[str, Callable[[Any], Any]] = {
    "name": _name,
    "description": _text,
    "cpu": _text,
    "arch": _text,
    "sram_bytes": _byte_count,
    "flash_bytes": _byte_count,
    "memory_source": _text,
    "fpu": _one_of(FPU_VALUES),
    "simd": _one_of(SIMD_VALUES),
    "alignment_bytes": _power_of_two,
    "int8_rounding": _one_of(INT8_ROUNDING_VALUES),
    "c_compiler": _text,
    "cflags": _flags,
    "ldflags": _flags,
    "binutils_prefix": _prefix,
    "qemu_board": _board,
    "subgraph_bytes": _byte_count,
    "units": _units,
}
_OPTIONAL_DEFAULTS: dict[str, Any] = {"qemu_board": None, "subgraph_bytes": DEFAULT_SUBGRAPH_BYTES, "units": None}
_EXTENDS = "extends"


def profile_names() -> tuple[str, ...]:
    """The built-in profiles' names, sorted."""
    return tuple(sorted(path.stem for path in BUILTIN_DIR.glob("*.toml")))


def load_profile(name_or_path: str | Path) -> Profile:
    """The profile named `name_or_path` (built-in name or "lowpower-<name>" tag) or read from that file.

    Raises ProfileError (one line) for an unknown name, a missing or unreadable file, or a bad field.
    """
    text = str(name_or_path)
    if text.endswith(PROFILE_SUFFIXES) or Path(text).is_file():
        return _load_file(Path(text))
    return _builtin(_builtin_name(text))


def _builtin_name(name_or_tag: str) -> str:
    names = profile_names()
    if name_or_tag in names:
        return name_or_tag
    if name_or_tag.startswith(TAG_PREFIX) and name_or_tag[len(TAG_PREFIX) :] in names:
        return name_or_tag[len(TAG_PREFIX) :]
    raise ProfileError(
        f"unknown profile {name_or_tag!r}: built-in profiles are {', '.join(names)}; "
        "or give the path of a .toml or .json profile file"
    )


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
        except _BadValue as bad:
            raise ProfileError(f"{origin}: field {field_name!r} {bad}") from None
    profile = Profile(**values, source=where)
    _check_float_abi(profile, given["cflags"][1])
    _check_name_is_free(profile, path)
    return profile


def _resolve_fields(path: Path, chain: tuple[Path, ...]) -> dict[str, tuple[Any, str]]:
    """Each field's value and the file that gave it: the file's own fields over those of the profile it extends."""
    where = _display(path)
    if path.resolve() in chain:
        raise ProfileError(f"{where}: field 'extends' makes a cycle back to this file")
    raw = _read_table(path)
    for key in raw:
        if key not in FIELD_CHECKS and key != _EXTENDS:
            close = difflib.get_close_matches(key, [*FIELD_CHECKS, _EXTENDS], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ProfileError(f"{where}: unknown field {key!r}{hint}")
    base_ref = raw.pop(_EXTENDS, None)
    own = {key: (value, where) for key, value in raw.items()}
    if base_ref is None:
        return own
    if not isinstance(base_ref, str) or not base_ref:
        raise ProfileError(f"{where}: field 'extends' must name a built-in profile or a profile file")
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


def _read_table(path: Path) -> dict[str, Any]:
    where = _display(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ProfileError(f"{where}: cannot read the profile file ({err.strerror})") from None
    try:
        table = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as err:
        kind = "JSON" if path.suffix == ".json" else "TOML"
        raise ProfileError(f"{where}: not valid {kind}: {' '.join(str(err).split())}") from None
    if not isinstance(table, dict):
        raise ProfileError(f"{where}: a profile file must hold one table of fields")
    return table


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


def _check_name_is_free(profile: Profile, path: Path) -> None:
    """A user profile may not reuse a built-in's name: names identify profiles in tags and manifests."""
    if path.resolve().parent != BUILTIN_DIR and profile.name in profile_names():
        raise ProfileError(
            f"{profile.source}: field 'name' {profile.name!r} is a built-in profile's name; give yours its own"
        )
