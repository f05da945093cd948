"""Calibration samples: from the user's .npz file (an array per model input, N samples), or drawn at random
only when the user asked for it by name (`--calibration random`)."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tvm_ext.frontend import TensorSpec

RANDOM = "random"
RANDOM_SAMPLES = 100  # calibration samples drawn with `--calibration random`
RANDOM_SEED = 1


class CalibrationError(Exception):
    """The calibration data cannot be used; one line naming the file, the input and what is wrong."""


@dataclass(frozen=True)
class Calibration:
    """Samples, each one array per model input in the input's own shape and type; `source` says where they
    came from ("random: uniform [-1, 1), 100 samples, seed 1" or the file's name) for the manifest."""

    samples: list[list[np.ndarray]]
    source: str
    random: bool


def random_samples(inputs: list[TensorSpec], count: int, seed: int) -> list[list[np.ndarray]]:
    """`count` samples uniform in [-1, 1) (float inputs), from a generator seeded with `seed`."""
    rng = np.random.default_rng(seed)
    return [[rng.uniform(-1.0, 1.0, spec.shape).astype(spec.dtype) for spec in inputs] for _ in range(count)]


def load_calibration(source: str | Path, inputs: list[TensorSpec]) -> Calibration:
    """The calibration samples `source` names: "random", or an .npz file whose arrays are matched to the model
    inputs by name (every input's name a key) or else by order (as many arrays as inputs). Each array is
    (N, *input shape), or (N, *input shape without its leading 1); N is the same for every input."""
    if str(source) == RANDOM:
        return Calibration(random_samples(inputs, RANDOM_SAMPLES, RANDOM_SEED),
                           f"random: uniform [-1, 1), {RANDOM_SAMPLES} samples, seed {RANDOM_SEED}", True)
    path = Path(source)
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        raise CalibrationError(f"calibration file {path.name} cannot be read as .npz: {err}") from err
    names = [spec.name for spec in inputs]
    if all(name in arrays for name in names):
        chosen = [arrays[name] for name in names]
    elif len(arrays) == len(inputs):
        chosen = list(arrays.values())
    else:
        raise CalibrationError(f"calibration file {path.name} holds {len(arrays)} arrays for the model's "
                               f"{len(inputs)} inputs ({', '.join(names)})")
    per_input = [_samples_of(array, spec, path.name) for array, spec in zip(chosen, inputs)]
    counts = {len(samples) for samples in per_input}
    if len(counts) != 1 or 0 in counts:
        raise CalibrationError(f"calibration file {path.name}: the inputs have different or zero sample counts "
                               f"({', '.join(str(len(s)) for s in per_input)})")
    return Calibration([list(sample) for sample in zip(*per_input)], path.name, False)


def _samples_of(array: np.ndarray, spec: TensorSpec, file_name: str) -> list[np.ndarray]:
    shape = tuple(spec.shape)
    if array.shape[1:] == shape:
        samples = array
    elif shape[:1] == (1,) and array.shape[1:] == shape[1:]:
        samples = array.reshape((array.shape[0], *shape))
    else:
        raise CalibrationError(f"calibration file {file_name}: input {spec.name!r} needs arrays of shape "
                               f"(N, {', '.join(map(str, shape))}), got {array.shape}")
    if samples.dtype.kind not in "fiu" or not np.all(np.isfinite(samples)):
        raise CalibrationError(f"calibration file {file_name}: input {spec.name!r} has non-finite or non-numeric "
                               "values")
    return [np.ascontiguousarray(sample, dtype=spec.dtype) for sample in samples]
