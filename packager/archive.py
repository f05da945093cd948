"""`<model>.tar.gz`: the whole bundle in one file, with the bundle's folder as its top directory.

The archive is reproducible: it depends on the bundle's file names and bytes alone. Its members are in name
order with neutral owner fields (uid and gid 0, no user or group name: not the compiling user's), the
modification time ARCHIVE_MTIME, and mode 0644 (0755 for a file someone may execute); the gzip header carries
the same time and no file name.
"""

from __future__ import annotations

import gzip
import stat
import tarfile
from pathlib import Path

# gzip's own default. tarfile's default, 9, took 0.22 CPU seconds for vww_96_int8's 1.5 MB bundle, the last
# step of every compile, where 6 takes 0.04 s for a 3 % larger archive (243,471 -> 250,538 B).
COMPRESS_LEVEL = 6
ARCHIVE_MTIME = 0  # seconds since the epoch, of every member and of the gzip header (as `SOURCE_DATE_EPOCH=0`)


def archive(bundle_dir: Path, model: str, top: str) -> Path:
    """Write `<bundle_dir>/<model>.tar.gz` holding every other file of the bundle under `top/`."""
    target = bundle_dir / f"{model}.tar.gz"
    with open(target, "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=COMPRESS_LEVEL, mtime=ARCHIVE_MTIME) \
            as compressed, tarfile.open(fileobj=compressed, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(bundle_dir.rglob("*")):
            if path != target and path.is_file():
                tar.add(path, arcname=f"{top}/{path.relative_to(bundle_dir)}", filter=_neutral)
    return target


def _neutral(member: tarfile.TarInfo) -> tarfile.TarInfo:
    """`member` with the owner, time and mode fields the module docstring gives."""
    member.uid = member.gid = 0
    member.uname = member.gname = ""
    member.mtime = ARCHIVE_MTIME
    member.mode = 0o755 if member.mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH) else 0o644
    return member
