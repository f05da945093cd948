"""`<model>.tar.gz` is reproducible: the same files give the same bytes whoever compiles them, whenever, under
whatever umask; it names no user (the old archive recorded the compiling user's name, uid and gid, each
file's time and the gzip header's time)."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

from packager.archive import ARCHIVE_MTIME, archive


def a_bundle(folder: Path, mtime: int, mode: int) -> Path:
    (folder / "cortex_m").mkdir(parents=True)
    (folder / "m.h").write_text("/* header */\n")
    (folder / "cortex_m" / "startup.c").write_text("/* startup */\n")
    (folder / "run.sh").write_text("#!/bin/sh\n")
    (folder / "run.sh").chmod(0o700)
    for path in folder.rglob("*"):
        if path.is_file() and path.name != "run.sh":
            path.chmod(mode)
        os.utime(path, (mtime, mtime))
    return folder


def test_the_archive_depends_on_the_files_alone(tmp_path: Path) -> None:
    first = archive(a_bundle(tmp_path / "one", 1_700_000_000, 0o600), "m", top="m").read_bytes()
    second = archive(a_bundle(tmp_path / "two", 1_800_000_000, 0o664), "m", top="m").read_bytes()
    assert first == second
    with tarfile.open(tmp_path / "one" / "m.tar.gz") as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == ["m/cortex_m/startup.c", "m/m.h", "m/run.sh"]
    assert {(m.uid, m.gid, m.uname, m.gname, m.mtime) for m in members} == {(0, 0, "", "", ARCHIVE_MTIME)}
    assert [m.mode for m in members] == [0o644, 0o644, 0o755]
    assert first[4:8] == ARCHIVE_MTIME.to_bytes(4, "little")  # the gzip header's time
