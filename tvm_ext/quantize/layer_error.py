"""The quantization error of each layer: the layer's int8 output (dequantized) against the float model's
output of the same layer on the calibration samples, the measured error budget a mixed-precision choice
reads from the manifest.

The int8 outputs are the QDQ graph's (`qdq`, run on TVM's Relax VM on the host, its average pools rounded as
TFLite's): every activation rounded to its int8 grid, the arithmetic between them in float. The error of a
layer is therefore what int8 activations and weights cost up to and including that layer (it accumulates the
earlier layers' error), without the integer kernels' requantization rounding, which is a fraction of one
step of the output grid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tvm
from tvm import relax

from tvm_ext.layers import Layers, bindings_of

from .accuracy import Metric, accuracy_cost
from .qdq import QuantizedGraph
from .ranges import run_on_samples, with_taps


@dataclass(frozen=True)
class LayerError:
    """One layer output's relative L2 error ||int8 - float||_2 / ||float||_2 over all calibration samples
    (the absolute L2 error where the float output is all zero) with every layer int8; once the precision is
    chosen (`mixed_precision`), the part of it the layer adds and the layer's precision, "int8" or "float"."""

    layer: str  # the layer's label, e.g. "conv1 (CONV_2D)" or "CONV_2D #3"
    relative_error: float
    added_error: float | None = None
    precision: str = "int8"

    def facts(self) -> dict:
        added = {} if self.added_error is None else {"added_error": self.added_error}
        return {"layer": self.layer, "relative_error": self.relative_error, **added, "precision": self.precision}


def layer_errors(float_mod: tvm.IRModule, graph: QuantizedGraph, taps: list[relax.Var],
                 samples: list[list[np.ndarray]]) -> list[LayerError]:
    """The error of each layer output var in `taps` (vars of `float_mod`'s main that `graph` quantized), in
    the order of `taps`, over `samples` (float inputs; the QDQ graph gets them quantized)."""
    main = float_mod["main"]
    float_values = run_on_samples(with_taps(float_mod, taps), samples)
    quantized_inputs = [[q.quantize(x) for q, x in zip(graph.inputs, sample)] for sample in samples]
    int8_values = run_on_samples(graph.on_host(taps), quantized_inputs)
    labels = _labels(main)
    errors = []
    for position, var in enumerate(taps, start=1):
        quant = graph.activations[var].quant
        cost = accuracy_cost(Metric.RELATIVE_ERROR, [values[position] for values in float_values],
                             [quant.dequantize(values[position]) for values in int8_values])
        errors.append(LayerError(labels.get(var, var.name), cost.value))
    return errors


def _labels(main: relax.Function) -> dict[relax.Var, str]:
    """Each binding var of `main` -> the label of its layer(s)."""
    layers = Layers.of(main)
    return {binding.var: ", ".join(record.label for record in layers.of_binding(position))
            for position, binding in enumerate(bindings_of(main)) if layers.of_binding(position)}
