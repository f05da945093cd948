"""Reading one profile file into its table of fields, refusing anything that is not a small UTF-8 text file.

Contract: `read_table(path, where)` returns the file's top-level table (a dict) or raises ProfileError with one
line starting with `where`. Refused: a path that is not a regular file (a FIFO is opened without blocking, a
device such as /dev/zero or a folder is never read), a name that does not end in PROFILE_SUFFIXES (a model
file given as --target), more than MAX_PROFILE_FILE_BYTES (only that many bytes plus one are read), bytes that
are not UTF-8, a NUL byte, TOML or JSON that does not parse (nesting too deep, an integer too long to convert,
included), and a document that is not one table.
"""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from target.profile import ProfileError

PROFILE_SUFFIXES = (".toml", ".json")
MAX_PROFILE_FILE_BYTES = 65_536
"""A profile file is at most 64 KiB (the built-in ones are under 3 KiB)."""

_FILE_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def read_table(path: Path, where: str) -> dict[str, Any]:
    """The table of fields in the profile file at `path` (named `where` in messages); see the module's docstring."""
    if path.suffix not in PROFILE_SUFFIXES:
        raise ProfileError(f"{where}: not a profile file (a profile is a .toml or .json file)")
    text = _read_text(path, where)
    kind = "JSON" if path.suffix == ".json" else "TOML"
    try:
        table = json.loads(text) if kind == "JSON" else tomllib.loads(text)
    except RecursionError:
        raise ProfileError(f"{where}: not valid {kind}: nested too deeply") from None
    except ValueError as err:  # TOMLDecodeError, JSONDecodeError, and an integer too long to convert
        raise ProfileError(f"{where}: not valid {kind}: {' '.join(str(err).split())[:200]}") from None
    if not isinstance(table, dict):
        raise ProfileError(f"{where}: a profile file must hold one table of fields")
    return table


def _read_text(path: Path, where: str) -> str:
    """The file's text: a regular file of at most MAX_PROFILE_FILE_BYTES bytes of UTF-8 without NUL."""
    try:
        # O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer; fstat then refuses it.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as err:
        raise ProfileError(f"{where}: cannot read the profile file ({err.strerror})") from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for is_kind, name in _FILE_KINDS if is_kind(mode)), "not a regular file")
            raise ProfileError(f"{where}: not a profile file: it is {kind}, not a regular file")
        data = _read_at_most(descriptor, MAX_PROFILE_FILE_BYTES + 1, where)
    finally:
        os.close(descriptor)
    if len(data) > MAX_PROFILE_FILE_BYTES:
        raise ProfileError(f"{where}: not a profile file: larger than {MAX_PROFILE_FILE_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ProfileError(f"{where}: not a profile file: not UTF-8 text (byte {err.start})") from None
    if "\0" in text:
        raise ProfileError(f"{where}: not a profile file: it holds a NUL byte (byte {data.index(0)})")
    return text


def _read_at_most(descriptor: int, limit: int, where: str) -> bytes:
    chunks: list[bytes] = []
    remaining = limit
    try:
        while remaining > 0:
            chunk = os.read(descriptor, remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    except OSError as err:
        raise ProfileError(f"{where}: cannot read the profile file ({err.strerror})") from None
    return b"".join(chunks)
