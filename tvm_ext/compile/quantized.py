"""`compile(..., quantize=..., calibration=...)`: the float model file -> the integer Relax module the
pipeline compiles, with the manifest's "quantization" entry (tvm_ext.quantize does the work).

Refused in one line (CompileError): quantizing without calibration data (never calibrated on random noise
unless `calibration="random"` says so), calibration data without quantizing, a model that is not float, a
calibration file that does not fit the model's inputs, a layer the quantizer cannot handle.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from tvm_ext.compile import CompileError

if TYPE_CHECKING:
    import tvm

    from target.profile import Profile
    from tvm_ext.compile.pipeline import Checked
    from tvm_ext.frontend import IoQuantization
    from tvm_ext.model_check import ModelFacts
    from memory_planner.plan import OperatorSupport

QUANTIZE_MODES = ("int8", "auto")


@dataclass(frozen=True)
class QuantizedSource:
    """What the pipeline compiles for a quantize request: the integer module (or, auto keeping float, the model
    file: `kept_float`) and the manifest's "quantization" facts; for a 16x8 module, `int8_fallback`: the int8
    one to compile instead when the 16x8 bundle does not fit the profile."""

    source: "Path | tvm.IRModule"
    facts: dict
    int8_fallback: "QuantizedSource | None" = None
    kept_float: bool = False
    io: "IoQuantization | None" = None  # the integer module's inputs' and outputs' quantization and layout
    checked: "Checked | None" = None  # the float model file's check (parsed once), which no later stage repeats
    operators: "tuple[OperatorSupport, ...]" = ()  # the float model file's operator kinds (its check's), for report.html


@dataclass(frozen=True)
class QuantizeRequest:
    """`mode` "int8" or "auto"; `calibration` an .npz path or "random"; `ranges` "minmax", "percentile" or "mse"
    (None: percentile for int8 activations, minmax for int16);
    `held_back` an .npz path of samples kept out of the calibration, to measure the accuracy cost on;
    `activations` one of ACTIVATION_CHOICES (tvm_ext.quantize.quantize_model says what each takes)."""

    mode: str
    calibration: str | Path | None
    ranges: str | None = None
    held_back: Path | None = None
    activations: str = "int8"


ACTIVATION_CHOICES = ("int8", "16x8", "auto")
"""`--activations`: int8 (the default), 16x8 (int16 activations, int8 weights), auto (16x8 where int8 misses the
accuracy budget, said in a line): `tvm_ext.quantize.quantize_model`."""


def check_request(model_label: str, quantize: str | None, calibration: str | Path | None,
                  held_back: Path | None = None, activations: str | None = None) -> None:
    """The refusals that need no model: an unknown mode or activation type, quantizing without calibration,
    calibration or an activation type without quantizing."""
    if quantize is None:
        if calibration is not None or held_back is not None:
            raise CompileError(f"{model_label}: {'calibration' if calibration is not None else 'held-back'} "
                               "data given without --quantize")
        if activations is not None:
            raise CompileError(f"{model_label}: --activations {activations} given without --quantize")
        return
    if activations is not None and activations not in ACTIVATION_CHOICES:
        raise CompileError(f"{model_label}: --activations takes {', '.join(ACTIVATION_CHOICES)}, not {activations!r}")
    if quantize not in QUANTIZE_MODES:
        raise CompileError(f"{model_label}: --quantize takes {' or '.join(QUANTIZE_MODES)}, not {quantize!r}")
    if held_back is not None and str(held_back) == "random":
        raise CompileError(f"{model_label}: --held-back takes an .npz of samples kept out of the calibration, not "
                           "'random' (--calibration random already judges on noise samples of its own)")
    if calibration is None:
        raise CompileError(f"{model_label}: --quantize {quantize} needs calibration data: --calibration DATA.npz "
                           "(an array per model input, N samples), or --calibration random to calibrate on "
                           "uniform noise in [-1, 1) (recorded in the manifest)")


def quantized_module(path: Path, target_spec: Any, request: QuantizeRequest, log: Callable[[str], None],
                     decided: str | None = None, checked: "Checked | None" = None) -> QuantizedSource:
    """What the pipeline compiles for `path` under `request`: the integer module and its manifest facts, or
    (auto deciding to keep float) the path itself and the decision's facts. Logs the decision and the
    accuracy cost, one line each. `decided`: the reason to quantize already known (recorded as auto's
    decision); `checked`: the file's check made already (it is then neither read nor parsed again)."""
    import target
    from tvm_ext.compile import stage_logger
    from tvm_ext.compile.pipeline import check, import_
    from tvm_ext.frontend import ModelImportError
    from tvm_ext.quantize import (CalibrationError, QuantizeError, RangeMethod, decide, load_calibration,
                                  quantize_model)
    from tvm_ext.transform import UnsupportedOperatorError

    try:
        profile = target.resolve_profile(target_spec)
    except target.ProfileError as err:
        raise CompileError(f"{path.name}: {err}") from err
    stage = stage_logger(log)
    if checked is None:
        checked = stage("check", lambda: check(path), lambda c: (
            f"{path.name}: {len(c.facts.operators)} operators, {c.facts.format.value}, float weights "
            f"{c.facts.weight_bytes:,} B"))
    check_fit_before_quantizing(path.name, profile, checked.facts)
    try:
        imported = stage("import", lambda: import_(path, checked, None),
                         lambda i: f"{path.name}: {len(i.model.layers)} layers ({i.model.format})")
    except ModelImportError as err:
        raise CompileError(str(err).strip().splitlines()[-1]) from err
    model = imported.model
    if any(spec.dtype != "float32" for spec in model.inputs):
        raise CompileError(f"{path.name}: --quantize takes a model with float32 inputs; "
                           f"{', '.join(f'{s.name!r} is {s.dtype}' for s in model.inputs if s.dtype != 'float32')}")
    facts: dict = {} if decided is None else {"decision": decided}
    if request.mode == "auto" and decided is None:
        decision = decide(model.mod["main"], profile)
        log(f"quantize   {decision.reason}")
        facts["decision"] = decision.reason
        if not decision.quantize:
            return QuantizedSource(path, facts, kept_float=True, checked=checked)
    try:
        calibration = load_calibration(request.calibration, model.inputs)
        held_back = None if request.held_back is None else load_calibration(request.held_back, model.inputs)
        quantized = quantize_model(model, calibration, profile, RangeMethod(request.ranges) if request.ranges else None,
                                   held_back, request.activations, stage)
    except CalibrationError as err:
        raise CompileError(f"{path.name}: {err}") from err
    except QuantizeError as err:  # names the model itself
        raise CompileError(str(err)) from err
    except UnsupportedOperatorError as err:  # the quantized form of a layer the int8 pass has no kernel for
        raise CompileError(str(err).strip().splitlines()[-1]) from err
    costs = "; ".join(f"{where}: {cost.describe()}" for where, cost in quantized.accuracy.items())
    log(f"quantize   on {calibration.source}; {quantized.activations}; {quantized.precision}")
    log(f"quantize   accuracy against float: {costs}")
    fallback = quantized.int8_fallback
    operators = checked.facts.operator_support()
    return QuantizedSource(quantized.mod, {**facts, **quantized.facts}, None if fallback is None else
                           QuantizedSource(fallback.mod, {**facts, **fallback.facts}, io=fallback.io,
                                           operators=operators),
                           io=quantized.io, operators=operators)


def check_fit_before_quantizing(model_label: str, profile: Profile, facts: ModelFacts) -> None:
    """DoesNotFitError, before any quantizing, for a float model no quantization can fit into `profile`: its
    inputs and outputs take a byte per element at least (int8), with the arena's room for them at best
    (io_in_arena), and its weights a quarter of their float32 bytes at least (one int8 byte per float32 weight;
    int32 biases keep their bytes, float layers theirs)."""
    import target
    from tvm_ext.compile import DoesNotFitError
    from tvm_ext.compile.device_ram import check_ram_for_io

    check_ram_for_io(model_label, profile, sum(t.elements for t in facts.inputs),
                     sum(t.elements for t in facts.outputs), facts.state_bytes, io_in_arena=True)
    try:
        target.check_flash_fits(profile, model_label, target.FlashUse.weights_only(
            facts.weight_bytes // 4, target.FlashSource.WEIGHTS_ONLY))
    except target.ResourceError as err:
        raise DoesNotFitError(f"{err}, even quantized to int8 (a quarter of the float weights' "
                              f"{facts.weight_bytes:,} B); nothing was quantized", err.overruns) from err


def source_instead(path: Path, target_spec: Any, request: QuantizeRequest, log: Callable[[str], None],
                   refused: QuantizedSource, too_large: CompileError) -> QuantizedSource | None:
    """What to compile when the bundle of `refused` does not fit its profile (`too_large` says by how much):
    the int8 model of a 16x8 one, the quantized model of a float one `auto` kept; None: nothing smaller."""
    if refused.int8_fallback is not None:
        log(f"quantize   the 16x8 bundle does not fit ({too_large}): compiling the int8 one")
        fallback = refused.int8_fallback
        return replace(fallback, facts={**fallback.facts, "activation_type":
                                        f"{fallback.facts['activation_type']} ({too_large})"})
    if refused.kept_float:
        reason = f"quantizing: the float bundle does not fit ({too_large})"
        log(f"quantize   {reason}")
        return quantized_module(path, target_spec, request, log, decided=reason, checked=refused.checked)
    return None
