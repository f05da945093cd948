"""A float model -> its integer Relax module (int8 weights; int8 activations, or int16 where int8 misses
the accuracy budget: `activation_type`), with the facts the manifest records about it.

The steps: observe each activation's range on the calibration samples (float main on TVM's Relax VM),
rewrite main into the QDQ form of the quantized model (`qdq`), its weights' int8 values chosen against each
layer's output error on the same samples (`weight_rounding`, GPTQ), its biases corrected for the mean error
that rounding still adds (`bias_correction`), lower that with LowerQuantizedToInteger
(TFLite Micro's integer kernels, the profile's rounding), and run the integer module on the host on the
same samples (quantized inputs) for the accuracy cost against the float model, and the QDQ graph for each
layer's quantization error (`layer_error`). The integer module is what the compiler then compiles; the
self-test compares the bundle bit-exactly with that same module on TVM's Relax VM, the integer reference.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np
import tvm
from tvm import relax

from target.profile import Profile
from tvm_ext.stages import Stage, untimed
from tvm_ext.frontend import MODEL_LAYOUTS, ImportedModel, IoQuantization
from tvm_ext.transform import LowerQuantizedToInteger, UnsupportedOperatorError

from .accuracy import AccuracyCost, Metric, accuracy_cost, metric_for
from .activation_type import better, budget_text, within_budget
from .bias_correction import weight_error_means
from .calibration import Calibration, random_samples
from .tflite_form import quantizable_form
from .layer_error import LayerError, layer_errors
from .mixed_precision import PrecisionChoice, choose_precision
from .qdq import QuantizedGraph, QuantizeError, layer_outputs, quantize_graph
from .ranges import ActivationQuant, RangeMethod, observe_ranges, quants_of, run_on_samples
from .shared_ranges import shared_concatenation_ranges
from .weight_rounding import DAMPING, hessian_roundings

HELD_BACK_SEED = 2  # random calibration: the held-back samples come from the same distribution, another seed
HELD_BACK_SAMPLES = 200  # the figure for the held-back accuracy


@dataclass(frozen=True)
class QuantizedModel:
    """The integer Relax module of the quantized model and the manifest's "quantization" entry; with int16
    activations, `int8_fallback`: the same model with int8 ones, to compile if the 16x8 bundle does not fit."""

    mod: tvm.IRModule
    facts: dict
    accuracy: dict[str, AccuracyCost]  # "calibration" and, with held-back samples, "held_back"
    layers: list[LayerError]  # each layer output's quantization error on the calibration samples, its precision
    activations: str  # the activation type decision (activation_type), one line
    precision: str  # the mixed-precision decision (mixed_precision.choose_precision), one line
    io: IoQuantization  # the integer module's inputs' and outputs' quantization, the float model's axis order
    int8_fallback: "QuantizedModel | None" = None


@dataclass(frozen=True)
class _Candidate:
    """The model quantized with activations of one type: its QDQ graph, integer module, range method, layer
    precisions and accuracy on the calibration samples."""

    graph: QuantizedGraph
    integer: tvm.IRModule
    method: RangeMethod
    choice: PrecisionChoice
    cost: AccuracyCost


def quantize_model(model: ImportedModel, calibration: Calibration, profile: Profile,
                   method: RangeMethod | None = None, held_back: Calibration | None = None,
                   activations: str = "int8", stage: Stage = untimed) -> QuantizedModel:
    """`model` (float) quantized with int8 weights on `calibration`'s samples for `profile`, its accuracy cost
    also measured on `held_back` (samples of the calibration's distribution kept out of it; by default, with
    random calibration, 200 more random samples of another seed). `activations` "int8" or
    "16x8" takes that type; "auto" int8, or int16 where int8 misses the accuracy budget and 16x8 measures better
    (`activation_type`; `int8_fallback` then holds the int8 model for a 16x8 bundle that does not fit).
    `method` picks the activation ranges (default: PERCENTILE for int8, MINMAX for int16). `stage(name, work,
    describe)` runs each long step (the weight roundings, the ranges, each candidate, the held-back accuracy),
    and may time and log it (`tvm_ext.compile.stage_logger`). Raises qdq.QuantizeError (one line) for a layer
    the quantizer cannot handle, or with "16x8" an operator without a 16x8 kernel."""
    model = replace(model, mod=quantizable_form(model.mod, profile))
    taps = layer_outputs(model.mod["main"])
    metric = metric_for(model.layers[-1].kind if model.layers else "")
    count = f"{len(calibration.samples)} calibration samples"
    roundings = stage("calibrate", lambda: hessian_roundings(model.mod, calibration.samples),
                      lambda r: f"GPTQ weight roundings of {len(r)} layers on {count}")
    methods = {"int8": method or RangeMethod.PERCENTILE, "int16": method or RangeMethod.MINMAX}
    wanted = {"int8": ("int8",), "16x8": ("int16",), "auto": ("int8", "int16")}[activations]
    ranges, float_outputs = stage("calibrate", lambda: observe_ranges(
        model.mod, taps, calibration.samples, {methods[dtype] for dtype in wanted}),
        lambda _: f"ranges of {len(taps)} layer outputs on {count}")

    def candidate(dtype: str) -> _Candidate:
        return stage("quantize", lambda: _candidate(model, calibration, profile, taps, ranges[methods[dtype]], dtype,
                                                    methods[dtype], roundings, float_outputs, metric),
                     lambda c: f"{'16x8' if dtype == 'int16' else 'int8'} activations: {c.cost.describe()} on "
                               "calibration")

    if held_back is None and calibration.random:
        held_back = Calibration(random_samples(model.inputs, HELD_BACK_SAMPLES, HELD_BACK_SEED),
                                held_back_description(), True)
    judged = _Judged(model, calibration, held_back, metric, stage)
    budget = budget_text(metric)
    if activations == "16x8":
        try:
            int16 = candidate("int16")
        except UnsupportedOperatorError as err:
            raise QuantizeError(f"{model.path.name}: --activations 16x8 is refused: "
                                f"{str(err).strip().splitlines()[-1]}") from err
        return judged.model(int16, f"16x8 activations (--activations 16x8): {int16.cost.describe()} on "
                                   f"calibration; the bundle takes and returns int16")
    int8 = candidate("int8")
    verdict = "within" if within_budget(int8.cost) else "misses"
    if activations == "int8":
        hint = "" if verdict == "within" else "; --activations auto would try int16 activations (16x8)"
        return judged.model(int8, f"int8 activations (--activations int8): {int8.cost.describe()} on calibration, "
                                  f"{verdict} the budget ({budget}){hint}")
    if verdict == "within":
        return judged.model(int8, f"int8 activations: {int8.cost.describe()} on calibration, within the budget "
                                  f"({budget})")
    missed = f"int8 {int8.cost.describe()} on calibration misses the budget ({budget})"
    try:
        int16 = candidate("int16")
    except UnsupportedOperatorError as err:  # an operator with an int8 kernel but no 16x8 one
        return judged.model(int8, f"int8 activations: {missed}; 16x8 is refused: {err}")
    compared = f"{missed}; 16x8 {int16.cost.describe()}"
    if not better(int16.cost, int8.cost):
        return judged.model(int8, f"int8 activations: {compared}, no better")
    fallback = judged.model(int8, f"int8 activations: {compared}, but the 16x8 bundle does not fit "
                                  f"{profile.name}")
    return replace(judged.model(int16, f"16x8 activations (--activations auto): {compared}; the bundle takes and "
                                       "returns int16"), int8_fallback=fallback)


@dataclass(frozen=True)
class _Judged:
    """What every candidate's QuantizedModel shares: the model, its calibration and held-back samples (the
    float model's outputs on the latter computed once) and the accuracy metric."""

    source: ImportedModel
    calibration: Calibration
    held_back: Calibration | None
    metric: Metric
    stage: Stage = untimed

    @functools.cached_property
    def held_back_float(self) -> list[np.ndarray]:
        return [outputs[0] for outputs in run_on_samples(self.source.mod, self.held_back.samples)]

    def model(self, chosen: _Candidate, activations: str) -> QuantizedModel:
        """The QuantizedModel of `chosen`, its accuracy also measured on the held-back samples; `activations`
        the activation type decision line."""
        calibration, held_back = self.calibration, self.held_back
        accuracy = {"calibration": chosen.cost}
        if held_back is not None:
            accuracy["held_back"] = self.stage(
                "accuracy", lambda: _cost(chosen.integer, chosen.graph, held_back.samples, self.held_back_float,
                                          self.metric),
                lambda cost: f"{cost.describe()} on {len(held_back.samples)} held-back samples")
        graph, model = chosen.graph, self.source
        sixteen = bool(graph.inputs) and graph.inputs[0].dtype == "int16"
        facts = {
            "dtype": "16x8" if sixteen else "int8 with float layers" if chosen.choice.float_layers else "int8",
            "weights": "per-channel symmetric int8",
            "activations": "per-tensor symmetric int16 (zero point 0)" if sixteen else "per-tensor asymmetric int8",
            "activation_type": activations,
            "biases": f"{'int64' if sixteen else 'int32'}, scale = input scale x weight scale",
            "weight_rounding": f"GPTQ: each conv/dense weight's int8 values chosen column by column to minimize "
                               f"its layer's output error on the {len(calibration.samples)} calibration samples' "
                               f"float inputs (H = X X^T, damping {DAMPING:g} x mean diag; per-group H for "
                               f"depthwise), scales unchanged",
            "bias_correction": f"empirical: each int8 MAC's bias less the mean error its weight rounding adds per "
                               f"output channel on the {len(calibration.samples)} calibration samples",
            "ranges": chosen.method.value,
            "calibration": calibration.source,
            "calibration_random": calibration.random,
            **({"held_back": held_back.source} if held_back is not None else {}),
            "inputs": [dict(spec=spec.name, **q.facts()) for spec, q in zip(model.inputs, graph.inputs)],
            "outputs": [dict(spec=spec.name, **q.facts()) for spec, q in zip(model.outputs, graph.outputs)],
            "accuracy": {where: cost.facts() for where, cost in accuracy.items()},
            "layer_errors": [error.facts() for error in chosen.choice.layers],
            "precision": chosen.choice.reason,
            "integer_reference": "the lowered integer graph on TVM's Relax VM (llvm), bit-exact",
        }
        io = IoQuantization(tuple(q.params() for q in graph.inputs), tuple(q.params() for q in graph.outputs),
                            MODEL_LAYOUTS.get(model.format, ""))
        return QuantizedModel(chosen.integer, facts, accuracy, chosen.choice.layers, activations,
                              chosen.choice.reason, io)


def _candidate(model: ImportedModel, calibration: Calibration, profile: Profile, taps: list[relax.Var],
               ranges: dict[relax.Var, tuple[float, float]], dtype: str, method: RangeMethod, roundings: dict,
               float_outputs: list[np.ndarray], metric: Metric) -> _Candidate:
    """`model` quantized with `dtype` activations ("int8" or "int16"): its layer outputs `taps` on their
    `ranges` (observed by `method`), the weight `roundings`, its biases corrected; with int8 activations, the
    layers `mixed_precision` picks keep float. `float_outputs`: the float model's output on each calibration
    sample."""
    main = model.mod["main"]
    quants = quants_of(shared_concatenation_ranges(main, ranges), dtype)
    input_quants = [ActivationQuant.of_range(min(float(s[i].min()) for s in calibration.samples),
                                             max(float(s[i].max()) for s in calibration.samples), dtype)
                    for i in range(len(model.inputs))]
    name = model.path.name
    shifts = weight_error_means(model.mod, quantize_graph(model.mod, input_quants, quants, name, roundings=roundings),
                                calibration.samples)
    graph = quantize_graph(model.mod, input_quants, quants, name, bias_shifts=shifts, roundings=roundings)
    integer = LowerQuantizedToInteger(rounding=profile.int8_rounding, model_name=name)(graph.mod)
    errors = layer_errors(model.mod, graph, taps, calibration.samples)
    if dtype == "int16":
        choice = PrecisionChoice(frozenset(), [replace(error, precision="16x8") for error in errors],
                                 "all layers 16x8")
    else:
        choice = choose_precision(main, taps, errors, profile)
    if choice.float_layers:  # the all-int8 lowering above refused any layer without an int8 kernel
        graph = quantize_graph(model.mod, input_quants, quants, name, choice.float_layers, shifts, roundings)
        integer = LowerQuantizedToInteger(rounding=profile.int8_rounding, model_name=name,
                                          allow_float_fallback=True)(graph.mod)
    return _Candidate(graph, integer, method, choice,
                      _cost(integer, graph, calibration.samples, float_outputs, metric))


def held_back_description() -> str:
    """Where the held-back samples of a random calibration come from: the calibration's distribution
    (uniform [-1, 1)), another seed."""
    return f"random: uniform [-1, 1), {HELD_BACK_SAMPLES} samples, seed {HELD_BACK_SEED}"


def _cost(integer: tvm.IRModule, graph: QuantizedGraph, samples: list[list[np.ndarray]],
          float_outputs: list[np.ndarray], metric) -> AccuracyCost:
    quantized_inputs = [[q.quantize(x) for q, x in zip(graph.inputs, sample)] for sample in samples]
    int8_outputs = [graph.outputs[0].dequantize(outputs[0]) for outputs in run_on_samples(integer, quantized_inputs)]
    return accuracy_cost(metric, float_outputs, int8_outputs)
