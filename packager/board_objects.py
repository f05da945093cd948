"""A folder of board support objects kept across bundles: each emulated profile's startup code, UART output,
system calls and instruction counter (the runner's `board_sources`) compiled once, not once per bundle.

Those sources are the same for every model compiled for a profile; only the bundle's own files differ. When the
environment variable BOARD_OBJECTS_VARIABLE names a folder, a bundle's cross build takes each board object
(with its -fstack-usage and dependency files) from there when the folder has one compiled from the same inputs
(`restore_board_objects`, before the build), and leaves there those it compiled (`keep_board_objects`, after
it). Without the variable nothing changes. The test suite sets it for its session (tests/conftest.py): some
0.2 CPU-seconds of gcc per emulated compile (five objects; measured 0.21 on vww_96_int8's cortex-m4f bundle).

An object's key (`object_key`) is every input of its compile: the compiler's command (the compiler, resolved to
its file, that file's size and time, and every flag), the source's text, the text of each header of the
runner's support folder (where its quoted includes are found) and the names of the headers in the bundle's
folder (found first for the system headers' `<...>` includes, by `-I.`). A kept object is copied, never linked:
make's rules write the bundle's objects in place, and its copy is newer than its source, so make takes it as
up to date. Workers of a test session share the folder: an entry is written to a temporary folder and renamed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterable

BOARD_OBJECTS_VARIABLE = "TVM_EXT_BOARD_OBJECTS"
"""The environment variable naming the folder of kept board objects (unset or empty: none kept)."""

OBJECT_SUFFIXES = (".o", ".su", ".d")
"""The files a board source's compile writes into the cross build's folder (.su and .d where it writes them)."""


def board_objects_folder() -> Path | None:
    """The folder of kept board objects the environment names, or None."""
    value = os.environ.get(BOARD_OBJECTS_VARIABLE, "")
    return Path(value) if value else None


def compiler_identity(command: tuple[str, ...]) -> tuple[str, ...]:
    """`command` with its compiler (the first word) resolved to its file, that file's size and modification time
    (ns): another compiler of the same name makes another key."""
    found = shutil.which(command[0])
    if found is None:
        return command
    status = Path(found).resolve().stat()
    return (str(Path(found).resolve()), str(status.st_size), str(status.st_mtime_ns), *command[1:])


def object_key(bundle_dir: Path, source: str, command: tuple[str, ...]) -> str:
    """The key of the object of OUT/`source` compiled by `command` (the compiler and its flags) in the bundle's
    folder `bundle_dir`: a hex digest of every input of the compile (see the module's docstring)."""
    bundle_dir = Path(bundle_dir)
    source_path = bundle_dir / source
    parts: list[bytes] = [word.encode() for word in compiler_identity(command)]
    parts += [b"source", source.encode(), source_path.read_bytes()]
    for header in sorted(source_path.parent.glob("*.h")):
        parts += [b"header", header.name.encode(), header.read_bytes()]
    parts += [b"bundle headers", *(header.name.encode() for header in sorted(bundle_dir.glob("*.h")))]
    return hashlib.sha256(b"\0".join(parts)).hexdigest()


def object_stem(build_dir: str, source: str) -> str:
    """The path, relative to OUT/ and without suffix, of the cross build's object of `source`."""
    return f"{build_dir}/{Path(source).with_suffix('').as_posix()}"


def restore_board_objects(bundle_dir: Path, build_dir: str, sources: Iterable[str], command: tuple[str, ...],
                          folder: Path | None) -> list[str]:
    """Copy into OUT/`build_dir` the kept objects of `sources` (paths relative to OUT/) compiled by `command`
    that `folder` holds (None: none); return the sources restored."""
    if folder is None:
        return []
    restored = []
    for source in sources:
        kept = folder / object_key(bundle_dir, source, command)
        if not kept.is_dir():
            continue
        stem = Path(bundle_dir) / object_stem(build_dir, source)
        stem.parent.mkdir(parents=True, exist_ok=True)
        for suffix in OBJECT_SUFFIXES:
            if (kept / f"object{suffix}").is_file():
                shutil.copyfile(kept / f"object{suffix}", stem.with_suffix(suffix))
        restored.append(source)
    return restored


def keep_board_objects(bundle_dir: Path, build_dir: str, sources: Iterable[str], command: tuple[str, ...],
                       folder: Path | None) -> list[str]:
    """Keep in `folder` (None: nowhere) the objects of `sources` that OUT/`build_dir` holds and `folder` does not
    yet; return the sources kept."""
    if folder is None:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    kept = []
    for source in sources:
        stem = Path(bundle_dir) / object_stem(build_dir, source)
        entry = folder / object_key(bundle_dir, source, command)
        if entry.is_dir() or not stem.with_suffix(".o").is_file():
            continue
        partial = Path(tempfile.mkdtemp(dir=folder, prefix=".partial-"))
        for suffix in OBJECT_SUFFIXES:
            if stem.with_suffix(suffix).is_file():
                shutil.copyfile(stem.with_suffix(suffix), partial / f"object{suffix}")
        try:
            partial.rename(entry)
            kept.append(source)
        except OSError:  # another process kept the same object first
            shutil.rmtree(partial, ignore_errors=True)
    return kept
