"""Calibration samples: from the user's .npz or .npy file (an array per model input, N samples), or drawn at
random only when the user asked for it by name (`--calibration random`).

A file is checked before its data is read, from what each array's header declares (`calibration_file`): a
numeric type, the input's shape after the sample axis, at most MAX_CALIBRATION_SAMPLES samples and
MAX_CALIBRATION_BYTES of data; then its values: finite, and within the input type's range (a float64 of 1e300
is no float32).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tvm_ext.frontend import TensorSpec

from .calibration_file import CalibrationError, CalibrationFile, DeclaredArray

RANDOM = "random"
RANDOM_SAMPLES = 100  # calibration samples drawn with `--calibration random`
RANDOM_SEED = 1
# Most samples a calibration (or held-back) file may hold: each runs through the float and the quantized model
# several times (ranges, weight rounding, bias correction, accuracy); 200,000 took 4 minutes and 734 MB for a
# one-number input. Ranges settle within hundreds.
MAX_CALIBRATION_SAMPLES = 2_000
# Most bytes the arrays the model reads may hold, each counted in the wider of its own type and the input's.
MAX_CALIBRATION_BYTES = 256 * 2**20
_NUMERIC_KINDS = "fiu"  # numpy dtype kinds of calibration values: float, signed and unsigned integer


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
    inputs by name (every input's name a key) or else by order (as many arrays as inputs), or an .npy file (one
    array, for a model of one input). Each array is (N, *input shape), or (N, *input shape without its leading
    1); N is the same for every input. CalibrationError (one line) for anything else, before data is read."""
    if str(source) == RANDOM:
        return Calibration(random_samples(inputs, RANDOM_SAMPLES, RANDOM_SEED),
                           f"random: uniform [-1, 1), {RANDOM_SAMPLES} samples, seed {RANDOM_SEED}", True)
    file = CalibrationFile(Path(source))
    return Calibration(samples_of_file(file, inputs), file.path.name, False)


def samples_of_file(file: CalibrationFile, inputs: list[TensorSpec], leave_out: frozenset[str] = frozenset()
                    ) -> list[list[np.ndarray]]:
    """The samples of `file` for `inputs`, as `load_calibration` matches, checks and reads them, the arrays
    named in `leave_out` (a validation file's labels) set aside first; CalibrationError (one line)."""
    chosen = _arrays_for(file, inputs, leave_out)
    counts = [_sample_count(file.label, declared, spec) for declared, spec in zip(chosen, inputs)]
    if len(set(counts)) != 1:
        raise CalibrationError(f"{file.label}: the inputs have different sample counts ({', '.join(map(str, counts))})")
    if counts[0] > MAX_CALIBRATION_SAMPLES:
        raise CalibrationError(f"{file.label}: {counts[0]} samples, more than the limit of {MAX_CALIBRATION_SAMPLES}")
    held = sum(declared.elements * max(declared.dtype.itemsize, np.dtype(spec.dtype).itemsize)
               for declared, spec in zip(chosen, inputs))
    if held > MAX_CALIBRATION_BYTES:
        raise CalibrationError(f"{file.label}: the arrays for the model's inputs hold {held} bytes, more than the "
                               f"limit of {MAX_CALIBRATION_BYTES}")
    per_input = [_samples_of(file, declared, spec) for declared, spec in zip(chosen, inputs)]
    return [list(sample) for sample in zip(*per_input)]


def _arrays_for(file: CalibrationFile, inputs: list[TensorSpec], leave_out: frozenset[str] = frozenset()
                ) -> list[DeclaredArray]:
    """The declared array for each input: by name when every input's name is a key, else by order (the arrays
    named in `leave_out` not counted)."""
    arrays = [array for array in file.arrays if array.name not in leave_out]
    by_name = {array.name: array for array in arrays}
    names = [spec.name for spec in inputs]
    if all(name in by_name for name in names):
        return [by_name[name] for name in names]
    if len(arrays) == len(inputs):
        return arrays
    raise CalibrationError(f"{file.label} holds {len(arrays)} arrays for the model's {len(inputs)} inputs "
                           f"({', '.join(names)})")


def _sample_count(label: str, declared: DeclaredArray, spec: TensorSpec) -> int:
    """N of an array of (N, *input shape) or (N, *input shape without its leading 1) numbers, N >= 1."""
    shape = tuple(spec.shape)
    if declared.dtype.kind not in _NUMERIC_KINDS:
        raise CalibrationError(f"{label}: input {spec.name!r} has values of type {declared.dtype}, not numbers")
    fits = declared.shape[1:] == shape or (shape[:1] == (1,) and declared.shape[1:] == shape[1:])
    if not declared.shape or not fits or declared.shape[0] == 0:
        raise CalibrationError(f"{label}: input {spec.name!r} needs arrays of shape (N, {', '.join(map(str, shape))}) "
                               f"with N >= 1, got {declared.shape}")
    return declared.shape[0]


def _samples_of(file: CalibrationFile, declared: DeclaredArray, spec: TensorSpec) -> list[np.ndarray]:
    """The samples of `declared` in the input's shape and type; CalibrationError when a value is not finite
    or has no finite value of the input's type (float64 beyond float32's range)."""
    array = file.read(declared.name)
    with np.errstate(over="ignore", invalid="ignore"):
        samples = array.reshape((array.shape[0], *spec.shape)).astype(spec.dtype, order="C")
    if not np.all(np.isfinite(array)):
        raise CalibrationError(f"{file.label}: input {spec.name!r} has non-finite values")
    if not np.all(np.isfinite(samples)):
        largest = float(np.max(np.abs(array)))
        raise CalibrationError(f"{file.label}: input {spec.name!r} has values beyond {spec.dtype}'s range (largest "
                               f"magnitude {largest:.6g})")
    return list(samples)
