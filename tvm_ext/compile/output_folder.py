"""The output folder OUT: checked before a compile, filled only by renames, never losing anything of the user's.

A bundle is written into a staging folder `.<OUT name>.<random>` beside OUT and moved into place at the end:
- without `force`, by one `os.rename(staging, OUT)`, which on Linux replaces an absent or EMPTY folder and
  fails if OUT is not empty: a file put into OUT during the compile (by the user or a second compile) makes
  the compile fail instead of being deleted;
- with `force`, OUT is first renamed aside, the staging folder renamed into place, and only then is the old
  copy deleted; if the second rename fails, the old OUT is renamed back.
OUT gets the permissions `mkdir` gives (the umask's), or with `force` those of the OUT it replaces. The
folders created above OUT for it are removed again when the compile fails (`make_parents`, `remove_parents`).
OUT is never the working directory, the home folder or a folder holding either: a bundle replaces OUT as a
whole, and with `force` the old OUT's files are deleted.
Every problem with OUT is a CompileError (one line), never an OSError.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
import tempfile
from pathlib import Path

from tvm_ext.compile import CompileError

# Characters of OUT's name kept in the names of the staging folder and the old copy beside it, so that an OUT
# whose own name is near the file system's 255-byte limit still gets them.
_NAME_CHARS_BESIDE = 64


def check_output_folder(out: Path, model: Path | None, label: str, force: bool) -> None:
    """Raise CompileError unless `out` can become the bundle folder for `model`.

    Refused: a symbolic link, an existing non-folder, a folder that holds `model` (its own folder or any
    parent of it, symbolic links resolved), the working directory, the home folder ($HOME) or a folder
    holding either (`/` too), and a non-empty folder unless `force`. `label` starts the line.
    """
    try:
        _refuse_a_folder_in_use(out, label)
        if out.is_symlink():
            raise CompileError(f"{label}: output folder {out} is a symbolic link; give the folder it points to")
        if out.exists() and not out.is_dir():
            raise CompileError(f"{label}: output folder {out} exists and is not a folder")
        if model is not None and out.resolve() in model.resolve().parents:
            raise CompileError(f"{label}: output folder {out} holds the model {model}; choose another folder")
        if out.exists() and any(out.iterdir()) and not force:
            raise CompileError(f"{label}: output folder {out} is not empty (use --force to replace it)")
    except OSError as err:
        raise CompileError(f"{label}: output folder {out}: {err.strerror or err}") from err


def _refuse_a_folder_in_use(out: Path, label: str) -> None:
    """CompileError when `out` (absolute) is the working directory or the home folder, or holds either."""
    resolved = out.resolve()
    for folder, what in _folders_in_use():
        if resolved == folder or resolved in folder.parents:
            role = what if resolved == folder else f"a folder holding {what} ({folder})"
            raise CompileError(f"{label}: output folder {out} is {role}; a bundle replaces its output folder as a "
                               "whole: give a folder of its own")


def _folders_in_use() -> list[tuple[Path, str]]:
    """The working directory and the home folder, symbolic links resolved, each with what it is called (one
    that cannot be found, a deleted working directory or no home folder, is not listed)."""
    folders = []
    for find, what in ((Path.cwd, "the working directory"), (Path.home, "your home folder")):
        try:
            folders.append((find().resolve(), what))
        except (OSError, RuntimeError):  # RuntimeError: Path.home() with neither $HOME nor a passwd entry
            continue
    return folders


def make_parents(out: Path, label: str) -> list[Path]:
    """Create the missing folders above `out` (absolute); return those this call created, outermost first (for
    `remove_parents`). A folder another process creates meanwhile is not this call's."""
    created: list[Path] = []
    try:
        for folder in reversed(out.parents):
            if not folder.is_dir():
                try:
                    folder.mkdir()
                except FileExistsError:
                    continue
                created.append(folder)
    except OSError as err:
        remove_parents(created)
        raise CompileError(f"{label}: cannot create the output folder {out}: {err.strerror or err}") from err
    return created


def remove_parents(created: list[Path]) -> None:
    """Remove the folders `make_parents` created (`created`), innermost first, each only while it is empty:
    whatever someone else put there meanwhile stays, with the folders above it."""
    for folder in reversed(created):
        try:
            folder.rmdir()
        except OSError:
            return


def make_staging_folder(out: Path, label: str) -> Path:
    """Create and return an empty staging folder `.<OUT name>.<random>` beside `out` (whose parent exists),
    with the permissions `mkdir` gives: those OUT gets."""
    try:
        for _ in range(100):  # 32 random bits a name: a clash is rare, a hundred in a row is an attack
            staging = out.parent / f".{out.name[:_NAME_CHARS_BESIDE]}.{secrets.token_hex(4)}"
            try:
                staging.mkdir()
                return staging
            except FileExistsError:
                continue
        raise FileExistsError(errno.EEXIST, "every staging folder name tried exists")
    except OSError as err:
        raise CompileError(f"{label}: cannot create the output folder {out}: {err.strerror or err}") from err


def empty_folder(staging: Path) -> None:
    """Delete what a compile wrote into its own `staging` folder (from `make_staging_folder`, never OUT), so
    that another compile can fill it."""
    for entry in staging.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def move_into_place(staging: Path, out: Path, force: bool, label: str) -> None:
    """Rename the finished `staging` folder to `out`; see the module's contract. `staging` is gone afterwards
    unless CompileError is raised (the caller deletes it)."""
    if not force:
        _rename_into_place(staging, out, label)
        return
    try:
        aside = None
        if out.exists():
            os.chmod(staging, stat.S_IMODE(out.stat().st_mode))  # the replaced OUT's permissions
            aside = Path(tempfile.mkdtemp(prefix=f".{out.name[:_NAME_CHARS_BESIDE]}.old.", dir=out.parent))
            os.rename(out, aside)  # replaces the empty folder mkdtemp just made
    except OSError as err:
        raise CompileError(f"{label}: cannot move the old output folder {out} aside: {err.strerror}") from err
    try:
        _rename_into_place(staging, out, label)
    except CompileError:
        if aside is not None:
            _restore(aside, out, label)
        raise
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)


def _rename_into_place(staging: Path, out: Path, label: str) -> None:
    try:
        os.rename(staging, out)
    except OSError as err:
        if err.errno in (errno.ENOTEMPTY, errno.EEXIST):
            raise CompileError(f"{label}: output folder {out} was filled by something else during the compile; "
                               "it is left as it was (use another folder, or --force to replace it)") from err
        raise CompileError(f"{label}: cannot move the bundle into {out}: {err.strerror}") from err


def _restore(aside: Path, out: Path, label: str) -> None:
    try:
        os.rename(aside, out)
    except OSError as err:
        raise CompileError(f"{label}: cannot move the bundle into {out}, and the previous {out} could not be put "
                           f"back: it is kept as {aside}") from err
