"""A calibration file's arrays, each declared (name, shape, type) from its .npy header before any data is read.

The file is an .npz (a zip of .npy members, as `numpy.savez` writes it) or an .npy (one array), recognised by
its first bytes whatever its name says. A header may declare more than the file holds (an .npy of a few bytes
claiming 16 TiB, a zip member that inflates past its compressed size): the data each header declares is
checked against what the file (or the zip's member) holds, so a caller that bounds the declared sizes bounds
what reading allocates, and only the arrays it asks for are read (`CalibrationFile.read`).
"""

from __future__ import annotations

import math
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"
_NPY_MEMBER_SUFFIX = ".npy"  # numpy.savez names each array's member <key>.npy
_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


class CalibrationError(Exception):
    """The calibration data cannot be used; one line naming the file, the input and what is wrong."""


@dataclass(frozen=True)
class DeclaredArray:
    """An array as its .npy header declares it: the key (the .npz member's name without `.npy`, or the .npy
    file's own name), its shape and its element type."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.elements * self.dtype.itemsize


class CalibrationFile:
    """The declared arrays of an .npz or .npy file (`arrays`, in the file's order); `read(name)` reads one.

    `kind` starts every error line ("calibration file", "samples file"). Opening reads the headers only; CalibrationError when the file is not a regular file, is neither format, a
    header is malformed, declares Python objects (pickles) or more data than the file holds.
    """

    def __init__(self, path: Path, kind: str = "calibration file") -> None:
        self.path = path
        self.label = f"{kind} {path.name}"
        try:
            if not stat.S_ISREG(path.stat().st_mode):  # a FIFO or a device could block or stream forever
                raise CalibrationError(f"{self.label} is not a regular file")
            with path.open("rb") as file:
                magic = file.read(len(NPY_MAGIC))
            self.zipped = magic.startswith(ZIP_MAGIC)
            if not (self.zipped or magic == NPY_MAGIC):
                raise CalibrationError(f"{self.label} is neither an .npz nor an .npy file")
            self.arrays = self._zip_arrays() if self.zipped else [self._npy_array()]
        except (OSError, zipfile.BadZipFile) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            raise CalibrationError(f"{self.label} cannot be read: {reason}") from None

    def read(self, name: str) -> np.ndarray:
        """The data of the declared array `name`."""
        try:
            if not self.zipped:
                with self.path.open("rb") as file:
                    return np.lib.format.read_array(file, allow_pickle=False)
            with zipfile.ZipFile(self.path) as archive, archive.open(name + _NPY_MEMBER_SUFFIX) as member:
                return np.lib.format.read_array(member, allow_pickle=False)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
            raise CalibrationError(f"{self.label}: array {name!r} cannot be read: {err}") from None

    def _npy_array(self) -> DeclaredArray:
        with self.path.open("rb") as file:
            return self._declared(file, self.path.stem, self.path.stat().st_size)

    def _zip_arrays(self) -> list[DeclaredArray]:
        arrays = []
        with zipfile.ZipFile(self.path) as archive:
            for info in archive.infolist():
                if not info.filename.endswith(_NPY_MEMBER_SUFFIX):
                    raise CalibrationError(f"{self.label}: member {info.filename!r} is not an .npy array")
                with archive.open(info) as member:
                    name = info.filename[: -len(_NPY_MEMBER_SUFFIX)]
                    arrays.append(self._declared(member, name, info.file_size))
        return arrays

    def _declared(self, stream: BinaryIO, name: str, stream_bytes: int) -> DeclaredArray:
        """The array whose .npy header starts `stream`, of `stream_bytes` bytes (the file's or the zip
        member's declared uncompressed size) in all."""
        try:
            version = np.lib.format.read_magic(stream)
            if version not in _HEADER_READERS:
                raise ValueError(f".npy format version {version[0]}.{version[1]}")
            shape, _, dtype = _HEADER_READERS[version](stream)
        except (ValueError, EOFError) as err:
            raise CalibrationError(f"{self.label}: array {name!r} has no valid .npy header ({err})") from None
        declared = DeclaredArray(name, tuple(shape), dtype)
        if dtype.hasobject:
            raise CalibrationError(f"{self.label}: array {name!r} holds Python objects ({dtype}), not numbers")
        held = stream_bytes - stream.tell()
        if declared.nbytes > held:
            raise CalibrationError(f"{self.label}: array {name!r} declares {list(declared.shape)} {dtype}, "
                                   f"{declared.nbytes} bytes, but holds {held}")
        return declared
