"""One-operator int8 UNIDIRECTIONAL_SEQUENCE_LSTM models for the tests, as TFLite Micro runs them.

The operator's 24 inputs in TFLite's order: the input, the four input weights (input, forget, cell, output
gate), the four recurrent weights, three absent peepholes, the four gate biases, an absent projection
(weights and bias), the hidden ("output") state and the cell state (variable tensors), four absent layer
norm coefficients. int8 input, output and hidden state, int8 weights, int32 biases, int16 cell state.
``filled`` names optional inputs to give a tensor anyway, ``absent`` required ones to leave out (-1), and
``declared_time_major`` contradicts the tensors' layout, to build what TFLite Micro refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
from tflite.ActivationFunctionType import ActivationFunctionType

from tflite_builder import Model, Operator, Options, Quantization, Tensor, build

GATES = ("input", "forget", "cell", "output")
PEEPHOLE_INPUTS = (9, 10, 11)
PROJECTION_INPUTS = (16, 17)
LAYER_NORM_INPUTS = (20, 21, 22, 23)


@dataclass(frozen=True)
class LstmSpec:
    batch: int = 1
    time: int = 4
    inputs: int = 3
    units: int = 5
    time_major: bool = False
    activation: int = ActivationFunctionType.TANH  # the cell gate's nonlinearity
    cell_clip: float = 0.0
    cell_scale: float = 2.0**-11
    hidden_zero_point: int = -21
    input_zero_point: int = 3
    filled: tuple[int, ...] = ()  # optional inputs (indices) given a tensor, which TFLite Micro refuses
    absent: tuple[int, ...] = ()  # required inputs (indices) left out, which TFLite Micro refuses
    declared_time_major: Optional[bool] = None  # the options' time_major when not the tensors' layout (refused)
    seed: int = 0

    @property
    def input_shape(self) -> tuple[int, int, int]:
        steps = (self.time, self.batch) if self.time_major else (self.batch, self.time)
        return (*steps, self.inputs)

    @property
    def output_shape(self) -> tuple[int, int, int]:
        return (*self.input_shape[:2], self.units)


INPUT_SCALE = 1.0 / 128
HIDDEN_SCALE = 0.0047
WEIGHT_SCALES = (0.0041, 0.0037, 0.0052, 0.0045)  # per gate, the input weights; the recurrent ones x 1.1


def _lstm_layer(spec: LstmSpec, rng: np.random.Generator, tensors: list[Tensor], layer: int) -> int:
    """Append layer ``layer``'s tensors (its input is the last tensor of ``tensors``) and return its operator."""
    source = len(tensors) - 1
    depth, input_scale = tensors[source].shape[2], tensors[source].quantization.scales[0]
    prefix = f"lstm{layer}/"

    def weights(name: str, columns: int, scale: float) -> int:
        data = rng.integers(-127, 128, (spec.units, columns)).astype(np.int8)
        tensors.append(Tensor(prefix + name, (spec.units, columns), "int8", Quantization((scale,), (0,)), data))
        return len(tensors) - 1

    def constant(name: str) -> int:
        tensors.append(Tensor(prefix + name, (spec.units,), "int16", Quantization((1.0 / 64,), (0,)),
                              rng.integers(-64, 64, spec.units).astype(np.int16)))
        return len(tensors) - 1

    inputs = [source]
    inputs += [weights(f"{gate}_weights", depth, scale) for gate, scale in zip(GATES, WEIGHT_SCALES)]
    inputs += [weights(f"{gate}_recurrent", spec.units, scale * 1.1) for gate, scale in zip(GATES, WEIGHT_SCALES)]
    inputs += [constant(f"peephole{k}") if k in spec.filled else -1 for k in PEEPHOLE_INPUTS]
    for scale in WEIGHT_SCALES:
        bias_scale = input_scale * scale
        tensors.append(Tensor(f"{prefix}bias{len(inputs)}", (spec.units,), "int32", Quantization((bias_scale,), (0,)),
                              np.round(rng.uniform(-0.6, 0.6, spec.units) / bias_scale).astype(np.int32)))
        inputs.append(len(tensors) - 1)
    inputs += [constant(f"projection{k}") if k in spec.filled else -1 for k in PROJECTION_INPUTS]
    tensors.append(Tensor(prefix + "hidden_state", (spec.batch, spec.units), "int8",
                          Quantization((HIDDEN_SCALE,), (spec.hidden_zero_point,)), variable=True))
    tensors.append(Tensor(prefix + "cell_state", (spec.batch, spec.units), "int16",
                          Quantization((spec.cell_scale,), (0,)), variable=True))
    inputs += [len(tensors) - 2, len(tensors) - 1]
    inputs += [constant(f"layer_norm{k}") if k in spec.filled else -1 for k in LAYER_NORM_INPUTS]
    tensors.append(Tensor(prefix + "output", spec.output_shape, "int8",
                          Quantization((HIDDEN_SCALE,), (spec.hidden_zero_point,))))
    inputs = [-1 if index in spec.absent else tensor for index, tensor in enumerate(inputs)]
    options = Options("UnidirectionalSequenceLSTMOptions", {
        "FusedActivationFunction": spec.activation, "CellClip": spec.cell_clip,
        "TimeMajor": spec.time_major if spec.declared_time_major is None else spec.declared_time_major})
    return Operator("UNIDIRECTIONAL_SEQUENCE_LSTM", tuple(inputs), (len(tensors) - 1,), options)


def build_lstm_model(spec: LstmSpec, layers: int = 1) -> bytes:
    """The model's flatbuffer: input -> ``layers`` stacked UNIDIRECTIONAL_SEQUENCE_LSTMs (each with its own
    random weights and states) -> output."""
    rng = np.random.default_rng(spec.seed)
    tensors = [Tensor("input", spec.input_shape, "int8", Quantization((INPUT_SCALE,), (spec.input_zero_point,)))]
    operators = [_lstm_layer(spec, rng, tensors, layer) for layer in range(layers)]
    return build(Model(tensors, operators, inputs=(0,), outputs=(len(tensors) - 1,)))
