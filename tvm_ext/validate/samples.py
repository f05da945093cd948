"""A validation file: the user's samples, one array per model input as a calibration file holds them, and
optional labels (an integer array `labels` of shape (N,)), read with the calibration file's checks (every .npy
header before its data, never a pickle: `tvm_ext.quantize.calibration_file`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

LABELS = "labels"
"""The name of the optional labels array in a validation .npz."""


class SamplesError(Exception):
    """The validation file cannot be used; one line naming the file and what is wrong."""


@dataclass(frozen=True)
class Samples:
    """The samples (each one array per model input, in the input's shape and type), their labels (class
    indices, one per sample) or None, and the file's name."""

    cases: list[list[np.ndarray]]
    labels: np.ndarray | None
    source: str


def load_samples(path: Path, inputs) -> Samples:
    """The samples of the .npz (or .npy) file `path` for the model inputs `inputs` (objects with name, shape and
    dtype), and its labels; SamplesError (one line) for anything the calibration file's checks refuse, or labels
    that are not N whole numbers."""
    from tvm_ext.quantize.calibration import samples_of_file
    from tvm_ext.quantize.calibration_file import CalibrationError, CalibrationFile

    try:
        file = CalibrationFile(Path(path), kind="samples file")
        cases = samples_of_file(file, list(inputs), frozenset({LABELS}))
        declared = {array.name: array for array in file.arrays}.get(LABELS)
        labels = None
        if declared is not None:
            if declared.dtype.kind not in "iu" or declared.shape != (len(cases),):
                raise SamplesError(f"{file.label}: '{LABELS}' must hold {len(cases)} whole numbers (one class per "
                                   f"sample), not {list(declared.shape)} {declared.dtype}")
            labels = file.read(LABELS).astype(np.int64)
    except CalibrationError as err:
        raise SamplesError(str(err)) from err
    return Samples(cases, labels, Path(path).name)
