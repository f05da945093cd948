"""Writing a bundle's files (UTF-8 text)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def replace_file(path: Path, text: str) -> None:
    """Write `text` to `path` by renaming a finished file over it, never truncating it in place: a compiler
    that is reading the old file (tvm_ext.compile.early_objects compiles the library's sources while the
    bundle is written) reads all of the old text or all of the new, never a part of either."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}")
    # Created as open() creates files (mode 0o666 less the umask), which mkstemp's 0o600 would not be.
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
