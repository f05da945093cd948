"""A float model -> its int8 integer Relax module, with the facts the manifest records about it.

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

from dataclasses import dataclass

import numpy as np
import tvm

from target.profile import Profile
from tvm_ext.frontend import ImportedModel
from tvm_ext.transform import LowerQuantizedToInteger

from .accuracy import AccuracyCost, accuracy_cost, metric_for
from .bias_correction import weight_error_means
from .calibration import Calibration, random_samples
from .layer_error import LayerError, layer_errors
from .mixed_precision import choose_precision
from .qdq import QuantizedGraph, layer_outputs, quantize_graph
from .ranges import ActivationQuant, RangeMethod, observe_ranges, run_on_samples
from .weight_rounding import DAMPING, hessian_roundings

HELD_BACK_SEED = 2  # random calibration: the held-back samples come from the same distribution, another seed
HELD_BACK_SAMPLES = 200  # the figure for the held-back accuracy


@dataclass(frozen=True)
class QuantizedModel:
    """The integer Relax module of the quantized model and the manifest's "quantization" entry."""

    mod: tvm.IRModule
    facts: dict
    accuracy: dict[str, AccuracyCost]  # "calibration" and, with held-back samples, "held_back"
    layers: list[LayerError]  # each layer output's quantization error on the calibration samples, its precision
    precision: str  # the mixed-precision decision line (mixed_precision.choose_precision)


def quantize_model(model: ImportedModel, calibration: Calibration, profile: Profile,
                   method: RangeMethod = RangeMethod.PERCENTILE,
                   held_back: Calibration | None = None) -> QuantizedModel:
    """`model` (float) quantized to int8 on `calibration`'s samples for `profile`, its accuracy cost also
    measured on `held_back` (samples of the calibration's distribution kept out of it; by default, with
    random calibration, 200 more random samples of another seed); raises qdq.QuantizeError (one line) for a
    layer the quantizer cannot handle."""
    main = model.mod["main"]
    taps = layer_outputs(main)
    quants, float_outputs = observe_ranges(model.mod, taps, calibration.samples, method)
    input_quants = [ActivationQuant.of_range(min(float(s[i].min()) for s in calibration.samples),
                                             max(float(s[i].max()) for s in calibration.samples))
                    for i in range(len(model.inputs))]
    roundings = hessian_roundings(model.mod, calibration.samples)
    shifts = weight_error_means(model.mod, quantize_graph(model.mod, input_quants, quants, model.path.name,
                                                          roundings=roundings), calibration.samples)
    graph = quantize_graph(model.mod, input_quants, quants, model.path.name, bias_shifts=shifts,
                           roundings=roundings)
    integer = LowerQuantizedToInteger(rounding=profile.int8_rounding, model_name=model.path.name)(graph.mod)
    choice = choose_precision(main, taps, layer_errors(model.mod, graph, taps, calibration.samples), profile)
    if choice.float_layers:  # the all-int8 lowering above refused any layer without an int8 kernel
        graph = quantize_graph(model.mod, input_quants, quants, model.path.name, choice.float_layers, shifts,
                               roundings)
        integer = LowerQuantizedToInteger(rounding=profile.int8_rounding, model_name=model.path.name,
                                          allow_float_fallback=True)(graph.mod)
    metric = metric_for(model.layers[-1].kind if model.layers else "")
    accuracy = {"calibration": _cost(integer, graph, calibration.samples, float_outputs, metric)}
    if held_back is None and calibration.random:
        held_back = Calibration(random_samples(model.inputs, HELD_BACK_SAMPLES, HELD_BACK_SEED),
                                held_back_description(), True)
    if held_back is not None:
        held_float = [outputs[0] for outputs in run_on_samples(model.mod, held_back.samples)]
        accuracy["held_back"] = _cost(integer, graph, held_back.samples, held_float, metric)
    facts = {
        "dtype": "int8 with float layers" if choice.float_layers else "int8",
        "weights": "per-channel symmetric int8",
        "activations": "per-tensor asymmetric int8",
        "biases": "int32, scale = input scale x weight scale",
        "weight_rounding": f"GPTQ: each conv/dense weight's int8 values chosen column by column to minimize "
                           f"its layer's output error on the {len(calibration.samples)} calibration samples' "
                           f"float inputs (H = X X^T, damping {DAMPING:g} x mean diag; per-group H for "
                           f"depthwise), scales unchanged",
        "bias_correction": f"empirical: each int8 MAC's bias less the mean error its weight rounding adds per "
                           f"output channel on the {len(calibration.samples)} calibration samples",
        "ranges": method.value,
        "calibration": calibration.source,
        "calibration_random": calibration.random,
        **({"held_back": held_back.source} if held_back is not None else {}),
        "inputs": [dict(spec=spec.name, **q.facts()) for spec, q in zip(model.inputs, graph.inputs)],
        "outputs": [dict(spec=spec.name, **q.facts()) for spec, q in zip(model.outputs, graph.outputs)],
        "accuracy": {where: cost.facts() for where, cost in accuracy.items()},
        "layer_errors": [error.facts() for error in choice.layers],
        "precision": choice.reason,
        "integer_reference": "the lowered integer graph on TVM's Relax VM (llvm), bit-exact",
    }
    return QuantizedModel(integer, facts, accuracy, choice.layers, choice.reason)


def held_back_description() -> str:
    """Where the held-back samples of a random calibration come from: the calibration's distribution
    (uniform [-1, 1)), another seed."""
    return f"random: uniform [-1, 1), {HELD_BACK_SAMPLES} samples, seed {HELD_BACK_SEED}"


def _cost(integer: tvm.IRModule, graph: QuantizedGraph, samples: list[list[np.ndarray]],
          float_outputs: list[np.ndarray], metric) -> AccuracyCost:
    quantized_inputs = [[q.quantize(x) for q, x in zip(graph.inputs, sample)] for sample in samples]
    int8_outputs = [graph.outputs[0].dequantize(outputs[0]) for outputs in run_on_samples(integer, quantized_inputs)]
    return accuracy_cost(metric, float_outputs, int8_outputs)
