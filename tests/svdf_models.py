"""Builds one-operator TFLite SVDF models (int8 input and output, int16 or int8 state) for the SVDF tests.

Our own flatbuffer writer in the manner of fuzz_corpus.build_tflite, with what SVDF needs and that builder
lacks: SVDFOptions and a variable state tensor. Scales are picked so that TFLM's Prepare accepts the model
(bias scale = state scale x time weight scale). A model without bias gets an all-zero bias tensor instead of an
omitted (-1) input: TFLM's Prepare reads the bias's scale unconditionally and crashes on an omitted one
(tflite-micro issue #1751), and an all-zero bias is what its integer kernel adds when there is none.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FLOAT32, INT32, INT16, INT8 = 0, 2, 7, 9
_TYPE_CODES = {"int32": INT32, "int16": INT16, "int8": INT8}


@dataclass(frozen=True)
class SvdfSpec:
    """One SVDF layer: shapes, state dtype, rank, bias, fused activation and the seed of its random weights."""

    batch: int = 1
    inputs: int = 6
    units: int = 3
    rank: int = 1
    memory: int = 4
    state_dtype: str = "int16"
    bias: bool = True  # False: an all-zero bias tensor (see the module's docstring)
    relu: bool = False
    seed: int = 0

    @property
    def filters(self) -> int:
        return self.units * self.rank


@dataclass(frozen=True)
class _Tensor:
    shape: tuple[int, ...]
    dtype: str
    scale: float
    zero_point: int
    data: bytes = b""
    variable: bool = False


def svdf_tensors(spec: SvdfSpec) -> list[_Tensor]:
    """input, weights_feature, weights_time, bias, state, output: in the order of the operator's inputs."""
    rng = np.random.default_rng(spec.seed)
    state_scale, time_scale, output_scale = (0.004, 0.003, 1.0) if spec.state_dtype == "int16" else (0.6, 0.01, 0.5)
    state_zero_point = 0 if spec.state_dtype == "int16" else int(rng.integers(-20, 20))
    low, high = (-2000, 2000) if spec.state_dtype == "int16" else (-127, 127)
    feature = rng.integers(-127, 128, (spec.filters, spec.inputs), dtype=np.int8)
    time = rng.integers(low, high, (spec.filters, spec.memory)).astype(spec.state_dtype)
    bias = rng.integers(-300, 300, spec.units).astype("<i4") * int(spec.bias)
    return [
        _Tensor((spec.batch, spec.inputs), "int8", 0.06, int(rng.integers(-128, 0))),
        _Tensor(feature.shape, "int8", 0.009, 0, feature.tobytes()),
        _Tensor(time.shape, spec.state_dtype, time_scale, 0, time.astype("<" + time.dtype.str[1:]).tobytes()),
        _Tensor((spec.units,), "int32", float(np.float32(state_scale) * np.float32(time_scale)), 0, bias.tobytes()),
        _Tensor((spec.batch, spec.filters * spec.memory), spec.state_dtype, state_scale, state_zero_point,
                variable=True),
        _Tensor((spec.batch, spec.units), "int8", output_scale, int(rng.integers(-10, 10))),
    ]


def build_svdf_model(spec: SvdfSpec) -> bytes:
    """The .tflite bytes of ``input -> SVDF -> output`` as `spec` describes it."""
    import flatbuffers
    import tflite

    tensors = svdf_tensors(spec)
    b = flatbuffers.Builder(1024)
    buffers = [b""] + [t.data for t in tensors if t.data]
    buffer_offsets = []
    for data in buffers:
        vector = b.CreateByteVector(data) if data else None
        tflite.BufferStart(b)
        if vector is not None:
            tflite.BufferAddData(b, vector)
        buffer_offsets.append(tflite.BufferEnd(b))
    next_buffer = 1
    tensor_offsets = []
    for index, tensor in enumerate(tensors):
        buffer = 0
        if tensor.data:
            buffer, next_buffer = next_buffer, next_buffer + 1
        name = b.CreateString(f"svdf_t{index}")
        shape = _int_vector(b, tensor.shape)
        tflite.QuantizationParametersStartScaleVector(b, 1)
        b.PrependFloat32(tensor.scale)
        scales = b.EndVector()
        tflite.QuantizationParametersStartZeroPointVector(b, 1)
        b.PrependInt64(tensor.zero_point)
        zero_points = b.EndVector()
        tflite.QuantizationParametersStart(b)
        tflite.QuantizationParametersAddScale(b, scales)
        tflite.QuantizationParametersAddZeroPoint(b, zero_points)
        quantization = tflite.QuantizationParametersEnd(b)
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        tflite.TensorAddType(b, _TYPE_CODES[tensor.dtype])
        tflite.TensorAddBuffer(b, buffer)
        tflite.TensorAddName(b, name)
        tflite.TensorAddQuantization(b, quantization)
        tflite.TensorAddIsVariable(b, tensor.variable)
        tensor_offsets.append(tflite.TensorEnd(b))
    op_inputs = _int_vector(b, (0, 1, 2, 3, 4))
    op_outputs = _int_vector(b, (5,))
    tflite.SVDFOptionsStart(b)
    tflite.SVDFOptionsAddRank(b, spec.rank)
    tflite.SVDFOptionsAddFusedActivationFunction(b, tflite.ActivationFunctionType.RELU if spec.relu else 0)
    options = tflite.SVDFOptionsEnd(b)
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, 0)
    tflite.OperatorAddInputs(b, op_inputs)
    tflite.OperatorAddOutputs(b, op_outputs)
    tflite.OperatorAddBuiltinOptionsType(b, tflite.BuiltinOptions.SVDFOptions)
    tflite.OperatorAddBuiltinOptions(b, options)
    operator = tflite.OperatorEnd(b)
    tensor_vector, operator_vector = _table_vector(b, tensor_offsets), _table_vector(b, [operator])
    graph_inputs, graph_outputs = _int_vector(b, (0,)), _int_vector(b, (5,))
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensor_vector)
    tflite.SubGraphAddOperators(b, operator_vector)
    tflite.SubGraphAddInputs(b, graph_inputs)
    tflite.SubGraphAddOutputs(b, graph_outputs)
    subgraph = tflite.SubGraphEnd(b)
    tflite.OperatorCodeStart(b)
    tflite.OperatorCodeAddBuiltinCode(b, tflite.BuiltinOperator.SVDF)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, tflite.BuiltinOperator.SVDF)
    tflite.OperatorCodeAddVersion(b, 3)
    opcode = tflite.OperatorCodeEnd(b)
    vectors = [_table_vector(b, items) for items in ([opcode], [subgraph], buffer_offsets)]
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, vectors[0])
    tflite.ModelAddSubgraphs(b, vectors[1])
    tflite.ModelAddBuffers(b, vectors[2])
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def _int_vector(b, values: tuple[int, ...]) -> int:
    b.StartVector(4, len(values), 4)
    for value in reversed(values):
        b.PrependInt32(value)
    return b.EndVector()


def _table_vector(b, offsets: list[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for offset in reversed(offsets):
        b.PrependUOffsetTRelative(offset)
    return b.EndVector()
