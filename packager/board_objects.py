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
runner's support folder (where its quoted includes are found) and the files of its `-I` folders (the bundle's,
the support folder) named as a system header (`system_headers`), which `#include <...>` would find first. The
bundle's own headers (`<model>.h`) are not inputs: the board sources include none, so every model's bundle on a
profile takes the same objects. A kept object is copied, never linked:
make's rules write the bundle's objects in place, and its copy is newer than its source, so make takes it as
up to date. Workers of a test session share the folder: an entry is written to a temporary folder and renamed.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
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


@functools.lru_cache(maxsize=16)
def system_headers(command: tuple[str, ...]) -> frozenset[str]:
    """Every header (.h) of the `<...>` include folders of `command`'s compiler with those flags (gcc's own, the C
    library's), as the name an `#include <...>` gives it (relative to its folder): a file of that name in a
    folder of `-I` is found first. Only headers: the folders hold other files too (a README.md), which a bundle
    has as well and a C file never includes."""
    try:
        listing = subprocess.run([*command, "-xc", "-E", "-Wp,-v", "-"], input="", capture_output=True, text=True,
                                 check=False).stderr.splitlines()
    except OSError:  # no such compiler: the build fails and keeps nothing
        return frozenset()
    starts = [index for index, line in enumerate(listing) if line.startswith("#include <...> search starts")]
    names: set[str] = set()
    for line in listing[starts[0] + 1:] if starts else []:
        if not line.startswith(" "):
            break
        folder = Path(line.strip())
        names.update(path.relative_to(folder).as_posix() for path in folder.rglob("*.h") if path.is_file())
    return frozenset(names)


def object_key(bundle_dir: Path, source: str, command: tuple[str, ...]) -> str:
    """The key of the object of OUT/`source` compiled by `command` (the compiler and its flags) in the bundle's
    folder `bundle_dir`: a hex digest of every input of the compile (see the module's docstring)."""
    bundle_dir = Path(bundle_dir)
    source_path = bundle_dir / source
    parts: list[bytes] = [word.encode() for word in compiler_identity(command)]
    parts += [b"source", source.encode(), source_path.read_bytes()]
    for header in sorted(source_path.parent.glob("*.h")):
        parts += [b"header", header.name.encode(), header.read_bytes()]
    include_folders = [flag.removeprefix("-I") for flag in command if flag.startswith("-I") and flag != "-I"]
    system = system_headers(command)
    shadowing = sorted(f"{folder}/{path.relative_to(bundle_dir / folder).as_posix()}" for folder in include_folders
                       for path in (bundle_dir / folder).rglob("*.h")
                       if path.relative_to(bundle_dir / folder).as_posix() in system and path.is_file())
    parts += [b"shadowing", *(name.encode() for name in shadowing)]
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
