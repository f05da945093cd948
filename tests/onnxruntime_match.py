"""Running a compiled ONNX bundle beside onnxruntime: the session the compiler's reference uses, the bundle as a
shared library, and a comparison over many inputs."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnxruntime
from onnxruntime import quantization

from tvm_ext.reference.runtimes import reference_session_options

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "onnx_conformance.py"
_spec = importlib.util.spec_from_file_location("onnx_conformance", SCRIPT)
conformance = importlib.util.module_from_spec(_spec)
sys.modules["onnx_conformance"] = conformance  # its dataclasses look their module up there
_spec.loader.exec_module(conformance)

Inputs = Callable[[np.random.Generator], dict[str, np.ndarray]]
"""Draws one set of model inputs, by input name."""


class NormalCalibration(quantization.CalibrationDataReader):
    """onnxruntime's calibration data for `quantize_static`: eight standard-normal samples (seed 1) of the
    model input `name` of shape `shape`."""

    def __init__(self, name: str, shape: tuple[int, ...]) -> None:
        rng = np.random.default_rng(1)
        self.batches = iter([{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(8)])

    def get_next(self):
        return next(self.batches, None)


def session(model: Path | bytes, optimized: Path | None = None) -> onnxruntime.InferenceSession:
    """onnxruntime's CPU session as the compiler's reference runs it (tvm_ext.reference.runtimes); ``optimized``:
    where onnxruntime writes the graph it runs (its fused operators)."""
    data = model if isinstance(model, bytes) else Path(model).read_bytes()
    options = reference_session_options(data)
    if optimized is not None:
        options.optimized_model_filepath = str(optimized)
    return onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def full_range_inputs(reference: onnxruntime.InferenceSession, float_scale: float = 2.0) -> Inputs:
    """Inputs over each integer type's whole range, floats normal with deviation ``float_scale`` (beyond a
    quantized model's calibrated range too)."""
    types = {"tensor(float)": np.float32, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8}

    def draw(rng: np.random.Generator) -> dict[str, np.ndarray]:
        feeds = {}
        for spec in reference.get_inputs():
            dtype = types[spec.type]
            if dtype == np.float32:
                feeds[spec.name] = (rng.standard_normal(spec.shape) * float_scale).astype(np.float32)
            else:
                info = np.iinfo(dtype)
                feeds[spec.name] = rng.integers(info.min, info.max + 1, spec.shape).astype(dtype)
        return feeds

    return draw


_RUNNERS: dict[tuple[Path, str, int], Callable[[list[np.ndarray], list[np.ndarray]], list[np.ndarray]]] = {}
"""The bundles' shared-library runners built in this process, by bundle folder, model name and its kernels file's
modification time (a bundle compiled again into the same folder gets a new runner)."""


def bundle_runner(bundle) -> Callable[[list[np.ndarray], list[np.ndarray]], list[np.ndarray]]:
    """``bundle``'s runner (scripts/onnx_conformance.bundle_runner: its C compiled into a shared library), built once
    per bundle: a test comparing one bundle on two input distributions compiles its C once (torchvision's
    mobilenet_v3_small quantized: 35.6 -> 31.9 CPU-s for its test, the second build left out)."""
    kernels = bundle.out_dir / f"{bundle.plan.model}_kernels.c"
    key = (bundle.out_dir, bundle.plan.model, kernels.stat().st_mtime_ns)
    if key not in _RUNNERS:
        _RUNNERS[key] = conformance.bundle_runner(bundle.out_dir, bundle.plan.model)
    return _RUNNERS[key]


def mismatches(bundle, model: Path, draws: int, inputs: Inputs | None = None, seed: int = 0,
               float_tolerance: float = 0.0) -> list[str]:
    """Run ``bundle`` (a compiled bundle of ``model``) and onnxruntime on ``draws`` input sets; one line per
    input set whose outputs differ: integers in any bit, floats by more than ``float_tolerance`` relative to the
    output's largest magnitude (0: in any bit)."""
    reference = session(model)
    draw = inputs or full_range_inputs(reference)
    names = [spec.name for spec in reference.get_inputs()]
    rng = np.random.default_rng(seed)
    run = bundle_runner(bundle)
    lines = []
    for index in range(draws):
        feeds = draw(rng)
        want = reference.run(None, feeds)
        got = run([feeds[n] for n in names], want)
        for output, (g, w) in enumerate(zip(got, want)):
            error = np.abs(g.astype(np.float64) - w.astype(np.float64))
            allowed = float_tolerance * float(np.max(np.abs(w))) if w.dtype.kind == "f" else 0.0
            if np.any(error > allowed):
                lines.append(f"draw {index} output {output}: {int(np.sum(error > allowed))} of {w.size} differ, "
                             f"up to {float(error.max())}")
    return lines
