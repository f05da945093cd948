"""`tvm-ext-compile MODEL ... --validate SAMPLES.npz`: the user's samples through the compiled bundle against the
reference runtime, as ST's `validate` does.

The bundle is built again from its sources with the host's C compiler and run on every sample (`host_run`);
the model file runs on the same samples in its reference runtime (TFLite Micro, LiteRT or onnxruntime:
`tvm_ext.reference`). For a bundle quantized by `--quantize`, the samples are float: each is quantized with the
bundle's input scale and zero point, and the bundle's outputs are dequantized and compared with the float
model's (the integer reference is the self-test's, bit-exact on its own cases). Per output: `metrics`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memory_planner.plan import QuantParams, QuantRounding
from tvm_ext.validate.metrics import OutputComparison, compare
from tvm_ext.validate.samples import Samples, SamplesError, load_samples

__all__ = ["Samples", "SamplesError", "Validation", "ValidationError", "load_samples", "validate",
           "validation_text"]


class ValidationError(Exception):
    """The validation could not run (the bundle does not build or run on the host, the reference fails); one
    line."""


@dataclass(frozen=True)
class Validation:
    """The comparisons, one per bundle output and place it ran (where, comparison), over `count` samples of
    `source`, run `where`."""

    source: str
    count: int
    where: str
    comparisons: tuple[tuple[str, OutputComparison], ...]


def quantize(values: np.ndarray, quant: QuantParams, dtype: str) -> np.ndarray:
    """Float `values` in a per-tensor quantized input's integer type: round(value / scale) + zero point (halves
    as `quant.rounding` says), saturated."""
    from tvm_ext.kernels.quant_params import round_half_away

    scaled = np.asarray(values, np.float64) / quant.scale[0]
    rounded = np.rint(scaled) if quant.rounding is QuantRounding.HALF_TO_EVEN else round_half_away(scaled)
    info = np.iinfo(dtype)
    return np.clip(rounded + quant.zero_point[0], info.min, info.max).astype(dtype)


def dequantize(values: np.ndarray, quant: QuantParams) -> np.ndarray:
    """A per-tensor quantized output's real values."""
    return (np.asarray(values, np.float64) - quant.zero_point[0]) * quant.scale[0]


def validate(bundle_folder: Path, plan, model: Path, facts, samples: Samples, build) -> Validation:
    """The bundle in `bundle_folder` (its execution plan `plan`, built by `build`, a
    `packager.build_files.BuildConfig`) against the model file `model`'s reference runtime on `samples` (in the
    model file's input types); `facts` is the file's model check (`tvm_ext.model_check.ModelFacts`, made by the
    caller: the file is not checked again). A bundle whose inputs are quantized where the model's are float was
    quantized by `--quantize`: its inputs take the samples quantized, its outputs are compared dequantized. The
    samples run on the host (the bundle built again with the profile's host-portable flags) and, where `build`
    has an emulated board (`build.emulated`), on that emulated core too, as many as
    `emulated_run.embedded_count` embeds. ValidationError (one line)."""
    from tvm_ext.reference.outputs import ReferenceRuntimeError, runs_on_tflite_micro, start_reference
    from tvm_ext.validate.emulated_run import EmulatedRunError, embedded_count, run_on_emulator
    from tvm_ext.validate.host_run import HostRunError, run_on_host

    inputs = [plan.tensors[name] for name in plan.inputs]
    outputs = [plan.tensors[name] for name in plan.outputs]
    quantized = any(tensor.dtype != spec.dtype and tensor.quant is not None
                    for tensor, spec in zip(inputs, facts.inputs))
    try:
        with start_reference(model, facts.format.value, samples.cases, list(facts.inputs), len(facts.outputs),
                             runs_on_tflite_micro(facts)) as running:
            reference, runtime = running.result()
    except ReferenceRuntimeError as err:
        raise ValidationError(str(err)) from err
    cases = [[quantize(x, tensor.quant, tensor.dtype) if quantized else x for x, tensor in zip(case, inputs)]
             for case in samples.cases]
    stateful = bool(plan.states())
    dtypes, shapes = [np.dtype(t.dtype) for t in outputs], [t.shape for t in outputs]
    runs = []
    try:
        runs.append(("the host", run_on_host(bundle_folder, plan.model, dtypes, shapes, cases, stateful, build)))
        emulated = build.emulated
        if emulated is not None:
            count = embedded_count(cases)
            runs.append((f"{emulated.board_name} (emulated {emulated.name}, the first {count} samples)",
                         run_on_emulator(bundle_folder, plan.model, dtypes, shapes, cases[:count], stateful,
                                         emulated)))
    except (HostRunError, EmulatedRunError) as err:
        raise ValidationError(f"{model.name}: {err}") from err
    against = f"{runtime}{' (the float model)' if quantized else ''}"
    comparisons = []
    for where, ours in runs:
        labels = None if samples.labels is None else samples.labels[:len(ours)]
        for k, tensor in enumerate(outputs):
            values = [dequantize(case[k], tensor.quant) if quantized else case[k] for case in ours]
            comparisons.append((where, compare(k, against, values, [case[k] for case in reference[:len(ours)]],
                                               labels)))
    return Validation(samples.source, len(samples.cases), " and ".join(where for where, _ in runs),
                      tuple(comparisons))


def validation_text(validation: Validation) -> str:
    """What --validate prints: one line per output, then each classifier's confusion matrix."""
    lines = []
    for where, c in validation.comparisons:
        line = (f"validate   output {c.output} on {where} against {c.against}: max abs error "
                f"{c.max_abs_error:.6g}, RMSE {c.rmse:.6g}, cosine {c.cosine:.6f}")
        if c.top1_agreement is not None:
            line += f", top-1 agreement {100 * c.top1_agreement:.1f}%"
        if c.accuracy is not None:
            line += (f", accuracy against the labels {100 * c.accuracy:.1f}% (the reference's "
                     f"{100 * c.reference_accuracy:.1f}%)")
        lines.append(line)
        if c.confusion is not None:
            lines.append(f"validate   output {c.output} on {where}: confusion matrix (rows: label, columns: the "
                         "bundle's class)")
            lines += ["validate     " + " ".join(f"{count:6d}" for count in row) for row in c.confusion]
    return "\n".join(lines) + "\n"
