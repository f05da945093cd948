"""TFLite UNIDIRECTIONAL_SEQUENCE_LSTM -> Relax, integer only, in the frontend's QDQ form (TVM 0.27's converter is
float only, takes only the coupled input-forget gate, and makes the state a constant).

Exactly what TFLite Micro runs: int8 input, output and hidden state, int8 weights (per tensor) for all four gates,
int32 biases, an int16 cell state, TANH as the cell gate's activation; no peephole, projection or layer norm
tensor. One opaque float step between dequantize and quantize, which ``tvm_ext.transform.int8.lstm`` lowers:

    output = quantize(call_dps_packed(LSTM, [dq(input), dq(H0), dq(C0), dq(W_input[4]), dq(W_recurrent[4]),
                                             bias[4]]), output)

``H0`` and ``C0`` are constants holding the states' values after a reset (TFLM fills an int8 variable tensor with
its zero point, others with 0): the lowering hands them on as the initial values of the bundle's static state
buffers. The biases stay integer (TFLM reads no bias scale). The callee carries the options as attributes
(``TIME_MAJOR_ATTR``, ``CELL_CLIP_ATTR``). The float step has no meaning of its own (nothing legalizes it).
"""

from __future__ import annotations

import numpy as np
from tvm import relax

from .refusal import OperatorRefused

LSTM = "tvm_ext.unidirectional_sequence_lstm"
TIME_MAJOR_ATTR = "time_major"
CELL_CLIP_ATTR = "cell_clip"

INPUT_NAMES = (
    "input",
    "input_to_input_weights", "input_to_forget_weights", "input_to_cell_weights", "input_to_output_weights",
    "recurrent_to_input_weights", "recurrent_to_forget_weights", "recurrent_to_cell_weights",
    "recurrent_to_output_weights",
    "cell_to_input_weights", "cell_to_forget_weights", "cell_to_output_weights",
    "input_gate_bias", "forget_gate_bias", "cell_gate_bias", "output_gate_bias",
    "projection_weights", "projection_bias",
    "output_state", "cell_state",
    "input_layer_norm_coefficients", "forget_layer_norm_coefficients", "cell_layer_norm_coefficients",
    "output_layer_norm_coefficients",
)
INPUT_WEIGHTS = range(1, 5)
RECURRENT_WEIGHTS = range(5, 9)
BIASES = range(12, 16)
HIDDEN_STATE, CELL_STATE = 18, 19
_OPTIONAL = {9: "peephole", 10: "peephole", 11: "peephole", 16: "projection", 17: "projection",
             20: "layer norm", 21: "layer norm", 22: "layer norm", 23: "layer norm"}
_TYPES = {0: "int8", HIDDEN_STATE: "int8", CELL_STATE: "int16",
          **{index: "int8" for index in (*INPUT_WEIGHTS, *RECURRENT_WEIGHTS)}, **{index: "int32" for index in BIASES}}


class LstmConversionError(OperatorRefused):
    """The LSTM is one our converter does not take (the message names the tensor and says why)."""


def _check_tensors(converter, tensors: list) -> None:
    """Refuse what TFLite Micro's integer LSTM refuses, naming the operator's input at fault."""
    if len(tensors) != len(INPUT_NAMES):
        raise LstmConversionError(f"{len(tensors)} inputs: TFLite Micro's LSTM takes {len(INPUT_NAMES)}")
    for index, name in enumerate(INPUT_NAMES):
        present = tensors[index].tensor_idx >= 0
        if index in _OPTIONAL:
            if present:
                raise LstmConversionError(f"its {name} tensor (input {index}): TFLite Micro runs no LSTM with "
                                          f"{_OPTIONAL[index]}")
            continue
        if not present:
            raise LstmConversionError(f"no {name} tensor (input {index}): TFLite Micro runs no LSTM without it")
        tensor = tensors[index]
        dtype = converter.get_tensor_type_str(tensor.tensor.Type())
        if dtype != _TYPES[index]:
            raise LstmConversionError(f"its {name} tensor (input {index}) is {dtype}: only the integer LSTM "
                                      f"(int8 activations and weights, int16 cell state, int32 biases) is supported")
        quantization = tensor.tensor.Quantization()
        if index not in BIASES and (quantization is None or quantization.ScaleLength() != 1):
            raise LstmConversionError(f"its {name} tensor (input {index}) is not quantized per tensor")
        if index in (HIDDEN_STATE, CELL_STATE) and not tensor.tensor.IsVariable():
            raise LstmConversionError(f"its {name} tensor (input {index}) is not a variable tensor")


def _check_shapes(tensors: list, output, time_major: bool) -> None:
    """TFLM's ValidateTensorSize: a 3-D input and output of the same steps and batch, (units, inputs) and
    (units, units) weights, (units,) biases, (batch, units) states."""
    shape = {index: tuple(int(d) for d in tensor.tensor.ShapeAsNumpy()) for index, tensor in enumerate(tensors)
             if tensor.tensor_idx >= 0}
    output_shape = tuple(int(d) for d in output.tensor.ShapeAsNumpy())
    if len(shape[0]) != 3 or len(output_shape) != 3 or output_shape[:2] != shape[0][:2]:
        raise LstmConversionError(f"input {list(shape[0])} and output {list(output_shape)}: TFLite Micro's LSTM "
                                  f"takes 3-D ones of the same time steps and batch")
    units, depth, batch = output_shape[2], shape[0][2], shape[0][1 if time_major else 0]
    expected = {**{index: (units, depth) for index in INPUT_WEIGHTS},
                **{index: (units, units) for index in RECURRENT_WEIGHTS}, **{index: (units,) for index in BIASES},
                HIDDEN_STATE: (batch, units), CELL_STATE: (batch, units)}
    for index, dims in expected.items():
        if shape[index] != dims:
            raise LstmConversionError(f"its {INPUT_NAMES[index]} tensor (input {index}) is {list(shape[index])}, "
                                      f"not {list(dims)}")


def _options(op) -> tuple[bool, float]:
    """(time_major, cell_clip); only TANH as the cell gate's activation (TFLM asserts on anything else)."""
    from tflite.ActivationFunctionType import ActivationFunctionType
    from tflite.UnidirectionalSequenceLSTMOptions import UnidirectionalSequenceLSTMOptions

    table = op.BuiltinOptions()
    if table is None:
        raise LstmConversionError("no UnidirectionalSequenceLSTMOptions")
    options = UnidirectionalSequenceLSTMOptions()
    options.Init(table.Bytes, table.Pos)
    if options.FusedActivationFunction() != ActivationFunctionType.TANH:
        raise LstmConversionError(f"cell gate activation {options.FusedActivationFunction()}: TFLite Micro's "
                                  f"integer LSTM takes TANH only")
    return bool(options.TimeMajor()), float(options.CellClip())


def convert_unidirectional_sequence_lstm(converter, op) -> relax.Expr:
    """The Relax expression of TFLite UNIDIRECTIONAL_SEQUENCE_LSTM ``op`` for TVM's ``OperatorConverter``."""
    tensors = converter.get_input_tensors(op)
    _check_tensors(converter, tensors)
    output = converter.get_output_tensors(op)[0]
    if converter.get_tensor_type_str(output.tensor.Type()) != "int8" or not output.qnn_params:
        raise LstmConversionError("its output is not int8: only the integer LSTM is supported")
    time_major, cell_clip = _options(op)
    _check_shapes(tensors, output, time_major)

    def reset_value(index: int) -> relax.Expr:
        tensor = tensors[index]
        shape = tuple(int(d) for d in tensor.tensor.ShapeAsNumpy())
        value = int(tensor.tensor.Quantization().ZeroPoint(0)) if _TYPES[index] == "int8" else 0
        return converter.dequantize(relax.const(np.full(shape, value, _TYPES[index])), tensor)

    def dequantized_constant(index: int) -> relax.Expr:
        return converter.dequantize(relax.const(converter.get_tensor_value(tensors[index])), tensors[index])

    operands = [converter.dequantize(converter.get_tensor_expr(tensors[0]), tensors[0]),
                reset_value(HIDDEN_STATE), reset_value(CELL_STATE)]
    operands += [dequantized_constant(index) for index in (*INPUT_WEIGHTS, *RECURRENT_WEIGHTS)]
    operands += [relax.const(converter.get_tensor_value(tensors[index])) for index in BIASES]
    callee = relax.ExternFunc(LSTM).with_attrs({TIME_MAJOR_ATTR: time_major, CELL_CLIP_ATTR: cell_clip})
    output_shape = [int(d) for d in output.tensor.ShapeAsNumpy()]
    step = relax.call_dps_packed(callee, operands, relax.TensorType(output_shape, "float32"))
    return converter.quantize(step, output)
