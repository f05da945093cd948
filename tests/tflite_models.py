"""Small int8 TFLite models the tests build themselves: DEPTHWISE_CONV_2D with a depth multiplier and
FULLY_CONNECTED on a higher-rank input, quantized the way TFLite's converter writes them.

`build_int8_tflite` serializes an `Int8Graph` (tensors, operators with their builtin options) as a .tflite
flatbuffer; the factories below make the graphs. Nothing here imports tvm or tvm_ext.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from fuzz_corpus import subgraph_table

INT8, INT32 = 9, 2
DEPTHWISE_CONV_2D, FULLY_CONNECTED = 4, 9
SAME, VALID = 0, 1
# Every scale a test model has, in a fixed pattern per channel: different per channel, so a kernel that
# mixes up channels requantizes with the wrong scale.
_WEIGHT_SCALES = (0.011, 0.007, 0.013, 0.009, 0.005, 0.012)
_INPUT_SCALE, _INPUT_ZERO_POINT = 0.05, -3
_OUTPUT_SCALE, _OUTPUT_ZERO_POINT = 0.12, 5

Options = Callable[[object], tuple[int, int]]  # writes a builtin options table: (BuiltinOptions type, offset)


@dataclass(frozen=True)
class Int8Tensor:
    """A quantized tensor; `data` holds a constant's little-endian bytes (None: an activation)."""

    name: str
    shape: tuple[int, ...]
    type_code: int
    scales: tuple[float, ...]
    zero_point: int = 0
    quantized_dimension: int = 0
    data: Optional[bytes] = None


@dataclass(frozen=True)
class Int8Operator:
    builtin: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: Options


@dataclass
class Int8Graph:
    """One subgraph: `inputs`/`outputs` index `tensors`."""

    tensors: list[Int8Tensor] = field(default_factory=list)
    operators: list[Int8Operator] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)

    def add(self, tensor: Int8Tensor) -> int:
        self.tensors.append(tensor)
        return len(self.tensors) - 1


def _vector(builder, values, prepend: Callable, size: int) -> int:
    builder.StartVector(size, len(values), size)
    for value in reversed(values):
        prepend(value)
    return builder.EndVector()


def build_int8_tflite(graph: Int8Graph) -> bytes:
    """`graph` as a .tflite flatbuffer ("TFL3"); buffer 0 is the empty one, each constant gets its own."""
    import flatbuffers
    import tflite

    b = flatbuffers.Builder(4096)
    ints = lambda values: _vector(b, list(values), b.PrependInt32, 4)  # noqa: E731 - a local shorthand
    offsets = lambda values: _vector(b, list(values), b.PrependUOffsetTRelative, 4)  # noqa: E731
    buffer_data = [b""] + [t.data for t in graph.tensors if t.data is not None]
    buffers = []
    for data in buffer_data:
        vector = b.CreateByteVector(data) if data else None
        tflite.BufferStart(b)
        if vector is not None:
            tflite.BufferAddData(b, vector)
        buffers.append(tflite.BufferEnd(b))
    tensors, next_buffer = [], 1
    for tensor in graph.tensors:
        name, shape = b.CreateString(tensor.name), ints(tensor.shape)
        scales = _vector(b, tensor.scales, b.PrependFloat32, 4)
        zero_points = _vector(b, [tensor.zero_point] * len(tensor.scales), b.PrependInt64, 8)
        tflite.QuantizationParametersStart(b)
        tflite.QuantizationParametersAddScale(b, scales)
        tflite.QuantizationParametersAddZeroPoint(b, zero_points)
        tflite.QuantizationParametersAddQuantizedDimension(b, tensor.quantized_dimension)
        quant = tflite.QuantizationParametersEnd(b)
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        tflite.TensorAddType(b, tensor.type_code)
        tflite.TensorAddBuffer(b, next_buffer if tensor.data is not None else 0)
        next_buffer += tensor.data is not None
        tflite.TensorAddName(b, name)
        tflite.TensorAddQuantization(b, quant)
        tensors.append(tflite.TensorEnd(b))
    builtins = sorted({op.builtin for op in graph.operators})
    operators = []
    for op in graph.operators:
        inputs, outputs = ints(op.inputs), ints(op.outputs)
        options_type, options = op.options(b)
        tflite.OperatorStart(b)
        tflite.OperatorAddOpcodeIndex(b, builtins.index(op.builtin))
        tflite.OperatorAddInputs(b, inputs)
        tflite.OperatorAddOutputs(b, outputs)
        tflite.OperatorAddBuiltinOptionsType(b, options_type)
        tflite.OperatorAddBuiltinOptions(b, options)
        operators.append(tflite.OperatorEnd(b))
    tensor_vector, operator_vector = offsets(tensors), offsets(operators)
    subgraph = subgraph_table(b, tensor_vector, operator_vector, ints(graph.inputs), ints(graph.outputs))
    opcodes = []
    for builtin in builtins:
        tflite.OperatorCodeStart(b)
        tflite.OperatorCodeAddBuiltinCode(b, builtin)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, builtin)
        tflite.OperatorCodeAddVersion(b, 3)
        opcodes.append(tflite.OperatorCodeEnd(b))
    opcode_vector, subgraph_vector, buffer_vector = offsets(opcodes), offsets([subgraph]), offsets(buffers)
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, opcode_vector)
    tflite.ModelAddSubgraphs(b, subgraph_vector)
    tflite.ModelAddBuffers(b, buffer_vector)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


@dataclass(frozen=True)
class DepthwiseCase:
    """One DEPTHWISE_CONV_2D of a test model (3x3 kernel)."""

    stride: int
    padding: int  # SAME or VALID


def _depthwise_options(case: DepthwiseCase, multiplier: int) -> Options:
    def write(b) -> tuple[int, int]:
        import tflite

        tflite.DepthwiseConv2DOptionsStart(b)
        tflite.DepthwiseConv2DOptionsAddPadding(b, case.padding)
        tflite.DepthwiseConv2DOptionsAddStrideW(b, case.stride)
        tflite.DepthwiseConv2DOptionsAddStrideH(b, case.stride)
        tflite.DepthwiseConv2DOptionsAddDepthMultiplier(b, multiplier)
        tflite.DepthwiseConv2DOptionsAddDilationWFactor(b, 1)
        tflite.DepthwiseConv2DOptionsAddDilationHFactor(b, 1)
        return tflite.BuiltinOptions.DepthwiseConv2DOptions, tflite.DepthwiseConv2DOptionsEnd(b)

    return write


def _output_size(size: int, kernel: int, case: DepthwiseCase) -> int:
    if case.padding == SAME:
        return -(-size // case.stride)
    return (size - kernel) // case.stride + 1


def depthwise_model(input_channels: int, multiplier: int, cases: list[DepthwiseCase], per_channel: bool = True,
                    image: int = 9, seed: int = 0) -> bytes:
    """One int8 input [1, image, image, input_channels] and a DEPTHWISE_CONV_2D per case on it (3x3 kernel,
    depth `multiplier`), each its own model output. Weights per channel (or per tensor) on dimension 3, and
    the bias's quantized dimension 3 as TFLite's converter writes it on a 1-D tensor."""
    rng = np.random.default_rng(seed)
    channels = input_channels * multiplier
    weight_scales = tuple(_WEIGHT_SCALES[c % len(_WEIGHT_SCALES)] for c in range(channels)) if per_channel else (
        _WEIGHT_SCALES[0],)
    graph = Int8Graph()
    data = graph.add(Int8Tensor("input", (1, image, image, input_channels), INT8, (_INPUT_SCALE,),
                                _INPUT_ZERO_POINT))
    graph.inputs.append(data)
    for index, case in enumerate(cases):
        weights = rng.integers(-127, 128, (1, 3, 3, channels)).astype(np.int8)
        bias = rng.integers(-3000, 3000, channels).astype("<i4")
        weight = graph.add(Int8Tensor(f"dw{index}/weights", weights.shape, INT8, weight_scales,
                                      quantized_dimension=3, data=weights.tobytes()))
        bias_scales = tuple(_INPUT_SCALE * s for s in weight_scales)
        bias_tensor = graph.add(Int8Tensor(f"dw{index}/bias", (channels,), INT32, bias_scales,
                                           quantized_dimension=3, data=bias.tobytes()))
        out = _output_size(image, 3, case)
        output = graph.add(Int8Tensor(f"dw{index}/output", (1, out, out, channels), INT8, (_OUTPUT_SCALE,),
                                      _OUTPUT_ZERO_POINT))
        graph.operators.append(Int8Operator(DEPTHWISE_CONV_2D, (data, weight, bias_tensor), (output,),
                                            _depthwise_options(case, multiplier)))
        graph.outputs.append(output)
    return build_int8_tflite(graph)


def _fully_connected_options(keep_num_dims: bool) -> Options:
    def write(b) -> tuple[int, int]:
        import tflite

        tflite.FullyConnectedOptionsStart(b)
        tflite.FullyConnectedOptionsAddKeepNumDims(b, keep_num_dims)
        return tflite.BuiltinOptions.FullyConnectedOptions, tflite.FullyConnectedOptionsEnd(b)

    return write


def fully_connected_model(input_shape: tuple[int, ...], units: int, keep_num_dims: bool, seed: int = 0) -> bytes:
    """One int8 FULLY_CONNECTED on an input of any rank, as TFLite runs it: with keep_num_dims its last
    dimension is the input units and the output keeps the other dimensions; without, the input is read
    as rows of (elements / batch) units and the output is [batch, units] (batch = input_shape[0])."""
    rng = np.random.default_rng(seed)
    input_units = input_shape[-1] if keep_num_dims else int(np.prod(input_shape[1:]))
    output_shape = (*input_shape[:-1], units) if keep_num_dims else (input_shape[0], units)
    weights = rng.integers(-127, 128, (units, input_units)).astype(np.int8)
    bias = rng.integers(-3000, 3000, units).astype("<i4")
    graph = Int8Graph()
    data = graph.add(Int8Tensor("input", input_shape, INT8, (_INPUT_SCALE,), _INPUT_ZERO_POINT))
    weight = graph.add(Int8Tensor("dense/weights", weights.shape, INT8, (_WEIGHT_SCALES[0],),
                                  data=weights.tobytes()))
    bias_tensor = graph.add(Int8Tensor("dense/bias", (units,), INT32, (_INPUT_SCALE * _WEIGHT_SCALES[0],),
                                       data=bias.tobytes()))
    # Rows of many input units: a wider output scale keeps the results off the int8 limits.
    output = graph.add(Int8Tensor("dense/output", output_shape, INT8, (_OUTPUT_SCALE * input_units / 9,),
                                  _OUTPUT_ZERO_POINT))
    graph.operators.append(Int8Operator(FULLY_CONNECTED, (data, weight, bias_tensor), (output,),
                                        _fully_connected_options(keep_num_dims)))
    graph.inputs.append(data)
    graph.outputs.append(output)
    return build_int8_tflite(graph)
