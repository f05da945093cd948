"""`<model>.tar.gz`: the whole bundle in one file, with the bundle's folder as its top directory."""

from __future__ import annotations

import tarfile
from pathlib import Path


def archive(bundle_dir: Path, model: str, top: str) -> Path:
    """Write `<bundle_dir>/<model>.tar.gz` holding every other file of the bundle under `top/`."""
    target = bundle_dir / f"{model}.tar.gz"
    with tarfile.open(target, "w:gz") as tar:
        for path in sorted(bundle_dir.rglob("*")):
            if path != target and path.is_file():
                tar.add(path, arcname=f"{top}/{path.relative_to(bundle_dir)}")
    return target
