"""The output folder OUT: checked before a compile, filled only by renames, never losing anything of the user's.

A bundle is written into a staging folder `.<OUT name>.<random>` beside OUT and moved into place at the end:
- without `force`, by one `os.rename(staging, OUT)`, which on Linux replaces an absent or EMPTY folder and
  fails if OUT is not empty: a file put into OUT during the compile (by the user or a second compile) makes
  the compile fail instead of being deleted;
- with `force`, OUT is first renamed aside, the staging folder renamed into place, and only then is the old
  copy deleted; if the second rename fails, the old OUT is renamed back.
Every problem with OUT is a CompileError (one line), never an OSError.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path

from tvm_ext.compile import CompileError


def check_output_folder(out: Path, model: Path | None, label: str, force: bool) -> None:
    """Raise CompileError unless `out` can become the bundle folder for `model`.

    Refused: a symbolic link, an existing non-folder, a folder that holds `model` (its own folder or any
    parent of it, symbolic links resolved), and a non-empty folder unless `force`. `label` starts the line.
    """
    try:
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


def make_staging_folder(out: Path, label: str) -> Path:
    """Create (with OUT's parents) and return an empty staging folder beside `out`."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
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
        aside = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent)) if out.exists() else None
        if aside is not None:
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
